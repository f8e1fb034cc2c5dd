//! nsqd's side of nsqlookupd: one connection per `--lookupd-tcp-address`, as nsqd v1.3.
//!
//! On every (re)connect: the magic `"  V1"`, `IDENTIFY` with this node's addresses, then
//! `REGISTER` for every topic and channel. Afterwards `REGISTER` / `UNREGISTER` as topics and
//! channels come and go, and `PING` every 15 s. A lost connection is redialled at once (then
//! with backoff up to 15 s; nsqd waits for its next PINGs). Each command waits at most a
//! second for its answer. `PUT
//! /config/nsqlookupd_tcp_addresses` changes the set of lookupds while running. When a topic is
//! created, its channels known to the lookupds (`GET /channels?topic=`) are created too,
//! ephemeral ones excepted.

use super::driver::DriverHandle;
use nsqlab_core::lookup::register::{NodeIdentity, PING};
use nsqlab_core::RegistryChange;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

/// What this node tells nsqlookupd about itself.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub broadcast_address: String,
    pub hostname: String,
    pub tcp_port: u16,
    pub http_port: u16,
    pub http_connect_timeout: Duration,
    pub http_request_timeout: Duration,
}

const PING_EVERY: Duration = Duration::from_secs(15);
const IO_TIMEOUT: Duration = Duration::from_secs(1);

enum PeerMsg {
    /// Connect if not connected (no command).
    Connect,
    Command(String),
    Stop,
}

/// Each lookupd's HTTP address, from its IDENTIFY answer (`broadcast_address:http_port`).
type HttpAddrs = Arc<Mutex<BTreeMap<String, String>>>;

/// Run the lookupd connections until `shutdown`.
pub async fn run(
    driver: DriverHandle,
    node: NodeInfo,
    mut addrs: watch::Receiver<Vec<String>>,
    mut changes: mpsc::UnboundedReceiver<RegistryChange>,
    mut shutdown: watch::Receiver<bool>,
) {
    let http_addrs: HttpAddrs = Arc::default();
    let mut peers: BTreeMap<String, mpsc::UnboundedSender<PeerMsg>> = BTreeMap::new();
    let reconcile = |peers: &mut BTreeMap<String, mpsc::UnboundedSender<PeerMsg>>,
                     want: &[String]| {
        peers.retain(|addr, tx| {
            let keep = want.contains(addr);
            if !keep {
                tracing::info!("LOOKUP({addr}): removing peer");
                let _ = tx.send(PeerMsg::Stop);
            }
            keep
        });
        for addr in want {
            if peers.contains_key(addr) {
                continue;
            }
            tracing::info!("LOOKUP({addr}): adding peer");
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(PeerMsg::Connect);
            tokio::spawn(peer(
                addr.clone(),
                rx,
                driver.clone(),
                node.clone(),
                http_addrs.clone(),
            ));
            peers.insert(addr.clone(), tx);
        }
    };
    let initial = addrs.borrow_and_update().clone();
    reconcile(&mut peers, &initial);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                for (addr, tx) in &peers {
                    tracing::debug!("LOOKUPD({addr}): sending heartbeat");
                    let _ = tx.send(PeerMsg::Command(PING.into()));
                }
            }
            c = changes.recv() => {
                let Some(c) = c else { break };
                let line = c.command();
                let new_topic = match &c {
                    RegistryChange::Register { topic, channel: None } => Some(topic.to_string()),
                    _ => None,
                };
                for tx in peers.values() {
                    let _ = tx.send(PeerMsg::Command(line.clone()));
                }
                if let Some(topic) = new_topic {
                    let http: Vec<String> = http_addrs.lock().expect("lookupd addrs").values().cloned().collect();
                    if !http.is_empty() {
                        tokio::spawn(precreate_channels(driver.clone(), node.clone(), http, topic));
                    }
                }
            }
            r = addrs.changed() => {
                if r.is_err() { break; }
                let want = addrs.borrow_and_update().clone();
                reconcile(&mut peers, &want);
            }
            _ = shutdown.changed() => break,
        }
    }
    tracing::info!("LOOKUP: closing");
    for tx in peers.values() {
        let _ = tx.send(PeerMsg::Stop);
    }
}

/// One lookupd: a connection, (re)established when a command needs it.
async fn peer(
    addr: String,
    mut rx: mpsc::UnboundedReceiver<PeerMsg>,
    driver: DriverHandle,
    node: NodeInfo,
    http_addrs: HttpAddrs,
) {
    let mut conn: Option<TcpStream> = None;
    // Unlike nsqd (which notices a lost lookupd on its next PING and redials on the one
    // after), a closed connection is seen at once and redialled with backoff (1 s … 15 s),
    // so a restarted lookupd has this node's registrations within seconds.
    let mut retry = Duration::from_secs(1);
    let mut redial_at: Option<tokio::time::Instant> = None;
    loop {
        let mut probe = [0u8; 1];
        let m = tokio::select! {
            m = rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
            // lookupd never speaks unasked: readable means closed (or broken).
            _ = async { conn.as_mut().expect("connected").read(&mut probe).await }, if conn.is_some() => {
                tracing::info!("LOOKUPD({addr}): connection closed");
                conn = None;
                redial_at = Some(tokio::time::Instant::now() + retry);
                continue;
            }
            _ = tokio::time::sleep_until(redial_at.unwrap_or_else(tokio::time::Instant::now)), if redial_at.is_some() && conn.is_none() => {
                PeerMsg::Connect
            }
        };
        let cmd = match m {
            PeerMsg::Stop => break,
            PeerMsg::Connect => None,
            PeerMsg::Command(c) => Some(c),
        };
        if conn.is_none() {
            // While waiting to redial, commands are dropped: the full REGISTER on reconnect
            // covers them.
            if cmd.is_some() && redial_at.is_some_and(|t| t > tokio::time::Instant::now()) {
                continue;
            }
            conn = connect(&addr, &driver, &node, &http_addrs).await;
            if conn.is_some() {
                retry = Duration::from_secs(1);
                redial_at = None;
            } else {
                redial_at = Some(tokio::time::Instant::now() + retry);
                retry = (retry * 2).min(PING_EVERY);
            }
        }
        let (Some(c), Some(cmd)) = (conn.as_mut(), cmd) else {
            continue;
        };
        if cmd != PING {
            tracing::info!("LOOKUPD({addr}): {cmd}");
        }
        if let Err(e) = command(c, &cmd).await {
            tracing::error!("LOOKUPD({addr}): {cmd} - {e}");
            conn = None;
            redial_at = Some(tokio::time::Instant::now() + retry);
        }
    }
    http_addrs.lock().expect("lookupd addrs").remove(&addr);
}

/// Write a command line and read its answer (`[u32 size][text]`), each within a second.
async fn command(c: &mut TcpStream, line: &str) -> std::io::Result<Vec<u8>> {
    let mut b = line.as_bytes().to_vec();
    b.push(b'\n');
    timed(c.write_all(&b)).await?;
    read_response(c).await
}

async fn timed<T>(f: impl std::future::Future<Output = std::io::Result<T>>) -> std::io::Result<T> {
    tokio::time::timeout(IO_TIMEOUT, f)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "i/o timeout"))?
}

async fn read_response(c: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    timed(c.read_exact(&mut size)).await?;
    let n = u32::from_be_bytes(size) as usize;
    if n > 5 * 1024 * 1024 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("response body size ({n}) is greater than limit (5242880)"),
        ));
    }
    let mut body = vec![0u8; n];
    timed(c.read_exact(&mut body)).await?;
    Ok(body)
}

/// Dial, IDENTIFY and REGISTER everything; `None` (logged) on failure.
async fn connect(
    addr: &str,
    driver: &DriverHandle,
    node: &NodeInfo,
    http_addrs: &HttpAddrs,
) -> Option<TcpStream> {
    tracing::info!("LOOKUP connecting to {addr}");
    let mut c = match tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            tracing::error!("LOOKUPD({addr}): IDENTIFY - {e}");
            return None;
        }
        Err(_) => {
            tracing::error!("LOOKUPD({addr}): IDENTIFY - i/o timeout");
            return None;
        }
    };
    let _ = c.set_nodelay(true);
    let b = nsqlab_core::lookup::register::hello(&NodeIdentity {
        broadcast_address: node.broadcast_address.clone(),
        hostname: node.hostname.clone(),
        http_port: node.http_port,
        tcp_port: node.tcp_port,
        version: nsqlab_core::VERSION.into(),
    });
    let resp = match async {
        timed(c.write_all(&b)).await?;
        read_response(&mut c).await
    }
    .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("LOOKUPD({addr}): IDENTIFY - {e}");
            return None;
        }
    };
    #[derive(serde::Deserialize)]
    struct Info {
        #[serde(default)]
        tcp_port: i64,
        #[serde(default)]
        http_port: i64,
        #[serde(default)]
        version: String,
        #[serde(default)]
        broadcast_address: String,
    }
    let info: Info = match serde_json::from_slice(&resp) {
        Ok(i) => i,
        Err(_) => {
            tracing::error!(
                "LOOKUPD({addr}): parsing response - {}",
                String::from_utf8_lossy(&resp)
            );
            return None;
        }
    };
    tracing::info!(
        "LOOKUPD({addr}): peer info {{TCPPort:{} HTTPPort:{} Version:{} BroadcastAddress:{}}}",
        info.tcp_port,
        info.http_port,
        info.version,
        info.broadcast_address
    );
    if info.broadcast_address.is_empty() {
        tracing::error!("LOOKUPD({addr}): no broadcast address");
    } else {
        http_addrs.lock().expect("lookupd addrs").insert(
            addr.to_string(),
            crate::common::http_client::join_host_port(&info.broadcast_address, info.http_port),
        );
    }
    // Everything this node has: a topic with channels is registered through them.
    let regs = driver
        .call_all(|b, _| {
            let mut v = Vec::new();
            for t in b.topics() {
                if t.channels.is_empty() {
                    v.push(format!("REGISTER {}", t.name));
                }
                for ch in t.channels.keys() {
                    v.push(format!("REGISTER {} {ch}", t.name));
                }
            }
            v
        })
        .await
        .unwrap_or_default()
        .concat();
    for cmd in regs {
        tracing::info!("LOOKUPD({addr}): {cmd}");
        if let Err(e) = command(&mut c, &cmd).await {
            tracing::error!("LOOKUPD({addr}): {cmd} - {e}");
            return None;
        }
    }
    Some(c)
}

/// nsqd's topic creation: ask the lookupds which channels the topic has elsewhere and create
/// them here (not ephemeral ones).
async fn precreate_channels(
    driver: DriverHandle,
    node: NodeInfo,
    http: Vec<String>,
    topic: String,
) {
    let mut names = std::collections::BTreeSet::new();
    let path = format!(
        "/channels?topic={}",
        crate::common::http_client::urlencode(&topic)
    );
    for addr in http {
        let got =
            crate::common::http_client::http_get_json(&addr, &path, node.http_request_timeout)
                .await;
        match got.and_then(|v| {
            serde_json::from_value::<Vec<String>>(v["channels"].clone()).map_err(|e| e.to_string())
        }) {
            Ok(chans) => names.extend(chans),
            Err(e) => tracing::warn!(
                "failed to query nsqlookupd for channels to pre-create for topic {topic} - {e}"
            ),
        }
    }
    let names: Vec<String> = names
        .into_iter()
        .filter(|c| !nsqlab_core::protocol::is_ephemeral(c))
        .collect();
    if names.is_empty() {
        return;
    }
    let owner = topic.clone();
    let _ = driver
        .call(&owner, move |b, now| {
            // Only while the topic still exists (it may have been deleted meanwhile).
            if b.topic(&topic).is_some() {
                let _ = b.create_channels(now, &topic, &names);
            }
        })
        .await;
}
