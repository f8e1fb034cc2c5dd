//! nsqd's side of the V1 protocol: the bytes a node sends nsqlookupd to register, encoded in
//! one place for the server's registration task and the visualiser's cluster.
//!
//! # Format
//! On connect: the magic `"  V1"`, then `IDENTIFY\n`, a 4-byte big-endian size and the node's
//! JSON (its keys sorted, as Go's map gives them); then one line per change,
//! `REGISTER <topic> [<channel>]` or `UNREGISTER <topic> [<channel>]`, and `PING` to keep
//! the registration alive.

use crate::store::RegistryChange;

/// What a node tells nsqlookupd about itself in IDENTIFY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeIdentity {
    pub broadcast_address: String,
    pub hostname: String,
    pub http_port: u16,
    pub tcp_port: u16,
    pub version: String,
}

/// The magic and the IDENTIFY command a node opens its connection with.
pub fn hello(node: &NodeIdentity) -> Vec<u8> {
    // A JSON object's keys come sorted, as Go encodes nsqd's map.
    let body = crate::protocol::to_go_json(&serde_json::json!({
        "broadcast_address": node.broadcast_address,
        "hostname": node.hostname,
        "http_port": node.http_port,
        "tcp_port": node.tcp_port,
        "version": node.version,
    }))
    .expect("plain fields serialise");
    let mut b = b"  V1IDENTIFY\n".to_vec();
    b.extend_from_slice(&(body.len() as u32).to_be_bytes());
    b.extend_from_slice(&body);
    b
}

/// The keep-alive command line (without its newline).
pub const PING: &str = "PING";

impl RegistryChange {
    /// The command line that tells nsqlookupd (without its newline).
    pub fn command(&self) -> String {
        let (verb, topic, channel) = match self {
            RegistryChange::Register { topic, channel } => ("REGISTER", topic, channel),
            RegistryChange::Unregister { topic, channel } => ("UNREGISTER", topic, channel),
        };
        match channel {
            Some(c) => format!("{verb} {topic} {c}"),
            None => format!("{verb} {topic}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identify_is_nsqds_bytes_and_changes_are_its_lines() {
        let b = hello(&NodeIdentity {
            broadcast_address: "n1".into(),
            hostname: "h<1>".into(),
            http_port: 4151,
            tcp_port: 4150,
            version: "1.3.0".into(),
        });
        let json = br#"{"broadcast_address":"n1","hostname":"h\u003c1\u003e","http_port":4151,"tcp_port":4150,"version":"1.3.0"}"#;
        let mut want = b"  V1IDENTIFY\n".to_vec();
        want.extend_from_slice(&(json.len() as u32).to_be_bytes());
        want.extend_from_slice(json);
        assert_eq!(b, want);
        let reg = RegistryChange::Register {
            topic: "t".into(),
            channel: Some("c".into()),
        };
        assert_eq!(reg.command(), "REGISTER t c");
        let unreg = RegistryChange::Unregister {
            topic: "t".into(),
            channel: None,
        };
        assert_eq!(unreg.command(), "UNREGISTER t");
    }
}
