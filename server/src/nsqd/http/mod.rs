//! nsqd's HTTP API (v1 responses): `/ping`, `/info`, `/pub`, `/mpub`, `/stats`, topic and
//! channel administration, `/config/:opt`, `/debug/freememory`, and the visualiser page at
//! `/`.
//!
//! As nsqd: errors are `{"message":"CODE"}` with its status codes and the header
//! `X-NSQ-Content-Type: nsq; version=1.0`; a known path with the wrong method is 405 with an
//! `Allow` header, OPTIONS answers 200 with `Allow`; unknown paths are 404 `NOT_FOUND`.

mod handlers;
mod metrics;
mod raft;
mod routing;
mod stats;
mod www;

use super::driver::DriverHandle;
use super::{Bound, NsqdArgs};
use crate::http::response::{ApiErr, JSON_TYPE, NSQ_CONTENT_TYPE};
pub use crate::http::{serve, Remote};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self};
use axum::response::Response;
use axum::routing::{any, get, post};
use axum::Router;
use handlers::{
    api_queues, channel_admin, config_get, config_put, free_memory, info_handler, mpub_handler,
    ping, pub_handler, topic_admin, ws_events, ws_nsq,
};
use metrics::metrics;
use nsqlab_core::options::Limits;
use routing::method_guard;
use serde_json::Value;
pub use stats::resident_bytes;
use stats::stats;
use std::sync::Arc;
use www::{index, pkg_file, stylesheet};

/// A `/config/:opt` value: strings are sent raw, everything else as JSON (as nsqd's V1).
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    Str(String),
    Json(Value),
}

/// Facts `/info`, `/stats` and `/config` report.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub version: String,
    pub broadcast_address: String,
    pub hostname: String,
    /// `/info`'s ports: -1 for a unix socket, as nsqd's `doInfo` gives (0 with HTTP off).
    pub http_port: i32,
    pub tcp_port: i32,
    /// Unix seconds.
    pub start_time: i64,
    /// Unix nanoseconds (for the uptime).
    pub start_ns: u64,
    pub max_heartbeat_interval: u64,
    pub max_output_buffer_size: i64,
    pub max_output_buffer_timeout: u64,
    pub max_deflate_level: i64,
    pub limits: Limits,
    pub max_req_timeout: u64,
    /// Where the visualiser page comes from: `None` with `--no-visualiser`, else
    /// `--www-dir` or (`Some(None)`) the copy built into the binary.
    pub www_dir: Option<Option<std::path::PathBuf>>,
    /// Readable options by nsqd's config name, in nsqd's order.
    pub config: Vec<(String, ConfigValue)>,
}

/// A listener's port as `/info` shows it: -1 for a unix socket.
fn info_port(l: &crate::net::Local) -> i32 {
    match l {
        crate::net::Local::Tcp(a) => a.port().into(),
        crate::net::Local::Unix(_) => -1,
    }
}

impl ServerInfo {
    pub fn new(args: &NsqdArgs, bound: &Bound, now: u64) -> Self {
        ServerInfo {
            version: nsqlab_core::VERSION.to_string(),
            broadcast_address: args.broadcast_address(),
            hostname: hostname::get()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_default(),
            http_port: bound.http.as_ref().map_or(0, info_port),
            tcp_port: info_port(&bound.tcp),
            start_time: (now / 1_000_000_000) as i64,
            start_ns: now,
            max_heartbeat_interval: args.max_heartbeat_interval.as_nanos() as u64,
            max_output_buffer_size: args.max_output_buffer_size,
            max_output_buffer_timeout: args.max_output_buffer_timeout.as_nanos() as u64,
            max_deflate_level: args.max_deflate_level,
            limits: Limits {
                max_msg_size: args.max_msg_size.max(0) as u64,
                max_body_size: args.max_body_size.max(0) as u64,
            },
            max_req_timeout: args.max_req_timeout.as_nanos() as u64,
            www_dir: args.visualiser(),
            config: args.config_values(bound),
        }
    }
}

#[derive(Clone)]
struct AppState {
    driver: DriverHandle,
    info: Arc<ServerInfo>,
    /// Options `PUT /config/:opt` can change.
    lookupd: Arc<tokio::sync::watch::Sender<Vec<String>>>,
}

/// The router (exposed for tests).
pub fn router(
    driver: DriverHandle,
    info: ServerInfo,
    lookupd: tokio::sync::watch::Sender<Vec<String>>,
) -> Router {
    let state = AppState {
        driver,
        info: Arc::new(info),
        lookupd: Arc::new(lookupd),
    };
    Router::new()
        .route("/", get(index))
        .route("/style.css", get(stylesheet))
        .route("/pkg/{file}", get(pkg_file))
        .route("/ping", get(ping))
        .route("/debug/freememory", post(free_memory))
        .route("/info", get(info_handler))
        .route("/pub", post(pub_handler))
        .route("/mpub", post(mpub_handler))
        .route("/stats", get(stats))
        .route("/metrics", get(metrics))
        // Every method: the guard answers 405 for a known action, the handler 404 otherwise.
        .route("/topic/{action}", any(topic_admin))
        .route("/channel/{action}", any(channel_admin))
        .route("/config/{opt}", get(config_get).put(config_put))
        .route("/ws/nsq", get(ws_nsq))
        .route("/ws/events", get(ws_events))
        .route("/api/queues", get(api_queues))
        // nsqlab's replication (see `raft.rs`): every method, each handler decides.
        .route("/raft/status", any(raft::raft_status))
        .route("/raft/{action}", any(raft::raft_change))
        .fallback(|| async { ApiErr::NotFound })
        .layer(middleware::from_fn(method_guard))
        .with_state(state)
}

/// The plain-HTTP app under `--tls-required=true`: every request gets nsqd's 403 (with its odd
/// spacing) pointing at the HTTPS port.
pub fn tls_required_app(https_port: u16) -> Router {
    Router::new().fallback(move || async move {
        let body = format!(r#"{{"message": "TLS_REQUIRED", "https_port": {https_port}}}"#);
        let mut r = Response::new(axum::body::Body::from(body));
        *r.status_mut() = StatusCode::FORBIDDEN;
        r.headers_mut().insert(
            "X-NSQ-Content-Type",
            HeaderValue::from_static(NSQ_CONTENT_TYPE),
        );
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON_TYPE));
        r
    })
}
