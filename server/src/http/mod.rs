//! The HTTP server nsqd and nsqlookupd share: connections served as Go's `net/http` serves
//! them (`conn.rs`: idle keep-alive connections kept, only request heads timed, unparseable
//! requests answered with Go's bytes), httprouter's handling before routing (`router.rs`),
//! query strings as Go's `url.ParseQuery` reads them (`query.rs`), and NSQ's v1 answers and
//! errors (`response.rs`).

mod conn;
mod go_order;
pub mod query;
pub mod response;
pub mod router;

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Router;
use tokio::sync::watch;

/// A request's peer as Go prints it (`host:port`, `@` on a unix socket).
#[derive(Debug, Clone)]
pub struct Remote(pub String);

/// Serve `app` until `shutdown` flips, over TLS when `tls` is given (HTTPS). Each connection
/// gets `header_timeout` to send a request's headers (a slowloris client is cut off; others
/// are not affected).
pub async fn serve(
    listener: crate::net::Listener,
    app: Router,
    header_timeout: std::time::Duration,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    while let Some((stream, remote)) =
        crate::net::accept_any(&listener, &mut shutdown, "http").await
    {
        let (app, tls, mut stop) = (app.clone(), tls.clone(), shutdown.clone());
        tokio::spawn(async move {
            // The server stops: an open connection (an idle keep-alive one too) is closed, as
            // Go's server closes its connections when nsqd exits.
            let serve = async {
                match tls {
                    None => serve_connection(stream, remote, app, header_timeout).await,
                    Some(acceptor) => {
                        let handshake =
                            tokio::time::timeout(header_timeout, acceptor.accept(stream));
                        if let Ok(Ok(tls)) = handshake.await {
                            serve_connection(tls, remote, app, header_timeout).await;
                        }
                    }
                }
            };
            tokio::select! {
                _ = serve => {}
                _ = stop.wait_for(|&s| s) => {}
            }
            crate::common::connection_closed();
        });
    }
    listener.remove_socket();
}

async fn serve_connection<I>(
    io: I,
    remote: String,
    app: Router,
    header_timeout: std::time::Duration,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use conn::Watched;
    use hyper_util::rt::{TokioIo, TokioTimer};
    let shared = conn::Shared::new();
    let io = Watched::new(io, shared.clone());
    let watched = shared.clone();
    let service =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            shared.request_started();
            req.extensions_mut()
                .insert(ConnectInfo(Remote(remote.clone())));
            let (app, shared) = (app.clone(), shared.clone());
            let refusal = conn::go_refusal(&req);
            async move {
                let response = match refusal {
                    // Go's bytes go out instead of this response (see conn.rs).
                    Some(bytes) => {
                        shared.answer_raw(bytes);
                        let mut r = Response::new(axum::body::Body::empty());
                        r.headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                        r
                    }
                    None => {
                        let r = tower::ServiceExt::oneshot(app, req.map(axum::body::Body::new))
                            .await
                            .unwrap_or_else(|e| match e {});
                        go_order::go_order(r).await
                    }
                };
                shared.request_done(response.status());
                Ok::<_, std::convert::Infallible>(response)
            }
        });
    // No header_read_timeout: hyper's would also close idle keep-alive connections (see
    // conn::watch, which times a request's headers only).
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .title_case_headers(true)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::select! {
        _ = conn => {}
        _ = conn::watch(watched, header_timeout) => {}
    }
}
