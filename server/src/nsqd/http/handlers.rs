//! The handlers of nsqd's HTTP API: `/ping`, `/info`, `/pub`, `/mpub`, topic and channel
//! administration, `/config/:opt`, `/debug/freememory`, the WebSocket endpoints.

use super::AppState;
use super::{ConfigValue, Remote};
use crate::http::body::read_away;
use crate::http::query::{bool_param, first, query};
use crate::http::response::{json, ok_empty, ok_text, plain, ApiErr, ApiResult};
use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use nsqlab_core::protocol::decode::{read_mpub, MpubRead, MpubShort};
use nsqlab_core::protocol::is_valid_name;
use nsqlab_core::{AdminError, Body};
use serde::Serialize;
use std::collections::HashMap;

/// nsqd's `getTopicFromQuery` (creates the topic, as nsqd does).
pub(super) async fn topic_from_query(
    s: &AppState,
    q: &HashMap<String, Vec<String>>,
) -> Result<String, ApiErr> {
    let topic = first(q, "topic").ok_or(ApiErr::MissingArgTopic)?;
    if !is_valid_name(topic) {
        return Err(ApiErr::InvalidTopic);
    }
    let t = topic.to_string();
    let t2 = t.clone();
    // As nsqd, the answer comes once the change is on disk (nsqd persists its metadata
    // before answering and ignores a failure to: so do we).
    s.driver
        .call_stored(&t, move |b, now| b.create_topic(now, &t2))
        .await
        .ok_or(ApiErr::Exiting)?
        .0
        .map_err(|_| ApiErr::InvalidTopic)?;
    Ok(t)
}

/// `POST /debug/freememory` (nsqd v1.3): give the allocator's free pages back to the system
/// (Go's `debug.FreeOSMemory`; here glibc's `malloc_trim` in every thread's arena). nsqd's
/// handler returns no body through its plain-text decorator, which panics on that, so what a
/// client gets is its panic handler's 500 `INTERNAL_ERROR` — after the memory was freed. The
/// same bytes here.
pub(super) async fn free_memory() -> Response {
    let _ = tokio::task::spawn_blocking(crate::nsqd::release_free_memory).await;
    ApiErr::InternalError.into_response()
}

/// `OK`, or nsqd's 500 `NOK - <error>` while storage is failing.
pub(super) async fn ping(State(s): State<AppState>) -> Response {
    let health = s
        .driver
        .call_all(|b, _| b.health().map(|h| h.to_string()))
        .await
        .and_then(|h| h.into_iter().flatten().next());
    match health {
        None => plain(StatusCode::OK, "OK"),
        Some(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, format!("NOK - {e}")),
    }
}

pub(super) async fn info_handler(State(s): State<AppState>) -> Response {
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

pub(super) async fn publish(
    s: &AppState,
    topic: String,
    bodies: Vec<Body>,
    defer: Option<u64>,
) -> ApiResult {
    // Answered once the store has the messages: nsqd's 503 EXITING when it could not keep
    // them (nsqd answers every failed put so).
    let owner = topic.clone();
    match s
        .driver
        .call_stored(&owner, move |b, now| b.publish(now, &topic, bodies, defer))
        .await
        .ok_or(ApiErr::Exiting)?
    {
        (Ok(_), Ok(())) => Ok(ok_text("OK")),
        (Ok(_), Err(_)) | (Err(AdminError::Exiting), _) => Err(ApiErr::Exiting),
        (Err(AdminError::InvalidDefer), _) => Err(ApiErr::InvalidDefer),
        (Err(_), _) => Err(ApiErr::InvalidTopic),
    }
}

/// A request body as nsqd reads one: a `Content-Length` over `max` is refused before reading,
/// then at most `max + 1` bytes are read (`io.LimitReader`), so a longer chunked body is
/// refused too. `None`: longer than `max`.
/// The body's length as the request declares it.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

pub(super) async fn read_body(
    headers: &HeaderMap,
    body: axum::body::Body,
    max: u64,
) -> Result<Option<Bytes>, ApiErr> {
    use http_body_util::BodyExt;
    if declared_length(headers).is_some_and(|n| n > max) {
        return Ok(None);
    }
    let mut body = body;
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ApiErr::InternalError)?;
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

pub(super) async fn pub_handler(
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult {
    let Some(body) = read_body(&headers, body, s.info.limits.max_msg_size).await? else {
        return Err(ApiErr::MsgTooBig);
    };
    if body.is_empty() {
        return Err(ApiErr::MsgEmpty);
    }
    let q = query(&raw)?;
    let topic = topic_from_query(&s, &q).await?;
    let mut defer = None;
    if let Some(d) = first(&q, "defer") {
        let ms: i64 = d.parse().map_err(|_| ApiErr::InvalidDefer)?;
        match ms.checked_mul(1_000_000) {
            Some(ns) if ns >= 0 && ns as u64 <= s.info.max_req_timeout => defer = Some(ns as u64),
            _ => return Err(ApiErr::InvalidDefer),
        }
    }
    publish(&s, topic, vec![Body::from(&body[..])], defer).await
}

pub(super) async fn mpub_handler(
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult {
    let limits = s.info.limits;
    // nsqd checks the declared length and the topic before it reads the body (so a client
    // waiting for `100 Continue` gets the refusal instead).
    if declared_length(&headers).is_some_and(|n| n > limits.max_body_size) {
        return Err(ApiErr::BodyTooBig);
    }
    let q = query(&raw)?;
    let topic = topic_from_query(&s, &q).await?;
    let Some(body) = read_body(&headers, body, limits.max_body_size).await? else {
        return Err(ApiErr::BodyTooBig);
    };
    // Text mode is the default; any `binary` value but false/0 means binary (as nsqd).
    let binary = first(&q, "binary")
        .map(|v| bool_param(v).unwrap_or(true))
        .unwrap_or(false);
    let bodies: Vec<Body> = if binary {
        match read_mpub(&body, limits) {
            Ok(MpubRead::Done(b, _)) => b,
            // (Only a decoder that publishes in steps asks for a batch.)
            Ok(MpubRead::Large(mut batch, _)) => batch.take(batch.len()),
            Ok(MpubRead::Incomplete(MpubShort::Count)) => return Err(ApiErr::BadBody),
            Ok(MpubRead::Incomplete(_)) => return Err(ApiErr::BadMessage),
            Err(e) if e.code == "E_BAD_BODY" => return Err(ApiErr::BadBody),
            Err(_) => return Err(ApiErr::BadMessage),
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
                return Err(ApiErr::MsgTooBig);
            }
            lines.push(range);
        }
        Body::ranges(&body, lines.into_iter())
    };
    publish(&s, topic, bodies, None).await
}

/// The `/topic/*` and `/channel/*` actions nsqd routes; any other is 404 `NOT_FOUND`.
pub(super) const ADMIN_ACTIONS: &[&str] = &["create", "delete", "empty", "pause", "unpause"];

pub(super) async fn topic_admin(
    State(s): State<AppState>,
    Path(action): Path<String>,
    RawQuery(raw): RawQuery,
    body: axum::body::Body,
) -> ApiResult {
    if !ADMIN_ACTIONS.contains(&action.as_str()) {
        return Err(ApiErr::NotFound);
    }
    let q = query(&raw)?;
    if action == "create" {
        topic_from_query(&s, &q).await?;
        return Ok(ok_empty());
    }
    // (nsqd reads the others' bodies, and only create's not.)
    read_away(body).await;
    let topic = first(&q, "topic")
        .ok_or(ApiErr::MissingArgTopic)?
        .to_string();
    // nsqd validates the name only for `empty`; delete and (un)pause just don't find it.
    if action == "empty" && !is_valid_name(&topic) {
        return Err(ApiErr::InvalidTopic);
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
        .ok_or(ApiErr::Exiting)?
        .0;
    admin_result(r)
}

pub(super) async fn channel_admin(
    State(s): State<AppState>,
    Path(action): Path<String>,
    RawQuery(raw): RawQuery,
    body: axum::body::Body,
) -> ApiResult {
    if !ADMIN_ACTIONS.contains(&action.as_str()) {
        return Err(ApiErr::NotFound);
    }
    let q = query(&raw)?;
    read_away(body).await;
    let topic = first(&q, "topic")
        .ok_or(ApiErr::MissingArgTopic)?
        .to_string();
    if !is_valid_name(&topic) {
        return Err(ApiErr::InvalidArgTopic);
    }
    let channel = first(&q, "channel")
        .ok_or(ApiErr::MissingArgChannel)?
        .to_string();
    if !is_valid_name(&channel) {
        return Err(ApiErr::InvalidArgChannel);
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
        .ok_or(ApiErr::Exiting)?
        .0;
    admin_result(r)
}

pub(super) fn admin_result(r: Result<(), AdminError>) -> ApiResult {
    match r {
        Ok(()) => Ok(ok_empty()),
        Err(AdminError::TopicNotFound) => Err(ApiErr::TopicNotFound),
        Err(AdminError::ChannelNotFound) => Err(ApiErr::ChannelNotFound),
        Err(AdminError::InvalidTopic) => Err(ApiErr::TopicNotFound),
        Err(AdminError::InvalidChannel) => Err(ApiErr::ChannelNotFound),
        Err(AdminError::InvalidDefer) => Err(ApiErr::InvalidDefer),
        Err(AdminError::Exiting) => Err(ApiErr::Exiting),
    }
}

pub(super) fn config_response(s: &AppState, opt: &str) -> ApiResult {
    match opt {
        "nsqlookupd_tcp_addresses" => Ok(json(&*s.lookupd.borrow())),
        "log_level" => Ok(json(&crate::logging::level())),
        _ => match s.info.config.iter().find(|(k, _)| k == opt) {
            Some((_, ConfigValue::Str(v))) => Ok(ok_text(v.clone())),
            Some((_, ConfigValue::Json(v))) => Ok(json(v)),
            None => Err(ApiErr::InvalidOption),
        },
    }
}

pub(super) async fn config_get(State(s): State<AppState>, Path(opt): Path<String>) -> ApiResult {
    config_response(&s, &opt)
}

pub(super) async fn config_put(
    State(s): State<AppState>,
    Path(opt): Path<String>,
    body: axum::body::Body,
) -> ApiResult {
    // nsqd reads the value without looking at Content-Length.
    let body = read_body(&HeaderMap::new(), body, s.info.limits.max_msg_size).await?;
    let Some(body) = body.filter(|b| !b.is_empty()) else {
        return Err(ApiErr::ValueTooBig);
    };
    match opt.as_str() {
        "nsqlookupd_tcp_addresses" => {
            let v: Option<Vec<String>> =
                serde_json::from_slice(&body).map_err(|_| ApiErr::InvalidValue)?;
            // The lookupd connections follow (lookup.rs).
            s.lookupd.send_replace(v.unwrap_or_default());
        }
        "log_level" => {
            let text = std::str::from_utf8(&body).map_err(|_| ApiErr::InvalidValue)?;
            let level = crate::logging::parse_level(text).map_err(|_| ApiErr::InvalidValue)?;
            crate::logging::set_level(level);
        }
        _ => return Err(ApiErr::InvalidOption),
    }
    config_response(&s, &opt)
}

pub(super) async fn ws_nsq(
    State(s): State<AppState>,
    ConnectInfo(remote): ConnectInfo<Remote>,
    ws: WebSocketUpgrade,
) -> Response {
    crate::nsqd::ws::nsq_upgrade(ws, s.driver.clone(), remote.0).await
}

pub(super) async fn ws_events(State(s): State<AppState>, ws: WebSocketUpgrade) -> Response {
    crate::nsqd::ws::events_upgrade(ws, s.driver.clone()).await
}

pub(super) async fn api_queues(State(s): State<AppState>, RawQuery(raw): RawQuery) -> ApiResult {
    let q = query(&raw)?;
    if q.is_empty() {
        return Ok(json(
            &crate::nsqd::ws::all_queues(&s.driver)
                .await
                .ok_or(ApiErr::Exiting)?,
        ));
    }
    let topic = first(&q, "topic")
        .ok_or(ApiErr::MissingArgTopic)?
        .to_string();
    let channel = first(&q, "channel")
        .ok_or(ApiErr::MissingArgChannel)?
        .to_string();
    match crate::nsqd::ws::queues(&s.driver, topic, channel)
        .await
        .ok_or(ApiErr::Exiting)?
    {
        Some(q) => Ok(json(&q)),
        None => Err(ApiErr::ChannelNotFound),
    }
}
