//! httprouter's handling before routing, as nsqd's and nsqlookupd's routers do it: redirects
//! for an unrouted path that a routed one is near (a trailing slash, an unclean path, another
//! case), then 405 with `Allow` and OPTIONS for a known path.

use super::response::ApiErr;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// httprouter's `CleanPath` without the trailing slash (no route has one): `.` and `..`
/// segments resolved, repeated slashes made one, rooted.
pub(crate) fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// httprouter's redirects for an unrouted path: the same path without (or with) a trailing
/// slash, or in the routed case, when that path is routed for the method — 301 for GET,
/// 307 otherwise, with Go's `http.Redirect` body.
pub(crate) fn redirect(
    req: &Request,
    routed: fn(&str) -> Option<&'static [&'static str]>,
) -> Option<Response> {
    let path = req.uri().path();
    let method = req.method().as_str();
    if path == "/" || method == "CONNECT" {
        return None;
    }
    let ok = |p: &str| routed(p).is_some_and(|m| m.contains(&method));
    let target = if let Some(t) = path.strip_suffix('/').filter(|t| ok(t)) {
        t.to_string()
    } else if ok(&format!("{path}/")) {
        format!("{path}/")
    } else {
        // httprouter's fixed path: cleaned, then matched ignoring the case of its fixed
        // segments (a parameter, the last segment of `/config/:opt`, keeps its case).
        let clean = clean_path(path);
        let (dir, leaf) = clean.rsplit_once('/').unwrap_or(("", &clean));
        let keep_leaf = format!("{}/{leaf}", dir.to_ascii_lowercase());
        [keep_leaf, clean.to_ascii_lowercase()]
            .into_iter()
            .find(|p| p != path && ok(p))?
    };
    let location = match req.uri().query() {
        Some(q) => format!("{target}?{q}"),
        None => target,
    };
    let (code, text) = if method == "GET" {
        (StatusCode::MOVED_PERMANENTLY, "Moved Permanently")
    } else {
        (StatusCode::TEMPORARY_REDIRECT, "Temporary Redirect")
    };
    let body = if method == "GET" {
        format!("<a href=\"{location}\">{text}</a>.\n\n")
    } else {
        String::new()
    };
    let mut r = Response::new(axum::body::Body::from(body));
    *r.status_mut() = code;
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    if method == "GET" || method == "HEAD" {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
    }
    Some(r)
}

/// httprouter's handling before routing, for a router whose routes are `routed`: redirects
/// for unrouted paths, then 405 (with `Allow`) and OPTIONS for a known path.
pub(crate) async fn router_guard(
    req: Request,
    next: Next,
    routed: fn(&str) -> Option<&'static [&'static str]>,
) -> Response {
    let Some(methods) = routed(req.uri().path()) else {
        if let Some(r) = redirect(&req, routed) {
            return r;
        }
        return next.run(req).await;
    };
    if methods.contains(&req.method().as_str()) {
        return next.run(req).await;
    }
    let mut allow: Vec<&str> = methods.to_vec();
    allow.push("OPTIONS");
    allow.sort_unstable();
    let mut resp = if req.method() == Method::OPTIONS {
        StatusCode::OK.into_response()
    } else {
        ApiErr::MethodNotAllowed.into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&allow.join(", ")) {
        resp.headers_mut().insert(header::ALLOW, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_as_httprouter_cleans_them() {
        assert_eq!(clean_path("/a/./b/../c"), "/a/c");
        assert_eq!(clean_path("//ping"), "/ping");
        assert_eq!(clean_path("/../../stats"), "/stats");
        assert_eq!(clean_path("ping/"), "/ping");
        assert_eq!(clean_path(""), "/");
    }
}
