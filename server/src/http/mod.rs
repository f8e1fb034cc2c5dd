//! The HTTP server nsqd and nsqlookupd share: connections served as Go's `net/http` serves
//! them (`conn.rs`: idle keep-alive connections kept, only request heads timed, unparseable
//! requests answered with Go's bytes), httprouter's handling before routing (`router.rs`),
//! query strings as Go's `url.ParseQuery` reads them (`query.rs`), and NSQ's v1 answers and
//! errors (`response.rs`).

pub mod body;
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

/// What a request asks of the connection, as Go reads it.
#[derive(Debug, Clone, Copy)]
struct Asks {
    /// HTTP/1.0.
    old: bool,
    /// HTTP/1.0 asking to keep the connection (`Connection: keep-alive`).
    keep_alive: bool,
    /// `Expect: 100-continue` on HTTP/1.1 with a body: Go sends `100 Continue` only when the
    /// handler first reads it.
    continue_first: bool,
    /// An `Expect` other than `100-continue`.
    other_expectation: bool,
}

impl Asks {
    fn of<B>(req: &hyper::Request<B>) -> Asks {
        let h = req.headers();
        let has_token = |name: header::HeaderName, token: &str| {
            h.get_all(name).iter().any(|v| {
                v.to_str()
                    .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
            })
        };
        let old = req.version() == axum::http::Version::HTTP_10;
        let expect = h.get(header::EXPECT).is_some_and(|v| !v.is_empty());
        let hundred = has_token(header::EXPECT, "100-continue");
        let no_body = h
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() == b"0");
        Asks {
            old,
            keep_alive: old && has_token(header::CONNECTION, "keep-alive"),
            continue_first: hundred && !old && !no_body,
            other_expectation: expect && !hundred,
        }
    }

    /// Go answers an `Expect` it does not know with 417 and closes.
    fn refused(&self) -> bool {
        self.other_expectation
    }

    /// The answer's `Connection` as Go writes it: `close` when closing (but for HTTP/1.0
    /// without keep-alive, where closing goes without saying), `keep-alive` when HTTP/1.0
    /// asked for it and gets it.
    fn connection(&self, r: &mut Response, close: bool) {
        let h = r.headers_mut();
        if close || h.get(header::CONNECTION).is_some_and(|v| v == "close") {
            match self.old && !self.keep_alive {
                true => drop(h.remove(header::CONNECTION)),
                false => drop(h.insert(header::CONNECTION, HeaderValue::from_static("close"))),
            }
        } else if self.keep_alive {
            h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        }
        if self.old {
            // (So hyper, answering an HTTP/1.0 peer, adds no `keep-alive` of its own.)
            *r.version_mut() = axum::http::Version::HTTP_10;
        }
    }
}

/// Go's answer to an `Expect` it does not know (its own bytes, headers in its order).
fn expectation_failed() -> bytes::Bytes {
    format!(
        "HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: {}\r\nContent-Length: 0\r\n\r\n",
        httpdate::fmt_http_date(std::time::SystemTime::now())
    )
    .into()
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
            let refusal = conn::go_refusal(&req).map(bytes::Bytes::from_static);
            let asks = Asks::of(&req);
            async move {
                let go_bytes = refusal.or_else(|| asks.refused().then(expectation_failed));
                let (response, unread) = match go_bytes {
                    // Go's bytes go out instead of this response (see conn.rs).
                    Some(bytes) => {
                        shared.answer_raw(bytes);
                        let mut r = Response::new(axum::body::Body::empty());
                        r.headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                        (r, false)
                    }
                    None => {
                        let (parts, incoming) = req.into_parts();
                        let (tracked, leftover) = body::track(incoming);
                        let req = hyper::Request::from_parts(parts, axum::body::Body::new(tracked));
                        let mut r = tower::ServiceExt::oneshot(app, req)
                            .await
                            .unwrap_or_else(|e| match e {});
                        let close = leftover.settle(asks.continue_first).await;
                        asks.connection(&mut r, close);
                        (go_order::go_order(r).await, close)
                    }
                };
                shared.request_done(response.status(), unread);
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
