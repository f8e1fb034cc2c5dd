//! The host side of replication (`nsqlab_core::replica`): what a replicated node keeps on
//! disk ([`log`]), how it talks to its peers ([`transport`]), and the broker task that
//! drives it ([`driver`]).

pub mod driver;
pub mod log;
pub mod transport;
