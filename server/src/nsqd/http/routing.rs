//! Go's httprouter, as nsqd routes with it: 405 with `Allow` for a known path and another
//! method, OPTIONS, and redirects for a trailing slash or an unclean path.

use super::handlers::ADMIN_ACTIONS;
use super::response::ApiErr;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The methods nsqd routes for a path (httprouter's `allowed`), or `None` for unknown paths.
pub(super) fn routed_methods(path: &str) -> Option<&'static [&'static str]> {
    const GET: &[&str] = &["GET"];
    const POST: &[&str] = &["POST"];
    const GET_PUT: &[&str] = &["GET", "PUT"];
    match path {
        "/" | "/style.css" | "/ping" | "/info" | "/stats" | "/ws/nsq" | "/ws/events"
        | "/api/queues" | "/metrics" => Some(GET),
        "/pub" | "/mpub" | "/debug/freememory" => Some(POST),
        _ => {
            let (dir, leaf) = path.rsplit_once('/')?;
            match dir {
                "/topic" | "/channel" if ADMIN_ACTIONS.contains(&leaf) => Some(POST),
                "/config" if !leaf.is_empty() => Some(GET_PUT),
                "/pkg" if !leaf.is_empty() => Some(GET),
                _ => None,
            }
        }
    }
}

/// httprouter's `CleanPath` without the trailing slash (no route has one): `.` and `..`
/// segments resolved, repeated slashes made one, rooted.
pub(super) fn clean_path(path: &str) -> String {
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

pub(super) async fn method_guard(req: Request, next: Next) -> Response {
    router_guard(req, next, routed_methods).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_nsqds() {
        assert_eq!(routed_methods("/ping"), Some(&["GET"][..]));
        assert_eq!(routed_methods("/pub"), Some(&["POST"][..]));
        assert_eq!(routed_methods("/topic/pause"), Some(&["POST"][..]));
        assert_eq!(routed_methods("/channel/unpause"), Some(&["POST"][..]));
        assert_eq!(
            routed_methods("/config/nsqlookupd_tcp_addresses"),
            Some(&["GET", "PUT"][..])
        );
        assert_eq!(routed_methods("/pkg/web.js"), Some(&["GET"][..]));
        for unknown in ["/topic/rename", "/config/", "/pkg/", "/nope", "/ping/x", ""] {
            assert_eq!(routed_methods(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn paths_are_cleaned_as_httprouter_cleans_them() {
        assert_eq!(clean_path("/a/./b/../c"), "/a/c");
        assert_eq!(clean_path("//ping"), "/ping");
        assert_eq!(clean_path("/../../stats"), "/stats");
        assert_eq!(clean_path("ping/"), "/ping");
        assert_eq!(clean_path(""), "/");
    }
}
