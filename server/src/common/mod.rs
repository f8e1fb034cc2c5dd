//! What nsqd, nsqlookupd, the client and the tools share, below all of them (it imports none
//! of them): the machine's hostname, the signals that stop a server, the count of closed
//! connections, the stream codecs, NSQ's HTTP client conventions and Go's certificate checks.

pub mod codec;
pub mod http_client;
pub mod tls;

#[cfg(test)]
mod test_path;
#[cfg(test)]
pub(crate) use test_path::{test_dir, test_file, TestPath};

/// The machine's hostname (Go's `os.Hostname`), `localhost` if it has none.
pub fn hostname() -> String {
    hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Connections closed since the process started (TCP, HTTP, WebSocket).
pub(crate) static CLOSED_CONNECTIONS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// A connection's end, counted for nsqd's trimming of freed memory after churn.
pub(crate) fn connection_closed() {
    CLOSED_CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// SIGTERM and SIGINT, caught from creation on.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    /// SIGXFSZ (a file hit RLIMIT_FSIZE) is caught so the write fails with EFBIG — a storage
    /// error nsqd-style — instead of killing the process.
    #[cfg(unix)]
    _xfsz: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn new() -> anyhow::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
                _xfsz: signal(SignalKind::from_raw(25))?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    pub(crate) async fn wait(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {},
            _ = self.int.recv() => {},
        }
        #[cfg(not(unix))]
        {
            let _ = &mut self;
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
