//! The log's record format and a reader that survives torn and corrupt files.
//!
//! # Format
//! A segment file is a sequence of records:
//!
//! ```text
//! [u32 LE payload length][u32 LE CRC-32C of the payload][payload]
//! payload = [u8 kind][fields…]
//!   1 PUB       u8 flags (bit 0: held), u64 due (0: none), u64 id, u64 timestamp,
//!               u16 attempts, body (the rest)
//!   2 FIN       u32 channel key, u64 id
//!   3 REQ       u32 channel key, u64 id, u64 due
//!   4 DISPATCH  (nothing: every held message went to the channels)
//!   5 DROPHELD  (nothing: the topic was emptied)
//!   6 MARK      u64 last id (first record of every segment: later IDs are above it)
//! ```
//! Integers are little-endian; times are Unix nanoseconds.

use nsqlab_core::{Message, MessageId, Time};

pub const HEADER: usize = 8;
/// No record is larger than this (a message is at most `--max-msg-size`, far below).
pub const MAX_PAYLOAD: usize = 1 << 30;

const PUB: u8 = 1;
const FIN: u8 = 2;
const REQ: u8 = 3;
const DISPATCH: u8 = 4;
const DROP_HELD: u8 = 5;
const MARK: u8 = 6;

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
        id: MessageId,
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

/// Append a record with its header and checksum.
fn frame(out: &mut Vec<u8>, payload_len: usize, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&(payload_len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    write(out);
    debug_assert_eq!(out.len() - start - HEADER, payload_len);
    let crc = crc32c::crc32c(&out[start + HEADER..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

pub fn put_pub(out: &mut Vec<u8>, held: bool, due: Option<Time>, msg: &Message) {
    frame(out, 1 + 1 + 8 + 8 + 8 + 2 + msg.body.len(), |o| {
        o.push(PUB);
        o.push(held as u8);
        o.extend_from_slice(&due.unwrap_or(0).to_le_bytes());
        o.extend_from_slice(&msg.id.0.to_le_bytes());
        o.extend_from_slice(&msg.timestamp.to_le_bytes());
        o.extend_from_slice(&msg.attempts.to_le_bytes());
        o.extend_from_slice(&msg.body);
    });
}

pub fn put_fin(out: &mut Vec<u8>, key: u32, id: MessageId) {
    frame(out, 1 + 4 + 8, |o| {
        o.push(FIN);
        o.extend_from_slice(&key.to_le_bytes());
        o.extend_from_slice(&id.0.to_le_bytes());
    });
}

pub fn put_req(out: &mut Vec<u8>, key: u32, id: MessageId, due: Time) {
    frame(out, 1 + 4 + 8 + 8, |o| {
        o.push(REQ);
        o.extend_from_slice(&key.to_le_bytes());
        o.extend_from_slice(&id.0.to_le_bytes());
        o.extend_from_slice(&due.to_le_bytes());
    });
}

pub fn put_dispatch(out: &mut Vec<u8>) {
    frame(out, 1, |o| o.push(DISPATCH));
}

pub fn put_drop_held(out: &mut Vec<u8>) {
    frame(out, 1, |o| o.push(DROP_HELD));
}

pub fn put_mark(out: &mut Vec<u8>, last_id: MessageId) {
    frame(out, 1 + 8, |o| {
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

/// Decode a payload whose checksum matched.
fn decode_payload(p: &[u8]) -> Option<Record> {
    let rec = match *p.first()? {
        PUB => {
            let held = *p.get(1)? & 1 == 1;
            let due = u64_at(p, 2)?;
            let id = MessageId(u64_at(p, 10)?);
            let timestamp = u64_at(p, 18)?;
            let attempts = u16::from_le_bytes(p.get(26..28)?.try_into().ok()?);
            let mut msg = Message::new(id, timestamp, p.get(28..)?.into());
            msg.attempts = attempts;
            Record::Pub {
                held,
                due: (due != 0).then_some(due),
                msg,
            }
        }
        FIN if p.len() == 13 => Record::Fin {
            key: u32_at(p, 1)?,
            id: MessageId(u64_at(p, 5)?),
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

/// Read the record at `offset` of `file` (a body evicted from memory).
pub fn read_at(file: &std::fs::File, offset: u64) -> std::io::Result<Record> {
    use std::os::unix::fs::FileExt;
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut head = [0u8; HEADER];
    file.read_exact_at(&mut head, offset)?;
    let len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
    let file_len = file.metadata()?.len();
    if len == 0 || len > MAX_PAYLOAD || offset + (HEADER + len) as u64 > file_len {
        return Err(bad("bad record length"));
    }
    let mut payload = vec![0u8; len];
    file.read_exact_at(&mut payload, offset + HEADER as u64)?;
    if crc32c::crc32c(&payload) != crc {
        return Err(bad("record checksum mismatch"));
    }
    decode_payload(&payload).ok_or_else(|| bad("undecodable record"))
}

/// A stretch of a segment read ahead for loading evicted bodies: consumers load a backlog in
/// order, and one read of [`ReadAhead::SIZE`] then serves the thousand records after it
/// (one `pread` per record cost more than the rest of a delivery). Only a load that follows
/// the one before it (a little further on in the same segment) reads ahead: deferred
/// messages coming due here and there read just their own record.
#[derive(Debug, Default)]
pub struct ReadAhead {
    seg: u64,
    at: u64,
    buf: Vec<u8>,
    /// The segment and offset of the last load.
    last: Option<(u64, u64)>,
}

impl ReadAhead {
    pub const SIZE: usize = 256 << 10;
    /// How far after the last load the next one still follows it.
    const FOLLOWS: u64 = 64 << 10;

    /// The intact record at `offset` of segment `seg` (whose file is `file`): from the
    /// stretch in memory, or read ahead from there when this load follows the last. `None`
    /// when it is not whole in memory: a lone load, a record larger than a stretch, or a
    /// torn or corrupt one (the caller reads it alone, for the error).
    pub fn record(&mut self, file: &std::fs::File, seg: u64, offset: u64) -> Option<Record> {
        let last = self.last.replace((seg, offset));
        if let Some(r) = self.cached(seg, offset) {
            return Some(r);
        }
        let follows =
            last.is_some_and(|(s, o)| s == seg && offset > o && offset - o <= Self::FOLLOWS);
        if !follows {
            return None;
        }
        self.seg = seg;
        self.fill(file, offset).ok()?;
        self.cached(seg, offset)
    }

    /// Segment `seg` is deleted: what was read of it goes (and its memory).
    pub fn forget(&mut self, seg: u64) {
        if self.seg == seg && !self.buf.is_empty() {
            self.buf = Vec::new();
        }
    }

    fn cached(&self, seg: u64, offset: u64) -> Option<Record> {
        if seg != self.seg {
            return None;
        }
        let rel = usize::try_from(offset.checked_sub(self.at)?).ok()?;
        record_at(&self.buf, rel).map(|(r, _)| r)
    }

    /// Read up to `SIZE` bytes from `offset` (fewer at the end of the file).
    fn fill(&mut self, file: &std::fs::File, offset: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.buf.clear();
        self.buf.resize(Self::SIZE, 0);
        self.at = offset;
        let mut n = 0;
        let result = loop {
            match file.read_at(&mut self.buf[n..], offset + n as u64) {
                Ok(0) => break Ok(()),
                Ok(k) => {
                    n += k;
                    if n == self.buf.len() {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.buf.truncate(if result.is_ok() { n } else { 0 });
        result
    }
}

/// The record starting at `at`, and its length, if one is there whole and intact.
fn record_at(b: &[u8], at: usize) -> Option<(Record, usize)> {
    let len = u32_at(b, at)? as usize;
    let crc = u32_at(b, at + 4)?;
    if len == 0 || len > MAX_PAYLOAD {
        return None;
    }
    let payload = b.get(at + HEADER..at + HEADER + len)?;
    if crc32c::crc32c(payload) != crc {
        return None;
    }
    Some((decode_payload(payload)?, HEADER + len))
}

/// A segment's contents: its intact records (with their offsets) and the byte ranges that were
/// not (torn or corrupt).
#[derive(Debug, Default)]
pub struct Scan {
    pub records: Vec<(usize, Record)>,
    pub bad: Vec<std::ops::Range<usize>>,
}

/// Read every intact record of a segment. After a bad stretch, reading resumes at the next
/// offset where an intact record starts (a CRC-32C match), so flipped bytes cost only the
/// records they hit; a torn tail is one bad range at the end.
pub fn scan(b: &[u8]) -> Scan {
    let mut out = Scan::default();
    let mut at = 0;
    while at < b.len() {
        if let Some((rec, n)) = record_at(b, at) {
            out.records.push((at, rec));
            at += n;
            continue;
        }
        let bad_start = at;
        at += 1;
        while at < b.len() && record_at(b, at).is_none() {
            at += 1;
        }
        out.bad.push(bad_start..at);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pub_record(out: &mut Vec<u8>, id: u64, body: &[u8]) -> u64 {
        let at = out.len() as u64;
        put_pub(
            out,
            false,
            None,
            &Message::new(MessageId(id), 0, body.into()),
        );
        at
    }

    fn body_of(r: Option<Record>) -> Option<(u64, Vec<u8>)> {
        match r? {
            Record::Pub { msg, .. } => Some((msg.id.0, msg.body.to_vec())),
            _ => None,
        }
    }

    #[test]
    fn read_ahead_serves_the_records_after_one_read_and_reads_again_past_them() {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!("nsqlab-ahead-{}", std::process::id()));
        let mut b = Vec::new();
        let small: Vec<u64> = (1..=3)
            .map(|i| pub_record(&mut b, i, &[i as u8; 100]))
            .collect();
        let big = pub_record(&mut b, 4, &vec![4; ReadAhead::SIZE]);
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&b).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut ahead = ReadAhead::default();
        let got = |ahead: &mut ReadAhead, seg, off| body_of(ahead.record(&file, seg, off));
        // A first load reads nothing ahead (the caller reads its record alone).
        assert_eq!(ahead.record(&file, 7, small[0]), None);
        // One that follows it does.
        assert_eq!(got(&mut ahead, 7, small[1]), Some((2, vec![2; 100])));
        // The next ones come from memory: the file is gone from under them.
        f.set_len(0).unwrap();
        assert_eq!(got(&mut ahead, 7, small[2]), Some((3, vec![3; 100])));
        assert_eq!(got(&mut ahead, 7, small[1]), Some((2, vec![2; 100])));
        // Another segment at the same offset is not this one.
        assert_eq!(ahead.record(&file, 8, small[1]), None);
        // Appended after the read, and far from the last load: read alone, then followed.
        f.write_all(&b).unwrap();
        let more = b.len() as u64;
        assert_eq!(ahead.record(&file, 7, more + small[0]), None);
        assert_eq!(got(&mut ahead, 7, more + small[1]), Some((2, vec![2; 100])));
        // Larger than a stretch: not whole in memory.
        assert_eq!(ahead.record(&file, 7, more + big), None);
        // Its segment deleted, the stretch goes.
        assert!(!ahead.buf.is_empty());
        ahead.forget(7);
        assert!(ahead.buf.is_empty());
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
                id: MessageId(42),
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
        for r in &recs {
            match r {
                Record::Mark { last_id } => put_mark(&mut b, *last_id),
                Record::Pub { held, due, msg } => put_pub(&mut b, *held, *due, msg),
                Record::Fin { key, id } => put_fin(&mut b, *key, *id),
                Record::Req { key, id, due } => put_req(&mut b, *key, *id, *due),
                Record::Dispatch => put_dispatch(&mut b),
                Record::DropHeld => put_drop_held(&mut b),
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
    }

    #[test]
    fn a_torn_tail_is_one_bad_range_and_the_prefix_survives() {
        let (b, recs) = sample();
        for cut in 1..b.len() {
            let s = scan(&b[..cut]);
            let got = records(&s);
            assert_eq!(got[..], recs[..got.len()], "cut at {cut}");
            let good_end = s.records.last().map_or(0, |(at, _)| {
                *at + record_at(&b[..cut], *at).expect("intact").1
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
}
