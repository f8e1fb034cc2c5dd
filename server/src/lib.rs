//! nsqlab's server side: thin tokio I/O around the sans-IO core.
//!
//! - [`nsqd`]: `nsqlab nsqd`, a drop-in nsqd (TCP protocol V2 and the HTTP API).
//! - [`cli`]: Go-style command lines (`-flag value`, `--flag=value`, …) and durations.
//! - [`logging`]: nsqd's log line format (client test harnesses parse the listening lines).

pub mod bench;

/// The line `--version` prints and the daemons log at start, as nsqd's: `nsqd v1.3.0 (built
/// w/go1.21.8)`. Tools that check a daemon's version read the parenthesised part as one
/// token, so ours has no space in it either.
pub fn version_line(daemon: &str) -> String {
    format!(
        "{daemon} v{} (built w/nsqlab-{})",
        nsqlab_core::VERSION,
        env!("CARGO_PKG_VERSION")
    )
}

pub mod cli;
pub mod client;
pub mod clock;
pub mod common;
pub mod demo;
pub mod http;
pub mod logging;
pub mod net;
pub mod nsqd;
pub mod nsqlookupd;
pub mod tools;
