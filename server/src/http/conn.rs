//! One HTTP connection under hyper, kept as nsqd's Go `net/http` server keeps it.
//!
//! hyper parses and answers; [`Watched`] wraps the connection's stream and [`Shared`] is what
//! it shares with the connection's service and its [`watch`] task, for three things where
//! hyper on its own differs from nsqd in ways a client sees:
//!
//! - **An idle keep-alive connection stays open.** nsqd's server has no timeouts at all, and
//!   pooled clients (Go's keeps idle connections 90 s) reuse one much later. hyper's
//!   `header_read_timeout` also runs while a connection waits for its next request, and closed
//!   it after 10 s: the client's next POST met a reset. Here the clock starts at a request's
//!   first byte and stops when its headers are read (a slowloris client is still cut off),
//!   and idle connections are bounded by number ([`IDLE_MAX`]), not by a timer.
//! - **Go's answers to a request it cannot parse.** hyper answers a bad request line or
//!   header with an empty `400`/`431` of its own, and nothing when the client's input ends
//!   inside a request head; Go sends `400 Bad Request` (`431 …`, `505 …`) as text. Those
//!   responses, which hyper writes before any service ran, are replaced by Go's bytes.
//! - **HTTP/1.1 needs exactly one `Host`.** Go refuses a request without one (`400 Bad
//!   Request: missing required Host header`) or with two; hyper serves them.

use axum::http;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Go's answer to a request it cannot parse.
pub const GO_400: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request";
/// Go's answer to a request line or headers longer than its limit.
pub const GO_431: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large";
/// Go's answer to an HTTP version other than 1.x.
pub const GO_505: &[u8] = b"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n505 HTTP Version Not Supported: unsupported protocol version";
/// Go's answer to an HTTP/1.1 request without `Host`.
pub const GO_400_NO_HOST: &[u8] = b"HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request: missing required Host header";

/// Idle HTTP connections (between requests) the process keeps; one more is closed when it
/// goes idle. Go's server has no bound, but nsqd runs with a file limit it raised to the
/// hard limit; this stays well inside a usual one.
pub const IDLE_MAX: usize = 10_000;

/// After an answer that left its request's body unread (and closes), Go closes its sending side, waits
/// this long, then closes (its `closeWriteAndWait`): the client, still sending the body,
/// reads the answer (with the end of the stream) before its writes are refused.
const LINGER: Duration = Duration::from_millis(500);

/// How much of a request head is kept to tell Go's 505 from its 400 (the request line).
const SNIFF: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between requests (or before the first).
    Idle,
    /// A request's head is arriving: the header clock runs.
    Head,
    /// Its head was read: the service has it.
    Busy,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// When the current request's first byte came.
    since: Instant,
    /// The start of the current request's head, as read.
    head: Vec<u8>,
    /// Go's bytes to send instead of hyper's answer to the current request (which then
    /// ends the connection).
    replace: Option<bytes::Bytes>,
    /// The connection was upgraded (a WebSocket): bytes pass untouched.
    upgraded: bool,
    /// The last answer left its request's body unread (a 413): the connection ends as Go
    /// ends it then (see [`LINGER`]).
    linger: bool,
}

/// What a connection's stream, service and watch task share.
#[derive(Debug)]
pub struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(State {
                phase: Phase::Idle,
                since: Instant::now(),
                head: Vec::new(),
                replace: None,
                upgraded: false,
                linger: false,
            }),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.notify_waiters();
    }

    /// The service was called: a request's head was read whole.
    pub fn request_started(&self) {
        self.set(|s| s.phase = Phase::Busy);
    }

    /// The service answered (`status`; `unread`: it closes the connection with the request's
    /// body not read): the connection waits for the next request.
    pub fn request_done(&self, status: http::StatusCode, unread: bool) {
        self.set(|s| {
            s.phase = Phase::Idle;
            s.upgraded |= status == http::StatusCode::SWITCHING_PROTOCOLS;
            s.linger = unread;
        });
    }

    /// Answer the current request with Go's `bytes` instead of hyper's response.
    pub fn answer_raw(&self, bytes: impl Into<bytes::Bytes>) {
        let bytes = bytes.into();
        self.set(|s| s.replace = Some(bytes));
    }
}

/// Go's refusal of `req` where hyper would serve it: an HTTP/1.1 request must name exactly
/// one `Host`.
pub fn go_refusal<B>(req: &http::Request<B>) -> Option<&'static [u8]> {
    if req.version() != http::Version::HTTP_11 {
        return None;
    }
    match req.headers().get_all(http::header::HOST).iter().count() {
        1 => None,
        0 => Some(GO_400_NO_HOST),
        _ => Some(GO_400),
    }
}

/// Go's answer to a request head hyper refused with `hyper_answer` (its status line tells
/// why), `head` being the start of what the client sent.
fn go_answer_to_unparsable(hyper_answer: &[u8], head: &[u8]) -> &'static [u8] {
    match hyper_answer.get(9..12) {
        Some(b"431") | Some(b"414") => GO_431,
        _ if unsupported_version(head) => GO_505,
        _ => GO_400,
    }
}

/// `bytes` are hyper's own answer to a head it could not parse: an error status, no body,
/// and the connection closing. (A pipelined request's first bytes can arrive while an
/// earlier response is still being written; those writes never look like this.)
fn is_hyper_refusal(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(512)];
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    (head.starts_with(b"HTTP/1.1 4") || head.starts_with(b"HTTP/1.1 5"))
        && has(b"\r\nConnection: close\r\n")
        && has(b"\r\nContent-Length: 0\r\n")
}

/// The request line names an HTTP version whose major number is not 1 (`HTTP/2.5`).
fn unsupported_version(head: &[u8]) -> bool {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(_), Some(_), Some(proto), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some(version) = proto.strip_prefix(b"HTTP/") else {
        return false;
    };
    let Some(dot) = version.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (major, minor) = (&version[..dot], &version[dot + 1..]);
    let digits = |b: &[u8]| !b.is_empty() && b.iter().all(u8::is_ascii_digit);
    digits(major) && digits(minor) && major != b"1"
}

/// A connection's stream, watched (see the module docs).
pub struct Watched<I> {
    io: I,
    shared: Arc<Shared>,
    /// Go's bytes still to write (hyper's own answer is being dropped meanwhile).
    out: Vec<u8>,
    /// Go's answer replaced hyper's: what hyper writes from now on is dropped.
    replacing: bool,
    /// The wait before closing after a shut down sending side (see [`LINGER`]).
    linger: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<I> Watched<I> {
    pub fn new(io: I, shared: Arc<Shared>) -> Watched<I> {
        Watched {
            io,
            shared,
            out: Vec::new(),
            replacing: false,
            linger: None,
        }
    }
}

impl<I: AsyncWrite + Unpin> Watched<I> {
    /// Write what is left of Go's answer.
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.out.is_empty() {
            match Pin::new(&mut self.io).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    fn replace_with(&mut self, bytes: &[u8]) {
        self.replacing = true;
        self.out.extend_from_slice(bytes);
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        if !matches!(r, Poll::Ready(Ok(()))) {
            return r;
        }
        let new = &buf.filled()[before..];
        let mut s = this.shared.lock();
        if s.upgraded {
            return r;
        }
        if new.is_empty() {
            // The input ended inside a request head: Go answers 400 (hyper says nothing).
            if s.phase == Phase::Head && !s.head.is_empty() && !this.replacing {
                drop(s);
                this.replace_with(GO_400);
                // A few bytes into an idle socket's send buffer: written now, or not at all.
                let _ = this.drive(cx);
            }
            return r;
        }
        if s.phase == Phase::Idle {
            s.phase = Phase::Head;
            s.since = Instant::now();
            s.head.clear();
            drop(s);
            this.shared.changed.notify_waiters();
            s = this.shared.lock();
        }
        if s.phase == Phase::Head && s.head.len() < SNIFF {
            let take = new.len().min(SNIFF - s.head.len());
            s.head.extend_from_slice(&new[..take]);
        }
        r
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.replacing {
            let s = this.shared.lock();
            let go = match (s.upgraded, &s.replace, s.phase) {
                (true, _, _) => None,
                (false, Some(bytes), _) => Some(bytes.clone()),
                // hyper answers before any service ran: it could not parse the head.
                (false, None, Phase::Head) if is_hyper_refusal(buf) => Some(
                    bytes::Bytes::from_static(go_answer_to_unparsable(buf, &s.head)),
                ),
                _ => None,
            };
            drop(s);
            match go {
                Some(bytes) => this.replace_with(&bytes),
                None => return Pin::new(&mut this.io).poll_write(cx, buf),
            }
        }
        // hyper's bytes are dropped; Go's go out (the rest on flush).
        if let Poll::Ready(Err(e)) = this.drive(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.drive(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.drive(cx))?;
        if this.linger.is_none() {
            std::task::ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            if !this.shared.lock().linger {
                return Poll::Ready(Ok(()));
            }
            this.linger = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let wait = this.linger.as_mut().expect("just set");
        wait.as_mut().poll(cx).map(Ok)
    }
}

/// Idle connections of the process.
static IDLE: AtomicUsize = AtomicUsize::new(0);

/// This connection's place among the idle ones.
struct IdleSlot(bool);

impl IdleSlot {
    /// Count it as idle; false when there are too many already.
    fn take(&mut self) -> bool {
        if !self.0 {
            if IDLE.fetch_add(1, Ordering::Relaxed) >= IDLE_MAX {
                IDLE.fetch_sub(1, Ordering::Relaxed);
                return false;
            }
            self.0 = true;
        }
        true
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.0) {
            IDLE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for IdleSlot {
    fn drop(&mut self) {
        self.release();
    }
}

/// Returns when the connection should be closed: a request's head took longer than
/// `header_timeout`, or it went idle with [`IDLE_MAX`] others idle. Run beside the
/// connection; it never returns for a connection that behaves.
pub async fn watch(shared: Arc<Shared>, header_timeout: Duration) {
    let mut idle = IdleSlot(false);
    loop {
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (phase, since, upgraded) = {
            let s = shared.lock();
            (s.phase, s.since, s.upgraded)
        };
        if upgraded {
            return std::future::pending().await;
        }
        match phase {
            Phase::Idle => {
                if !idle.take() {
                    tracing::warn!("HTTP: {IDLE_MAX} idle connections; closing one more");
                    return;
                }
                changed.await;
            }
            Phase::Head => {
                idle.release();
                let deadline = tokio::time::Instant::from_std(since + header_timeout);
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {
                        let s = shared.lock();
                        if s.phase == Phase::Head && s.since == since {
                            return;
                        }
                    }
                    _ = changed => {}
                }
            }
            Phase::Busy => {
                idle.release();
                changed.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_answers_by_what_hyper_refused_and_the_request_line() {
        let hyper_400 = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        let hyper_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n";
        assert_eq!(go_answer_to_unparsable(hyper_431, b"GET /"), GO_431);
        assert_eq!(
            go_answer_to_unparsable(hyper_400, b"GARBAGE\r\n\r\n"),
            GO_400
        );
        let v = |line: &[u8]| go_answer_to_unparsable(hyper_400, line);
        assert_eq!(v(b"GET /ping HTTP/2.5\r\nHost: x\r\n"), GO_505);
        assert_eq!(v(b"GET /ping HTTP/3.0\n"), GO_505);
        assert_eq!(v(b"GET /ping HTTP/1.1\r\nBad Header\r\n"), GO_400);
        assert_eq!(v(b"GET /ping HTTP/x.y\r\n"), GO_400);
        assert_eq!(v(b"GET / ping HTTP/2.0\r\n"), GO_400);
    }

    #[test]
    fn only_hypers_own_refusals_are_replaced() {
        let refusal = b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\nDate: x\r\n\r\n";
        assert!(is_hyper_refusal(refusal));
        // An earlier response still being written when a pipelined request's bytes come.
        assert!(!is_hyper_refusal(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 29\r\n\r\n{"
        ));
        assert!(!is_hyper_refusal(b"ion: close\r\nContent-Length: 0\r\n"));
        assert!(!is_hyper_refusal(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        ));
    }

    #[test]
    fn http_1_1_needs_one_host() {
        let req = |v: http::Version, hosts: &[&str]| {
            let mut b = http::Request::builder().version(v).uri("/ping");
            for h in hosts {
                b = b.header("host", *h);
            }
            b.body(()).unwrap()
        };
        assert_eq!(go_refusal(&req(http::Version::HTTP_11, &["x"])), None);
        assert_eq!(
            go_refusal(&req(http::Version::HTTP_11, &[])),
            Some(GO_400_NO_HOST)
        );
        assert_eq!(
            go_refusal(&req(http::Version::HTTP_11, &["x", "y"])),
            Some(GO_400)
        );
        assert_eq!(go_refusal(&req(http::Version::HTTP_10, &[])), None);
    }
}
