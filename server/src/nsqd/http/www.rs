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

/// A file of the visualiser page from `--www-dir`. A client that accepts gzip (or brotli) gets
/// the file's precompressed `.gz` (`.br`) twin when the build made one, or else the file
/// compressed as it is sent, with `Content-Encoding`; every file is sent with `Cache-Control: no-cache`, so a browser keeps
/// it and revalidates it (`If-Modified-Since`, answered 304) instead of fetching it again.
pub(super) async fn static_file(s: &AppState, rel: &str, headers: &HeaderMap) -> Response {
    let Some(dir) = &s.info.www_dir else {
        return ApiErr::NotFound.into_response();
    };
    let mut req = axum::http::Request::get(format!("/{rel}"))
        .body(axum::body::Body::empty())
        .expect("request");
    for h in [
        header::ACCEPT_ENCODING,
        header::IF_MODIFIED_SINCE,
        header::IF_UNMODIFIED_SINCE,
        header::RANGE,
    ] {
        if let Some(v) = headers.get(&h) {
            req.headers_mut().insert(h, v.clone());
        }
    }
    // The page and its stylesheet are small and change with a plain edit: they are
    // compressed as they are sent (a precompressed twin could go stale), at the best level —
    // a few milliseconds for them, and a revalidation is a 304 that compresses nothing.
    let svc = tower::ServiceBuilder::new()
        .layer(
            tower_http::compression::CompressionLayer::new()
                .quality(tower_http::CompressionLevel::Best),
        )
        .service(
            tower_http::services::ServeDir::new(dir)
                .precompressed_br()
                .precompressed_gzip(),
        );
    match tower::ServiceExt::oneshot(svc, req).await {
        Ok(r) if r.status().is_success() || r.status() == StatusCode::NOT_MODIFIED => {
            let mut r = r.map(axum::body::Body::new);
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        _ => ApiErr::NotFound.into_response(),
    }
}
