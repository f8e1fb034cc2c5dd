//! A request's body as Go's `net/http` server treats it: the handler is given a [`Tracked`]
//! body, and once it has answered, [`Leftover::settle`] does with what it left unread what Go
//! does, which a client sees in the answer's `Connection` header and in whether the
//! connection stays open.
//!
//! # What Go does with a body the handler did not read to its end
//! ```text
//! Expect: 100-continue, never read    no 100 Continue was sent: close
//! more than 256 KiB left (declared)   close, without reading it
//! otherwise                           read away up to 256 KiB more (waiting for the client);
//!                                     the end reached: keep the connection, else close
//! ```
//! (Go's `maxPostHandlerReadBytes`; nsqd's handlers that call `NewReqParams` read the body
//! whole, so for them nothing is left.)

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

/// How much of an unread body Go reads away to keep the connection.
const READ_AWAY: u64 = 256 << 10;

#[derive(Debug)]
struct State {
    body: Mutex<Option<Incoming>>,
    /// The handler asked for the body (so a `100 Continue` went out, if one was expected).
    asked: AtomicBool,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Option<Incoming>> {
        self.body.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The body the handler reads.
#[derive(Debug)]
pub(crate) struct Tracked(Arc<State>);

/// What the service keeps of the body, to settle it after the answer.
#[derive(Debug)]
pub(crate) struct Leftover(Arc<State>);

/// Split a request's body between the handler and the service.
pub(crate) fn track(body: Incoming) -> (Tracked, Leftover) {
    let state = Arc::new(State {
        body: Mutex::new(Some(body)),
        asked: AtomicBool::new(false),
    });
    (Tracked(state.clone()), Leftover(state))
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        self.0.asked.store(true, Ordering::Relaxed);
        match self.0.lock().as_mut() {
            Some(b) => Pin::new(b).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.lock().as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.0
            .lock()
            .as_ref()
            .map_or(SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Leftover {
    /// After the handler answered: whether the connection must close because of what is left
    /// of the body (see the module docs). `expect_continue`: the request asked for a `100
    /// Continue` before sending its body.
    pub(crate) async fn settle(self, expect_continue: bool) -> bool {
        let Some(mut body) = self.0.lock().take() else {
            return false;
        };
        if body.is_end_stream() {
            return false;
        }
        if expect_continue && !self.0.asked.load(Ordering::Relaxed) {
            return true;
        }
        if body.size_hint().exact().is_some_and(|n| n >= READ_AWAY) {
            return true;
        }
        let mut read = 0u64;
        loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return false,
                Some(Ok(f)) => {
                    read += f.data_ref().map_or(0, |d| d.len() as u64);
                    if read > READ_AWAY {
                        return true;
                    }
                }
                Some(Err(_)) => return true,
            }
        }
    }
}

/// Read a body to its end, keeping nothing: what nsqd's handlers that parse their parameters
/// with `NewReqParams` do (it reads the body whole), so a client that asked for `100 Continue`
/// gets it and the connection stays open.
pub async fn read_away(body: axum::body::Body) {
    use http_body_util::BodyExt;
    let mut body = body;
    while let Some(Ok(_)) = body.frame().await {}
}
