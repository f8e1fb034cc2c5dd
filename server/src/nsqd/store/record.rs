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
/// interleaved (see `crc.rs`; one at a time, a 200-byte record's CRC was 5 % of the server's
/// time while bench_writer published).
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

/// A stretch of a segment read for loading evicted bodies. A load reads its segment forward
/// from where the index points (see `index.rs`) to its record, skipping the records before
/// it by their headers. Consumers load a backlog in order: a load that follows the one
/// before it (a little further on in the same segment) starts where that one ended and reads
/// [`ReadAhead::SIZE`] ahead, so one read serves the thousands of records after it (one
/// `pread` per record cost more than the rest of a delivery). A lone load (a deferred message
/// coming due) reads little: its own record when the index has its entry, else a short
/// stretch.
///
/// Bodies are not copied out: each is a range of the stretch it was read into, which stays
/// in memory while any of them does. A stretch that none is using any more is read into
/// again: the loader thread's topics share [`Spare`] stretches for that.
#[derive(Debug, Default)]
pub struct ReadAhead {
    seg: u64,
    at: u64,
    /// The stretch: `len` bytes from `base` on are the segment's from `at`.
    buf: std::sync::Arc<[u8]>,
    base: usize,
    len: usize,
    /// Stretches read (in part) with direct I/O.
    direct_reads: u64,
    /// Stretches read before, shared with the thread's other topics.
    spare: Spare,
    /// The segment of the last load, the offset after its record, and its ID.
    last: Option<(u64, u64, MessageId)>,
}

/// Stretches read before (some perhaps still holding bodies in use), for reading into
/// again: at most `ReadAhead::SPARE`, however many topics share them.
#[derive(Debug, Default, Clone)]
pub struct Spare(std::rc::Rc<std::cell::RefCell<Vec<std::sync::Arc<[u8]>>>>);

/// The PUB payload's fields before the body.
const PUB_FIELDS: usize = 1 + 1 + 8 + 8 + 8 + 2;
/// Where a PUB payload's message ID is (after kind, flags and due time).
const PUB_ID: usize = 1 + 1 + 8;

impl ReadAhead {
    /// A whole stretch: 1 MiB. Against 256 KiB, a disk read (and its wake-ups) per 4 000
    /// records of 200-byte messages rather than per 1 000, and the drain of a backlog read
    /// from the disk spent less CPU per message (with 1 MiB read ahead in the broker, see
    /// `read_ahead` in `core/src/broker/delivery.rs`).
    pub const SIZE: usize = 1 << 20;
    /// Whole stretches kept for reading into again, per loader thread.
    const SPARE: usize = 8;
    /// How far after the last load the next one still follows it.
    const FOLLOWS: u64 = 64 << 10;
    /// What a lone load reads at first: its own record, if the index points at it...
    const LONE: usize = 4 << 10;
    /// ...or a stretch to look for it in (the index has an entry every 16 KiB at most).
    const SCAN: usize = 16 << 10;

    /// A read-ahead for one topic that shares `spare` with others.
    pub fn sharing(spare: &Spare) -> ReadAhead {
        ReadAhead {
            spare: spare.clone(),
            ..ReadAhead::default()
        }
    }

    /// Where to start looking for message `id` of segment `seg`, whose index entry is
    /// message `from_id`'s: after the last load, if that was between the two.
    pub fn resume(&self, seg: u64, from_id: u64, id: u64) -> Option<u64> {
        let (s, end, last) = self.last?;
        (s == seg && last.0 >= from_id && last.0 < id).then_some(end)
    }

    /// As [`ReadAhead::find_unchecked`], with the record's check made: an error when it
    /// does not match.
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    pub fn find(
        &mut self,
        file: (&std::fs::File, Option<&std::fs::File>),
        seg: u64,
        salt: Salt,
        from: u64,
        end: u64,
        id: MessageId,
        exact: bool,
    ) -> std::io::Result<Option<Body>> {
        let Some(found) = self.find_unchecked(file, seg, salt, from, end, id, exact)? else {
            return Ok(None);
        };
        if intact_all([&found]) != [true] {
            return Err(checksum_mismatch());
        }
        Ok(Some(found.body))
    }

    /// The record of message `id`, looked for in segment `seg` (the file `file`, `end`
    /// bytes long, salted with `salt`) from the record at `from` on; `exact`: that record
    /// is the message's. `None` when the segment does not hold it. Its check is left to
    /// [`intact_all`].
    #[allow(clippy::too_many_arguments)]
    pub fn find_unchecked(
        &mut self,
        file: (&std::fs::File, Option<&std::fs::File>),
        seg: u64,
        salt: Salt,
        from: u64,
        end: u64,
        id: MessageId,
        exact: bool,
    ) -> std::io::Result<Option<Found>> {
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
        let follows = self
            .last
            .is_some_and(|(s, o, _)| s == seg && from >= o && from - o <= Self::FOLLOWS);
        let chunk = match (follows, exact) {
            (true, _) => Self::SIZE,
            (false, true) => Self::LONE,
            (false, false) => Self::SCAN,
        };
        let mut off = from;
        while off + HEADER as u64 <= end {
            // The header and, for a message, the fields up to its ID.
            let head = self.bytes(file, seg, off, HEADER + PUB_ID + 8, chunk, end)?;
            let len = u32_at(head, 0).expect("a header") as usize;
            let next = off + (HEADER + len) as u64;
            if len == 0 || len > MAX_PAYLOAD || next > end {
                return Err(bad("bad record length"));
            }
            if head.get(HEADER) == Some(&PUB) && len >= PUB_FIELDS {
                let at = u64_at(head, HEADER + PUB_ID).expect("a message's ID");
                if at > id.0 {
                    return Ok(None);
                }
                if at == id.0 {
                    // Read whole (a message's, as its kind said); the body is a range of the
                    // stretch, not a copy.
                    self.bytes(file, seg, off, HEADER + len, chunk, end)?;
                    self.last = Some((seg, next, id));
                    let rel = self.base + (off - self.at) as usize;
                    let (start, body_end) = (rel + HEADER + PUB_FIELDS, rel + HEADER + len);
                    return Ok(Some(Found {
                        body: Body::range_of(&self.buf, start..body_end),
                        seal: Seal { salt, base: off },
                    }));
                }
            }
            off = next;
        }
        Ok(None)
    }

    /// Loads start again from the index: the record the last one found was not intact.
    pub fn lose_place(&mut self) {
        self.last = None;
    }

    /// Segment `seg` is deleted (or its end cut back): what was read of it goes (and its
    /// memory).
    pub fn forget(&mut self, seg: u64) {
        if self.seg == seg {
            self.buf = Default::default();
            self.len = 0;
        }
        if self.last.is_some_and(|(s, _, _)| s == seg) {
            self.last = None;
        }
    }

    /// At least `need` bytes of segment `seg` from `off` (fewer before `end`), from memory or
    /// read now: `chunk` bytes, or `need` when more.
    ///
    /// A whole stretch comes from the page cache as far as the cache holds it, and the rest
    /// with direct I/O (`file.1`), into this memory: the page cache drops older segments
    /// (see `cache.rs`), and reading one back through it would take a new page of memory
    /// per 4 KiB, which on a virtual machine costs a fault in its host each; the copy out of
    /// those pages was over half of what this thread did while a consumer drained a backlog.
    fn bytes(
        &mut self,
        (file, direct): (&std::fs::File, Option<&std::fs::File>),
        seg: u64,
        off: u64,
        need: usize,
        chunk: usize,
        end: u64,
    ) -> std::io::Result<&[u8]> {
        use std::os::unix::fs::FileExt;
        let left = usize::try_from(end.saturating_sub(off)).unwrap_or(usize::MAX);
        let need = need.min(left);
        let cached =
            self.seg == seg && off >= self.at && off + need as u64 <= self.at + self.len as u64;
        if !cached {
            let size = need.max(chunk).min(left);
            let whole = chunk == Self::SIZE && size <= Self::SIZE;
            self.fresh(size, whole);
            self.seg = seg;
            self.at = off;
            let buf = std::sync::Arc::get_mut(&mut self.buf).expect("a stretch of its own");
            let read = if whole {
                // Where a direct read of the page `off` is in lands aligned.
                // (`align_offset` may give up, with usize::MAX: then no direct I/O.)
                let pad = buf.as_ptr().align_offset(ALIGN).min(ALIGN);
                self.base = pad + (off % ALIGN as u64) as usize;
                let direct = direct.filter(|_| pad < ALIGN);
                read_stretch(file, direct, &mut buf[pad..], off, size)
                    .map(|d| self.direct_reads += u64::from(d))
            } else {
                self.base = 0;
                file.read_exact_at(&mut buf[..size], off)
            };
            if let Err(e) = read {
                self.len = 0;
                return Err(e);
            }
            self.len = size;
        }
        let rel = self.base + (off - self.at) as usize;
        Ok(&self.buf[rel..rel + need])
    }

    /// Make `buf` a buffer of at least `size` bytes that no body uses. A whole stretch
    /// (`whole`) is one a body no longer uses, or a new one; anything else is the size
    /// asked for (a lone load's few KiB, or a record larger than a stretch, which is not
    /// kept after).
    fn fresh(&mut self, size: usize, whole: bool) {
        use std::sync::Arc;
        let old = std::mem::take(&mut self.buf);
        self.len = 0;
        let mut spare = self.spare.0.borrow_mut();
        if old.len() == STRETCH {
            spare.push(old);
        }
        if whole {
            if let Some(i) = spare.iter_mut().position(|b| Arc::get_mut(b).is_some()) {
                self.buf = spare.swap_remove(i);
                return;
            }
        }
        if spare.len() > Self::SPARE {
            // All still in use: the oldest is let go (its memory goes with its last body).
            spare.remove(0);
        }
        drop(spare);
        let n = if whole { STRETCH } else { size };
        self.buf = std::iter::repeat_n(0u8, n).collect();
    }
}

/// Direct I/O's alignment (of file offsets, lengths and memory): a page, which covers any
/// logical block size.
const ALIGN: usize = 4096;

/// A whole stretch's buffer: [`ReadAhead::SIZE`], and room to align a direct read of it.
const STRETCH: usize = ReadAhead::SIZE + 3 * ALIGN;

/// Read `size` bytes at `off` of a segment into `dst` from `off % ALIGN` on (`dst` starts
/// aligned): what the page cache holds, then the rest with direct I/O when there is a
/// `direct` file. Returns whether direct I/O read any of it.
fn read_stretch(
    file: &std::fs::File,
    direct: Option<&std::fs::File>,
    dst: &mut [u8],
    off: u64,
    size: usize,
) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let lead = (off % ALIGN as u64) as usize;
    let Some(direct) = direct else {
        file.read_exact_at(&mut dst[lead..lead + size], off)?;
        return Ok(false);
    };
    // Read through the cache only what it holds whole. A read with RWF_NOWAIT of pages it
    // does not hold starts the kernel reading them into the cache as well, so a dropped
    // stretch would be read twice and come back into memory; with one page of it left (a
    // page shared with the stretch before, say), the next stretch would too.
    let pages = (off + size as u64).div_ceil(ALIGN as u64) - off / ALIGN as u64;
    let got = match super::sys::cached_pages(file, off, size as u64) {
        Some(n) if n < pages => 0,
        _ => super::sys::read_cached(file, &mut dst[lead..lead + size], off)?,
    };
    if got == size {
        return Ok(false);
    }
    // The rest, from the page where the cache stopped, straight into `dst`.
    let page = (off + got as u64) / ALIGN as u64 * ALIGN as u64;
    let at = (page - (off - lead as u64)) as usize;
    let want = (lead + size - at).next_multiple_of(ALIGN);
    let mut n = 0;
    while at + n < lead + size {
        match direct.read_at(&mut dst[at + n..at + want], page + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Direct I/O refused (an odd alignment, say): through the page cache instead.
            Err(_) => break,
        }
        if n % ALIGN != 0 {
            break; // a short read ends a direct read's run
        }
    }
    if at + n >= lead + size {
        return Ok(true);
    }
    let from = lead + got;
    file.read_exact_at(&mut dst[from..lead + size], off + got as u64)?;
    Ok(false)
}

/// The record at `at` of `b` (whose first byte lies at file offset `seal.base`), and its
/// length, if one is there whole and intact.
#[cfg(test)]
fn record_at(b: &[u8], at: usize, seal: Seal) -> Option<(Record, usize)> {
    record_at_with(b, at, true, seal)
}

/// The record at `at` of `b` (whose first byte lies at file offset `seal.base`), and its
/// length, if one is there whole and intact; a message comes with its body only if `body`.
fn record_at_with(b: &[u8], at: usize, body: bool, seal: Seal) -> Option<(Record, usize)> {
    let len = u32_at(b, at)? as usize;
    let b = b.get(at..at + HEADER + len)?;
    let seal = Seal {
        base: seal.base + at as u64,
        ..seal
    };
    if !intact(b, seal) {
        return None;
    }
    Some((decode_payload(&b[HEADER..], body)?, HEADER + len))
}

/// The error of a record read back whose check does not match.
pub fn checksum_mismatch() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "record checksum mismatch")
}

/// Whether `b` is exactly one whole record (whose first byte lies at file offset
/// `seal.base`) whose check matches.
fn intact(b: &[u8], seal: Seal) -> bool {
    whole(b) && intact_with(b, seal, crc32c::crc32c(&b[HEADER..]))
}

/// Whether `b` is exactly one whole record by its header's length.
fn whole(b: &[u8]) -> bool {
    u32_at(b, 0).is_some_and(|len| {
        let len = len as usize;
        len != 0 && len <= MAX_PAYLOAD && b.len() == HEADER + len
    })
}

/// Whether whole record `b`'s check matches, its payload's CRC being `crc`.
fn intact_with(b: &[u8], seal: Seal, crc: u32) -> bool {
    u64_at(b, 4).is_some_and(|check| seal.salt.check_of(seal.base, b.len() - HEADER, crc) == check)
}

/// A message's record that a load found, its check not made yet (see [`intact_all`]).
#[derive(Debug)]
pub struct Found {
    /// Its body: a range of the stretch the record was read into.
    pub body: Body,
    /// The segment's salt, and the record's offset in the file.
    seal: Seal,
}

impl Found {
    /// The whole record (its body's buffer holds it, just before the body).
    fn record(&self) -> &[u8] {
        let (buf, body) = self.body.backing();
        &buf[body.start - HEADER - PUB_FIELDS..body.end]
    }
}

/// Whether each record found is intact, in order: their CRCs three at a time (see
/// `crc.rs`), which costs about a third of one at a time.
pub fn intact_all<'a>(found: impl IntoIterator<Item = &'a Found>) -> Vec<bool> {
    let found: Vec<&Found> = found.into_iter().collect();
    let mut ok = Vec::with_capacity(found.len());
    for group in found.chunks(3) {
        let rec = |i: usize| group.get(i).map_or(&[][..], |f| f.record());
        let payload = |i: usize| rec(i).get(HEADER..).unwrap_or_default();
        let crcs = super::crc::crc32c_3(payload(0), payload(1), payload(2));
        for (i, f) in group.iter().enumerate() {
            let r = rec(i);
            ok.push(whole(r) && intact_with(r, f.seal, crcs[i]));
        }
    }
    ok
}

/// The length of the record at `at` of `b`, one a scan found intact.
pub fn record_len(b: &[u8], at: usize) -> usize {
    HEADER + u32_at(b, at).expect("a scanned record's header") as usize
}

/// The salt in the file header copy at `at` of `b`, if that copy is intact.
fn header_copy(b: &[u8], at: usize) -> Option<Salt> {
    let h = b.get(at..at + COPY)?;
    (h[..8] == MAGIC && u32_at(h, 16)? == crc32c::crc32c(&h[..16]))
        .then(|| Salt(u64_at(h, 8).expect("eight bytes")))
}

/// How a segment file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// This format, with the segment's salt.
    Salted(Salt),
    /// The format before salts: no file header; records `[u32 length][u32 CRC-32C][payload]`.
    Legacy,
    /// Neither: an empty file, a torn or destroyed header.
    Unknown,
}

/// A segment's contents: its layout, its intact records (with their offsets) and the byte
/// ranges that were not (torn or corrupt).
#[derive(Debug)]
pub struct Scan {
    pub layout: Layout,
    pub records: Vec<(usize, Record)>,
    pub bad: Vec<std::ops::Range<usize>>,
}

impl Scan {
    /// The file must be written again: it has bad bytes, or is not in this format.
    pub fn needs_rewrite(&self) -> bool {
        !self.bad.is_empty() || !matches!(self.layout, Layout::Salted(_))
    }

    /// The payload of the intact record at `at` of `b` (the scanned bytes).
    pub fn payload<'a>(&self, b: &'a [u8], at: usize) -> &'a [u8] {
        let header = match self.layout {
            Layout::Legacy => LEGACY_HEADER,
            _ => HEADER,
        };
        let len = u32_at(b, at).expect("a scanned record's header") as usize;
        &b[at + header..at + header + len]
    }
}

/// Read every intact record of a segment. After a bad stretch, reading resumes at the next
/// offset where an intact record starts, so flipped bytes cost only the records they hit and
/// a torn tail is one bad range at the end. Only records this server sealed pass there (see
/// "Why a salt"). A legacy segment is read only along its length fields.
#[cfg(test)]
pub fn scan(b: &[u8]) -> Scan {
    scan_with(b, true)
}

/// [`scan`], but the messages come without their bodies (evicted: they stay in the file), so
/// reading a segment costs no copy of it.
pub fn scan_without_bodies(b: &[u8]) -> Scan {
    scan_with(b, false)
}

fn scan_with(b: &[u8], bodies: bool) -> Scan {
    let mut out = Scan {
        layout: Layout::Unknown,
        records: Vec::new(),
        bad: Vec::new(),
    };
    let first = header_copy(b, 0);
    let Some(salt) = first.or_else(|| header_copy(b, COPY)) else {
        if legacy::starts(b) {
            out.layout = Layout::Legacy;
            legacy::scan(b, bodies, &mut out);
        } else if !b.is_empty() {
            out.bad.push(0..b.len());
        }
        return out;
    };
    out.layout = Layout::Salted(salt);
    if first.is_none() {
        out.bad.push(0..COPY);
    } else if header_copy(b, COPY) != Some(salt) {
        out.bad.push(COPY..FILE_HEADER.min(b.len()));
    }
    let seal = Seal { salt, base: 0 };
    let mut at = FILE_HEADER;
    while at < b.len() {
        if let Some((rec, n)) = record_at_with(b, at, bodies, seal) {
            out.records.push((at, rec));
            at += n;
            continue;
        }
        let bad_start = at;
        at += 1;
        while at < b.len() && record_at_with(b, at, false, seal).is_none() {
            at += 1;
        }
        out.bad.push(bad_start..at);
    }
    out
}

/// A legacy record's header: payload length and a plain CRC-32C of the payload.
const LEGACY_HEADER: usize = 8;

/// Append a legacy record (for tests: segments as the store wrote them before salts).
#[cfg(test)]
pub fn put_legacy(out: &mut Vec<u8>, rec: &Record) {
    let mut b = Vec::new();
    let seal = Seal {
        salt: Salt(0),
        base: 0,
    };
    match rec {
        Record::Mark { last_id } => put_mark(&mut b, seal, *last_id),
        Record::Pub { held, due, msg } => put_pub(&mut b, seal, *held, *due, msg),
        Record::Fin { key, ids } => put_fin(&mut b, seal, *key, ids),
        Record::Req { key, id, due } => put_req(&mut b, seal, *key, *id, *due),
        Record::Dispatch => put_dispatch(&mut b, seal),
        Record::DropHeld => put_drop_held(&mut b, seal),
    }
    // The payload is the same in both formats; only the header differs.
    let payload = &b[HEADER..];
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Segments written before salts: read once, when the store opens, and written again salted.
mod legacy {
    use super::*;

    fn record_at(b: &[u8], at: usize, bodies: bool) -> Option<(Record, usize)> {
        let len = u32_at(b, at)? as usize;
        let crc = u32_at(b, at + 4)?;
        if len == 0 || len > MAX_PAYLOAD {
            return None;
        }
        let payload = b.get(at + LEGACY_HEADER..at + LEGACY_HEADER + len)?;
        if crc32c::crc32c(payload) != crc {
            return None;
        }
        Some((decode_payload(payload, bodies)?, LEGACY_HEADER + len))
    }

    /// A legacy segment starts with its mark (or, that mark damaged, with a mark's length
    /// followed by an intact record).
    pub(super) fn starts(b: &[u8]) -> bool {
        const MARK_LEN: usize = LEGACY_HEADER + 9;
        matches!(record_at(b, 0, false), Some((Record::Mark { .. }, _)))
            || (u32_at(b, 0) == Some(9) && record_at(b, MARK_LEN, false).is_some())
    }

    /// Its intact records. A bad one is skipped only when its length field leads to an intact
    /// record; otherwise the rest of the file is bad. There is no search for the next record:
    /// a plain CRC-32C is one a client can compute for a record it puts in a body.
    pub(super) fn scan(b: &[u8], bodies: bool, out: &mut Scan) {
        let mut at = 0;
        while at < b.len() {
            if let Some((rec, n)) = record_at(b, at, bodies) {
                out.records.push((at, rec));
                at += n;
                continue;
            }
            let next = u32_at(b, at)
                .and_then(|len| at.checked_add(LEGACY_HEADER + len as usize))
                .filter(|&n| n < b.len() && record_at(b, n, false).is_some());
            match next {
                Some(n) => {
                    out.bad.push(at..n);
                    at = n;
                }
                None => {
                    out.bad.push(at..b.len());
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The salt of the segments these tests write.
    const S: Salt = Salt(0x005e_ed0f_7e57);

    /// Records for a buffer that starts a file.
    fn seal0() -> Seal {
        Seal { salt: S, base: 0 }
    }

    fn pub_record(out: &mut Vec<u8>, id: u64, body: &[u8]) -> u64 {
        let at = out.len() as u64;
        put_pub(
            out,
            seal0(),
            false,
            None,
            &Message::new(MessageId(id), 0, body.into()),
        );
        at
    }

    /// A segment file of `bodies` (message i + 1 has body `bodies[i]`) with a FIN record
    /// after each message; the messages' offsets.
    fn segment(name: &str, bodies: &[Vec<u8>]) -> (std::path::PathBuf, Vec<u64>, u64) {
        let path = std::env::temp_dir().join(format!("nsqlab-{name}-{}", std::process::id()));
        let mut b = new_segment(S, MessageId(0));
        let offs = (0..bodies.len())
            .map(|i| {
                let at = pub_record(&mut b, i as u64 + 1, &bodies[i]);
                put_fin(&mut b, seal0(), 0, &[MessageId(i as u64 + 1)]);
                at
            })
            .collect();
        std::fs::write(&path, &b).unwrap();
        (path, offs, b.len() as u64)
    }

    #[test]
    fn a_load_reads_forward_to_its_record_and_the_next_follows_from_memory() {
        let bodies: Vec<Vec<u8>> = (1..=200u8).map(|i| vec![i; 100]).collect();
        let (path, offs, end) = segment("ahead", &bodies);
        let file = std::fs::File::open(&path).unwrap();
        let mut ahead = ReadAhead::default();
        let find = |ahead: &mut ReadAhead, from, id: u64, exact| {
            ahead
                .find((&file, None), 7, S, from, end, MessageId(id), exact)
                .unwrap()
                .map(|b| b.to_vec())
        };
        // From the first record of the segment (past other records) to message 50.
        let first = FILE_HEADER as u64;
        assert_eq!(find(&mut ahead, first, 50, false), Some(vec![50; 100]));
        // The next load resumes after it (at the FIN record that follows)...
        let pub_len = (HEADER + PUB_FIELDS + 100) as u64;
        assert_eq!(ahead.resume(7, 1, 51), Some(offs[49] + pub_len));
        assert_eq!(ahead.resume(7, 1, 50), None);
        assert_eq!(ahead.resume(8, 1, 51), None);
        // ...and once past what the first load read, reads a whole stretch ahead: the rest
        // comes from memory, with the file gone.
        let load_from_last = |ahead: &mut ReadAhead, id: u64| {
            let from = ahead.resume(7, 1, id).unwrap();
            assert_eq!(find(ahead, from, id, false), Some(vec![id as u8; 100]));
        };
        for id in 51..=120u64 {
            load_from_last(&mut ahead, id);
        }
        assert_eq!(ahead.len as u64, end - ahead.at);
        std::fs::File::create(&path).unwrap();
        for id in 121..=200u64 {
            load_from_last(&mut ahead, id);
        }
        // Not in the segment: beyond the last.
        assert_eq!(find(&mut ahead, offs[150], 300, false), None);
        // Its segment deleted, the stretch goes, and nothing resumes in it.
        assert!(ahead.len > 0);
        ahead.forget(7);
        assert!(ahead.len == 0 && ahead.resume(7, 1, 201).is_none());
        let _ = std::fs::remove_file(&path);
    }

    /// Message `id`'s body from segment `seg` (records at `offs`, `end` long), read on from
    /// the last load or else from its own record, as the loader thread does.
    fn load(
        ahead: &mut ReadAhead,
        files: (&std::fs::File, Option<&std::fs::File>),
        (seg, offs, end): (u64, &[u64], u64),
        id: u64,
    ) -> Body {
        let from = ahead.resume(seg, 1, id).unwrap_or(offs[id as usize - 1]);
        let body = ahead.find(files, seg, S, from, end, MessageId(id), false);
        body.unwrap().expect("stored")
    }

    #[test]
    fn bodies_are_ranges_of_their_stretch_which_is_read_into_again_once_none_is_used() {
        // Records of bodies a 256th of a stretch: a stretch holds about 250 of them.
        const N: usize = ReadAhead::SIZE / 256;
        let bodies: Vec<Vec<u8>> = (0..2000u32).map(|i| vec![i as u8; N]).collect();
        let (path, offs, end) = segment("shared", &bodies);
        let file = std::fs::File::open(&path).unwrap();
        let mut ahead = ReadAhead::default();
        let load = |ahead: &mut ReadAhead, id: u64| {
            let body = load(ahead, (&file, None), (3, &offs, end), id);
            assert_eq!(&body[..], &[(id - 1) as u8; N][..]);
            body
        };
        // Bodies held (in flight, say) keep their stretches: each new one is new memory.
        let held: Vec<Body> = (1..=1000).map(|id| load(&mut ahead, id)).collect();
        assert!(held.iter().all(Body::shares_buffer));
        assert!(held[0].as_ptr() < held[1].as_ptr() && held[1].as_ptr() < held[2].as_ptr());
        let first = held[0].as_ptr();
        assert!(ahead.spare.0.borrow().len() >= 3);
        // Once they are gone, the next stretches are read into the same memory again.
        drop(held);
        let mut again = false;
        for id in 1001..=2000 {
            let b = load(&mut ahead, id);
            let range = first as usize..first as usize + STRETCH;
            again |= range.contains(&(b.as_ptr() as usize));
        }
        assert!(again, "a spare stretch is read into again");
        assert!(ahead.spare.0.borrow().len() <= ReadAhead::SPARE + 1);
        assert_eq!(ahead.direct_reads, 0);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn topics_share_one_set_of_spare_stretches() {
        let n = ReadAhead::SIZE / 256;
        let bodies: Vec<Vec<u8>> = (0..1000u32).map(|i| vec![i as u8; n]).collect();
        let (path, offs, end) = segment("spare", &bodies);
        let file = std::fs::File::open(&path).unwrap();
        let spare = Spare::default();
        // Twenty topics each read the segment through (four stretches or so), and the
        // bodies stay in use (in flight, say).
        let mut held = Vec::new();
        for _ in 0..20 {
            let mut ahead = ReadAhead::sharing(&spare);
            for id in 1..=1000u64 {
                held.push(load(&mut ahead, (&file, None), (3, &offs, end), id));
            }
        }
        // The stretches kept for reading into again are the thread's few, not each topic's.
        assert_eq!(spare.0.borrow().len(), ReadAhead::SPARE);
        drop(held);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn what_the_page_cache_dropped_is_read_with_direct_io_and_the_rest_from_the_cache() {
        use std::os::unix::fs::FileExt;
        // Bodies of odd sizes, so records straddle pages and stretches: about 4 MB.
        let bodies: Vec<Vec<u8>> = (0..6000u32)
            .map(|i| vec![i as u8; 300 + (i as usize % 7) * 111])
            .collect();
        let (path, offs, end) = segment("direct", &bodies);
        let file = std::fs::File::open(&path).unwrap();
        file.sync_all().unwrap();
        let direct = super::super::sys::open_direct(&path)
            .expect("the temporary directory's file system does direct I/O");
        super::super::sys::no_read_ahead(&file);
        // The cache drops the file (as it drops older segments), then holds its second
        // half again.
        super::super::sys::drop_cached(&file, 0, 0);
        let half = end / 2;
        let mut b = vec![0; (end - half) as usize];
        file.read_exact_at(&mut b, half).unwrap();
        let dropped_half = |f| super::super::sys::cached_pages(f, 0, half / 4096 * 4096);
        let mut ahead = ReadAhead::default();
        let mut before = None;
        for id in 1..=bodies.len() as u64 {
            let got = load(&mut ahead, (&file, Some(&direct)), (5, &offs, end), id);
            assert_eq!(&got[..], &bodies[id as usize - 1][..], "message {id}");
            // (The first load of a run is a small read through the cache.)
            before = before.or(Some(dropped_half(&file)));
        }
        let before = before.unwrap();
        let stretches = end.div_ceil(ReadAhead::SIZE as u64);
        let d = ahead.direct_reads;
        assert!(
            d >= stretches / 2 - 1,
            "{d} of {stretches} stretches read directly"
        );
        assert!(
            d <= stretches / 2 + 1,
            "{d} of {stretches} stretches read directly"
        );
        // What was read directly did not come back into the page cache.
        assert_eq!(
            dropped_half(&file),
            before,
            "pages of the dropped half cached (after the first load: {before:?})"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_lone_load_reads_little_and_a_large_record_whole() {
        let mut bodies: Vec<Vec<u8>> = (1..=20u8).map(|i| vec![i; 100]).collect();
        bodies[9] = vec![b'L'; 3 * ReadAhead::SIZE];
        let (path, offs, end) = segment("lone", &bodies);
        let file = std::fs::File::open(&path).unwrap();
        let mut ahead = ReadAhead::default();
        let got = ahead
            .find((&file, None), 1, S, offs[4], end, MessageId(5), true)
            .unwrap();
        assert_eq!(got.as_deref(), Some(&[5u8; 100][..]));
        assert_eq!(ahead.len, ReadAhead::LONE);
        // A record larger than any stretch is read whole; its buffer is not kept after.
        let got = ahead
            .find((&file, None), 1, S, offs[9], end, MessageId(10), true)
            .unwrap();
        assert_eq!(got.map(|b| b.len()), Some(3 * ReadAhead::SIZE));
        let got = ahead
            .find((&file, None), 1, S, offs[15], end, MessageId(16), true)
            .unwrap();
        assert_eq!(got.as_deref(), Some(&[16u8; 100][..]));
        assert!(ahead.buf.len() <= STRETCH);
        // Skipping over the large one to a later message works too.
        let got = ahead
            .find((&file, None), 1, S, offs[8], end, MessageId(12), false)
            .unwrap();
        assert_eq!(got.as_deref(), Some(&[12u8; 100][..]));
        // A length that runs past the end is an error, not a guess.
        let err = ahead.find(
            (&file, None),
            1,
            S,
            offs[19],
            offs[19] + 50,
            MessageId(20),
            true,
        );
        assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::InvalidData);
        let _ = std::fs::remove_file(&path);
    }

    fn sample() -> (Vec<u8>, Vec<Record>) {
        let mut m = Message::new(MessageId(42), 7, b"hello".into());
        m.attempts = 3;
        let recs = vec![
            Record::Mark {
                last_id: MessageId(1),
            },
            Record::Pub {
                held: true,
                due: Some(99),
                msg: m,
            },
            Record::Fin {
                key: 2,
                ids: vec![MessageId(42)],
            },
            Record::Fin {
                key: 3,
                ids: vec![MessageId(43), MessageId(7), MessageId(u64::MAX)],
            },
            Record::Req {
                key: 2,
                id: MessageId(42),
                due: 5,
            },
            Record::Dispatch,
            Record::DropHeld,
        ];
        let mut b = Vec::new();
        put_file_header(&mut b, S);
        let o = seal0();
        for r in &recs {
            match r {
                Record::Mark { last_id } => put_mark(&mut b, o, *last_id),
                Record::Pub { held, due, msg } => put_pub(&mut b, o, *held, *due, msg),
                Record::Fin { key, ids } => put_fin(&mut b, o, *key, ids),
                Record::Req { key, id, due } => put_req(&mut b, o, *key, *id, *due),
                Record::Dispatch => put_dispatch(&mut b, o),
                Record::DropHeld => put_drop_held(&mut b, o),
            }
        }
        (b, recs)
    }

    fn records(s: &Scan) -> Vec<Record> {
        s.records.iter().map(|(_, r)| r.clone()).collect()
    }

    #[test]
    fn round_trip() {
        let (b, recs) = sample();
        let s = scan(&b);
        assert_eq!(records(&s), recs);
        assert!(s.bad.is_empty());
        assert_eq!(s.layout, Layout::Salted(S));
        assert!(!s.needs_rewrite());
        // Without bodies: the same records, the message's body left in the file.
        let s = scan_without_bodies(&b);
        let bodiless: Vec<Record> = recs
            .iter()
            .cloned()
            .map(|mut r| {
                if let Record::Pub { msg, .. } = &mut r {
                    msg.body = nsqlab_core::message::evicted_body();
                }
                r
            })
            .collect();
        assert_eq!(records(&s), bodiless);
        for (at, _) in &s.records {
            assert_eq!(
                record_at(&b, *at, seal0()).map(|(_, n)| n),
                Some(record_len(&b, *at))
            );
        }
    }

    #[test]
    fn a_torn_tail_is_one_bad_range_and_the_prefix_survives() {
        let (b, recs) = sample();
        for cut in FILE_HEADER..b.len() {
            let s = scan(&b[..cut]);
            let got = records(&s);
            assert_eq!(got[..], recs[..got.len()], "cut at {cut}");
            let good_end = s.records.last().map_or(FILE_HEADER, |(at, _)| {
                *at + record_at(&b[..cut], *at, seal0()).expect("intact").1
            });
            if good_end < cut {
                assert_eq!(s.bad, vec![good_end..cut], "cut at {cut}");
            }
        }
    }

    #[test]
    fn a_flipped_byte_costs_only_the_record_it_hits() {
        let (b, recs) = sample();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x40;
            let got = records(&scan(&c));
            assert!(got.len() >= recs.len() - 1, "flip at {i}: {got:?}");
            for r in &got {
                assert!(recs.contains(r), "flip at {i}: invented {r:?}");
            }
        }
    }

    /// PUB records appended unsealed and sealed later, in threes and singly, are byte for
    /// byte the records `put_pub` writes, wherever the buffer lies in its file.
    #[test]
    fn sealed_later_is_sealed_now() {
        let sizes = [1usize, 7, 8, 9, 200, 33, 1000, 64, 2, 150];
        for n in 0..=sizes.len() {
            for base in [0u64, 4096 + 3] {
                let seal = Seal { salt: S, base };
                let (mut now, mut later, mut starts) = (Vec::new(), Vec::new(), Vec::new());
                put_fin(&mut now, seal, 1, &[MessageId(9)]);
                put_fin(&mut later, seal, 1, &[MessageId(9)]);
                for (i, &size) in sizes[..n].iter().enumerate() {
                    let body: Vec<u8> = (0..size).map(|b| (b * 31 + i) as u8).collect();
                    let m = Message::new(MessageId(i as u64 + 10), 5, body.into());
                    put_pub(&mut now, seal, i % 2 == 0, Some(i as Time), &m);
                    starts.push(put_pub_unsealed(
                        &mut later,
                        i % 2 == 0,
                        Some(i as Time),
                        &m,
                    ));
                }
                if n == 0 {
                    assert_eq!(now, later);
                    continue;
                }
                assert_ne!(now, later, "not sealed yet");
                seal_checks(&mut later, seal, &starts);
                assert_eq!(now, later, "{n} records at base {base}");
            }
        }
    }

    fn msg(id: u64, body: &[u8]) -> Record {
        Record::Pub {
            held: false,
            due: None,
            msg: Message::new(MessageId(id), 0, body.into()),
        }
    }

    /// What a publisher who knows the format, but not the segment's salt, could put in a
    /// body: a FIN of message 5 (someone else's) and a PUB of its own with a high ID, in the
    /// legacy format and in this one sealed with `salts` for exactly where they will lie
    /// (the body starts at file offset `body_at`).
    fn forged_body(body_at: u64, salts: &[Salt]) -> Vec<u8> {
        let mut body = b"carrier ".to_vec();
        put_legacy(
            &mut body,
            &Record::Fin {
                key: 0,
                ids: vec![MessageId(5)],
            },
        );
        put_legacy(&mut body, &msg(1000, b"FORGED"));
        for &salt in salts {
            let seal = Seal {
                salt,
                base: body_at,
            };
            put_fin(&mut body, seal, 0, &[MessageId(5)]);
            put_pub(
                &mut body,
                seal,
                false,
                None,
                &Message::new(MessageId(1001), 0, b"FORGED".as_slice().into()),
            );
        }
        body.extend_from_slice(b" end of the carrier");
        body
    }

    /// A segment: mark, message 5, the carrier (message 6, its body from `forged_body`),
    /// messages 7..=12. Returns the bytes and the carrier's offset and length.
    fn carrier_segment(salt_guesses: &[Salt]) -> (Vec<u8>, usize, usize) {
        let mut b = new_segment(S, MessageId(0));
        pub_record(&mut b, 5, b"victim");
        let at = b.len();
        let body = forged_body((at + HEADER + PUB_FIELDS) as u64, salt_guesses);
        let seal = seal0();
        put_pub(
            &mut b,
            seal,
            false,
            None,
            &Message::new(MessageId(6), 0, body.into()),
        );
        let len = b.len() - at;
        for id in 7..=12 {
            pub_record(&mut b, id, format!("after {id}").as_bytes());
        }
        (b, at, len)
    }

    /// Every way to damage the carrier: torn (cut inside its body, after the forged
    /// records), its check flipped, its length flipped (shorter, longer, wild), a payload
    /// byte flipped before the forged records.
    fn damages(b: &[u8], at: usize, len: usize) -> Vec<(String, Vec<u8>)> {
        let mut out = vec![("torn".to_string(), b[..at + len - 5].to_vec())];
        let mut flip = |name: &str, i: usize, x: u8| {
            let mut c = b.to_vec();
            c[i] ^= x;
            out.push((name.to_string(), c));
        };
        flip("check", at + 4, 0x01);
        flip("check high", at + HEADER - 1, 0x80);
        flip("length shorter", at, 0x10);
        flip("length longer", at + 1, 0x01);
        flip("length wild", at + 3, 0x40);
        flip("payload", at + HEADER + PUB_FIELDS + 2, 0x20);
        out
    }

    fn ids(s: &Scan) -> Vec<u64> {
        s.records
            .iter()
            .filter_map(|(_, r)| match r {
                Record::Pub { msg, .. } => Some(msg.id.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn records_a_client_puts_in_a_body_are_never_read_back_whatever_the_damage() {
        let guesses = [Salt(0), Salt(1), Salt(u64::MAX), Salt(0x005e_ed0f_7e56)];
        let (b, at, len) = carrier_segment(&guesses);
        assert_eq!(ids(&scan(&b)), vec![5, 6, 7, 8, 9, 10, 11, 12]);
        for (damage, c) in damages(&b, at, len) {
            let s = scan(&c);
            let got = ids(&s);
            let fins = s
                .records
                .iter()
                .filter(|(_, r)| matches!(r, Record::Fin { .. }));
            assert_eq!(fins.count(), 0, "{damage}: a forged FIN was read back");
            let want: Vec<u64> = if damage == "torn" {
                vec![5]
            } else {
                vec![5, 7, 8, 9, 10, 11, 12]
            };
            assert_eq!(got, want, "{damage}: {:?}", s.bad);
            assert!(s.needs_rewrite(), "{damage}");
        }
    }

    /// The test above can fail: the same forged records sealed with the segment's own salt
    /// (which no client has) are read back after the damage.
    #[test]
    fn a_forger_who_knew_the_salt_would_succeed() {
        let (b, at, len) = carrier_segment(&[S]);
        let forged = damages(&b, at, len).into_iter().filter(|(_, c)| {
            let s = scan(c);
            ids(&s).contains(&1001)
                && s.records
                    .iter()
                    .any(|(_, r)| matches!(r, Record::Fin { .. }))
        });
        assert!(
            forged.count() >= 3,
            "torn, check and payload damage all resume inside the body"
        );
    }

    #[test]
    fn a_record_moved_or_in_another_segment_fails_its_check() {
        let mut b = Vec::new();
        put_fin(&mut b, Seal { salt: S, base: 100 }, 1, &[MessageId(9)]);
        let fin = (
            Record::Fin {
                key: 1,
                ids: vec![MessageId(9)],
            },
            b.len(),
        );
        assert_eq!(record_at(&b, 0, Seal { salt: S, base: 100 }), Some(fin));
        assert_eq!(record_at(&b, 0, Seal { salt: S, base: 101 }), None);
        assert_eq!(
            record_at(
                &b,
                0,
                Seal {
                    salt: Salt(7),
                    base: 100
                }
            ),
            None
        );
        assert_ne!(Salt::random(), Salt::random());
    }

    #[test]
    fn either_copy_of_the_file_header_is_enough() {
        let (b, recs) = sample();
        let mut c = b.clone();
        c[3] ^= 1;
        let s = scan(&c);
        assert_eq!((s.layout, records(&s)), (Layout::Salted(S), recs.clone()));
        assert_eq!(s.bad, vec![0..COPY]);
        let mut c = b.clone();
        c[COPY + 9] ^= 1;
        let s = scan(&c);
        assert_eq!((s.layout, records(&s)), (Layout::Salted(S), recs));
        assert_eq!(s.bad, vec![COPY..FILE_HEADER]);
        c[3] ^= 1;
        let s = scan(&c);
        assert_eq!((s.layout, s.records.len()), (Layout::Unknown, 0));
        assert_eq!(s.bad, vec![0..c.len()]);
        // An empty file (made, then a crash before its header was written) is one too.
        let s = scan(&[]);
        assert!(s.layout == Layout::Unknown && s.bad.is_empty() && s.needs_rewrite());
    }

    #[test]
    fn a_legacy_segment_is_read_along_its_length_fields_only() {
        let mut b = Vec::new();
        put_legacy(
            &mut b,
            &Record::Mark {
                last_id: MessageId(0),
            },
        );
        put_legacy(&mut b, &msg(5, b"victim"));
        let at = b.len();
        put_legacy(&mut b, &msg(6, &forged_body(0, &[])));
        let len = b.len() - at;
        for id in 7..=9 {
            put_legacy(&mut b, &msg(id, b"after"));
        }
        let s = scan(&b);
        assert_eq!((s.layout, ids(&s)), (Layout::Legacy, vec![5, 6, 7, 8, 9]));
        assert!(s.needs_rewrite(), "converted when the store opens");
        let payload = s.payload(&b, at);
        assert_eq!(payload.len(), len - LEGACY_HEADER);
        // Its CRC flipped, the carrier is skipped by its length; its length flipped, the rest
        // of the file is set aside; nothing inside the body is read.
        let mut c = b.clone();
        c[at + 5] ^= 1;
        assert_eq!(ids(&scan(&c)), vec![5, 7, 8, 9]);
        let mut c = b.clone();
        c[at] ^= 0x10;
        let s = scan(&c);
        assert_eq!(ids(&s), vec![5]);
        assert_eq!(s.bad, vec![at..c.len()]);
        // Torn inside the body.
        let s = scan(&b[..at + len - 5]);
        assert_eq!(ids(&s), vec![5]);
        // A damaged mark is still recognised by its length and the record after it.
        let mut c = b.clone();
        c[6] ^= 1;
        let s = scan(&c);
        assert_eq!((s.layout, ids(&s)), (Layout::Legacy, vec![5, 6, 7, 8, 9]));
    }
}
