//! nsqlookupd's HTTP API (v1 responses, never wrapped): `/ping`, `/info`, `/debug`,
//! `/lookup`, `/topics`, `/channels`, `/nodes`, and the POST-only `/topic/create|delete|
//! tombstone`, `/channel/create|delete`.

use super::Shared;
use crate::http::query::{first, query};
use crate::http::response::{json, ok_empty, plain, ApiErr, ApiResult};
use axum::extract::{RawQuery, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use nsqlab_core::protocol::is_valid_name;

async fn ping() -> Response {
    plain(axum::http::StatusCode::OK, "OK")
}

async fn info() -> Response {
    json(&serde_json::json!({ "version": nsqlab_core::VERSION }))
}

async fn debug(State(s): State<Shared>) -> Response {
    json(&s.lock().expect("lookupd lock").debug())
}

async fn topics(State(s): State<Shared>) -> Response {
    json(&serde_json::json!({ "topics": s.lock().expect("lookupd lock").topics() }))
}

fn topic_arg(raw: &Option<String>) -> Result<String, ApiErr> {
    let q = query(raw)?;
    first(&q, "topic")
        .map(str::to_owned)
        .ok_or(ApiErr::MissingArgTopic)
}

async fn channels(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let topic = topic_arg(&raw)?;
    let chans = s.lock().expect("lookupd lock").channels(&topic);
    Ok(json(&serde_json::json!({ "channels": chans })))
}

async fn lookup(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let topic = topic_arg(&raw)?;
    let l = s.lock().expect("lookupd lock");
    match l.lookup(crate::clock::now(), &topic) {
        Some(a) => Ok(json(&a)),
        None => Err(ApiErr::TopicNotFound),
    }
}

async fn nodes(State(s): State<Shared>) -> Response {
    // Serialised from the structs, not through `json!` (whose map sorts the keys): each
    // node's fields come in nsqlookupd's order.
    #[derive(serde::Serialize)]
    struct Nodes {
        producers: Vec<nsqlab_core::lookup::NodeInfo>,
    }
    let l = s.lock().expect("lookupd lock");
    json(&Nodes {
        producers: l.nodes(crate::clock::now()),
    })
}

async fn topic_create(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let topic = topic_arg(&raw)?;
    if !is_valid_name(&topic) {
        return Err(ApiErr::InvalidArgTopic);
    }
    let mut l = s.lock().expect("lookupd lock");
    l.create_topic(&topic);
    super::flush_log(&mut l);
    Ok(ok_empty())
}

async fn topic_delete(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let topic = topic_arg(&raw)?;
    let mut l = s.lock().expect("lookupd lock");
    l.delete_topic(&topic);
    super::flush_log(&mut l);
    Ok(ok_empty())
}

async fn topic_tombstone(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let q = query(&raw)?;
    let topic = first(&q, "topic").ok_or(ApiErr::MissingArgTopic)?;
    let node = first(&q, "node").ok_or(ApiErr::MissingArgNode)?;
    let mut l = s.lock().expect("lookupd lock");
    l.tombstone(crate::clock::now(), topic, node);
    super::flush_log(&mut l);
    Ok(ok_empty())
}

/// nsqd's `GetTopicChannelArgs`.
fn topic_channel(raw: &Option<String>) -> Result<(String, String), ApiErr> {
    let q = query(raw)?;
    let topic = first(&q, "topic").ok_or(ApiErr::MissingArgTopic)?;
    if !is_valid_name(topic) {
        return Err(ApiErr::InvalidArgTopic);
    }
    let channel = first(&q, "channel").ok_or(ApiErr::MissingArgChannel)?;
    if !is_valid_name(channel) {
        return Err(ApiErr::InvalidArgChannel);
    }
    Ok((topic.to_string(), channel.to_string()))
}

async fn channel_create(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let (t, c) = topic_channel(&raw)?;
    let mut l = s.lock().expect("lookupd lock");
    l.create_channel(&t, &c);
    super::flush_log(&mut l);
    Ok(ok_empty())
}

async fn channel_delete(State(s): State<Shared>, RawQuery(raw): RawQuery) -> ApiResult {
    let (t, c) = topic_channel(&raw)?;
    let mut l = s.lock().expect("lookupd lock");
    let found = l.delete_channel(&t, &c);
    super::flush_log(&mut l);
    if found {
        Ok(ok_empty())
    } else {
        Err(ApiErr::ChannelNotFound)
    }
}

fn routed_methods(path: &str) -> Option<&'static [&'static str]> {
    match path {
        "/ping" | "/info" | "/debug" | "/lookup" | "/topics" | "/channels" | "/nodes" => {
            Some(&["GET"])
        }
        "/topic/create" | "/topic/delete" | "/topic/tombstone" | "/channel/create"
        | "/channel/delete" => Some(&["POST"]),
        _ => None,
    }
}

/// httprouter's redirects, 405 (with `Allow`) and OPTIONS.
async fn method_guard(req: Request, next: Next) -> Response {
    crate::http::router::router_guard(req, next, routed_methods).await
}

/// Access log, as nsqlookupd's `Log` decorator: `<status> <METHOD> <URI> (<remote>) <took>`.
async fn access_log(req: Request, next: Next) -> Response {
    let start = std::time::Instant::now();
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let remote = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.to_string())
        .unwrap_or_default();
    let resp = next.run(req).await;
    tracing::info!(
        "{} {method} {uri} ({remote}) {}",
        resp.status().as_u16(),
        nsqlab_core::time::go_duration(start.elapsed().as_nanos() as u64)
    );
    resp
}

pub fn router(shared: Shared) -> Router {
    Router::new()
        .route("/ping", get(ping))
        .route("/info", get(info))
        .route("/debug", get(debug))
        .route("/lookup", get(lookup))
        .route("/topics", get(topics))
        .route("/channels", get(channels))
        .route("/nodes", get(nodes))
        .route("/topic/create", post(topic_create))
        .route("/topic/delete", post(topic_delete))
        .route("/topic/tombstone", post(topic_tombstone))
        .route("/channel/create", post(channel_create))
        .route("/channel/delete", post(channel_delete))
        .fallback(|| async { ApiErr::NotFound })
        .layer(axum::middleware::from_fn(method_guard))
        .layer(axum::middleware::from_fn(access_log))
        .with_state(shared)
}
