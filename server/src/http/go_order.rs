//! Responses framed as Go's `net/http` frames nsqd's: the same headers in the same order, and
//! the same choice between `Content-Length` and chunks.
//!
//! # Go's order
//! ```text
//! the handler's headers, sorted by name     Allow, Content-Type, X-Nsq-Content-Type, …
//! Date
//! Content-Length                            the whole body was written, at most 2048 bytes
//! Content-Type                              sniffed (the handler set none)
//! Connection                                `close`, when the server closes after it
//! Transfer-Encoding                         `chunked`, for a longer body
//! ```
//! hyper writes a header map in its order, adding `Date`, `Content-Length` or
//! `Transfer-Encoding` at the end when they are missing; so the map is rebuilt in Go's order
//! with `Date` in place, and an nsqd answer longer than Go buffers is given without a length
//! (hyper then sends it in chunks, its `Transfer-Encoding` last, as Go's is).

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Go sends a body up to this long with a `Content-Length`, longer ones in chunks (its
/// `bufferBeforeChunkingSize`).
const GO_BUFFER: usize = 2048;

/// A response's `Content-Type` that Go would have sniffed, not one the handler set (nsqd sets
/// it only for JSON): it goes after `Date` and `Content-Length`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sniffed;

/// `r`, framed as Go frames it (see the module docs). A response that is not a plain body
/// (a switch to WebSocket, a stream) is left as it is.
pub(crate) async fn go_order(r: Response) -> Response {
    let (mut parts, body) = r.into_parts();
    if parts.status.is_informational() {
        return Response::from_parts(parts, body);
    }
    let Some(len) = hyper::body::Body::size_hint(&body).exact() else {
        return Response::from_parts(parts, body);
    };
    let sniffed = parts.extensions.get::<Sniffed>().is_some();
    let old = std::mem::take(&mut parts.headers);
    let mut names: Vec<&HeaderName> = old.keys().collect();
    // Go's canonical names sort as their bytes do; hyper writes them title-cased.
    names.sort_by_key(|n| canonical(n.as_str()));
    let late = |n: &HeaderName| {
        *n == header::DATE
            || *n == header::CONTENT_LENGTH
            || *n == header::CONNECTION
            || *n == header::TRANSFER_ENCODING
            || (sniffed && *n == header::CONTENT_TYPE)
    };
    let mut h = HeaderMap::with_capacity(old.keys_len() + 2);
    for n in names.iter().copied().filter(|n| !late(n)) {
        for v in old.get_all(n) {
            h.append(n.clone(), v.clone());
        }
    }
    let date = old.get(header::DATE).cloned().or_else(|| {
        HeaderValue::from_str(&httpdate::fmt_http_date(std::time::SystemTime::now())).ok()
    });
    if let Some(d) = date {
        h.insert(header::DATE, d);
    }
    // A length already set stays (an answer to HEAD keeps that of the body it does not
    // send).
    // (Only nsqd's own answers: the visualiser's files, which nsqd does not have, keep a
    // length, which browsers use.)
    let set = old.get(header::CONTENT_LENGTH);
    let nsqds = old.contains_key("x-nsq-content-type");
    let whole = set.is_some() || !nsqds || len as usize <= GO_BUFFER;
    if whole {
        let l = set.cloned().unwrap_or_else(|| HeaderValue::from(len));
        h.insert(header::CONTENT_LENGTH, l);
    }
    for n in [header::CONTENT_TYPE, header::CONNECTION] {
        if n != header::CONTENT_TYPE || sniffed {
            if let Some(v) = old.get(&n) {
                h.insert(n, v.clone());
            }
        }
    }
    // hyper writes an empty body's `Content-Length: 0` after every other header; before a
    // `Connection` it must come where the map has it.
    let known_empty = len == 0 && h.contains_key(header::CONNECTION);
    parts.headers = h;
    let body = match whole {
        true if known_empty => Body::new(KnownEmpty),
        true => body,
        // Without a length hyper sends it in chunks.
        false => match axum::body::to_bytes(body, usize::MAX).await {
            Ok(b) => Body::new(Chunked(Some(b))),
            Err(_) => Body::empty(),
        },
    };
    Response::from_parts(parts, body)
}

/// `name` (lowercase) as Go canonicalises it: each word's first letter upper case.
fn canonical(name: &str) -> String {
    let mut up = true;
    name.chars()
        .map(|c| {
            let out = if up { c.to_ascii_uppercase() } else { c };
            up = c == '-';
            out
        })
        .collect()
}

/// An empty body that hyper takes as one of known length 0 (not as no body at all), so that
/// it writes the map's `Content-Length: 0` in its place.
struct KnownEmpty;

impl hyper::body::Body for KnownEmpty {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(0)
    }
}

/// A whole body that says nothing of its length.
struct Chunked(Option<Bytes>);

impl hyper::body::Body for Chunked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(r: &Response) -> Vec<&str> {
        r.headers().keys().map(|k| k.as_str()).collect()
    }

    #[tokio::test]
    async fn headers_come_in_gos_order() {
        // A JSON error with Allow: the handler's, sorted; then Date and the length.
        let mut r = Response::new(Body::from(r#"{"message":"METHOD_NOT_ALLOWED"}"#));
        let h = r.headers_mut();
        h.insert(
            "x-nsq-content-type",
            HeaderValue::from_static("nsq; version=1.0"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(header::ALLOW, HeaderValue::from_static("GET, OPTIONS"));
        let r = go_order(r).await;
        assert_eq!(
            names(&r),
            [
                "allow",
                "content-type",
                "x-nsq-content-type",
                "date",
                "content-length"
            ]
        );
        // A sniffed type and a close go after the length.
        let mut r = Response::new(Body::from("OK"));
        let h = r.headers_mut();
        h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        h.insert(
            "x-nsq-content-type",
            HeaderValue::from_static("nsq; version=1.0"),
        );
        r.extensions_mut().insert(Sniffed);
        let r = go_order(r).await;
        assert_eq!(
            names(&r),
            [
                "x-nsq-content-type",
                "date",
                "content-length",
                "content-type",
                "connection"
            ]
        );
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "2");
    }

    fn nsqds(body: Vec<u8>) -> Response {
        let mut r = Response::new(Body::from(body));
        r.headers_mut().insert(
            "x-nsq-content-type",
            HeaderValue::from_static("nsq; version=1.0"),
        );
        r
    }

    #[tokio::test]
    async fn a_body_longer_than_go_buffers_has_no_length() {
        let r = go_order(nsqds(vec![b'a'; GO_BUFFER + 1])).await;
        assert!(r.headers().get(header::CONTENT_LENGTH).is_none());
        assert!(hyper::body::Body::size_hint(r.body()).exact().is_none());
        let b = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(b.len(), GO_BUFFER + 1);
        let r = go_order(nsqds(vec![b'a'; GO_BUFFER])).await;
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "2048");
        // Not nsqd's (a visualiser file): its length stays.
        let r = go_order(Response::new(Body::from(vec![b'a'; 5000]))).await;
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "5000");
    }
}
