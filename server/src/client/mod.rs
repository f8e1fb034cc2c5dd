//! A small NSQ client for nsqlab's tools (`tail`, `to_file`, `to_nsq`, `stat`): a consumer
//! that finds nsqd nodes directly or through nsqlookupd, a publisher, and lookupd/nsqd HTTP
//! queries. It speaks the same V2 protocol as any client library, through the core's codec,
//! with go-nsq's TLS and compression upgrades ([`conn`]).

mod conn;
pub mod tls;

pub use crate::common::http_client::{fetch_json, http_get_json, join_host_port, urlencode};

use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::{Message, MessageId};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// go-nsq's `Config` options the tools accept through `--consumer-opt` / `--producer-opt`.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub max_in_flight: i64,
    pub lookupd_poll_interval: Duration,
    pub heartbeat_interval: Duration,
    pub user_agent: String,
    /// go-nsq's `auth_secret`: sent with AUTH when nsqd's IDENTIFY answer says
    /// `auth_required`.
    pub auth_secret: String,
    /// Timeout of lookupd queries (the tools' `--http-client-request-timeout`).
    pub http_timeout: Duration,
    /// go-nsq's `tls_v1`: upgrade to TLS when nsqd agrees, with [`tls::TlsOptions`].
    pub tls_v1: bool,
    pub tls: tls::TlsOptions,
    /// go-nsq's `snappy`, `deflate` and `deflate_level` (1–9, default 6).
    pub snappy: bool,
    pub deflate: bool,
    pub deflate_level: i64,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 1,
            lookupd_poll_interval: Duration::from_secs(60),
            heartbeat_interval: Duration::from_secs(30),
            user_agent: format!("nsqlab/{}", env!("CARGO_PKG_VERSION")),
            auth_secret: String::new(),
            http_timeout: Duration::from_secs(5),
            tls_v1: false,
            tls: tls::TlsOptions::default(),
            snappy: false,
            deflate: false,
            deflate_level: 6,
        }
    }
}

impl ClientConfig {
    /// go-nsq's `ConfigFlag.Set`: `key,value` (a bare key means `true`).
    pub fn set(&mut self, opt: &str) -> Result<(), String> {
        let (key, value) = opt.split_once(',').unwrap_or((opt, "true"));
        let dur = |v: &str| crate::cli::duration_arg(v).map_err(|e| e.to_string());
        if self.tls.set(key, value)? {
            return Ok(());
        }
        match key {
            "max_in_flight" => {
                self.max_in_flight = value
                    .parse()
                    .map_err(|_| format!("invalid max_in_flight {value}"))?
            }
            "lookupd_poll_interval" => self.lookupd_poll_interval = dur(value)?,
            "heartbeat_interval" => self.heartbeat_interval = dur(value)?,
            "user_agent" => self.user_agent = value.to_string(),
            "auth_secret" => self.auth_secret = value.to_string(),
            "tls_v1" => self.tls_v1 = crate::cli::go_bool(value)?,
            "snappy" => self.snappy = crate::cli::go_bool(value)?,
            "deflate" => self.deflate = crate::cli::go_bool(value)?,
            "deflate_level" => match value.parse::<i64>() {
                Ok(l @ 1..=9) => self.deflate_level = l,
                _ => return Err(format!("invalid deflate_level {value} (1-9)")),
            },
            // Accepted and without effect here (backoff is not used by these tools).
            "max_attempts"
            | "lookupd_poll_jitter"
            | "max_requeue_delay"
            | "default_requeue_delay"
            | "backoff_strategy"
            | "max_backoff_duration"
            | "output_buffer_size"
            | "output_buffer_timeout"
            | "msg_timeout"
            | "sample_rate"
            | "dial_timeout"
            | "read_timeout"
            | "write_timeout"
            | "client_id"
            | "hostname" => {}
            _ => return Err(format!("invalid option {key}")),
        }
        Ok(())
    }
}

/// A message handed to a consumer's owner, with the way to answer it.
pub struct Delivery {
    pub topic: String,
    pub msg: Message,
    answer: mpsc::UnboundedSender<Command>,
}

impl Delivery {
    pub fn finish(&self) {
        let _ = self.answer.send(Command::Fin(self.msg.id.to_hex()));
    }

    pub fn id(&self) -> MessageId {
        self.msg.id
    }
}

/// Where a consumer finds its nsqd nodes.
#[derive(Debug, Clone)]
pub enum Discovery {
    Nsqd(Vec<String>),
    Lookupd(Vec<String>),
}

/// Consume `topic`/`channel`; messages arrive on the returned receiver until `stop` flips.
pub fn consume(
    topic: String,
    channel: String,
    how: Discovery,
    cfg: ClientConfig,
    stop: watch::Receiver<bool>,
) -> mpsc::Receiver<Delivery> {
    let (tx, rx) = mpsc::channel(cfg.max_in_flight.max(1) as usize);
    tokio::spawn(async move {
        let live: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        match how {
            Discovery::Nsqd(addrs) => {
                // RDY split over the connections, as go-nsq does.
                let rdy = (cfg.max_in_flight / addrs.len().max(1) as i64).max(1);
                for a in addrs {
                    tokio::spawn(connection_loop(
                        a,
                        topic.clone(),
                        channel.clone(),
                        rdy,
                        cfg.clone(),
                        tx.clone(),
                        stop.clone(),
                        true,
                        live.clone(),
                    ));
                }
            }
            Discovery::Lookupd(lookupds) => {
                let mut stop2 = stop.clone();
                loop {
                    let mut found = BTreeSet::new();
                    for l in &lookupds {
                        match lookup(l, &topic, cfg.http_timeout).await {
                            Ok(p) => found.extend(p),
                            Err(e) => tracing::warn!("error querying nsqlookupd ({l}) - {e}"),
                        }
                    }
                    let n = found.len().max(1) as i64;
                    for addr in found {
                        if live.lock().expect("live set").insert(addr.clone()) {
                            tokio::spawn(connection_loop(
                                addr,
                                topic.clone(),
                                channel.clone(),
                                (cfg.max_in_flight / n).max(1),
                                cfg.clone(),
                                tx.clone(),
                                stop.clone(),
                                false,
                                live.clone(),
                            ));
                        }
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(cfg.lookupd_poll_interval) => {}
                        _ = stop2.changed() => break,
                    }
                }
            }
        }
    });
    rx
}

/// The producers' TCP addresses for `topic` from one lookupd.
pub async fn lookup(lookupd: &str, topic: &str, timeout: Duration) -> Result<Vec<String>, String> {
    let path = format!("/lookup?topic={}", urlencode(topic));
    let v = http_get_json(lookupd, &path, timeout).await?;
    let mut out = Vec::new();
    for p in v["producers"].as_array().cloned().unwrap_or_default() {
        let host = p["broadcast_address"].as_str().unwrap_or_default();
        let port = p["tcp_port"].as_i64().unwrap_or_default();
        if !host.is_empty() && port > 0 {
            out.push(join_host_port(host, port));
        }
    }
    Ok(out)
}

/// One nsqd connection: SUB, RDY, hand messages over, send answers; redial direct addresses.
#[allow(clippy::too_many_arguments)]
async fn connection_loop(
    addr: String,
    topic: String,
    channel: String,
    rdy: i64,
    cfg: ClientConfig,
    tx: mpsc::Sender<Delivery>,
    mut stop: watch::Receiver<bool>,
    redial: bool,
    live: Arc<Mutex<BTreeSet<String>>>,
) {
    loop {
        tracing::info!("[{topic}/{channel}] ({addr}) connecting to nsqd");
        let r = connection(&addr, &topic, &channel, rdy, &cfg, &tx, &mut stop).await;
        if let Err(e) = &r {
            tracing::warn!("[{topic}/{channel}] ({addr}) {e}");
        }
        if *stop.borrow() || !redial {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.changed() => break,
        }
    }
    live.lock().expect("live set").remove(&addr);
}

async fn connection(
    addr: &str,
    topic: &str,
    channel: &str,
    rdy: i64,
    cfg: &ClientConfig,
    tx: &mpsc::Sender<Delivery>,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), String> {
    let mut c = conn::Conn::connect(addr, cfg).await?;
    let sub = Command::Sub {
        topic: topic.into(),
        channel: channel.into(),
    };
    c.send(&sub.to_bytes()).await?;
    let (atx, mut arx) = mpsc::unbounded_channel::<Command>();
    let mut responses = 0;
    loop {
        while let Some(f) = c.buffered_frame() {
            match f {
                Frame::Response(b) if b == b"_heartbeat_" => {
                    let _ = atx.send(Command::Nop);
                }
                Frame::Response(_) => {
                    responses += 1;
                    // SUB's OK: ready for messages.
                    if responses == 1 {
                        let _ = atx.send(Command::Rdy(rdy));
                    }
                }
                Frame::Error(e) => {
                    return Err(String::from_utf8_lossy(&e).into_owned());
                }
                Frame::Message(msg) => {
                    let d = Delivery {
                        topic: topic.to_string(),
                        msg,
                        answer: atx.clone(),
                    };
                    if tx.send(d).await.is_err() {
                        return Ok(());
                    }
                }
                Frame::Unknown(..) => {}
            }
        }
        tokio::select! {
            r = c.read_more() => r?,
            cmd = arx.recv() => {
                let Some(cmd) = cmd else { return Ok(()) };
                let mut b = cmd.to_bytes();
                while let Ok(cmd) = arx.try_recv() {
                    cmd.encode(&mut b);
                }
                c.send(&b).await?;
            }
            _ = stop.changed() => {
                // As go-nsq's Stop: CLS, then go.
                let _ = c.send(&Command::Cls.to_bytes()).await;
                return Ok(());
            }
        }
    }
}

/// A publisher to one nsqd (connected on first use), as go-nsq's `Producer.Publish`. Its
/// calls block; the connection runs on a runtime of its own.
pub struct Producer {
    addr: String,
    cfg: ClientConfig,
    conn: Option<conn::Conn>,
    rt: tokio::runtime::Runtime,
}

impl Producer {
    pub fn new(addr: String, cfg: ClientConfig) -> Self {
        Self {
            addr,
            cfg,
            conn: None,
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// PUB and wait for the answer. A connection that died while idle (nsqd closes one that
    /// sends nothing for two heartbeat intervals, and this one reads nothing between
    /// publishes) is redialled once, as go-nsq's producer reconnects.
    pub fn publish(&mut self, topic: &str, body: &[u8]) -> Result<(), String> {
        let cmd = Command::Pub {
            topic: topic.into(),
            body: body.to_vec().into(),
        }
        .to_bytes();
        let reused = self.conn.is_some();
        let mut r = self.try_publish(&cmd);
        if let Err(Failure::Io(_)) = &r {
            if reused {
                r = self.try_publish(&cmd);
            }
        }
        r.map_err(|(Failure::Io(e) | Failure::Nsqd(e))| e)
    }

    fn try_publish(&mut self, cmd: &[u8]) -> Result<(), Failure> {
        let (addr, cfg, slot) = (&self.addr, &self.cfg, &mut self.conn);
        let r = self.rt.block_on(async {
            if slot.is_none() {
                *slot = Some(
                    conn::Conn::connect(addr, cfg)
                        .await
                        .map_err(Failure::Nsqd)?,
                );
            }
            let c = slot.as_mut().expect("connected");
            c.send(cmd).await.map_err(Failure::Io)?;
            loop {
                match c.frame().await.map_err(Failure::Io)? {
                    Frame::Response(b) if b == b"_heartbeat_" => {
                        c.send(&Command::Nop.to_bytes())
                            .await
                            .map_err(Failure::Io)?;
                    }
                    Frame::Response(_) => return Ok(()),
                    Frame::Error(e) => {
                        return Err(Failure::Nsqd(String::from_utf8_lossy(&e).into_owned()))
                    }
                    _ => {}
                }
            }
        });
        if r.is_err() {
            self.conn = None;
        }
        r
    }
}

/// Why a publish failed: the connection (worth a new one), or nsqd's answer (or dialling).
enum Failure {
    Io(String),
    Nsqd(String),
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_and_port_joined_as_go() {
        assert_eq!(super::join_host_port("::1", 4161), "[::1]:4161");
        assert_eq!(super::join_host_port("h.example", 4161), "h.example:4161");
    }
}
