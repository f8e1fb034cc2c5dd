//! WebSocket on the HTTP port, for browsers:
//!
//! - `GET /ws/nsq`: NSQ protocol V2 over binary WebSocket messages — the same bytes as TCP, so
//!   a page can publish and subscribe. Transport upgrades (TLS, snappy, deflate) are not
//!   available here: a client that negotiates one is disconnected.
//! - `GET /ws/events`: four times a second, a frame (`{"type":"frame"}`): the events since the
//!   last frame (at most 200; `skipped` counts the rest) and a `LiveFrame`
//!   (`nsqlab_core::live`) of every topic and channel, taken as it is sent. A slow browser
//!   never slows the broker: the events come through a bounded broadcast, and a frame is
//!   taken only when the last one has gone.
//! - `GET /api/queues?topic=&channel=`: a channel's deferred and in-flight messages (ID, due
//!   time, attempts, client) as JSON, to draw the state on connect; without parameters, an
//!   array with every channel.

use super::driver::{within_deadline, DriverHandle, Out};
use super::link::Link;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use bytes::Bytes;
use serde::Serialize;
use std::time::Duration;
use tokio::sync::broadcast;

pub async fn nsq_upgrade(ws: WebSocketUpgrade, driver: DriverHandle, remote: String) -> Response {
    // A message is buffered whole until its last fragment: no larger than the largest
    // command (tungstenite's default is 64 MiB, per connection).
    let limits = driver.ws_limits();
    ws.max_message_size(limits.max_message)
        .max_frame_size(limits.max_message)
        .on_upgrade(move |socket| nsq_over_ws(socket, driver, remote))
}

async fn nsq_over_ws(mut socket: WebSocket, driver: DriverHandle, remote: String) {
    let idle = driver.ws_limits().idle;
    let mut write_timeout = driver.write_timeout();
    let Some((mut link, mut out_rx)) = Link::connect(driver, remote).await else {
        return;
    };
    let client = link.client();
    let mut quiet_until = tokio::time::Instant::now() + idle;
    loop {
        tokio::select! {
            // Nothing complete for too long: a message arriving slowly is not kept.
            _ = tokio::time::sleep_until(quiet_until) => {
                tracing::info!("[ws {client:?}] no complete message for {idle:?}; closing");
                break;
            }
            m = socket.recv() => match m {
                Some(Ok(Message::Binary(b))) => {
                    quiet_until = tokio::time::Instant::now() + idle;
                    if !link.bytes(b).await {
                        break;
                    }
                }
                Some(Ok(Message::Text(t))) => {
                    quiet_until = tokio::time::Instant::now() + idle;
                    if !link.bytes(Bytes::copy_from_slice(t.as_bytes())).await {
                        break;
                    }
                }
                Some(Ok(_)) => quiet_until = tokio::time::Instant::now() + idle,
                Some(Err(_)) | None => break,
            },
            o = out_rx.recv() => match o {
                Some(Out::Data(d)) => {
                    // Within the write deadline, as over TCP.
                    let send = socket.send(Message::Binary(d.into()));
                    let sent = within_deadline(write_timeout, send).await;
                    if sent.is_none_or(|r| r.is_err()) {
                        break;
                    }
                }
                Some(Out::WriteTimeout(t)) => write_timeout = t,
                Some(Out::Moved(to)) => {
                    if !link.moved(to).await {
                        break;
                    }
                }
                Some(Out::Upgrade(_)) => {
                    // No TLS or compression over WebSocket: hang up, and tell the broker.
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
                Some(Out::Close) | None => {
                    link.broker_closed();
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
            },
        }
    }
    link.close().await;
}

pub async fn events_upgrade(ws: WebSocketUpgrade, driver: DriverHandle) -> Response {
    ws.on_upgrade(move |socket| event_stream(socket, driver))
}

/// How often `/ws/events` sends a frame.
const FRAME_EVERY: Duration = Duration::from_millis(250);
/// Events a frame carries at most (more than anyone can read): the rest are counted.
const EVENTS_PER_FRAME: usize = 200;

/// An event for the next frame: kept as JSON while the frame has room, else counted.
fn keep(told: &mut Vec<String>, skipped: &mut u64, e: &nsqlab_core::Event) {
    if told.len() < EVENTS_PER_FRAME {
        told.push(serde_json::to_string(e).unwrap_or_default());
    } else {
        *skipped += 1;
    }
}

async fn event_stream(mut socket: WebSocket, driver: DriverHandle) {
    let mut events = driver.subscribe_events();
    let mut tick = tokio::time::interval(FRAME_EVERY);
    // A frame is taken when it is sent: after a slow send, the next comes a period later.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut told: Vec<String> = Vec::new();
    let mut skipped: u64 = 0;
    loop {
        tokio::select! {
            e = events.recv() => match e {
                Ok(e) => keep(&mut told, &mut skipped, &e),
                Err(broadcast::error::RecvError::Lagged(n)) => skipped += n,
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = tick.tick() => {
                let limits = nsqlab_core::live::FrameLimits::default();
                let Some(parts) = driver.call_all(move |b, now| b.live_frame(now, limits)).await else {
                    break;
                };
                let frame = nsqlab_core::live::LiveFrame::merge(parts);
                // The events made before the frame was taken go with it (and perhaps a few
                // made just after): the story does not trail the picture by a frame.
                loop {
                    match events.try_recv() {
                        Ok(e) => keep(&mut told, &mut skipped, &e),
                        Err(broadcast::error::TryRecvError::Lagged(n)) => skipped += n,
                        Err(_) => break,
                    }
                }
                let text = frame.message(&told, skipped);
                told.clear();
                skipped = 0;
                if socket.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            m = socket.recv() => match m {
                Some(Ok(_)) => continue,
                _ => break,
            },
        }
    }
}

#[derive(Serialize)]
pub struct QueuedMessage {
    pub id: String,
    /// Due time (deferred) or deadline (in flight), Unix ns.
    pub due: u64,
    pub attempts: u16,
    pub timestamp: u64,
    pub client: Option<u64>,
}

#[derive(Serialize)]
pub struct Queues {
    pub topic: String,
    pub channel: String,
    pub now: u64,
    pub depth: usize,
    pub deferred: Vec<QueuedMessage>,
    pub in_flight: Vec<QueuedMessage>,
}

fn channel_queues(
    topic: &str,
    channel: &str,
    c: &nsqlab_core::channel::Channel,
    now: u64,
) -> Queues {
    Queues {
        deferred: c
            .deferred
            .entries()
            .iter()
            .map(|e| QueuedMessage {
                id: e.item.id.to_string(),
                due: e.key,
                attempts: e.item.attempts,
                timestamp: e.item.timestamp,
                client: None,
            })
            .collect(),
        in_flight: c
            .in_flight
            .iter()
            .map(|e| QueuedMessage {
                id: e.item.msg.id.to_string(),
                due: e.key,
                attempts: e.item.msg.attempts,
                timestamp: e.item.msg.timestamp,
                client: Some(e.item.client.0),
            })
            .collect(),
        depth: c.depth(),
        topic: topic.to_string(),
        channel: channel.to_string(),
        now,
    }
}

/// A channel's deferred heap and in-flight messages, in heap (array) order.
pub async fn queues(
    driver: &DriverHandle,
    topic: String,
    channel: String,
) -> Option<Option<Queues>> {
    let owner = topic.clone();
    driver
        .call(&owner, move |b, now| {
            Some(channel_queues(
                &topic,
                &channel,
                b.channel(&topic, &channel)?,
                now,
            ))
        })
        .await
}

/// Every channel's queues.
pub async fn all_queues(driver: &DriverHandle) -> Option<Vec<Queues>> {
    let parts = driver
        .call_all(|b, now| {
            let mut out = Vec::new();
            for t in b.topics() {
                for (name, &id) in &t.channels {
                    if let Some(c) = b.channel_by_id(id) {
                        out.push(channel_queues(&t.name, name, c, now));
                    }
                }
            }
            out
        })
        .await?;
    let mut all: Vec<Queues> = parts.into_iter().flatten().collect();
    all.sort_by(|a, b| (&a.topic, &a.channel).cmp(&(&b.topic, &b.channel)));
    Some(all)
}
