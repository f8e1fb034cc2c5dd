//! Listening as Go's `net.Listen("tcp", addr)` does.

use tokio::net::TcpListener;

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
