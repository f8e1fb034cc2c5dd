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

// What a broker hands over lives with the broker (which knows nothing of this module).
pub use crate::broker::migrate::{partition_of, Forward, Migration};

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
