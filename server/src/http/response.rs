//! nsqd's v1 responses: content types, `{"message":"CODE"}` errors with their status codes.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

pub(crate) const NSQ_CONTENT_TYPE: &str = "nsq; version=1.0";

pub(crate) const JSON_TYPE: &str = "application/json; charset=utf-8";

pub(crate) const TEXT_TYPE: &str = "text/plain; charset=utf-8";

/// nsqd's `RespondV1`. Go sniffs `text/plain` for a non-empty raw body.
pub(crate) fn v1(code: StatusCode, content_type: Option<&'static str>, body: Vec<u8>) -> Response {
    let ct = content_type.or((!body.is_empty()).then_some(TEXT_TYPE));
    let mut r = Response::new(axum::body::Body::from(body));
    *r.status_mut() = code;
    let h = r.headers_mut();
    h.insert(
        "X-NSQ-Content-Type",
        HeaderValue::from_static(NSQ_CONTENT_TYPE),
    );
    if let Some(ct) = ct {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    if content_type.is_none() {
        r.extensions_mut().insert(super::go_order::Sniffed);
    }
    r
}

/// A raw text answer written without nsqd's `X-NSQ-Content-Type` (`/ping`): Go sniffs its
/// type.
pub(crate) fn plain(code: StatusCode, t: impl Into<String>) -> Response {
    let mut r = Response::new(axum::body::Body::from(t.into()));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT_TYPE));
    r.extensions_mut().insert(super::go_order::Sniffed);
    r
}

pub(crate) fn ok_text(t: impl Into<String>) -> Response {
    v1(StatusCode::OK, None, t.into().into_bytes())
}

pub(crate) fn ok_empty() -> Response {
    v1(StatusCode::OK, None, Vec::new())
}

pub(crate) fn json<T: Serialize>(v: &T) -> Response {
    v1(
        StatusCode::OK,
        Some(JSON_TYPE),
        // Go's encoder: `<`, `>`, `&` (in client-given names, say) escaped.
        nsqlab_core::protocol::to_go_json(v).unwrap_or_default(),
    )
}

/// An error answer of nsqd's HTTP API: a status code and `{"message":"CODE"}`, as nsqd
/// sends them (the variant names are its codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiErr {
    InvalidArgChannel,
    /// A topic name nsqd refuses (admin calls).
    InvalidArgTopic,
    InvalidDefer,
    InvalidOption,
    /// A query string Go cannot parse.
    InvalidRequest,
    /// A topic name nsqd refuses (`/pub`, `/mpub`).
    InvalidTopic,
    InvalidValue,
    MissingArgChannel,
    MissingArgNode,
    /// No `topic` parameter.
    MissingArgTopic,
    MsgEmpty,
    ChannelNotFound,
    /// No such path (or topic, for admin calls).
    NotFound,
    TopicNotFound,
    /// A known path with another method.
    MethodNotAllowed,
    BadBody,
    BadMessage,
    /// A body over `--max-body-size`.
    BodyTooBig,
    /// A `/config` value over the size nsqd reads.
    ValueTooBig,
    /// A message over `--max-msg-size`.
    MsgTooBig,
    /// Something nsqd does not expect.
    InternalError,
    /// The server is stopping, or storage is failing.
    Exiting,
}

impl ApiErr {
    /// The status code and the message nsqd answers with.
    pub fn parts(self) -> (StatusCode, &'static str) {
        use ApiErr::*;
        let (status, code) = match self {
            InvalidArgChannel => (400, "INVALID_ARG_CHANNEL"),
            InvalidArgTopic => (400, "INVALID_ARG_TOPIC"),
            InvalidDefer => (400, "INVALID_DEFER"),
            InvalidOption => (400, "INVALID_OPTION"),
            InvalidRequest => (400, "INVALID_REQUEST"),
            InvalidTopic => (400, "INVALID_TOPIC"),
            InvalidValue => (400, "INVALID_VALUE"),
            MissingArgChannel => (400, "MISSING_ARG_CHANNEL"),
            MissingArgNode => (400, "MISSING_ARG_NODE"),
            MissingArgTopic => (400, "MISSING_ARG_TOPIC"),
            MsgEmpty => (400, "MSG_EMPTY"),
            ChannelNotFound => (404, "CHANNEL_NOT_FOUND"),
            NotFound => (404, "NOT_FOUND"),
            TopicNotFound => (404, "TOPIC_NOT_FOUND"),
            MethodNotAllowed => (405, "METHOD_NOT_ALLOWED"),
            BadBody => (413, "BAD_BODY"),
            BadMessage => (413, "BAD_MESSAGE"),
            BodyTooBig => (413, "BODY_TOO_BIG"),
            ValueTooBig => (413, "INVALID_VALUE"),
            MsgTooBig => (413, "MSG_TOO_BIG"),
            InternalError => (500, "INTERNAL_ERROR"),
            Exiting => (503, "EXITING"),
        };
        (
            StatusCode::from_u16(status).expect("a valid status code"),
            code,
        )
    }
}

impl IntoResponse for ApiErr {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let mut r = v1(
            status,
            Some(JSON_TYPE),
            format!(r#"{{"message":"{code}"}}"#).into_bytes(),
        );
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            // Go's text for 413 (hyper's is "Payload Too Large"). Whether the connection
            // closes depends on what is left of the body (`http/body.rs`).
            r.extensions_mut()
                .insert(hyper::ext::ReasonPhrase::from_static(
                    b"Request Entity Too Large",
                ));
        }
        r
    }
}

pub(crate) type ApiResult = Result<Response, ApiErr>;

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(r: Response) -> String {
        let b = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn errors_answer_as_nsqd_does() {
        let r = ApiErr::MissingArgTopic.into_response();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(r.headers()["X-NSQ-Content-Type"], NSQ_CONTENT_TYPE);
        assert_eq!(r.headers()[header::CONTENT_TYPE], JSON_TYPE);
        assert!(r.headers().get(header::CONNECTION).is_none());
        assert_eq!(body(r).await, r#"{"message":"MISSING_ARG_TOPIC"}"#);

        // A 413 carries Go's reason phrase (whether it closes is the connection's to say,
        // from what is left of the body: http/body.rs).
        let r = ApiErr::MsgTooBig.into_response();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(r.headers().get(header::CONNECTION).is_none());
        let reason = r.extensions().get::<hyper::ext::ReasonPhrase>().unwrap();
        assert_eq!(reason.as_bytes(), b"Request Entity Too Large");
        assert_eq!(body(r).await, r#"{"message":"MSG_TOO_BIG"}"#);

        // The same code can come with two statuses, as in nsqd's /config.
        assert_eq!(
            ApiErr::InvalidValue.parts(),
            (StatusCode::BAD_REQUEST, "INVALID_VALUE")
        );
        assert_eq!(
            ApiErr::ValueTooBig.parts(),
            (StatusCode::PAYLOAD_TOO_LARGE, "INVALID_VALUE")
        );
        assert_eq!(
            ApiErr::Exiting.parts(),
            (StatusCode::SERVICE_UNAVAILABLE, "EXITING")
        );
    }

    #[tokio::test]
    async fn a_raw_body_is_text_and_an_empty_one_has_no_type() {
        let r = ok_text("OK");
        assert_eq!(r.headers()[header::CONTENT_TYPE], TEXT_TYPE);
        assert_eq!(body(r).await, "OK");
        let r = ok_empty();
        assert!(r.headers().get(header::CONTENT_TYPE).is_none());
        assert_eq!(r.headers()["X-NSQ-Content-Type"], NSQ_CONTENT_TYPE);
        let r = json(&serde_json::json!({"a": "<&>"}));
        assert_eq!(body(r).await, r#"{"a":"\u003c\u0026\u003e"}"#);
    }
}
