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

use nsqlab_core::{Body, Message, MessageId, Time};

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

/// A stretch of a segment read for loading evicted bodies. A load reads its segment forward
/// from where the index points (see `index.rs`) to its record, skipping the records before
/// it by their headers. Consumers load a backlog in order: a load that follows the one
/// before it (a little further on in the same segment) starts where that one ended and reads
/// [`ReadAhead::SIZE`] ahead, so one read serves the thousand records after it (one `pread`
/// per record cost more than the rest of a delivery). A lone load (a deferred message coming
/// due) reads little: its own record when the index has its entry, else a short stretch.
#[derive(Debug, Default)]
pub struct ReadAhead {
    seg: u64,
    at: u64,
    buf: Vec<u8>,
    /// The segment of the last load, the offset after its record, and its ID.
    last: Option<(u64, u64, MessageId)>,
}

/// The PUB payload's fields before the body.
const PUB_FIELDS: usize = 1 + 1 + 8 + 8 + 8 + 2;
/// Where a PUB payload's message ID is (after kind, flags and due time).
const PUB_ID: usize = 1 + 1 + 8;

impl ReadAhead {
    pub const SIZE: usize = 256 << 10;
    /// How far after the last load the next one still follows it.
    const FOLLOWS: u64 = 64 << 10;
    /// What a lone load reads at first: its own record, if the index points at it...
    const LONE: usize = 4 << 10;
    /// ...or a stretch to look for it in (the index has an entry every 16 KiB at most).
    const SCAN: usize = 16 << 10;

    /// Where to start looking for message `id` of segment `seg`, whose index entry is
    /// message `from_id`'s: after the last load, if that was between the two.
    pub fn resume(&self, seg: u64, from_id: u64, id: u64) -> Option<u64> {
        let (s, end, last) = self.last?;
        (s == seg && last.0 >= from_id && last.0 < id).then_some(end)
    }

    /// The body of message `id`, looked for in segment `seg` (the file `file`, `end` bytes
    /// long) from the record at `from` on; `exact`: that record is the message's. `None`
    /// when the segment does not hold it.
    pub fn find(
        &mut self,
        file: &std::fs::File,
        seg: u64,
        from: u64,
        end: u64,
        id: MessageId,
        exact: bool,
    ) -> std::io::Result<Option<Body>> {
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
                    let rec = self.bytes(file, seg, off, HEADER + len, chunk, end)?;
                    return match record_at(rec, 0) {
                        Some((Record::Pub { msg, .. }, _)) => {
                            self.last = Some((seg, next, id));
                            Ok(Some(msg.body))
                        }
                        _ => Err(bad("record checksum mismatch")),
                    };
                }
            }
            off = next;
        }
        Ok(None)
    }

    /// Segment `seg` is deleted (or its end cut back): what was read of it goes (and its
    /// memory).
    pub fn forget(&mut self, seg: u64) {
        if self.seg == seg {
            self.buf = Vec::new();
        }
        if self.last.is_some_and(|(s, _, _)| s == seg) {
            self.last = None;
        }
    }

    /// At least `need` bytes of segment `seg` from `off` (fewer before `end`), from memory or
    /// read now: `chunk` bytes, or `need` when more.
    fn bytes(
        &mut self,
        file: &std::fs::File,
        seg: u64,
        off: u64,
        need: usize,
        chunk: usize,
        end: u64,
    ) -> std::io::Result<&[u8]> {
        use std::os::unix::fs::FileExt;
        let left = usize::try_from(end.saturating_sub(off)).unwrap_or(usize::MAX);
        let need = need.min(left);
        let cached = self.seg == seg
            && off >= self.at
            && off + need as u64 <= self.at + self.buf.len() as u64;
        if !cached {
            let size = need.max(chunk).min(left);
            if self.buf.capacity() > Self::SIZE.max(size) {
                self.buf = Vec::new(); // a large record's buffer is not kept
            }
            self.buf.clear();
            self.buf.resize(size, 0);
            self.seg = seg;
            self.at = off;
            if let Err(e) = file.read_exact_at(&mut self.buf, off) {
                self.buf.clear();
                return Err(e);
            }
        }
        let rel = (off - self.at) as usize;
        Ok(&self.buf[rel..rel + need])
    }
}

/// The record starting at `at`, and its length, if one is there whole and intact.
fn record_at(b: &[u8], at: usize) -> Option<(Record, usize)> {
    record_at_with(b, at, true)
}

fn record_at_with(b: &[u8], at: usize, body: bool) -> Option<(Record, usize)> {
    let len = u32_at(b, at)? as usize;
    let crc = u32_at(b, at + 4)?;
    if len == 0 || len > MAX_PAYLOAD {
        return None;
    }
    let payload = b.get(at + HEADER..at + HEADER + len)?;
    if crc32c::crc32c(payload) != crc {
        return None;
    }
    Some((decode_payload(payload, body)?, HEADER + len))
}

/// The length of the record at `at` of `b`, one a scan found intact.
pub fn record_len(b: &[u8], at: usize) -> usize {
    HEADER + u32_at(b, at).expect("a scanned record's header") as usize
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
    let mut out = Scan::default();
    let mut at = 0;
    while at < b.len() {
        if let Some((rec, n)) = record_at_with(b, at, bodies) {
            out.records.push((at, rec));
            at += n;
            continue;
        }
        let bad_start = at;
        at += 1;
        while at < b.len() && record_at_with(b, at, false).is_none() {
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

    /// A segment file of `bodies` (message i + 1 has body `bodies[i]`) with a FIN record
    /// after each message; the messages' offsets.
    fn segment(name: &str, bodies: &[Vec<u8>]) -> (std::path::PathBuf, Vec<u64>, u64) {
        let path = std::env::temp_dir().join(format!("nsqlab-{name}-{}", std::process::id()));
        let mut b = Vec::new();
        put_mark(&mut b, MessageId(0));
        let offs = (0..bodies.len())
            .map(|i| {
                let at = pub_record(&mut b, i as u64 + 1, &bodies[i]);
                put_fin(&mut b, 0, MessageId(i as u64 + 1));
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
                .find(&file, 7, from, end, MessageId(id), exact)
                .unwrap()
                .map(|b| b.to_vec())
        };
        // From the start of the segment (past other records) to message 50.
        assert_eq!(find(&mut ahead, 0, 50, false), Some(vec![50; 100]));
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
        assert_eq!(ahead.buf.len() as u64, end - ahead.at);
        std::fs::File::create(&path).unwrap();
        for id in 121..=200u64 {
            load_from_last(&mut ahead, id);
        }
        // Not in the segment: beyond the last.
        assert_eq!(find(&mut ahead, offs[150], 300, false), None);
        // Its segment deleted, the stretch goes, and nothing resumes in it.
        assert!(!ahead.buf.is_empty());
        ahead.forget(7);
        assert!(ahead.buf.is_empty() && ahead.resume(7, 1, 201).is_none());
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
            .find(&file, 1, offs[4], end, MessageId(5), true)
            .unwrap();
        assert_eq!(got.as_deref(), Some(&[5u8; 100][..]));
        assert_eq!(ahead.buf.len(), ReadAhead::LONE);
        // A record larger than any stretch is read whole; its buffer is not kept after.
        let got = ahead
            .find(&file, 1, offs[9], end, MessageId(10), true)
            .unwrap();
        assert_eq!(got.map(|b| b.len()), Some(3 * ReadAhead::SIZE));
        let got = ahead
            .find(&file, 1, offs[15], end, MessageId(16), true)
            .unwrap();
        assert_eq!(got.as_deref(), Some(&[16u8; 100][..]));
        assert!(ahead.buf.capacity() <= ReadAhead::SIZE);
        // Skipping over the large one to a later message works too.
        let got = ahead
            .find(&file, 1, offs[8], end, MessageId(12), false)
            .unwrap();
        assert_eq!(got.as_deref(), Some(&[12u8; 100][..]));
        // A length that runs past the end is an error, not a guess.
        let err = ahead.find(&file, 1, offs[19], offs[19] + 50, MessageId(20), true);
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
                record_at(&b, *at).map(|(_, n)| n),
                Some(record_len(&b, *at))
            );
        }
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
