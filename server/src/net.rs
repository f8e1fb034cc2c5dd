//! Listening as Go's `net.Listen("tcp", addr)` does.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Bind `addr`. An unspecified IPv4 host (`0.0.0.0:port`, or Go's `:port`) binds the
/// dual-stack `[::]:port` as Go does — so IPv6 clients reach it too and the listening line
/// reads `[::]:port` as nsqd's — falling back to `0.0.0.0:port` where IPv6 is unavailable.
pub async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let port = addr
        .strip_prefix("0.0.0.0:")
        .or_else(|| addr.strip_prefix(':'));
    let l = match port {
        Some(port) => match TcpListener::bind(format!("[::]:{port}")).await {
            Ok(l) => l,
            Err(_) => TcpListener::bind(format!("0.0.0.0:{port}")).await?,
        },
        None => TcpListener::bind(addr).await?,
    };
    widen_backlog(&l);
    Ok(l)
}

/// Go listens with the system's `net.core.somaxconn` as its backlog (4096 here); the
/// runtime's bind gave 128, and a burst of connections beyond that waited for SYN retries
/// (a second each). Listening again on a listening socket sets the new backlog.
fn widen_backlog(l: &TcpListener) {
    #[cfg(target_os = "linux")]
    {
        let max = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .unwrap_or(4096)
            .clamp(128, 65535);
        let _ = rustix::net::listen(l, max);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = l;
}

/// [`listen`], failing with the daemons' text: `listen (<addr>) failed - <error>`.
pub async fn listen_or_fail(addr: &str) -> anyhow::Result<TcpListener> {
    listen(addr)
        .await
        .map_err(|e| anyhow::anyhow!("listen ({addr}) failed - {e}"))
}

/// The next connection, or `None` once `shutdown` flips. A failed accept (out of file
/// descriptors, say) is logged as Go's "temporary Accept() failure", with `server` naming
/// the listener, and accepting goes on.
pub async fn accept(
    listener: &TcpListener,
    shutdown: &mut watch::Receiver<bool>,
    server: &str,
) -> Option<(TcpStream, SocketAddr)> {
    accept_from(|| listener.accept(), shutdown, server).await
}

/// [`accept`]'s loop around any listener's `accept`.
async fn accept_from<T, F>(
    mut next: impl FnMut() -> F,
    shutdown: &mut watch::Receiver<bool>,
    server: &str,
) -> Option<T>
where
    F: std::future::Future<Output = std::io::Result<T>>,
{
    // As Go's http.Server: after a failure (out of file descriptors, most likely) wait 5 ms,
    // doubling to 1 s while failures go on. Retrying at once spun a core and logged 48 MB/s.
    let mut delay = Duration::ZERO;
    let mut log = RateLimited::default();
    loop {
        tokio::select! {
            r = next() => match r {
                Ok(x) => return Some(x),
                Err(e) => {
                    delay = (delay * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                    log.warn(|n| match n {
                        0 => format!("{server}: temporary Accept() failure - {e}; retrying in {delay:?}"),
                        n => format!("{server}: temporary Accept() failure - {e}; retrying in {delay:?} ({n} more since the last line)"),
                    });
                }
            },
            _ = shutdown.changed() => return None,
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.changed() => return None,
        }
    }
}

/// A warning logged at most once a second; the lines left out are counted in the next.
#[derive(Default)]
struct RateLimited {
    last: Option<std::time::Instant>,
    skipped: u64,
}

impl RateLimited {
    fn warn(&mut self, line: impl FnOnce(u64) -> String) {
        let now = std::time::Instant::now();
        if self.last.is_some_and(|t| now - t < Duration::from_secs(1)) {
            self.skipped += 1;
            return;
        }
        self.last = Some(now);
        tracing::warn!("{}", line(std::mem::take(&mut self.skipped)));
    }
}

/// The limit on open files in force (the soft limit).
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        Some(lim.current.unwrap_or(u64::MAX))
    }
    #[cfg(not(unix))]
    None
}

/// Raise the soft limit on open files to the hard limit, as Go's runtime does at start (nsqd
/// has it so): a server holds a descriptor per connection and per open log segment. Returns
/// the limit now in force.
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let lim = getrlimit(Resource::Nofile);
        // `None` is unlimited.
        let (cur, max) = (
            lim.current.unwrap_or(u64::MAX),
            lim.maximum.unwrap_or(u64::MAX),
        );
        if cur < max {
            let raised = Rlimit {
                current: lim.maximum,
                maximum: lim.maximum,
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return Some(max);
            }
        }
        Some(cur)
    }
    #[cfg(not(unix))]
    None
}

/// Go's `util.TypeOfAddr`: an address `net.SplitHostPort` takes (`host:port`, `[v6]:port`)
/// is TCP; anything else is a unix socket's path.
pub fn is_unix_addr(addr: &str) -> bool {
    let host_port = match addr.strip_prefix('[') {
        Some(rest) => rest
            .split_once("]:")
            .is_some_and(|(host, port)| !host.contains(']') && !port.contains(':')),
        None => addr.matches(':').count() == 1,
    };
    !host_port
}

/// A listener of nsqd's TCP or HTTP port: TCP, or a unix socket (nsqd v1.3).
pub enum Listener {
    Tcp(TcpListener),
    /// With its path, removed when serving ends (Go's listener unlinks it on close).
    Unix(tokio::net::UnixListener, std::path::PathBuf),
}

/// What a [`Listener`] is bound to.
#[derive(Debug, Clone)]
pub enum Local {
    Tcp(SocketAddr),
    Unix(String),
}

impl Local {
    /// The TCP port; 0 for a unix socket (nsqd's broadcast port stays 0 then).
    pub fn port(&self) -> u16 {
        match self {
            Local::Tcp(a) => a.port(),
            Local::Unix(_) => 0,
        }
    }
}

impl std::fmt::Display for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Local::Tcp(a) => a.fmt(f),
            Local::Unix(p) => f.write_str(p),
        }
    }
}

impl Listener {
    pub fn local(&self) -> std::io::Result<Local> {
        Ok(match self {
            Listener::Tcp(l) => Local::Tcp(l.local_addr()?),
            Listener::Unix(_, path) => Local::Unix(path.display().to_string()),
        })
    }

    /// Remove a unix socket's file (after serving).
    pub fn remove_socket(&self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// [`listen_or_fail`], or a unix socket for a path (Go's `net.Listen(util.TypeOfAddr(addr),
/// addr)`; like Go's, it fails when the path exists).
pub async fn listen_any_or_fail(addr: &str) -> anyhow::Result<Listener> {
    if is_unix_addr(addr) {
        let l = tokio::net::UnixListener::bind(addr)
            .map_err(|e| anyhow::anyhow!("listen ({addr}) failed - {e}"))?;
        return Ok(Listener::Unix(l, addr.into()));
    }
    Ok(Listener::Tcp(listen_or_fail(addr).await?))
}

/// An accepted connection of a [`Listener`]: TCP (left) or a unix socket (right).
pub type Conn = tokio_util::either::Either<TcpStream, tokio::net::UnixStream>;

/// [`accept`] on any [`Listener`]: the connection and its peer's address as Go prints it
/// (`@` for a unix socket's unnamed peer). TCP connections get `TCP_NODELAY`.
pub async fn accept_any(
    listener: &Listener,
    shutdown: &mut watch::Receiver<bool>,
    server: &str,
) -> Option<(Conn, String)> {
    match listener {
        Listener::Tcp(l) => {
            let (s, addr) = accept(l, shutdown, server).await?;
            let _ = s.set_nodelay(true);
            Some((Conn::Left(s), addr.to_string()))
        }
        Listener::Unix(l, _) => {
            let (s, _) = accept_from(|| l.accept(), shutdown, server).await?;
            Some((Conn::Right(s), "@".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn addresses_are_tcp_or_unix_as_go_splits_them() {
        for tcp in [
            "127.0.0.1:4150",
            ":4150",
            "[::1]:4150",
            "localhost:0",
            "[::]:1",
        ] {
            assert!(!super::is_unix_addr(tcp), "{tcp}");
        }
        for unix in ["/tmp/nsqd.sock", "nsqd.sock", "::1:4150", "[::1]", "a:b:c"] {
            assert!(super::is_unix_addr(unix), "{unix}");
        }
    }
}
