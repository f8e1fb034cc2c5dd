//! nsqd's HTTP API (v1 responses): `/ping`, `/info`, `/pub`, `/mpub`, `/stats`, topic and
//! channel administration, `/config/:opt`, and the visualiser page at `/`.
//!
//! Every response carries `X-NSQ-Content-Type: nsq; version=1.0`; errors are
//! `{"message":"CODE"}` with nsqd's status codes.

use super::driver::DriverHandle;
use super::{Bound, NsqdArgs};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use nsqlab_core::options::Limits;
use nsqlab_core::protocol::decode::{read_mpub, MpubRead, MpubShort};
use nsqlab_core::protocol::is_valid_name;
use nsqlab_core::{AdminError, Body, StatsFilter};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Facts `/info` and `/stats` report.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub version: String,
    pub broadcast_address: String,
    pub hostname: String,
    pub http_port: u16,
    pub tcp_port: u16,
    /// Unix seconds.
    pub start_time: i64,
    pub max_heartbeat_interval: u64,
    pub max_output_buffer_size: i64,
    pub max_output_buffer_timeout: u64,
    pub max_deflate_level: i64,
    pub limits: Limits,
    pub max_req_timeout: u64,
    pub visualiser: bool,
    pub lookupd_tcp_addresses: Vec<String>,
    pub log_level: String,
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
            http_port: if args.broadcast_http_port != 0 {
                args.broadcast_http_port
            } else {
                bound.http.port()
            },
            tcp_port: if args.broadcast_tcp_port != 0 {
                args.broadcast_tcp_port
            } else {
                bound.tcp.port()
            },
            start_time: (now / 1_000_000_000) as i64,
            max_heartbeat_interval: args.max_heartbeat_interval.as_nanos() as u64,
            max_output_buffer_size: args.max_output_buffer_size,
            max_output_buffer_timeout: args.max_output_buffer_timeout.as_nanos() as u64,
            max_deflate_level: args.max_deflate_level,
            limits: Limits {
                max_msg_size: args.max_msg_size.max(0) as u64,
                max_body_size: args.max_body_size.max(0) as u64,
            },
            max_req_timeout: args.max_req_timeout.as_nanos() as u64,
            visualiser: !args.no_visualiser,
            lookupd_tcp_addresses: args.lookupd_tcp_address.clone(),
            log_level: args.log_level.clone(),
        }
    }
}

#[derive(Clone)]
struct AppState {
    driver: DriverHandle,
    info: Arc<ServerInfo>,
}

const NSQ_CONTENT_TYPE: &str = "nsq; version=1.0";

/// nsqd's `RespondV1`.
fn v1(code: StatusCode, body: V1Body) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        "X-NSQ-Content-Type",
        HeaderValue::from_static(NSQ_CONTENT_TYPE),
    );
    let bytes = match body {
        V1Body::Text(t) => {
            if code != StatusCode::OK {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json; charset=utf-8"),
                );
                format!(r#"{{"message":"{t}"}}"#).into_bytes()
            } else {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                t.into_bytes()
            }
        }
        V1Body::Empty => Vec::new(),
        V1Body::Json(v) => {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=utf-8"),
            );
            v
        }
    };
    (code, headers, bytes).into_response()
}

enum V1Body {
    Text(String),
    Empty,
    Json(Vec<u8>),
}

fn err(code: u16, text: &str) -> Response {
    v1(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        V1Body::Text(text.to_string()),
    )
}

fn ok_text(t: &str) -> Response {
    v1(StatusCode::OK, V1Body::Text(t.to_string()))
}

fn json<T: Serialize>(v: &T) -> Response {
    v1(
        StatusCode::OK,
        V1Body::Json(serde_json::to_vec(v).unwrap_or_default()),
    )
}

/// An API error: nsqd's status code and message.
#[derive(Debug, Clone, Copy)]
struct ApiErr(u16, &'static str);

impl IntoResponse for ApiErr {
    fn into_response(self) -> Response {
        err(self.0, self.1)
    }
}

type ApiResult = Result<Response, ApiErr>;

const EXITING: ApiErr = ApiErr(503, "EXITING");

/// Go's `url.ParseQuery` into name → values (first value wins where nsqd reads one).
fn query(raw: &Option<String>) -> Result<HashMap<String, Vec<String>>, ApiErr> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    let Some(raw) = raw else { return Ok(m) };
    for part in raw.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let dec = |s: &str| -> Result<String, ApiErr> {
            let s = s.replace('+', " ");
            percent_decode(&s).ok_or(ApiErr(400, "INVALID_REQUEST"))
        };
        m.entry(dec(k)?).or_default().push(dec(v)?);
    }
    Ok(m)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn first<'a>(q: &'a HashMap<String, Vec<String>>, k: &str) -> Option<&'a str> {
    q.get(k).and_then(|v| v.first()).map(|s| s.as_str())
}

/// nsqd's `getTopicFromQuery` (the topic is created as a side effect, as in nsqd).
async fn topic_from_query(
    s: &AppState,
    q: &HashMap<String, Vec<String>>,
) -> Result<String, ApiErr> {
    let topic = first(q, "topic").ok_or(ApiErr(400, "MISSING_ARG_TOPIC"))?;
    if !is_valid_name(topic) {
        return Err(ApiErr(400, "INVALID_TOPIC"));
    }
    let t = topic.to_string();
    let t2 = t.clone();
    s.driver
        .call(move |b, now| b.create_topic(now, &t2))
        .await
        .ok_or(EXITING)?
        .map_err(|_| ApiErr(400, "INVALID_TOPIC"))?;
    Ok(t)
}

async fn ping() -> Response {
    let mut r = "OK".into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn info_handler(State(s): State<AppState>) -> Response {
    #[derive(Serialize)]
    struct Info<'a> {
        version: &'a str,
        broadcast_address: &'a str,
        hostname: &'a str,
        http_port: u16,
        tcp_port: u16,
        start_time: i64,
        max_heartbeat_interval: u64,
        max_output_buffer_size: i64,
        max_output_buffer_timeout: u64,
        max_deflate_level: i64,
    }
    let i = &s.info;
    json(&Info {
        version: &i.version,
        broadcast_address: &i.broadcast_address,
        hostname: &i.hostname,
        http_port: i.http_port,
        tcp_port: i.tcp_port,
        start_time: i.start_time,
        max_heartbeat_interval: i.max_heartbeat_interval,
        max_output_buffer_size: i.max_output_buffer_size,
        max_output_buffer_timeout: i.max_output_buffer_timeout,
        max_deflate_level: i.max_deflate_level,
    })
}

async fn publish(s: &AppState, topic: String, bodies: Vec<Body>, defer: Option<u64>) -> ApiResult {
    match s
        .driver
        .call(move |b, now| b.publish(now, &topic, bodies, defer))
        .await
        .ok_or(EXITING)?
    {
        Ok(_) => Ok(ok_text("OK")),
        Err(AdminError::InvalidDefer) => Err(ApiErr(400, "INVALID_DEFER")),
        Err(_) => Err(ApiErr(400, "INVALID_TOPIC")),
    }
}

async fn pub_handler(State(s): State<AppState>, RawQuery(raw): RawQuery, body: Bytes) -> ApiResult {
    if body.len() as u64 > s.info.limits.max_msg_size {
        return Err(ApiErr(413, "MSG_TOO_BIG"));
    }
    if body.is_empty() {
        return Err(ApiErr(400, "MSG_EMPTY"));
    }
    let q = query(&raw)?;
    let topic = topic_from_query(&s, &q).await?;
    let mut defer = None;
    if let Some(d) = first(&q, "defer") {
        let ms: i64 = d.parse().map_err(|_| ApiErr(400, "INVALID_DEFER"))?;
        match ms.checked_mul(1_000_000) {
            Some(ns) if ns >= 0 && ns as u64 <= s.info.max_req_timeout => defer = Some(ns as u64),
            _ => return Err(ApiErr(400, "INVALID_DEFER")),
        }
    }
    publish(&s, topic, vec![Arc::from(&body[..])], defer).await
}

/// Go's `strconv.ParseBool`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

async fn mpub_handler(
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> ApiResult {
    let limits = s.info.limits;
    if body.len() as u64 > limits.max_body_size {
        return Err(ApiErr(413, "BODY_TOO_BIG"));
    }
    let q = query(&raw)?;
    let topic = topic_from_query(&s, &q).await?;
    // Text mode is the default; an unrecognised `binary` value counts as true.
    let binary = first(&q, "binary")
        .map(|v| parse_bool(v).unwrap_or(true))
        .unwrap_or(false);
    let bodies: Vec<Body> = if binary {
        match read_mpub(&body, limits) {
            Ok(MpubRead::Done(b, _)) => b,
            Ok(MpubRead::Incomplete(MpubShort::Count)) => return Err(ApiErr(413, "BAD_BODY")),
            Ok(MpubRead::Incomplete(_)) => return Err(ApiErr(413, "BAD_MESSAGE")),
            Err(e) if e.code == "E_BAD_BODY" => return Err(ApiErr(413, "BAD_BODY")),
            Err(_) => return Err(ApiErr(413, "BAD_MESSAGE")),
        }
    } else {
        let mut out = Vec::new();
        for line in body.split(|&c| c == b'\n') {
            if line.is_empty() {
                continue;
            }
            if line.len() as u64 > limits.max_msg_size {
                return Err(ApiErr(413, "MSG_TOO_BIG"));
            }
            out.push(Arc::from(line));
        }
        out
    };
    publish(&s, topic, bodies, None).await
}

async fn stats(State(s): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult {
    let q = query(&raw)?;
    let format = first(&q, "format").unwrap_or("text").to_string();
    let filter = StatsFilter {
        topic: first(&q, "topic").map(String::from),
        channel: first(&q, "channel").map(String::from),
        include_clients: first(&q, "include_clients")
            .and_then(parse_bool)
            .unwrap_or(true),
    };
    let st = s
        .driver
        .call(move |b, _| b.stats(&filter))
        .await
        .ok_or(EXITING)?;
    if format == "json" {
        #[derive(Serialize)]
        struct Out<'a> {
            version: &'a str,
            health: &'a str,
            start_time: i64,
            topics: &'a [nsqlab_core::stats::TopicStats],
            producers: &'a [nsqlab_core::stats::ClientStats],
        }
        return Ok(json(&Out {
            version: &s.info.version,
            health: "OK",
            start_time: s.info.start_time,
            topics: &st.topics,
            producers: &st.producers,
        }));
    }
    let mut out = format!(
        "nsqd v{}\nstart_time {}\nuptime {}\n",
        s.info.version,
        s.info.start_time,
        uptime(s.info.start_time)
    );
    if st.topics.is_empty() {
        out.push_str("\nNO_TOPICS\n");
    }
    for t in &st.topics {
        out.push_str(&format!(
            "\n[{:<15}] depth: {:<5} be-depth: {:<5} msgs: {:<8} e2e%: \n",
            t.topic_name, t.depth, t.backend_depth, t.message_count
        ));
        for c in &t.channels {
            out.push_str(&format!(
                "    [{:<25}] depth: {:<5} be-depth: {:<5} inflt: {:<4} def: {:<4} re-q: {:<5} timeout: {:<5} msgs: {:<8} e2e%: \n",
                c.channel_name, c.depth, c.backend_depth, c.in_flight_count, c.deferred_count, c.requeue_count, c.timeout_count, c.message_count
            ));
            for cl in &c.clients {
                out.push_str(&format!(
                    "        [V2 {:<21}] state: {} inflt: {:<4} rdy: {:<4} fin: {:<8} re-q: {:<8} msgs: {:<8} connected: {}\n",
                    cl.client_id, cl.state, cl.in_flight_count, cl.ready_count, cl.finish_count, cl.requeue_count, cl.message_count, uptime(cl.connect_ts)
                ));
            }
        }
    }
    Ok(ok_text(&out))
}

fn uptime(since: i64) -> String {
    let now = (crate::clock::now() / 1_000_000_000) as i64;
    crate::cli::format_duration(std::time::Duration::from_secs((now - since).max(0) as u64))
}

/// The query's topic (and channel), validated as nsqd's `getTopicChanFromQuery`.
fn topic_chan(
    q: &HashMap<String, Vec<String>>,
    want_channel: bool,
) -> Result<(String, String), ApiErr> {
    let topic = first(q, "topic").ok_or(ApiErr(400, "MISSING_ARG_TOPIC"))?;
    if !is_valid_name(topic) {
        return Err(ApiErr(400, "INVALID_TOPIC"));
    }
    if !want_channel {
        return Ok((topic.to_string(), String::new()));
    }
    let channel = first(q, "channel").ok_or(ApiErr(400, "MISSING_ARG_CHANNEL"))?;
    if !is_valid_name(channel) {
        return Err(ApiErr(400, "INVALID_CHANNEL"));
    }
    Ok((topic.to_string(), channel.to_string()))
}

async fn topic_admin(
    State(s): State<AppState>,
    Path(action): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult {
    let (topic, _) = topic_chan(&query(&raw)?, false)?;
    let r = s
        .driver
        .call(move |b, now| match action.as_str() {
            "create" => Some(b.create_topic(now, &topic)),
            "delete" => Some(b.delete_topic(now, &topic)),
            "empty" => Some(b.empty_topic(now, &topic)),
            "pause" => Some(b.pause_topic(now, &topic, true)),
            "unpause" => Some(b.pause_topic(now, &topic, false)),
            _ => None,
        })
        .await;
    admin_result(r)
}

async fn channel_admin(
    State(s): State<AppState>,
    Path(action): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult {
    let (topic, channel) = topic_chan(&query(&raw)?, true)?;
    let r = s
        .driver
        .call(move |b, now| match action.as_str() {
            "create" => Some(b.create_channel(now, &topic, &channel)),
            "delete" => Some(b.delete_channel(now, &topic, &channel)),
            "empty" => Some(b.empty_channel(now, &topic, &channel)),
            "pause" => Some(b.pause_channel(now, &topic, &channel, true)),
            "unpause" => Some(b.pause_channel(now, &topic, &channel, false)),
            _ => None,
        })
        .await;
    admin_result(r)
}

fn admin_result(r: Option<Option<Result<(), AdminError>>>) -> ApiResult {
    match r.ok_or(EXITING)?.ok_or(ApiErr(404, "NOT_FOUND"))? {
        Ok(()) => Ok(v1(StatusCode::OK, V1Body::Empty)),
        Err(AdminError::TopicNotFound) => Err(ApiErr(404, "TOPIC_NOT_FOUND")),
        Err(AdminError::ChannelNotFound) => Err(ApiErr(404, "CHANNEL_NOT_FOUND")),
        Err(AdminError::InvalidTopic) => Err(ApiErr(400, "INVALID_TOPIC")),
        Err(AdminError::InvalidChannel) => Err(ApiErr(400, "INVALID_CHANNEL")),
        Err(AdminError::InvalidDefer) => Err(ApiErr(400, "INVALID_DEFER")),
    }
}

async fn config_get(State(s): State<AppState>, Path(opt): Path<String>) -> Response {
    match opt.as_str() {
        "nsqlookupd_tcp_addresses" => json(&s.info.lookupd_tcp_addresses),
        "log_level" => json(&s.info.log_level),
        _ => err(400, "INVALID_OPTION"),
    }
}

async fn index(State(s): State<AppState>) -> Response {
    if !s.info.visualiser {
        return err(404, "NOT_FOUND");
    }
    let page = include_str!("../../../www/index.html");
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

async fn not_found() -> Response {
    err(404, "NOT_FOUND")
}

/// The router (exposed for tests).
pub fn router(driver: DriverHandle, info: ServerInfo) -> Router {
    let state = AppState {
        driver,
        info: Arc::new(info),
    };
    Router::new()
        .route("/", get(index))
        .route("/ping", get(ping).head(ping))
        .route("/info", get(info_handler))
        .route("/pub", post(pub_handler).put(pub_handler))
        .route("/mpub", post(mpub_handler).put(mpub_handler))
        .route("/stats", get(stats))
        .route("/topic/{action}", post(topic_admin))
        .route("/channel/{action}", post(channel_admin))
        .route("/config/{opt}", get(config_get))
        .fallback(not_found)
        .method_not_allowed_fallback(|| async { err(405, "METHOD_NOT_ALLOWED") })
        .with_state(state)
}

/// Serve HTTP until `shutdown` flips.
pub async fn serve(
    listener: TcpListener,
    driver: DriverHandle,
    info: ServerInfo,
    mut shutdown: watch::Receiver<bool>,
) {
    let app = router(driver, info);
    let _ = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = shutdown.changed().await;
        })
        .await;
}
