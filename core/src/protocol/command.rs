//! The V2 commands a client sends, validated and ready to execute.
//!
//! # Format
//!
//! ```text
//! IDENTIFY\n[4-byte size][JSON]           AUTH\n[4-byte size][secret]
//! SUB <topic> <channel>\n                 RDY <count>\n
//! PUB <topic>\n[4-byte size][body]        DPUB <topic> <defer_ms>\n[4-byte size][body]
//! MPUB <topic>\n[4-byte body size][4-byte count]([4-byte size][body])*
//! FIN <id>\n    REQ <id> <timeout_ms>\n    TOUCH <id>\n    CLS\n    NOP\n
//! ```

use crate::message::Body;

/// A topic name in a publish command: names of up to 24 bytes are stored inline, so the
/// per-message path allocates nothing for them.
pub type TopicName = compact_str::CompactString;

/// A 16-byte message ID exactly as the client sent it (it may not be valid hex).
pub type RawId = [u8; 16];

/// A decoded, validated command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// IDENTIFY with its JSON body (validated when executed, as nsqd does after reading it).
    Identify(Vec<u8>),
    /// AUTH with its secret.
    Auth(Vec<u8>),
    Sub {
        topic: String,
        channel: String,
    },
    Pub {
        topic: TopicName,
        body: Body,
    },
    Mpub {
        topic: TopicName,
        bodies: Vec<Body>,
    },
    Dpub {
        topic: TopicName,
        defer_ms: u64,
        body: Body,
    },
    /// RDY with its count (already range-checked).
    Rdy(i64),
    Fin(RawId),
    Req {
        id: RawId,
        /// As sent; clamped to `0..=max-req-timeout` when executed.
        timeout_ms: u64,
    },
    Touch(RawId),
    Cls,
    Nop,
}

impl Command {
    /// The command's name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Identify(_) => "IDENTIFY",
            Command::Auth(_) => "AUTH",
            Command::Sub { .. } => "SUB",
            Command::Pub { .. } => "PUB",
            Command::Mpub { .. } => "MPUB",
            Command::Dpub { .. } => "DPUB",
            Command::Rdy(_) => "RDY",
            Command::Fin(_) => "FIN",
            Command::Req { .. } => "REQ",
            Command::Touch(_) => "TOUCH",
            Command::Cls => "CLS",
            Command::Nop => "NOP",
        }
    }

    /// Append the command's wire form (what a client sends).
    pub fn encode(&self, out: &mut Vec<u8>) {
        fn sized(out: &mut Vec<u8>, b: &[u8]) {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        }
        match self {
            Command::Identify(body) => {
                out.extend_from_slice(b"IDENTIFY\n");
                sized(out, body);
            }
            Command::Auth(secret) => {
                out.extend_from_slice(b"AUTH\n");
                sized(out, secret);
            }
            Command::Sub { topic, channel } => {
                out.extend_from_slice(format!("SUB {topic} {channel}\n").as_bytes());
            }
            Command::Pub { topic, body } => {
                out.extend_from_slice(format!("PUB {topic}\n").as_bytes());
                sized(out, body);
            }
            Command::Mpub { topic, bodies } => {
                out.extend_from_slice(format!("MPUB {topic}\n").as_bytes());
                let total: usize = 4 + bodies.iter().map(|b| 4 + b.len()).sum::<usize>();
                out.extend_from_slice(&(total as u32).to_be_bytes());
                out.extend_from_slice(&(bodies.len() as u32).to_be_bytes());
                for b in bodies {
                    sized(out, b);
                }
            }
            Command::Dpub {
                topic,
                defer_ms,
                body,
            } => {
                out.extend_from_slice(format!("DPUB {topic} {defer_ms}\n").as_bytes());
                sized(out, body);
            }
            Command::Rdy(n) => out.extend_from_slice(format!("RDY {n}\n").as_bytes()),
            Command::Fin(id) => {
                out.extend_from_slice(b"FIN ");
                out.extend_from_slice(id);
                out.push(b'\n');
            }
            Command::Req { id, timeout_ms } => {
                out.extend_from_slice(b"REQ ");
                out.extend_from_slice(id);
                out.extend_from_slice(format!(" {timeout_ms}\n").as_bytes());
            }
            Command::Touch(id) => {
                out.extend_from_slice(b"TOUCH ");
                out.extend_from_slice(id);
                out.push(b'\n');
            }
            Command::Cls => out.extend_from_slice(b"CLS\n"),
            Command::Nop => out.extend_from_slice(b"NOP\n"),
        }
    }

    /// The wire form as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}
