//! The log's record format and a reader that survives torn and corrupt files.
//!
//! # Format
//! A segment file starts with a header, written twice (either copy is enough), then records:
//!
//! ```text
//! header  = [8 magic "nsqlab\0\x02"][u64 salt][u32 CRC-32C of magic and salt][4 zero bytes]
//! record  = [u32 payload length][u64 check][payload]
//! check   = CRC-32C(payload) XOR key(salt, the record's offset in the file, payload length)
//! payload = [u8 kind][fields…]
//!   1 PUB       u8 flags (bit 0: held), u64 due (0: none), u64 id, u64 timestamp,
//!               u16 attempts, body (the rest)
//!   2 FIN       u32 channel key, u64 id… (one or more: a consumer's FINs of one commit)
//!   3 REQ       u32 channel key, u64 id, u64 due
//!   4 DISPATCH  (nothing: every held message went to the channels)
//!   5 DROPHELD  (nothing: the topic was emptied)
//!   6 MARK      u64 last id (first record of every segment: later IDs are above it)
//! ```
//! Integers are little-endian; times are Unix nanoseconds.
//!
//! # Why a salt
//! A message body is bytes a client chose, and it lies in the file verbatim. When a record is
//! damaged (torn by a crash, a flipped bit) the reader looks for the next intact record byte
//! by byte, which can be inside the damaged record's body. With a plain checksum a publisher
//! could place a well-formed record there (a FIN of someone else's message, a PUB of its
//! own) and have it read back. The salt is random per segment and never leaves the server's
//! disk, and the key also depends on where the record is: a record a client wrote into a body
//! passes the check with probability 2^-64, wherever it lands. A segment written before the
//! salt (no header, 8-byte record headers with a plain CRC-32C) is converted when the store
//! opens, resynchronising only at record boundaries its length fields give.

mod legacy;
mod read_ahead;
mod scan;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub use legacy::put_legacy;
pub use read_ahead::{ReadAhead, Spare};
#[cfg(test)]
pub use scan::scan;
pub use scan::{
    checksum_mismatch, intact_all, record_len, scan_with_salt, scan_without_bodies, Found, Layout,
    Scan,
};

use nsqlab_core::{Body, Message, MessageId, Time};

/// A record's header: payload length and check.
pub const HEADER: usize = 12;
/// A mark record's length: a segment's header and first mark take `FILE_HEADER + MARK_LEN`.
pub const MARK_LEN: usize = HEADER + 9;
/// One copy of a segment's file header.
const COPY: usize = 24;
/// A segment's file header, both copies: its first record starts here.
pub const FILE_HEADER: usize = 2 * COPY;
const MAGIC: [u8; 8] = *b"nsqlab\0\x02";
/// No record is larger than this (a message is at most `--max-msg-size`, far below).
pub const MAX_PAYLOAD: usize = 1 << 30;

/// The PUB payload's fields before the body.
const PUB_FIELDS: usize = 1 + 1 + 8 + 8 + 8 + 2;
/// Where a PUB payload's message ID is (after kind, flags and due time).
const PUB_ID: usize = 1 + 1 + 8;
const PUB: u8 = 1;
const FIN: u8 = 2;
const REQ: u8 = 3;
const DISPATCH: u8 = 4;
const DROP_HELD: u8 = 5;
const MARK: u8 = 6;

/// A segment's secret: records' checks depend on it (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Salt(u64);

impl Salt {
    /// A new salt, from the standard library's randomly keyed SipHash (keys from the OS's
    /// random source) over a counter: unpredictable to anyone without the keys.
    pub fn random() -> Salt {
        use std::hash::{BuildHasher, RandomState};
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        Salt(RandomState::new().hash_one(N.fetch_add(1, Ordering::Relaxed)))
    }

    /// Segment `num`'s salt in the topic whose secret is `topic` (kept in its metadata, so a
    /// segment whose header copies are both gone is still read: see `recover.rs`). As
    /// unpredictable as the secret to anyone without it.
    pub fn of_segment(topic: u64, num: u64) -> Salt {
        let mut z = topic ^ num.wrapping_add(1).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        z = (z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        z = (z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        Salt(z ^ (z >> 32))
    }

    /// A new topic secret (see [`Salt::of_segment`]).
    pub fn secret() -> u64 {
        Salt::random().0
    }

    /// The key of a record at offset `off` with a payload of `len` bytes (a SplitMix64
    /// finaliser: every input bit moves half the output's).
    fn key(self, off: u64, len: usize) -> u64 {
        let mut z = self.0 ^ off.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (len as u64).rotate_left(40);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn check(self, off: u64, payload: &[u8]) -> u64 {
        self.check_of(off, payload.len(), crc32c::crc32c(payload))
    }

    /// The check of a record at `off` with a payload of `len` bytes whose CRC is `crc`.
    fn check_of(self, off: u64, len: usize, crc: u32) -> u64 {
        self.key(off, len) ^ u64::from(crc)
    }
}

/// Where records being appended to a buffer will lie: the segment's salt, and the file
/// offset of the buffer's first byte.
#[derive(Debug, Clone, Copy)]
pub struct Seal {
    pub salt: Salt,
    pub base: u64,
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Pub {
        held: bool,
        due: Option<Time>,
        msg: Message,
    },
    Fin {
        key: u32,
        ids: Vec<MessageId>,
    },
    Req {
        key: u32,
        id: MessageId,
        due: Time,
    },
    Dispatch,
    DropHeld,
    Mark {
        last_id: MessageId,
    },
}

/// The file header of a new segment (both copies).
pub fn put_file_header(out: &mut Vec<u8>, salt: Salt) {
    assert!(out.is_empty(), "a file header starts its file");
    for _ in 0..2 {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&salt.0.to_le_bytes());
        let crc = crc32c::crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
    }
}

/// A new segment's first bytes: its header and a mark (messages in it are above `last_id`).
pub fn new_segment(salt: Salt, last_id: MessageId) -> Vec<u8> {
    let mut b = Vec::new();
    put_file_header(&mut b, salt);
    put_mark(&mut b, Seal { salt, base: 0 }, last_id);
    b
}

/// Append a record with its header and check.
fn frame(out: &mut Vec<u8>, seal: Seal, payload_len: usize, write: impl FnOnce(&mut Vec<u8>)) {
    let start = open_frame(out, payload_len);
    write(out);
    debug_assert_eq!(out.len() - start - HEADER, payload_len);
    let check = seal
        .salt
        .check(seal.base + start as u64, &out[start + HEADER..]);
    out[start + 4..start + HEADER].copy_from_slice(&check.to_le_bytes());
}

/// Append a record's header with its check left empty; returns where the record starts.
fn open_frame(out: &mut Vec<u8>, payload_len: usize) -> usize {
    let start = out.len();
    out.extend_from_slice(&(payload_len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    start
}

/// Fill in the checks of the records at `starts` in `out` (appended with
/// [`put_pub_unsealed`]), which lie where `seal` says: three at a time, their CRC chains
/// interleaved (see `crc.rs`; one at a time, a small record's CRC was a visible part of the
/// server's time while bench_writer published).
pub fn seal_checks(out: &mut [u8], seal: Seal, starts: &[usize]) {
    let payload = |out: &[u8], start: usize| {
        let len = u32_at(out, start).expect("a record's length") as usize;
        start + HEADER..start + HEADER + len
    };
    let put = |out: &mut [u8], start: usize, crc: u32| {
        let len = u32_at(out, start).expect("a record's length") as usize;
        let check = seal.salt.check_of(seal.base + start as u64, len, crc);
        out[start + 4..start + HEADER].copy_from_slice(&check.to_le_bytes());
    };
    let mut threes = starts.chunks_exact(3);
    for t in threes.by_ref() {
        let (a, b, c) = (payload(out, t[0]), payload(out, t[1]), payload(out, t[2]));
        let crcs = super::crc::crc32c_3(&out[a], &out[b], &out[c]);
        for (&start, crc) in t.iter().zip(crcs) {
            put(out, start, crc);
        }
    }
    for &start in threes.remainder() {
        let crc = crc32c::crc32c(&out[payload(out, start)]);
        put(out, start, crc);
    }
}

/// Append a record whose payload is `payload` (one read back, resealed where it now lies).
pub fn put_payload(out: &mut Vec<u8>, seal: Seal, payload: &[u8]) {
    frame(out, seal, payload.len(), |o| o.extend_from_slice(payload));
}

pub fn put_pub(out: &mut Vec<u8>, seal: Seal, held: bool, due: Option<Time>, msg: &Message) {
    frame(out, seal, pub_payload_len(msg), |o| {
        pub_payload(o, held, due, msg)
    });
}

/// [`put_pub`] without the check: the record is sealed later by [`seal_checks`], given the
/// offset this returns (where the record starts in `out`).
pub fn put_pub_unsealed(out: &mut Vec<u8>, held: bool, due: Option<Time>, msg: &Message) -> usize {
    let start = open_frame(out, pub_payload_len(msg));
    pub_payload(out, held, due, msg);
    start
}

fn pub_payload_len(msg: &Message) -> usize {
    PUB_FIELDS + msg.body.len()
}

fn pub_payload(o: &mut Vec<u8>, held: bool, due: Option<Time>, msg: &Message) {
    o.push(PUB);
    o.push(held as u8);
    o.extend_from_slice(&due.unwrap_or(0).to_le_bytes());
    o.extend_from_slice(&msg.id.0.to_le_bytes());
    o.extend_from_slice(&msg.timestamp.to_le_bytes());
    o.extend_from_slice(&msg.attempts.to_le_bytes());
    o.extend_from_slice(&msg.body);
}

/// At most this many IDs go in one FIN record (64 KiB of them).
pub const FINS_PER_RECORD: usize = 8 << 10;

/// One FIN record for `ids` (at most [`FINS_PER_RECORD`], at least one): 8 bytes an ID
/// and one header and check for them all, where a record each took 25 bytes and a check each.
pub fn put_fin(out: &mut Vec<u8>, seal: Seal, key: u32, ids: &[MessageId]) {
    debug_assert!(!ids.is_empty() && ids.len() <= FINS_PER_RECORD);
    frame(out, seal, 1 + 4 + 8 * ids.len(), |o| {
        o.push(FIN);
        o.extend_from_slice(&key.to_le_bytes());
        for id in ids {
            o.extend_from_slice(&id.0.to_le_bytes());
        }
    });
}

pub fn put_req(out: &mut Vec<u8>, seal: Seal, key: u32, id: MessageId, due: Time) {
    frame(out, seal, 1 + 4 + 8 + 8, |o| {
        o.push(REQ);
        o.extend_from_slice(&key.to_le_bytes());
        o.extend_from_slice(&id.0.to_le_bytes());
        o.extend_from_slice(&due.to_le_bytes());
    });
}

pub fn put_dispatch(out: &mut Vec<u8>, seal: Seal) {
    frame(out, seal, 1, |o| o.push(DISPATCH));
}

pub fn put_drop_held(out: &mut Vec<u8>, seal: Seal) {
    frame(out, seal, 1, |o| o.push(DROP_HELD));
}

pub fn put_mark(out: &mut Vec<u8>, seal: Seal, last_id: MessageId) {
    frame(out, seal, 1 + 8, |o| {
        o.push(MARK);
        o.extend_from_slice(&last_id.0.to_le_bytes());
    });
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decode a payload whose checksum matched; a message comes without its body (an evicted
/// one) unless `body`.
fn decode_payload(p: &[u8], body: bool) -> Option<Record> {
    let rec = match *p.first()? {
        PUB => {
            let held = *p.get(1)? & 1 == 1;
            let due = u64_at(p, 2)?;
            let id = MessageId(u64_at(p, PUB_ID)?);
            let timestamp = u64_at(p, 18)?;
            let attempts = u16::from_le_bytes(p.get(26..28)?.try_into().ok()?);
            let rest = p.get(PUB_FIELDS..)?;
            let body = if body {
                rest.into()
            } else {
                nsqlab_core::message::evicted_body()
            };
            let mut msg = Message::new(id, timestamp, body);
            msg.attempts = attempts;
            Record::Pub {
                held,
                due: (due != 0).then_some(due),
                msg,
            }
        }
        FIN if p.len() >= 13 && (p.len() - 5).is_multiple_of(8) => Record::Fin {
            key: u32_at(p, 1)?,
            ids: p[5..]
                .chunks_exact(8)
                .map(|b| MessageId(u64::from_le_bytes(b.try_into().expect("8 bytes"))))
                .collect(),
        },
        REQ if p.len() == 21 => Record::Req {
            key: u32_at(p, 1)?,
            id: MessageId(u64_at(p, 5)?),
            due: u64_at(p, 13)?,
        },
        DISPATCH if p.len() == 1 => Record::Dispatch,
        DROP_HELD if p.len() == 1 => Record::DropHeld,
        MARK if p.len() == 9 => Record::Mark {
            last_id: MessageId(u64_at(p, 1)?),
        },
        _ => return None,
    };
    Some(rec)
}
