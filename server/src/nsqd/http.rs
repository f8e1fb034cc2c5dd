//! nsqd's HTTP API (v1 responses): `/ping`, `/info`, `/pub`, `/mpub`, `/stats`, topic and
//! channel administration, `/config/:opt`, `/debug/freememory`, and the visualiser page at
//! `/`.
//!
//! As nsqd: errors are `{"message":"CODE"}` with its status codes and the header
//! `X-NSQ-Content-Type: nsq; version=1.0`; a known path with the wrong method is 405 with an
//! `Allow` header, OPTIONS answers 200 with `Allow`; unknown paths are 404 `NOT_FOUND`.

use super::driver::DriverHandle;
use super::{Bound, NsqdArgs};
use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use nsqlab_core::options::Limits;
use nsqlab_core::protocol::decode::{read_mpub, MpubRead, MpubShort};
use nsqlab_core::protocol::is_valid_name;
use nsqlab_core::stats::{ChannelStats, ClientStats, TopicStats};
use nsqlab_core::{AdminError, Body, StatsFilter};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

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
    /// Where the visualiser page lives (`None` with `--no-visualiser`).
    pub www_dir: Option<std::path::PathBuf>,
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
            www_dir: (!args.no_visualiser).then(|| args.www_dir()),
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

fn ok_text(t: impl Into<String>) -> Response {
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

const EXITING: ApiErr = ApiErr(503, "EXITING");

/// Go's `url.ParseQuery`: name → values. A `;` anywhere in a pair, or a `%` without two hex
/// digits, fails the whole query (nsqd answers `INVALID_REQUEST`). Go keeps a value's bytes
/// as they are; invalid UTF-8 here becomes U+FFFD, which no name check accepts either.
pub(crate) fn query(raw: &Option<String>) -> Result<HashMap<String, Vec<String>>, ApiErr> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    let Some(raw) = raw else { return Ok(m) };
    for part in raw.split('&').filter(|p| !p.is_empty()) {
        if part.contains(';') {
            return Err(ApiErr(400, "INVALID_REQUEST"));
        }
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let dec =
            |s: &str| percent_decode(&s.replace('+', " ")).ok_or(ApiErr(400, "INVALID_REQUEST"));
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
            let h = b.get(i + 1..i + 3)?;
            if !h.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

pub(crate) fn first<'a>(q: &'a HashMap<String, Vec<String>>, k: &str) -> Option<&'a str> {
    q.get(k).and_then(|v| v.first()).map(|s| s.as_str())
}

/// nsqd's `boolParams`: only these four spellings are booleans.
fn bool_param(v: &str) -> Option<bool> {
    match v {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// nsqd's `getTopicFromQuery` (creates the topic, as nsqd does).
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
    // As nsqd, the answer comes once the change is on disk (nsqd persists its metadata
    // before answering and ignores a failure to: so do we).
    s.driver
        .call_stored(&t, move |b, now| b.create_topic(now, &t2))
        .await
        .ok_or(EXITING)?
        .0
        .map_err(|_| ApiErr(400, "INVALID_TOPIC"))?;
    Ok(t)
}

/// `POST /debug/freememory` (nsqd v1.3): give the allocator's free pages back to the system
/// (Go's `debug.FreeOSMemory`; here glibc's `malloc_trim` in every thread's arena). nsqd's
/// handler returns no body through its plain-text decorator, which panics on that, so what a
/// client gets is its panic handler's 500 `INTERNAL_ERROR` — after the memory was freed. The
/// same bytes here.
async fn free_memory() -> Response {
    let _ = tokio::task::spawn_blocking(super::release_free_memory).await;
    ApiErr(500, "INTERNAL_ERROR").into_response()
}

/// `OK`, or nsqd's 500 `NOK - <error>` while storage is failing.
async fn ping(State(s): State<AppState>) -> Response {
    let health = s
        .driver
        .call_all(|b, _| b.health().map(str::to_owned))
        .await
        .and_then(|h| h.into_iter().flatten().next());
    match health {
        None => ([(header::CONTENT_TYPE, TEXT_TYPE)], "OK").into_response(),
        Some(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, TEXT_TYPE)],
            format!("NOK - {e}"),
        )
            .into_response(),
    }
}

async fn info_handler(State(s): State<AppState>) -> Response {
    #[derive(Serialize)]
    struct Info<'a> {
        version: &'a str,
        broadcast_address: &'a str,
        hostname: &'a str,
        http_port: i32,
        tcp_port: i32,
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
    // Answered once the store has the messages: nsqd's 503 EXITING when it could not keep
    // them (nsqd answers every failed put so).
    let owner = topic.clone();
    match s
        .driver
        .call_stored(&owner, move |b, now| b.publish(now, &topic, bodies, defer))
        .await
        .ok_or(EXITING)?
    {
        (Ok(_), Ok(())) => Ok(ok_text("OK")),
        (Ok(_), Err(_)) | (Err(AdminError::Exiting), _) => Err(EXITING),
        (Err(AdminError::InvalidDefer), _) => Err(ApiErr(400, "INVALID_DEFER")),
        (Err(_), _) => Err(ApiErr(400, "INVALID_TOPIC")),
    }
}

/// A request body as nsqd reads one: a `Content-Length` over `max` is refused before reading,
/// then at most `max + 1` bytes are read (`io.LimitReader`), so a longer chunked body is
/// refused too. `None`: longer than `max`.
async fn read_body(
    headers: &HeaderMap,
    body: axum::body::Body,
    max: u64,
) -> Result<Option<Bytes>, ApiErr> {
    use http_body_util::BodyExt;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return Ok(None);
    }
    let mut body = body;
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ApiErr(500, "INTERNAL_ERROR"))?;
        if let Ok(data) = frame.into_data() {
            len += data.len() as u64;
            if len > max {
                return Ok(None);
            }
            chunks.push(data);
        }
    }
    Ok(Some(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().expect("one chunk"),
        _ => chunks.concat().into(),
    }))
}

async fn pub_handler(
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult {
    let Some(body) = read_body(&headers, body, s.info.limits.max_msg_size).await? else {
        return Err(ApiErr(413, "MSG_TOO_BIG"));
    };
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
    publish(&s, topic, vec![Body::from(&body[..])], defer).await
}

async fn mpub_handler(
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult {
    let limits = s.info.limits;
    let Some(body) = read_body(&headers, body, limits.max_body_size).await? else {
        return Err(ApiErr(413, "BODY_TOO_BIG"));
    };
    let q = query(&raw)?;
    let topic = topic_from_query(&s, &q).await?;
    // Text mode is the default; any `binary` value but false/0 means binary (as nsqd).
    let binary = first(&q, "binary")
        .map(|v| bool_param(v).unwrap_or(true))
        .unwrap_or(false);
    let bodies: Vec<Body> = if binary {
        match read_mpub(&body, limits) {
            Ok(MpubRead::Done(b, _)) => b,
            // (Only a decoder that publishes in steps asks for a batch.)
            Ok(MpubRead::Large(mut batch, _)) => batch.take(batch.len()),
            Ok(MpubRead::Incomplete(MpubShort::Count)) => return Err(ApiErr(413, "BAD_BODY")),
            Ok(MpubRead::Incomplete(_)) => return Err(ApiErr(413, "BAD_MESSAGE")),
            Err(e) if e.code == "E_BAD_BODY" => return Err(ApiErr(413, "BAD_BODY")),
            Err(_) => return Err(ApiErr(413, "BAD_MESSAGE")),
        }
    } else {
        // The lines' bodies share one buffer.
        let mut lines = Vec::new();
        let mut at = 0;
        for line in body.split(|&c| c == b'\n') {
            let range = at..at + line.len();
            at = range.end + 1;
            if line.is_empty() {
                continue;
            }
            if line.len() as u64 > limits.max_msg_size {
                return Err(ApiErr(413, "MSG_TOO_BIG"));
            }
            lines.push(range);
        }
        Body::ranges(&body, lines.into_iter())
    };
    publish(&s, topic, bodies, None).await
}

/// Memory figures in nsqd's shape (Go's `runtime.MemStats`). nsqlab has no garbage collector,
/// so the GC fields are zero. With glibc the heap fields come from its allocator
/// (`mallinfo2`): in use = bytes allocated (in arenas and mmapped), idle = free bytes the
/// allocator holds; released and heap_objects are not tracked (0). Elsewhere in use is the
/// resident size.
#[derive(Serialize)]
struct MemStats {
    heap_objects: u64,
    heap_idle_bytes: u64,
    heap_in_use_bytes: u64,
    heap_released_bytes: u64,
    gc_pause_usec_100: u64,
    gc_pause_usec_99: u64,
    gc_pause_usec_95: u64,
    next_gc_bytes: u64,
    gc_total_runs: u32,
}

/// Resident memory of this process (Linux; 0 elsewhere).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// (in use, idle) heap bytes from the allocator, where it can tell.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_bytes() -> Option<(u64, u64)> {
    // SAFETY: mallinfo2 only reads the allocator's own statistics (under its locks); it has
    // no preconditions.
    let m = unsafe { libc::mallinfo2() };
    Some(((m.uordblks + m.hblkhd) as u64, m.fordblks as u64))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_bytes() -> Option<(u64, u64)> {
    None
}

fn mem_stats() -> MemStats {
    let rss = resident_bytes();
    let (in_use, idle) = heap_bytes().unwrap_or((rss, 0));
    MemStats {
        heap_objects: 0,
        heap_idle_bytes: idle,
        heap_in_use_bytes: in_use,
        heap_released_bytes: 0,
        gc_pause_usec_100: 0,
        gc_pause_usec_99: 0,
        gc_pause_usec_95: 0,
        next_gc_bytes: 0,
        gc_total_runs: 0,
    }
}

async fn stats(State(s): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult {
    let q = query(&raw)?;
    let json_format = first(&q, "format") == Some("json");
    let include_mem = first(&q, "include_mem")
        .and_then(bool_param)
        .unwrap_or(true);
    let filter = StatsFilter {
        // An empty value filters nothing (nsqd's `GetStats`).
        topic: first(&q, "topic")
            .filter(|t| !t.is_empty())
            .map(String::from),
        channel: first(&q, "channel")
            .filter(|c| !c.is_empty())
            .map(String::from),
        include_clients: first(&q, "include_clients")
            .and_then(bool_param)
            .unwrap_or(true),
    };
    let (st, health) = s.driver.stats(filter).await.ok_or(EXITING)?;
    let health = health.map_or_else(|| "OK".to_string(), |e| format!("NOK - {e}"));
    let mem = include_mem.then(mem_stats);
    if json_format {
        #[derive(Serialize)]
        struct Out<'a> {
            version: &'a str,
            health: &'a str,
            start_time: i64,
            topics: &'a Option<Vec<TopicStats>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            memory: Option<MemStats>,
            producers: &'a Option<Vec<ClientStats>>,
        }
        return Ok(json(&Out {
            version: &s.info.version,
            health: &health,
            start_time: s.info.start_time,
            topics: &st.topics,
            memory: mem,
            producers: &st.producers,
        }));
    }
    Ok(ok_text(stats_text(&s.info, &st, mem.as_ref(), &health)))
}

/// nsqd's `printStats`.
fn stats_text(
    info: &ServerInfo,
    st: &nsqlab_core::Stats,
    mem: Option<&MemStats>,
    health: &str,
) -> String {
    use std::fmt::Write;
    let mut w = String::new();
    let _ = writeln!(
        w,
        "nsqd v{} (built w/nsqlab-{})",
        info.version,
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(w, "start_time {}", rfc3339(info.start_time));
    let _ = writeln!(w, "uptime {}", uptime(info.start_ns));
    let _ = writeln!(w, "\nHealth: {health}");
    if let Some(m) = mem {
        let _ = writeln!(w, "\nMemory:");
        for (k, v) in [
            ("heap_objects", m.heap_objects),
            ("heap_idle_bytes", m.heap_idle_bytes),
            ("heap_in_use_bytes", m.heap_in_use_bytes),
            ("heap_released_bytes", m.heap_released_bytes),
            ("gc_pause_usec_100", m.gc_pause_usec_100),
            ("gc_pause_usec_99", m.gc_pause_usec_99),
            ("gc_pause_usec_95", m.gc_pause_usec_95),
            ("next_gc_bytes", m.next_gc_bytes),
            ("gc_total_runs", m.gc_total_runs as u64),
        ] {
            let _ = writeln!(w, "   {k:<25}\t{v}");
        }
    }
    let topics = st.topics.as_deref().unwrap_or_default();
    if topics.is_empty() {
        let _ = writeln!(w, "\nTopics: None");
    } else {
        let _ = write!(w, "\nTopics:");
    }
    for t in topics {
        let p = if t.paused { "*P " } else { "   " };
        let _ = writeln!(
            w,
            "\n{p}[{:<15}] depth: {:<5} be-depth: {:<5} msgs: {:<8} e2e%: {}",
            t.topic_name, t.depth, t.backend_depth, t.message_count, t.e2e_processing_latency
        );
        for c in &t.channels {
            channel_line(&mut w, c);
        }
    }
    match st.producers.as_deref() {
        None | Some([]) => {
            let _ = writeln!(w, "\nProducers: None");
        }
        Some(ps) => {
            let _ = writeln!(w, "\nProducers:");
            for p in ps {
                let _ = writeln!(w, "   {}", client_line(p));
            }
        }
    }
    w
}

fn channel_line(w: &mut String, c: &ChannelStats) {
    use std::fmt::Write;
    let p = if c.paused { "   *P " } else { "      " };
    let _ = writeln!(
        w,
        "{p}[{:<25}] depth: {:<5} be-depth: {:<5} inflt: {:<4} def: {:<4} re-q: {:<5} timeout: {:<5} msgs: {:<8} e2e%: {}",
        c.channel_name, c.depth, c.backend_depth, c.in_flight_count, c.deferred_count, c.requeue_count, c.timeout_count, c.message_count, c.e2e_processing_latency
    );
    for cl in c.clients.iter().flatten() {
        let _ = writeln!(w, "        {}", client_line(cl));
    }
}

/// nsqd's `ClientV2Stats.String()`.
fn client_line(c: &ClientStats) -> String {
    let port = c.remote_address.rsplit(':').next().unwrap_or("");
    let id = format!("{}:{} {}", c.hostname, port, c.user_agent);
    // nsqd: `time.Since(time.Unix(ConnectTime, 0)).Truncate(time.Second)`.
    let now = (crate::clock::now() / 1_000_000_000) as i64;
    let connected =
        nsqlab_core::time::go_duration((now - c.connect_ts).max(0) as u64 * 1_000_000_000);
    if !c.pub_counts.is_empty() {
        let total: u64 = c.pub_counts.iter().map(|p| p.count).sum();
        let topics: Vec<String> = c
            .pub_counts
            .iter()
            .map(|p| format!("{}={}", p.topic, p.count))
            .collect();
        format!(
            "[V2 {id:<21}] msgs: {total:<8} topics: {} connected: {connected}",
            topics.join(",")
        )
    } else {
        format!(
            "[V2 {id:<21}] state: {} inflt: {:<4} rdy: {:<4} fin: {:<8} re-q: {:<8} msgs: {:<8} connected: {connected}",
            c.state, c.in_flight_count, c.ready_count, c.finish_count, c.requeue_count, c.message_count
        )
    }
}

/// Go's `time.RFC3339` for a UTC time: `2006-01-02T15:04:05Z`.
fn rfc3339(unix: i64) -> String {
    let at = crate::logging::utc(unix.max(0) as u64 * 1_000_000_000);
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Go's `time.Since(start)` printed with `%s`, e.g. `1m5.123456789s`.
fn uptime(since_ns: u64) -> String {
    nsqlab_core::time::go_duration(crate::clock::now().saturating_sub(since_ns))
}

/// The `/topic/*` and `/channel/*` actions nsqd routes; any other is 404 `NOT_FOUND`.
const ADMIN_ACTIONS: &[&str] = &["create", "delete", "empty", "pause", "unpause"];

async fn topic_admin(
    State(s): State<AppState>,
    Path(action): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult {
    if !ADMIN_ACTIONS.contains(&action.as_str()) {
        return Err(ApiErr(404, "NOT_FOUND"));
    }
    let q = query(&raw)?;
    if action == "create" {
        topic_from_query(&s, &q).await?;
        return Ok(ok_empty());
    }
    let topic = first(&q, "topic")
        .ok_or(ApiErr(400, "MISSING_ARG_TOPIC"))?
        .to_string();
    // nsqd validates the name only for `empty`; delete and (un)pause just don't find it.
    if action == "empty" && !is_valid_name(&topic) {
        return Err(ApiErr(400, "INVALID_TOPIC"));
    }
    let owner = topic.clone();
    let r = s
        .driver
        .call_stored(&owner, move |b, now| match action.as_str() {
            "delete" => b.delete_topic(now, &topic),
            "empty" => b.empty_topic(now, &topic),
            "pause" => b.pause_topic(now, &topic, true),
            "unpause" => b.pause_topic(now, &topic, false),
            _ => unreachable!("checked against ADMIN_ACTIONS"),
        })
        .await
        .ok_or(EXITING)?
        .0;
    admin_result(r)
}

async fn channel_admin(
    State(s): State<AppState>,
    Path(action): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult {
    if !ADMIN_ACTIONS.contains(&action.as_str()) {
        return Err(ApiErr(404, "NOT_FOUND"));
    }
    let q = query(&raw)?;
    let topic = first(&q, "topic")
        .ok_or(ApiErr(400, "MISSING_ARG_TOPIC"))?
        .to_string();
    if !is_valid_name(&topic) {
        return Err(ApiErr(400, "INVALID_ARG_TOPIC"));
    }
    let channel = first(&q, "channel")
        .ok_or(ApiErr(400, "MISSING_ARG_CHANNEL"))?
        .to_string();
    if !is_valid_name(&channel) {
        return Err(ApiErr(400, "INVALID_ARG_CHANNEL"));
    }
    let owner = topic.clone();
    let r = s
        .driver
        .call_stored(&owner, move |b, now| {
            if b.topic(&topic).is_none() {
                return Err(AdminError::TopicNotFound);
            }
            match action.as_str() {
                "create" => b.create_channel(now, &topic, &channel),
                "delete" => b.delete_channel(now, &topic, &channel),
                "empty" => b.empty_channel(now, &topic, &channel),
                "pause" => b.pause_channel(now, &topic, &channel, true),
                "unpause" => b.pause_channel(now, &topic, &channel, false),
                _ => unreachable!("checked against ADMIN_ACTIONS"),
            }
        })
        .await
        .ok_or(EXITING)?
        .0;
    admin_result(r)
}

fn admin_result(r: Result<(), AdminError>) -> ApiResult {
    match r {
        Ok(()) => Ok(ok_empty()),
        Err(AdminError::TopicNotFound) => Err(ApiErr(404, "TOPIC_NOT_FOUND")),
        Err(AdminError::ChannelNotFound) => Err(ApiErr(404, "CHANNEL_NOT_FOUND")),
        Err(AdminError::InvalidTopic) => Err(ApiErr(404, "TOPIC_NOT_FOUND")),
        Err(AdminError::InvalidChannel) => Err(ApiErr(404, "CHANNEL_NOT_FOUND")),
        Err(AdminError::InvalidDefer) => Err(ApiErr(400, "INVALID_DEFER")),
        Err(AdminError::Exiting) => Err(EXITING),
    }
}

fn config_response(s: &AppState, opt: &str) -> ApiResult {
    match opt {
        "nsqlookupd_tcp_addresses" => Ok(json(&*s.lookupd.borrow())),
        "log_level" => Ok(json(&crate::logging::level())),
        _ => match s.info.config.iter().find(|(k, _)| k == opt) {
            Some((_, ConfigValue::Str(v))) => Ok(ok_text(v.clone())),
            Some((_, ConfigValue::Json(v))) => Ok(json(v)),
            None => Err(ApiErr(400, "INVALID_OPTION")),
        },
    }
}

async fn config_get(State(s): State<AppState>, Path(opt): Path<String>) -> ApiResult {
    config_response(&s, &opt)
}

async fn config_put(
    State(s): State<AppState>,
    Path(opt): Path<String>,
    body: axum::body::Body,
) -> ApiResult {
    // nsqd reads the value without looking at Content-Length.
    let body = read_body(&HeaderMap::new(), body, s.info.limits.max_msg_size).await?;
    let Some(body) = body.filter(|b| !b.is_empty()) else {
        return Err(ApiErr(413, "INVALID_VALUE"));
    };
    match opt.as_str() {
        "nsqlookupd_tcp_addresses" => {
            let v: Option<Vec<String>> =
                serde_json::from_slice(&body).map_err(|_| ApiErr(400, "INVALID_VALUE"))?;
            // The lookupd connections follow (lookup.rs).
            s.lookupd.send_replace(v.unwrap_or_default());
        }
        "log_level" => {
            let text = std::str::from_utf8(&body).map_err(|_| ApiErr(400, "INVALID_VALUE"))?;
            let level =
                crate::logging::parse_level(text).map_err(|_| ApiErr(400, "INVALID_VALUE"))?;
            crate::logging::set_level(level);
        }
        _ => return Err(ApiErr(400, "INVALID_OPTION")),
    }
    config_response(&s, &opt)
}

async fn ws_nsq(
    State(s): State<AppState>,
    ConnectInfo(remote): ConnectInfo<Remote>,
    ws: WebSocketUpgrade,
) -> Response {
    super::ws::nsq_upgrade(ws, s.driver.clone(), remote.0).await
}

async fn ws_events(State(s): State<AppState>, ws: WebSocketUpgrade) -> Response {
    super::ws::events_upgrade(ws, s.driver.clone()).await
}

async fn api_queues(State(s): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult {
    let q = query(&raw)?;
    if q.is_empty() {
        return Ok(json(
            &super::ws::all_queues(&s.driver).await.ok_or(EXITING)?,
        ));
    }
    let topic = first(&q, "topic")
        .ok_or(ApiErr(400, "MISSING_ARG_TOPIC"))?
        .to_string();
    let channel = first(&q, "channel")
        .ok_or(ApiErr(400, "MISSING_ARG_CHANNEL"))?
        .to_string();
    match super::ws::queues(&s.driver, topic, channel)
        .await
        .ok_or(EXITING)?
    {
        Some(q) => Ok(json(&q)),
        None => Err(ApiErr(404, "CHANNEL_NOT_FOUND")),
    }
}

/// A Prometheus label value, escaped.
fn prom_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus text exposition of the broker's stats (nsqlab's extra; nsqd has none).
async fn metrics(State(s): State<AppState>) -> ApiResult {
    use std::fmt::Write;
    let (st, _) = s
        .driver
        .stats(StatsFilter::default())
        .await
        .ok_or(EXITING)?;
    let topics = st.topics.unwrap_or_default();
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, u64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    };
    let t = |t: &TopicStats| format!("topic=\"{}\"", prom_label(&t.topic_name));
    let c = |t: &TopicStats, c: &ChannelStats| {
        format!(
            "topic=\"{}\",channel=\"{}\"",
            prom_label(&t.topic_name),
            prom_label(&c.channel_name)
        )
    };
    family(
        "nsq_topic_depth",
        "gauge",
        "Messages held by the topic (memory and backend).",
        topics.iter().map(|x| (t(x), x.depth)).collect(),
    );
    family(
        "nsq_topic_messages_total",
        "counter",
        "Messages published to the topic.",
        topics.iter().map(|x| (t(x), x.message_count)).collect(),
    );
    family(
        "nsq_topic_message_bytes_total",
        "counter",
        "Bytes published to the topic.",
        topics.iter().map(|x| (t(x), x.message_bytes)).collect(),
    );
    family(
        "nsq_topic_paused",
        "gauge",
        "1 when the topic is paused.",
        topics.iter().map(|x| (t(x), x.paused as u64)).collect(),
    );
    let chans: Vec<(&TopicStats, &ChannelStats)> = topics
        .iter()
        .flat_map(|x| x.channels.iter().map(move |ch| (x, ch)))
        .collect();
    for (name, kind, help, get) in [
        (
            "nsq_channel_depth",
            "gauge",
            "Messages ready to send (memory and backend).",
            (|c: &ChannelStats| c.depth) as fn(&ChannelStats) -> u64,
        ),
        (
            "nsq_channel_backend_depth",
            "gauge",
            "Messages ready to send in the backend.",
            |c| c.backend_depth,
        ),
        (
            "nsq_channel_in_flight",
            "gauge",
            "Messages sent and not yet finished.",
            |c| c.in_flight_count,
        ),
        (
            "nsq_channel_deferred",
            "gauge",
            "Messages waiting for their due time.",
            |c| c.deferred_count,
        ),
        (
            "nsq_channel_messages_total",
            "counter",
            "Messages that entered the channel.",
            |c| c.message_count,
        ),
        (
            "nsq_channel_requeued_total",
            "counter",
            "Messages requeued by consumers (REQ).",
            |c| c.requeue_count,
        ),
        (
            "nsq_channel_timed_out_total",
            "counter",
            "In-flight messages that timed out.",
            |c| c.timeout_count,
        ),
        (
            "nsq_channel_clients",
            "gauge",
            "Consumers subscribed to the channel.",
            |c| c.client_count,
        ),
        (
            "nsq_channel_paused",
            "gauge",
            "1 when the channel is paused.",
            |c| c.paused as u64,
        ),
    ] {
        family(
            name,
            kind,
            help,
            chans.iter().map(|(x, ch)| (c(x, ch), get(ch))).collect(),
        );
    }
    let _ = writeln!(out, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}", resident_bytes());
    let mut r = Response::new(axum::body::Body::from(out));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(r)
}

async fn index(State(s): State<AppState>, headers: HeaderMap) -> Response {
    static_file(&s, "index.html", &headers).await
}

async fn stylesheet(State(s): State<AppState>, headers: HeaderMap) -> Response {
    static_file(&s, "style.css", &headers).await
}

async fn pkg_file(
    State(s): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    if file.contains('/') || file.contains("..") {
        return ApiErr(404, "NOT_FOUND").into_response();
    }
    static_file(&s, &format!("pkg/{file}"), &headers).await
}

/// A file of the visualiser page from `--www-dir`. A client that accepts gzip (or brotli) gets
/// the file's precompressed `.gz` (`.br`) twin when the build made one, or else the file
/// compressed as it is sent, with `Content-Encoding`; every file is sent with `Cache-Control: no-cache`, so a browser keeps
/// it and revalidates it (`If-Modified-Since`, answered 304) instead of fetching it again.
async fn static_file(s: &AppState, rel: &str, headers: &HeaderMap) -> Response {
    let Some(dir) = &s.info.www_dir else {
        return ApiErr(404, "NOT_FOUND").into_response();
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
    // compressed as they are sent (a precompressed twin could go stale).
    let svc = tower::ServiceBuilder::new()
        .layer(tower_http::compression::CompressionLayer::new())
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
        _ => ApiErr(404, "NOT_FOUND").into_response(),
    }
}

/// The methods nsqd routes for a path (httprouter's `allowed`), or `None` for unknown paths.
fn routed_methods(path: &str) -> Option<&'static [&'static str]> {
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
fn clean_path(path: &str) -> String {
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
        ApiErr(405, "METHOD_NOT_ALLOWED").into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&allow.join(", ")) {
        resp.headers_mut().insert(header::ALLOW, v);
    }
    resp
}

async fn method_guard(req: Request, next: Next) -> Response {
    router_guard(req, next, routed_methods).await
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
        .fallback(|| async { ApiErr(404, "NOT_FOUND") })
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

/// A request's peer as Go prints it (`host:port`, `@` on a unix socket).
#[derive(Debug, Clone)]
pub struct Remote(pub String);

/// Serve `app` until `shutdown` flips, over TLS when `tls` is given (HTTPS). Each connection
/// gets `header_timeout` to send a request's headers (a slowloris client is cut off; others
/// are not affected).
pub async fn serve(
    listener: crate::net::Listener,
    app: Router,
    header_timeout: std::time::Duration,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    while let Some((stream, remote)) =
        crate::net::accept_any(&listener, &mut shutdown, "http").await
    {
        let (app, tls) = (app.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, remote, app, header_timeout).await,
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(header_timeout, acceptor.accept(stream));
                    if let Ok(Ok(tls)) = handshake.await {
                        serve_connection(tls, remote, app, header_timeout).await;
                    }
                }
            }
            super::connection_closed();
        });
    }
    listener.remove_socket();
}

async fn serve_connection<I>(
    io: I,
    remote: String,
    app: Router,
    header_timeout: std::time::Duration,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use super::http_conn::{self, Watched};
    use hyper_util::rt::{TokioIo, TokioTimer};
    let shared = http_conn::Shared::new();
    let io = Watched::new(io, shared.clone());
    let watched = shared.clone();
    let service =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            shared.request_started();
            req.extensions_mut()
                .insert(ConnectInfo(Remote(remote.clone())));
            let (app, shared) = (app.clone(), shared.clone());
            let refusal = http_conn::go_refusal(&req);
            async move {
                let response = match refusal {
                    // Go's bytes go out instead of this response (see http_conn).
                    Some(bytes) => {
                        shared.answer_raw(bytes);
                        let mut r = Response::new(axum::body::Body::empty());
                        r.headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                        r
                    }
                    None => tower::ServiceExt::oneshot(app, req.map(axum::body::Body::new))
                        .await
                        .unwrap_or_else(|e| match e {}),
                };
                shared.request_done(response.status());
                Ok::<_, std::convert::Infallible>(response)
            }
        });
    // No header_read_timeout: hyper's would also close idle keep-alive connections (see
    // http_conn::watch, which times a request's headers only).
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .title_case_headers(true)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::select! {
        _ = conn => {}
        _ = http_conn::watch(watched, header_timeout) => {}
    }
}

#[cfg(test)]
mod tests {
    /// `/stats`' `start_time`, as Go's `time.RFC3339` prints a UTC time.
    #[test]
    fn rfc3339_as_go_prints_it() {
        assert_eq!(super::rfc3339(1_582_981_445), "2020-02-29T13:04:05Z");
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(-5), "1970-01-01T00:00:00Z");
    }
}
