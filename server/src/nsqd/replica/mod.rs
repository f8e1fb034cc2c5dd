//! The host side of replication (`nsqlab_core::replica`): what a replicated node keeps on
//! disk ([`log`]) and how it talks to its peers ([`transport`]).

pub mod log;
pub mod transport;
