//! Messages, their IDs and their wire encoding.
//!
//! # Format
//!
//! A message travels inside a message frame (type 2) as
//!
//! ```text
//! [8-byte timestamp, ns, big-endian][2-byte attempts][16-byte hex ID][body]
//! ```
//!
//! exactly as nsqd encodes it.

use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A message body: bytes in a shared, immutable buffer. Cloning it shares the bytes (a
/// topic's channels hold one body between them), and the bodies of one MPUB are ranges of
/// one buffer: one allocation and one copy per batch, not one per message.
///
/// A body that lingers (a deferred message) takes its own copy with
/// [`Body::unshared`], so that it does not keep the rest of its batch in memory.
#[derive(Clone)]
pub struct Body {
    buf: Arc<[u8]>,
    /// The body is `buf[start..buf.len() - trim]`: a whole buffer of any size has both at 0.
    start: u32,
    trim: u32,
}

impl Body {
    /// Ranges of `buf`, one body each (every range must lie within `buf`), copied once into
    /// one shared buffer. A buffer too large for a shared range's 32-bit offsets gives each
    /// body its own copy.
    pub fn ranges(
        buf: &[u8],
        ranges: impl ExactSizeIterator<Item = std::ops::Range<usize>>,
    ) -> Vec<Body> {
        if u32::try_from(buf.len()).is_err() {
            return ranges.map(|r| Body::from(&buf[r])).collect();
        }
        let buf: Arc<[u8]> = buf.into();
        let total = buf.len();
        ranges
            .map(|r| {
                assert!(
                    r.start <= r.end && r.end <= total,
                    "body range within its buffer"
                );
                Body {
                    buf: buf.clone(),
                    start: r.start as u32,
                    trim: (total - r.end) as u32,
                }
            })
            .collect()
    }

    /// The range `range` of a shared buffer, without copying it.
    pub fn range_of(buf: &Arc<[u8]>, range: std::ops::Range<usize>) -> Body {
        let total = buf.len();
        assert!(
            range.start <= range.end && range.end <= total && u32::try_from(total).is_ok(),
            "body range within its buffer"
        );
        Body {
            buf: buf.clone(),
            start: range.start as u32,
            trim: (total - range.end) as u32,
        }
    }

    /// The buffer this body is a range of (see [`Body::range_of`]), and that range.
    pub fn backing(&self) -> (&[u8], std::ops::Range<usize>) {
        let end = self.buf.len() - self.trim as usize;
        (&self.buf, self.start as usize..end)
    }

    /// Whether this body is a range of a larger buffer (an MPUB's), which it keeps alive.
    pub fn shares_buffer(&self) -> bool {
        self.start != 0 || self.trim != 0
    }

    /// This body in a buffer of its own (itself when it already is).
    pub fn unshared(self) -> Body {
        if self.shares_buffer() {
            Body::from(&self[..])
        } else {
            self
        }
    }
}

impl std::ops::Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[self.start as usize..self.buf.len() - self.trim as usize]
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Arc<[u8]>> for Body {
    fn from(buf: Arc<[u8]>) -> Body {
        Body {
            buf,
            start: 0,
            trim: 0,
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Body::from(Arc::<[u8]>::from(v))
    }
}

impl From<&[u8]> for Body {
    fn from(b: &[u8]) -> Body {
        Body::from(Arc::<[u8]>::from(b))
    }
}

impl<const N: usize> From<&[u8; N]> for Body {
    fn from(b: &[u8; N]) -> Body {
        Body::from(&b[..])
    }
}

impl From<&str> for Body {
    fn from(s: &str) -> Body {
        Body::from(s.as_bytes())
    }
}

impl PartialEq for Body {
    fn eq(&self, o: &Body) -> bool {
        self[..] == o[..]
    }
}

impl Eq for Body {}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self[..], f)
    }
}

/// The body of a message whose real body waits in storage (see
/// [`crate::Options::evict_bodies`]): empty, which no published message is (nsqd refuses
/// empty bodies), and shared, so evicting allocates nothing.
pub fn evicted_body() -> Body {
    static EMPTY: std::sync::OnceLock<Body> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Body::from(&[][..])).clone()
}

/// Length of a message ID on the wire: 16 lowercase hex characters.
pub const MSG_ID_LENGTH: usize = 16;

/// Bytes before the body in the message encoding.
pub const MSG_HEADER_LENGTH: usize = 8 + 2 + MSG_ID_LENGTH;

/// A message ID: a 64-bit value shown as 16 lowercase hex characters, as nsqd's `guid.Hex()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MessageId(pub u64);

const HEX: &[u8; 16] = b"0123456789abcdef";

impl MessageId {
    /// The 16 ASCII bytes clients see.
    pub fn to_hex(self) -> [u8; MSG_ID_LENGTH] {
        let mut out = [0u8; MSG_ID_LENGTH];
        for (i, b) in out.iter_mut().enumerate() {
            *b = HEX[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        out
    }

    /// Parse the 16 bytes a client sends back. Only nsqd's own form (lowercase hex) names a
    /// message nsqd could have sent; anything else cannot be in flight, so it is `None`.
    pub fn from_hex(b: &[u8]) -> Option<MessageId> {
        let b: &[u8; MSG_ID_LENGTH] = b.try_into().ok()?;
        // A table and no branch per character: IDs are random hex, so a branch on "digit or
        // letter" would mispredict about once per ID byte pair.
        let mut v = 0u64;
        let mut bad = 0u8;
        for &c in b {
            let d = HEX_VALUE[c as usize];
            bad |= d;
            v = (v << 4) | (d & 0xf) as u64;
        }
        (bad & 0x80 == 0).then_some(MessageId(v))
    }
}

/// Each byte's value as a lowercase hex digit, or 0x80 when it is not one.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0x80u8; 256];
    let mut i = 0;
    while i < 16 {
        t[HEX[i] as usize] = i as u8;
        i += 1;
    }
    t
};

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Safe: HEX is ASCII.
        f.write_str(std::str::from_utf8(&self.to_hex()).unwrap_or("????????????????"))
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({self})")
    }
}

impl Serialize for MessageId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MessageId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MessageId::from_hex(s.as_bytes())
            .ok_or_else(|| serde::de::Error::custom("message id must be 16 lowercase hex digits"))
    }
}

/// A message as a channel holds it.
#[derive(Clone)]
pub struct Message {
    pub id: MessageId,
    /// Publish time in nanoseconds (nsqd's `Timestamp`, `UnixNano` on a real server).
    pub timestamp: Time,
    /// Delivery attempts so far; incremented on every send to a client.
    pub attempts: u16,
    /// Insertion sequence in the deferred heap (ties between equal due times go first in,
    /// first out). It sits in what would be padding.
    pub(crate) heap_seq: u32,
    pub body: Body,
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("id", &self.id)
            .field("timestamp", &self.timestamp)
            .field("attempts", &self.attempts)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// Equal in what a client can see (the heap sequence is bookkeeping).
impl PartialEq for Message {
    fn eq(&self, o: &Self) -> bool {
        self.id == o.id
            && self.timestamp == o.timestamp
            && self.attempts == o.attempts
            && self.body == o.body
    }
}

impl Eq for Message {}

impl Message {
    /// Whether the body is in storage rather than memory.
    pub fn is_evicted(&self) -> bool {
        self.body.is_empty()
    }

    pub fn new(id: MessageId, timestamp: Time, body: Body) -> Self {
        Self {
            id,
            timestamp,
            attempts: 0,
            heap_seq: 0,
            body,
        }
    }

    /// Length of [`Message::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        MSG_HEADER_LENGTH + self.body.len()
    }

    /// Append nsqd's message encoding (without the frame header).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.attempts.to_be_bytes());
        out.extend_from_slice(&self.id.to_hex());
        out.extend_from_slice(&self.body);
    }

    /// Parse nsqd's message encoding (the inverse of [`Message::encode`]).
    pub fn decode(b: &[u8]) -> Option<Message> {
        if b.len() < MSG_HEADER_LENGTH {
            return None;
        }
        let timestamp = u64::from_be_bytes(b[0..8].try_into().ok()?);
        let attempts = u16::from_be_bytes([b[8], b[9]]);
        let id = MessageId::from_hex(&b[10..26])?;
        Some(Message {
            id,
            timestamp,
            attempts,
            heap_seq: 0,
            body: Body::from(&b[26..]),
        })
    }
}

const NODE_ID_BITS: u64 = 10;
const SEQUENCE_BITS: u64 = 12;
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;
const TIMESTAMP_SHIFT: u64 = NODE_ID_BITS + SEQUENCE_BITS;
/// nsqd's epoch: 2012-10-28 16:23:42 UTC in `UnixNano >> 20` units.
const TWEPOCH: u64 = 1_288_834_974_288;

/// nsqd's message ID scheme, made deterministic: the timestamp comes from `now` (an input), not
/// a clock, and where nsqd would fail (sequence exhausted within one pseudo-millisecond, or time
/// going backwards) this factory borrows the next pseudo-millisecond instead, so IDs stay unique
/// and increasing.
#[derive(Debug, Clone)]
pub struct GuidFactory {
    node_id: u64,
    last_ts: u64,
    sequence: u64,
    started: bool,
}

impl GuidFactory {
    pub fn new(node_id: u16) -> Self {
        Self {
            node_id: node_id as u64 & ((1 << NODE_ID_BITS) - 1),
            last_ts: 0,
            sequence: 0,
            started: false,
        }
    }

    /// Make every later ID greater than `id` (for IDs restored from storage).
    pub fn ensure_after(&mut self, id: MessageId) {
        // The restored ID may carry another node ID: mark its pseudo-millisecond used up, so
        // the next ID borrows the one after (greater whatever the node bits).
        let ts = (id.0 >> TIMESTAMP_SHIFT).wrapping_add(TWEPOCH);
        if !self.started || ts >= self.last_ts {
            self.started = true;
            self.last_ts = ts;
            self.sequence = SEQUENCE_MASK;
        }
    }

    pub fn next(&mut self, now: Time) -> MessageId {
        let ts = now >> 20;
        if !self.started || ts > self.last_ts {
            self.started = true;
            self.last_ts = ts;
            self.sequence = 0;
        } else {
            self.sequence += 1;
            if self.sequence > SEQUENCE_MASK {
                self.last_ts += 1;
                self.sequence = 0;
            }
        }
        let v = (self.last_ts.wrapping_sub(TWEPOCH) << TIMESTAMP_SHIFT)
            | (self.node_id << SEQUENCE_BITS)
            | self.sequence;
        MessageId(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn bodies_are_ranges_of_one_buffer_until_unshared() {
        let bodies = Body::ranges(b"..abc.de", [2..5, 6..8, 8..8].into_iter());
        assert_eq!(bodies, vec![Body::from(b"abc"), b"de".into(), b"".into()]);
        // One allocation between them.
        assert!(Arc::ptr_eq(&bodies[0].buf, &bodies[1].buf));
        assert_eq!(Arc::strong_count(&bodies[0].buf), 3);
        assert!(bodies.iter().all(Body::shares_buffer));
        let own = bodies[1].clone().unshared();
        assert_eq!(&own[..], b"de");
        assert!(!own.shares_buffer());
        assert!(!Arc::ptr_eq(&own.buf, &bodies[1].buf));
        assert_eq!(&*own.buf, b"de");
        // A body that already owns its buffer keeps it.
        let whole = Body::from(b"xyz");
        let again = whole.clone().unshared();
        assert!(Arc::ptr_eq(&whole.buf, &again.buf));
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn hex_round_trip_and_lowercase_only() {
        let id = MessageId(0x0a1b_2c3d_4e5f_6789);
        assert_eq!(&id.to_hex(), b"0a1b2c3d4e5f6789");
        assert_eq!(MessageId::from_hex(b"0a1b2c3d4e5f6789"), Some(id));
        assert_eq!(MessageId::from_hex(b"0A1B2C3D4E5F6789"), None);
        assert_eq!(MessageId::from_hex(b"0a1b2c3d4e5f678"), None);
        assert_eq!(id.to_string(), "0a1b2c3d4e5f6789");
        // Every byte value in every position: only lowercase hex digits parse.
        for pos in 0..MSG_ID_LENGTH {
            for b in 0..=255u8 {
                let mut raw = *b"0123456789abcdef";
                raw[pos] = b;
                let want = b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
                assert_eq!(MessageId::from_hex(&raw).is_some(), want, "{pos} {b}");
                if want {
                    assert_eq!(MessageId::from_hex(&raw).unwrap().to_hex(), raw);
                }
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            assert_eq!(
                MessageId::from_hex(&MessageId(x).to_hex()),
                Some(MessageId(x))
            );
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn guid_matches_nsqd_layout() {
        let mut f = GuidFactory::new(7);
        // 2020-01-01T00:00:00Z in ns.
        let now = 1_577_836_800_000_000_000u64;
        let a = f.next(now);
        let b = f.next(now);
        let ts = (now >> 20) - TWEPOCH;
        assert_eq!(a.0, (ts << 22) | (7 << 12));
        assert_eq!(b.0, a.0 + 1);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn guid_stays_unique_past_sequence_exhaustion_and_backwards_time() {
        let mut f = GuidFactory::new(1);
        let mut last = None;
        for i in 0..10_000u64 {
            let now = if i % 3 == 0 { 5_000_000 } else { 4_000_000 };
            let id = f.next(now);
            if let Some(prev) = last {
                assert!(id > prev, "ids must increase");
            }
            last = Some(id);
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn message_encoding_as_nsqd() {
        let m = Message {
            id: MessageId(0x1234),
            timestamp: 0x0102_0304_0506_0708,
            attempts: 3,
            heap_seq: 0,
            body: Body::from(b"hi"),
        };
        let mut out = Vec::new();
        m.encode(&mut out);
        assert_eq!(out.len(), m.encoded_len());
        assert_eq!(&out[0..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&out[8..10], &[0, 3]);
        assert_eq!(&out[10..26], b"0000000000001234");
        assert_eq!(&out[26..], b"hi");
        assert_eq!(Message::decode(&out), Some(m));
    }
}
