//! The data of a raft log entry: one wake-up's [`StoreOp`]s, as the leader's broker gave them.
//!
//! # Format
//! All integers little-endian; a name or a body is a `u32` length and its bytes.
//! ```text
//! b'N' 1                      magic and version
//! proposer u64  through u64   the node that proposed it, the last ticket in it
//! count u32  op*count
//! op = tag u8, then by tag:
//!   0 TopicCreated   topic
//!   1 TopicDeleted   topic
//!   2 TopicPaused    topic paused:u8
//!   3 TopicEmptied   topic ids
//!   4 ChannelCreated topic channel start:u64
//!   5 ChannelDeleted topic channel ids
//!   6 ChannelPaused  topic channel paused:u8
//!   7 ChannelEmptied topic channel start:u64 ids
//!   8 Publish        ticket:u64 topic held:u8 copies:u32 due:u8(+u64) id:u64 timestamp:u64
//!                    attempts:u16 body
//!   9 Dispatched     topic ids copies:u32
//!  10 Finished       topic channel ids
//!  11 Requeued       topic channel id:u64 due:u64
//! ids = count:u32 id:u64*count
//! ```

use crate::message::{Body, Message, MessageId};
use crate::store::{StoreOp, Ticket};
use crate::Name;
use std::sync::Arc;

/// One entry's ops, and whose they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The node whose broker made the ops (only it acknowledges them).
    pub proposer: u64,
    /// The last publish ticket among them (or before them): once committed, the proposer's
    /// broker has every publish up to it.
    pub through: Ticket,
    pub ops: Vec<StoreOp>,
}

/// Why an entry's data is not a [`Batch`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a batch (bad magic or version)")]
    Magic,
    #[error("batch cut short")]
    Short,
    #[error("unknown op tag {0}")]
    Tag(u8),
    #[error("a name that is not UTF-8")]
    Name,
}

const MAGIC: [u8; 2] = [b'N', 1];

impl Batch {
    pub fn encode(&self) -> Vec<u8> {
        // Sized once: a snapshot's batch holds every message owed, and growing it by doubling
        // would copy (and fault in) it again and again.
        let bodies: usize = self
            .ops
            .iter()
            .map(|op| match op {
                StoreOp::Publish { topic, msg, .. } => topic.len() + msg.body.len(),
                _ => 0,
            })
            .sum();
        let mut w = Vec::with_capacity(32 + self.ops.len() * 64 + bodies);
        w.extend_from_slice(&MAGIC);
        put_u64(&mut w, self.proposer);
        put_u64(&mut w, self.through);
        put_u32(&mut w, self.ops.len() as u32);
        for op in &self.ops {
            encode_op(&mut w, op);
        }
        w
    }

    /// An entry's data back as a batch. Its bodies share one copy of `data` (see
    /// [`SHARED_MAX`]).
    pub fn decode(data: &[u8]) -> Result<Batch, DecodeError> {
        Batch::decode_in(data, None)
    }

    /// As [`Batch::decode`], but when `data` lies within `frame` (the buffer it was received
    /// in, at most [`SHARED_MAX`]) the bodies are ranges of `frame` itself: no copy.
    pub fn decode_in(data: &[u8], frame: Option<&Arc<[u8]>>) -> Result<Batch, DecodeError> {
        let within = frame
            .filter(|f| f.len() <= SHARED_MAX)
            .and_then(|f| offset_within(f, data).map(|at| (f.clone(), at)));
        let (shared, base) = match within {
            Some((f, at)) => (Some(f), at),
            None => (None, 0),
        };
        let mut r = Reader {
            rest: data,
            whole: data,
            share: data.len() <= SHARED_MAX,
            shared,
            base,
            last_name: None,
        };
        if r.take(2)? != MAGIC {
            return Err(DecodeError::Magic);
        }
        let proposer = r.u64()?;
        let through = r.u64()?;
        let n = r.u32()? as usize;
        // Each op is at least a tag and a name's length: a count the data cannot hold is a
        // lie, not a reason to allocate.
        let mut ops = Vec::with_capacity(n.min(r.rest.len() / 5));
        for _ in 0..n {
            ops.push(decode_op(&mut r)?);
        }
        if !r.rest.is_empty() {
            return Err(DecodeError::Short);
        }
        Ok(Batch {
            proposer,
            through,
            ops,
        })
    }
}

fn put_u64(w: &mut Vec<u8>, x: u64) {
    w.extend_from_slice(&x.to_le_bytes());
}

fn put_u32(w: &mut Vec<u8>, x: u32) {
    w.extend_from_slice(&x.to_le_bytes());
}

fn put_bytes(w: &mut Vec<u8>, b: &[u8]) {
    put_u32(w, b.len() as u32);
    w.extend_from_slice(b);
}

fn put_ids(w: &mut Vec<u8>, ids: &[MessageId]) {
    put_u32(w, ids.len() as u32);
    for id in ids {
        put_u64(w, id.0);
    }
}

fn encode_op(w: &mut Vec<u8>, op: &StoreOp) {
    match op {
        StoreOp::TopicCreated { topic } => {
            w.push(0);
            put_bytes(w, topic.as_bytes());
        }
        StoreOp::TopicDeleted { topic } => {
            w.push(1);
            put_bytes(w, topic.as_bytes());
        }
        StoreOp::TopicPaused { topic, paused } => {
            w.push(2);
            put_bytes(w, topic.as_bytes());
            w.push(*paused as u8);
        }
        StoreOp::TopicEmptied { topic, dropped } => {
            w.push(3);
            put_bytes(w, topic.as_bytes());
            put_ids(w, dropped);
        }
        StoreOp::ChannelCreated {
            topic,
            channel,
            start,
        } => {
            w.push(4);
            put_bytes(w, topic.as_bytes());
            put_bytes(w, channel.as_bytes());
            put_u64(w, start.0);
        }
        StoreOp::ChannelDeleted {
            topic,
            channel,
            dropped,
        } => {
            w.push(5);
            put_bytes(w, topic.as_bytes());
            put_bytes(w, channel.as_bytes());
            put_ids(w, dropped);
        }
        StoreOp::ChannelPaused {
            topic,
            channel,
            paused,
        } => {
            w.push(6);
            put_bytes(w, topic.as_bytes());
            put_bytes(w, channel.as_bytes());
            w.push(*paused as u8);
        }
        StoreOp::ChannelEmptied {
            topic,
            channel,
            start,
            dropped,
        } => {
            w.push(7);
            put_bytes(w, topic.as_bytes());
            put_bytes(w, channel.as_bytes());
            put_u64(w, start.0);
            put_ids(w, dropped);
        }
        StoreOp::Publish {
            ticket,
            topic,
            held,
            copies,
            due,
            msg,
        } => {
            w.push(8);
            put_u64(w, *ticket);
            put_bytes(w, topic.as_bytes());
            w.push(*held as u8);
            put_u32(w, *copies);
            match due {
                Some(d) => {
                    w.push(1);
                    put_u64(w, *d);
                }
                None => w.push(0),
            }
            put_u64(w, msg.id.0);
            put_u64(w, msg.timestamp);
            w.extend_from_slice(&msg.attempts.to_le_bytes());
            put_bytes(w, &msg.body);
        }
        StoreOp::Dispatched { topic, ids, copies } => {
            w.push(9);
            put_bytes(w, topic.as_bytes());
            put_ids(w, ids);
            put_u32(w, *copies);
        }
        StoreOp::Finished {
            topic,
            channel,
            ids,
        } => {
            w.push(10);
            put_bytes(w, topic.as_bytes());
            put_bytes(w, channel.as_bytes());
            put_ids(w, ids);
        }
        StoreOp::Requeued {
            topic,
            channel,
            id,
            due,
        } => {
            w.push(11);
            put_bytes(w, topic.as_bytes());
            put_bytes(w, channel.as_bytes());
            put_u64(w, id.0);
            put_u64(w, *due);
        }
    }
}

/// Data up to this size (an entry) is copied once, and the bodies decoded from it share the
/// copy; a larger one (a snapshot of everything owed) gives each body its own, so that one
/// message still owed does not keep all the others' bytes in memory.
pub(crate) const SHARED_MAX: usize = 4 << 20;

/// Where `part` starts in `whole`, if it lies within it (the same memory, not equal bytes).
pub(crate) fn offset_within(whole: &[u8], part: &[u8]) -> Option<usize> {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    (p >= w && p + part.len() <= w + whole.len()).then(|| p - w)
}

struct Reader<'a> {
    /// What is left to read.
    rest: &'a [u8],
    /// All of it (for a body's offset in `shared`).
    whole: &'a [u8],
    /// Whether bodies share one copy of `whole` (see [`SHARED_MAX`]).
    share: bool,
    /// That copy, made at the first body (an entry of FINs needs none), or the frame
    /// `whole` lies in ([`Batch::decode_in`]).
    shared: Option<Arc<[u8]>>,
    /// Where `whole` starts in `shared`.
    base: usize,
    /// The last name read: the ops of a batch name the same few topics again and again.
    last_name: Option<Name>,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.rest.len() < n {
            return Err(DecodeError::Short);
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }

    /// A message body: a range of the shared copy, or a copy of its own (a deferred
    /// message's, which may linger long after the rest of its batch is finished).
    fn body(&mut self, own: bool) -> Result<Body, DecodeError> {
        let b = self.bytes()?;
        if own || !self.share {
            return Ok(Body::from(b));
        }
        let whole = self.whole;
        let shared = self.shared.get_or_insert_with(|| Arc::from(whole));
        let start = self.base + whole.len() - self.rest.len() - b.len();
        Ok(Body::range_of(shared, start..start + b.len()))
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn name(&mut self) -> Result<Name, DecodeError> {
        let b = self.bytes()?;
        if let Some(last) = self.last_name.as_ref().filter(|n| n.as_bytes() == b) {
            return Ok(last.clone());
        }
        let name = std::str::from_utf8(b)
            .map(Name::from)
            .map_err(|_| DecodeError::Name)?;
        self.last_name = Some(name.clone());
        Ok(name)
    }

    fn ids(&mut self) -> Result<Vec<MessageId>, DecodeError> {
        let n = self.u32()? as usize;
        if self.rest.len() / 8 < n {
            return Err(DecodeError::Short);
        }
        (0..n).map(|_| self.u64().map(MessageId)).collect()
    }
}

fn decode_op(r: &mut Reader<'_>) -> Result<StoreOp, DecodeError> {
    Ok(match r.u8()? {
        0 => StoreOp::TopicCreated { topic: r.name()? },
        1 => StoreOp::TopicDeleted { topic: r.name()? },
        2 => StoreOp::TopicPaused {
            topic: r.name()?,
            paused: r.u8()? != 0,
        },
        3 => StoreOp::TopicEmptied {
            topic: r.name()?,
            dropped: r.ids()?,
        },
        4 => StoreOp::ChannelCreated {
            topic: r.name()?,
            channel: r.name()?,
            start: MessageId(r.u64()?),
        },
        5 => StoreOp::ChannelDeleted {
            topic: r.name()?,
            channel: r.name()?,
            dropped: r.ids()?,
        },
        6 => StoreOp::ChannelPaused {
            topic: r.name()?,
            channel: r.name()?,
            paused: r.u8()? != 0,
        },
        7 => StoreOp::ChannelEmptied {
            topic: r.name()?,
            channel: r.name()?,
            start: MessageId(r.u64()?),
            dropped: r.ids()?,
        },
        8 => {
            let ticket = r.u64()?;
            let topic = r.name()?;
            let held = r.u8()? != 0;
            let copies = r.u32()?;
            let due = match r.u8()? {
                0 => None,
                _ => Some(r.u64()?),
            };
            let id = MessageId(r.u64()?);
            let timestamp = r.u64()?;
            let attempts = r.u16()?;
            let mut msg = Message::new(id, timestamp, r.body(due.is_some())?);
            msg.attempts = attempts;
            StoreOp::Publish {
                ticket,
                topic,
                held,
                copies,
                due,
                msg,
            }
        }
        9 => StoreOp::Dispatched {
            topic: r.name()?,
            ids: r.ids()?,
            copies: r.u32()?,
        },
        10 => StoreOp::Finished {
            topic: r.name()?,
            channel: r.name()?,
            ids: r.ids()?,
        },
        11 => StoreOp::Requeued {
            topic: r.name()?,
            channel: r.name()?,
            id: MessageId(r.u64()?),
            due: r.u64()?,
        },
        t => return Err(DecodeError::Tag(t)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_op() -> Vec<StoreOp> {
        let t: Name = "orders".into();
        let c: Name = "ledger".into();
        let ids = vec![MessageId(7), MessageId(u64::MAX)];
        let mut msg = Message::new(MessageId(9), 1_700_000_000_000_000_000, "body ✓".into());
        msg.attempts = 3;
        vec![
            StoreOp::TopicCreated { topic: t.clone() },
            StoreOp::TopicDeleted { topic: t.clone() },
            StoreOp::TopicPaused {
                topic: t.clone(),
                paused: true,
            },
            StoreOp::TopicEmptied {
                topic: t.clone(),
                dropped: ids.clone(),
            },
            StoreOp::ChannelCreated {
                topic: t.clone(),
                channel: c.clone(),
                start: MessageId(5),
            },
            StoreOp::ChannelDeleted {
                topic: t.clone(),
                channel: c.clone(),
                dropped: vec![],
            },
            StoreOp::ChannelPaused {
                topic: t.clone(),
                channel: c.clone(),
                paused: false,
            },
            StoreOp::ChannelEmptied {
                topic: t.clone(),
                channel: c.clone(),
                start: MessageId(11),
                dropped: ids.clone(),
            },
            StoreOp::Publish {
                ticket: 4,
                topic: t.clone(),
                held: false,
                copies: 2,
                due: Some(123),
                msg: msg.clone(),
            },
            StoreOp::Publish {
                ticket: 5,
                topic: t.clone(),
                held: true,
                copies: 1,
                due: None,
                msg: Message::new(MessageId(10), 0, Vec::new().into()),
            },
            StoreOp::Dispatched {
                topic: t.clone(),
                ids: ids.clone(),
                copies: 2,
            },
            StoreOp::Finished {
                topic: t.clone(),
                channel: c.clone(),
                ids,
            },
            StoreOp::Requeued {
                topic: t,
                channel: c,
                id: MessageId(9),
                due: 99,
            },
        ]
    }

    #[test]
    fn every_op_comes_back_as_it_went() {
        let b = Batch {
            proposer: 3,
            through: 5,
            ops: every_op(),
        };
        let data = b.encode();
        let back = Batch::decode(&data).expect("decodes");
        assert_eq!(back, b);
        // Bodies compare by length in Debug, so compare them byte for byte too.
        let body = |b: &Batch| match &b.ops[8] {
            StoreOp::Publish { msg, .. } => (msg.body.to_vec(), msg.attempts, msg.timestamp),
            _ => unreachable!("op 8 is a publish"),
        };
        assert_eq!(body(&back), body(&b));
    }

    #[test]
    fn every_cut_and_every_bad_byte_is_an_error_not_a_panic() {
        let data = Batch {
            proposer: 1,
            through: 2,
            ops: every_op(),
        }
        .encode();
        for n in 0..data.len() {
            assert!(Batch::decode(&data[..n]).is_err(), "cut at {n}");
        }
        let mut longer = data.clone();
        longer.push(0);
        assert_eq!(Batch::decode(&longer), Err(DecodeError::Short));
        let mut bad = data.clone();
        bad[0] = b'X';
        assert_eq!(Batch::decode(&bad), Err(DecodeError::Magic));
        // A count of ops far past what the data holds.
        let mut lie = data[..18].to_vec();
        lie.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Batch::decode(&lie), Err(DecodeError::Short));
        for i in 0..data.len() {
            let mut flipped = data.clone();
            flipped[i] ^= 0xff;
            let _ = Batch::decode(&flipped);
        }
    }

    /// A publish of `body` to "orders", deferred to `due` if given.
    fn publish(id: u64, due: Option<u64>, body: &[u8]) -> StoreOp {
        StoreOp::Publish {
            ticket: id,
            topic: "orders".into(),
            held: false,
            copies: 1,
            due,
            msg: Message::new(MessageId(id), 0, body.into()),
        }
    }

    #[test]
    fn an_entrys_bodies_share_one_copy_a_deferred_or_a_snapshots_own_their_bytes() {
        let bodies = |data: &[u8]| -> Vec<(Vec<u8>, bool, Name)> {
            Batch::decode(data)
                .expect("decodes")
                .ops
                .into_iter()
                .map(|op| match op {
                    StoreOp::Publish { topic, msg, .. } => {
                        (msg.body.to_vec(), msg.body.shares_buffer(), topic)
                    }
                    _ => unreachable!("only publishes"),
                })
                .collect()
        };
        let entry = Batch {
            proposer: 1,
            through: 3,
            ops: vec![
                publish(1, None, b"one"),
                publish(2, Some(99), b"two"),
                publish(3, None, b"three"),
            ],
        };
        let got = bodies(&entry.encode());
        let shown: Vec<(&[u8], bool)> = got.iter().map(|(b, s, _)| (&b[..], *s)).collect();
        assert_eq!(
            shown,
            vec![
                (&b"one"[..], true),
                (&b"two"[..], false),
                (&b"three"[..], true)
            ]
        );
        // One name for the topic, read once.
        assert!(Arc::ptr_eq(&got[0].2, &got[2].2));
        // A snapshot's worth: every body its own.
        let big = Batch {
            proposer: 1,
            through: 2,
            ops: vec![
                publish(1, None, &vec![7; SHARED_MAX]),
                publish(2, None, b"small"),
            ],
        };
        let got = bodies(&big.encode());
        assert_eq!(got[0].0, vec![7; SHARED_MAX]);
        assert_eq!((&got[1].0[..], got[1].1), (&b"small"[..], false));
    }

    #[test]
    fn bodies_decoded_within_their_frame_are_ranges_of_it() {
        let data = Batch {
            proposer: 1,
            through: 2,
            ops: vec![publish(1, None, b"one"), publish(2, Some(9), b"two")],
        }
        .encode();
        // The entry somewhere inside a frame (as raft's message encoding puts it).
        let mut bytes = vec![0xee; 17];
        bytes.extend_from_slice(&data);
        bytes.extend_from_slice(&[0xee; 5]);
        let frame: Arc<[u8]> = bytes.into();
        let entry = &frame[17..17 + data.len()];
        let backing = |b: &Batch, i: usize| match &b.ops[i] {
            StoreOp::Publish { msg, .. } => {
                let (buf, range) = msg.body.backing();
                (buf.as_ptr(), buf[range].to_vec())
            }
            _ => unreachable!("only publishes"),
        };
        let shared = Batch::decode_in(entry, Some(&frame)).expect("decodes");
        assert_eq!(backing(&shared, 0), (frame.as_ptr(), b"one".to_vec()));
        // A deferred message's body still has its own bytes.
        let (own, body) = backing(&shared, 1);
        assert_ne!(own, frame.as_ptr());
        assert_eq!(body, b"two");
        // Equal bytes elsewhere are not the frame: copied, as without one.
        let copied = Batch::decode_in(&data, Some(&frame)).expect("decodes");
        let (at, body) = backing(&copied, 0);
        assert_ne!(at, frame.as_ptr());
        assert_eq!(body, b"one");
        assert_eq!(copied, shared);
    }
}
