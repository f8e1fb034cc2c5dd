//! Listening as Go's `net.Listen("tcp", addr)` does.

use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Bind `addr`. An unspecified IPv4 host (`0.0.0.0:port`, or Go's `:port`) binds the
/// dual-stack `[::]:port` as Go does — so IPv6 clients reach it too and the listening line
/// reads `[::]:port` as nsqd's — falling back to `0.0.0.0:port` where IPv6 is unavailable.
pub async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let port = addr
        .strip_prefix("0.0.0.0:")
        .or_else(|| addr.strip_prefix(':'));
    if let Some(port) = port {
        if let Ok(l) = TcpListener::bind(format!("[::]:{port}")).await {
            return Ok(l);
        }
        return TcpListener::bind(format!("0.0.0.0:{port}")).await;
    }
    TcpListener::bind(addr).await
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
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => return Some(x),
                Err(e) => tracing::warn!("{server}: temporary Accept() failure - {e}"),
            },
            _ = shutdown.changed() => return None,
        }
    }
}
