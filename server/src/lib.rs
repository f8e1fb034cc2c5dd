//! nsqlab's server side: thin tokio I/O around the sans-IO core.
//!
//! - [`nsqd`]: `nsqlab nsqd`, a drop-in nsqd (TCP protocol V2 and the HTTP API).
//! - [`cli`]: Go-style command lines (`-flag value`, `--flag=value`, …) and durations.
//! - [`logging`]: nsqd's log line format (client test harnesses parse the listening lines).

pub mod bench;
pub mod cli;
pub mod client;
pub mod clock;
pub mod demo;
pub mod logging;
pub mod net;
pub mod nsqd;
pub mod nsqlookupd;
pub mod tools;
