//! Partitions: a host may run several brokers, one per core, each owning the topics whose
//! names hash to it (see [`partition_of`]). Clients move between them, sans-IO like the rest.
//!
//! # What a host does
//! - Run one [`Partition`] per partition, each with its [`Options::partition`](crate::Options::partition)
//!   and the same [`Options::partitions`](crate::Options::partitions). Client IDs are then
//!   unique across them (partition `p` of `n` numbers its clients `p+1, p+1+n, …`), and so
//!   are message IDs (a topic lives in one partition).
//! - Connect a new client to any partition; send each connection's input to the partition it
//!   was last told it is in ([`Route::Moved`]), and each [`Route::Peer`] to its partition,
//!   in order. [`Partition`] does the rest: which partition a topic lives on, moving a client
//!   there, forwarding the publishes of clients that stay, and keeping every client's input
//!   and output in order while it moves (see [`routing`](Partition)).

mod routing;

pub use routing::{ClientInput, Partition, PeerMsg, Route};

use crate::client::Client;
use crate::message::Body;
use crate::time::Nanos;
use crate::ClientId;

/// The partition (of `partitions`) that owns `topic`: FNV-1a of the name, so it is the same
/// in every process and after a restart with the same count.
pub fn partition_of(topic: &str, partitions: u32) -> u32 {
    if partitions <= 1 {
        return 0;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in topic.as_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % partitions as u64) as u32
}

/// A client leaving this partition for partition `to`, with its state and the input it sent
/// that this partition did not run (starting with the command that made it move).
#[derive(Debug, Clone)]
pub struct Migration {
    pub client: ClientId,
    pub to: u32,
    pub(crate) state: Box<Client>,
}

/// A publish to run on partition `to` on behalf of `client` (with no bodies it only makes the
/// topic: an MPUB the client's partition refused for its messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub client: ClientId,
    pub to: u32,
    pub topic: String,
    pub bodies: Vec<Body>,
    pub defer: Option<Nanos>,
    /// `PUB`, `MPUB` or `DPUB` (the error code if it fails).
    pub cmd: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_partition_owns_everything_and_names_spread() {
        assert_eq!(partition_of("anything", 1), 0);
        assert_eq!(partition_of("anything", 0), 0);
        let mut seen = [0u32; 4];
        for i in 0..400 {
            let p = partition_of(&format!("topic{i}"), 4);
            assert!(p < 4);
            seen[p as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
        // Stable: the same name, the same partition (stored topics depend on it).
        assert_eq!(partition_of("t", 2), partition_of("t", 2));
        assert_ne!(partition_of("a", 2), partition_of("b", 2));
    }
}
