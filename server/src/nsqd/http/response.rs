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
    r
}

pub(super) fn ok_text(t: impl Into<String>) -> Response {
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

/// An API error: nsqd's status code and message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiErr(pub u16, pub &'static str);

impl IntoResponse for ApiErr {
    fn into_response(self) -> Response {
        let mut r = v1(
            StatusCode::from_u16(self.0).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            Some(JSON_TYPE),
            format!(r#"{{"message":"{}"}}"#, self.1).into_bytes(),
        );
        if self.0 == 413 {
            // Go's text for 413 (hyper's is "Payload Too Large"); Go also closes, as the
            // body was not read.
            r.extensions_mut()
                .insert(hyper::ext::ReasonPhrase::from_static(
                    b"Request Entity Too Large",
                ));
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        r
    }
}

pub(crate) type ApiResult = Result<Response, ApiErr>;

pub(super) const EXITING: ApiErr = ApiErr(503, "EXITING");
