//! The visualiser's page and assets (precompressed, with cache validators).

use super::AppState;
use crate::http::response::ApiErr;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub(super) async fn index(State(s): State<AppState>, headers: HeaderMap) -> Response {
    static_file(&s, "index.html", &headers).await
}

pub(super) async fn stylesheet(State(s): State<AppState>, headers: HeaderMap) -> Response {
    static_file(&s, "style.css", &headers).await
}

pub(super) async fn pkg_file(
    State(s): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    if file.contains('/') || file.contains("..") {
        return ApiErr::NotFound.into_response();
    }
    static_file(&s, &format!("pkg/{file}"), &headers).await
}

/// The visualiser's page and its build (`www/`, with `www/pkg` as `scripts/build-web.sh`
/// made and committed it), inside the binary: `nsqlab nsqd` serves it from anywhere, with no
/// checkout beside it.
#[derive(rust_embed::Embed)]
#[folder = "../www"]
#[include = "index.html"]
#[include = "style.css"]
#[include = "pkg/*"]
#[exclude = "pkg/SOURCES"]
struct Page;

/// A file of the visualiser page: from `--www-dir` when given (for development), else the
/// copy built into the binary. A client that accepts gzip (or brotli) gets the file's
/// precompressed `.gz` (`.br`) twin when the build made one, or else the file compressed as it
/// is sent, with `Content-Encoding`; every file is sent with `Cache-Control: no-cache`, so a
/// browser keeps it and revalidates it (`If-Modified-Since` or `If-None-Match`, answered 304)
/// instead of fetching it again.
pub(super) async fn static_file(s: &AppState, rel: &str, headers: &HeaderMap) -> Response {
    let Some(source) = &s.info.www_dir else {
        return ApiErr::NotFound.into_response();
    };
    let mut req = axum::http::Request::get(format!("/{rel}"))
        .body(axum::body::Body::empty())
        .expect("request");
    for h in [
        header::ACCEPT_ENCODING,
        header::IF_MODIFIED_SINCE,
        header::IF_UNMODIFIED_SINCE,
        header::IF_NONE_MATCH,
        header::RANGE,
    ] {
        if let Some(v) = headers.get(&h) {
            req.headers_mut().insert(h, v.clone());
        }
    }
    // The page and its stylesheet are small and change with a plain edit: they are
    // compressed as they are sent (a precompressed twin could go stale), at the best level —
    // a few milliseconds for them, and a revalidation is a 304 that compresses nothing.
    let compress = tower_http::compression::CompressionLayer::new()
        .quality(tower_http::CompressionLevel::Best);
    let r = match source {
        Some(dir) => {
            let svc = tower::ServiceBuilder::new().layer(compress).service(
                tower_http::services::ServeDir::new(dir)
                    .precompressed_br()
                    .precompressed_gzip(),
            );
            tower::ServiceExt::oneshot(svc, req)
                .await
                .map(|r| r.map(axum::body::Body::new))
                .ok()
        }
        None => {
            let svc = tower::ServiceBuilder::new()
                .layer(compress)
                .service(tower::service_fn(
                    |req: axum::http::Request<axum::body::Body>| {
                        std::future::ready(Ok::<_, std::convert::Infallible>(embedded(req)))
                    },
                ));
            tower::ServiceExt::oneshot(svc, req)
                .await
                .map(|r| r.map(axum::body::Body::new))
                .ok()
        }
    };
    match r {
        Some(mut r) if r.status().is_success() || r.status() == StatusCode::NOT_MODIFIED => {
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        _ => ApiErr::NotFound.into_response(),
    }
}

/// A file of the copy built into the binary (`req`'s path, without its leading `/`): its
/// precompressed twin when the client takes it, with its type, validators and `Vary`.
fn embedded(req: axum::http::Request<axum::body::Body>) -> Response {
    let rel = req.uri().path().trim_start_matches('/');
    let Some(file) = Page::get(rel) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let accepts = |coding: &str| {
        req.headers()
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|c| {
                let mut parts = c.trim().split(';');
                parts.next() == Some(coding)
                    && parts.all(|p| p.trim().trim_start_matches("q=").parse::<f32>() != Ok(0.0))
            })
    };
    let twin = [("br", ".br"), ("gzip", ".gz")]
        .into_iter()
        .filter(|(coding, _)| accepts(coding))
        .find_map(|(coding, ext)| Page::get(&format!("{rel}{ext}")).map(|f| (coding, f)));
    let etag = |f: &rust_embed::EmbeddedFile, coding: &str| {
        let h = f.metadata.sha256_hash();
        let hex: String = h[..12].iter().map(|b| format!("{b:02x}")).collect();
        format!("\"{hex}{coding}\"")
    };
    let (coding, body, tag) = match &twin {
        Some((coding, f)) => (Some(*coding), f.data.clone(), etag(f, coding)),
        None => (None, file.data.clone(), etag(&file, "")),
    };
    let modified = file
        .metadata
        .last_modified()
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
    let h = req.headers();
    let unchanged = match h.get(header::IF_NONE_MATCH) {
        Some(v) => v
            .to_str()
            .is_ok_and(|v| v.split(',').any(|t| t.trim() == tag)),
        None => match (h.get(header::IF_MODIFIED_SINCE), modified) {
            (Some(since), Some(m)) => since
                .to_str()
                .ok()
                .and_then(|s| httpdate::parse_http_date(s).ok())
                .is_some_and(|since| m <= since),
            _ => false,
        },
    };
    let mut r = match unchanged {
        true => StatusCode::NOT_MODIFIED.into_response(),
        // (The embedded bytes are static: sent without a copy.)
        false => Response::new(axum::body::Body::from(match body {
            std::borrow::Cow::Borrowed(b) => bytes::Bytes::from_static(b),
            std::borrow::Cow::Owned(v) => bytes::Bytes::from(v),
        })),
    };
    let out = r.headers_mut();
    let kind = match rel.rsplit('.').next() {
        Some("html") => "text/html",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    };
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if let Some(c) = coding {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static(c));
    }
    if let Ok(v) = HeaderValue::from_str(&tag) {
        out.insert(header::ETAG, v);
    }
    if let Some(m) = modified {
        if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(m)) {
            out.insert(header::LAST_MODIFIED, v);
        }
    }
    out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    r
}
