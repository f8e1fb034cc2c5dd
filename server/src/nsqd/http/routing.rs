//! Go's httprouter, as nsqd routes with it: 405 with `Allow` for a known path and another
//! method, OPTIONS, and redirects for a trailing slash or an unclean path.

use super::handlers::ADMIN_ACTIONS;
use crate::http::router::router_guard;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The methods nsqd routes for a path (httprouter's `allowed`), or `None` for unknown paths.
pub(super) fn routed_methods(path: &str) -> Option<&'static [&'static str]> {
    const GET: &[&str] = &["GET"];
    const POST: &[&str] = &["POST"];
    const GET_PUT: &[&str] = &["GET", "PUT"];
    // The visualiser's page and files (not nsqd's): HEAD as for any page.
    const PAGE: &[&str] = &["GET", "HEAD"];
    match path {
        "/" | "/style.css" => Some(PAGE),
        "/ping" | "/info" | "/stats" | "/ws/nsq" | "/ws/events" | "/api/queues" | "/metrics" => {
            Some(GET)
        }
        "/pub" | "/mpub" | "/debug/freememory" => Some(POST),
        _ => {
            let (dir, leaf) = path.rsplit_once('/')?;
            match dir {
                "/topic" | "/channel" if ADMIN_ACTIONS.contains(&leaf) => Some(POST),
                "/config" if !leaf.is_empty() => Some(GET_PUT),
                "/pkg" if !leaf.is_empty() => Some(PAGE),
                _ => None,
            }
        }
    }
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
        assert_eq!(routed_methods("/pkg/web.js"), Some(&["GET", "HEAD"][..]));
        assert_eq!(routed_methods("/"), Some(&["GET", "HEAD"][..]));
        for unknown in ["/topic/rename", "/config/", "/pkg/", "/nope", "/ping/x", ""] {
            assert_eq!(routed_methods(unknown), None, "{unknown}");
        }
    }
}
