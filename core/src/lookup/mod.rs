//! nsqlookupd, sans-IO: the V1 TCP protocol nsqd nodes speak to register their topics and
//! channels, and the queries behind nsqlookupd's HTTP API.
//!
//! As with [`crate::Broker`]: `handle_bytes(now, peer, bytes)` in, [`Lookupd::take_output`]
//! out. nsqlookupd has no timers: inactivity and tombstones are filters applied at query time.
//!
//! # Format (TCP)
//! The client sends the magic `"  V1"`, then lines: `IDENTIFY\n` followed by a 4-byte
//! big-endian size and a JSON body, `REGISTER <topic> [<channel>]\n`,
//! `UNREGISTER <topic> [<channel>]\n`, `PING\n`. Every answer is `[u32 BE size][text]` (no
//! frame type): `OK`, IDENTIFY's JSON, or an `E_…` error, after which the connection closes.

pub mod db;
pub mod register;

use crate::protocol::is_valid_name;
use crate::time::{Nanos, Time};
use db::{active, Category, PeerInfo, Registration, RegistrationDb};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A connection to nsqlookupd.
pub type PeerId = u64;

/// nsqlookupd's settings.
#[derive(Debug, Clone)]
pub struct LookupdOptions {
    pub broadcast_address: String,
    pub hostname: String,
    pub tcp_port: u16,
    pub http_port: u16,
    /// `--inactive-producer-timeout` (300 s).
    pub inactive_producer_timeout: Nanos,
    /// `--tombstone-lifetime` (45 s).
    pub tombstone_lifetime: Nanos,
}

/// Something that happened, for the log (nsqlookupd's `DB:` lines and client errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupLog {
    Info(String),
    Warn(String),
    Error(String),
}

#[derive(Clone)]
struct Conn {
    remote: String,
    magic_ok: bool,
    inbuf: Vec<u8>,
    /// IDENTIFY's line was read; its body is awaited.
    awaiting_body: bool,
    peer: Option<Arc<PeerInfo>>,
    out: Vec<u8>,
    close: bool,
}

/// A protocol error: the text sent, after which the connection closes (every V1 error is
/// fatal).
struct Fatal(String);

fn fatal(code: &str, desc: impl AsRef<str>) -> Fatal {
    Fatal(format!("{code} {}", desc.as_ref()))
}

/// Lines longer than this are refused (nsqlookupd reads without bound).
const MAX_LINE: usize = 64 * 1024;
/// IDENTIFY bodies larger than this are refused (nsqd's is about 100 bytes).
const MAX_BODY: usize = 1024 * 1024;

/// The nsqlookupd state machine (a clone is an independent copy).
#[derive(Clone)]
pub struct Lookupd {
    opts: LookupdOptions,
    db: RegistrationDb,
    conns: BTreeMap<PeerId, Conn>,
    next: PeerId,
    log: Vec<LookupLog>,
}

/// A producer as `/lookup` shows it.
pub type ProducerInfo = PeerInfo;

/// `/lookup`'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct LookupAnswer {
    pub channels: Vec<String>,
    pub producers: Vec<ProducerInfo>,
}

/// One node of `/nodes`.
#[derive(Debug, Clone, Serialize)]
pub struct NodeInfo {
    #[serde(flatten)]
    pub peer: PeerInfo,
    pub tombstones: Vec<bool>,
    pub topics: Vec<String>,
}

/// One producer entry of `/debug`.
#[derive(Debug, Clone, Serialize)]
pub struct DebugProducer {
    pub broadcast_address: String,
    pub hostname: String,
    pub http_port: i64,
    pub id: String,
    pub last_update: i64,
    pub tcp_port: i64,
    pub tombstoned: bool,
    pub tombstoned_at: i64,
    pub version: String,
}

/// Go's zero `time.Time` as `UnixNano()` (a producer never tombstoned).
const GO_ZERO_TIME_UNIX_NANO: i64 = -6_795_364_578_871_345_152;

impl Lookupd {
    pub fn new(opts: LookupdOptions) -> Self {
        Self {
            opts,
            db: RegistrationDb::default(),
            conns: BTreeMap::new(),
            next: 1,
            log: Vec::new(),
        }
    }

    pub fn options(&self) -> &LookupdOptions {
        &self.opts
    }

    /// Set the ports actually bound (for IDENTIFY's answer).
    pub fn set_ports(&mut self, tcp: u16, http: u16) {
        self.opts.tcp_port = tcp;
        self.opts.http_port = http;
    }

    pub fn db(&self) -> &RegistrationDb {
        &self.db
    }

    /// Log lines produced since the last call.
    pub fn take_log(&mut self) -> Vec<LookupLog> {
        std::mem::take(&mut self.log)
    }

    /// A new TCP connection from `remote` (`ip:port`, the producer's id once identified).
    pub fn connect(&mut self, remote: impl Into<String>) -> PeerId {
        let id = self.next;
        self.next += 1;
        self.conns.insert(
            id,
            Conn {
                remote: remote.into(),
                magic_ok: false,
                inbuf: Vec::new(),
                awaiting_body: false,
                peer: None,
                out: Vec::new(),
                close: false,
            },
        );
        id
    }

    /// The connection closed: its producer leaves every registration (the registrations
    /// stay, as in nsqlookupd, ephemeral ones too).
    pub fn disconnect(&mut self, peer: PeerId) {
        let Some(c) = self.conns.remove(&peer) else {
            return;
        };
        if let Some(p) = c.peer {
            for r in self.db.lookup_registrations(&p.id) {
                self.db.remove_producer(&r, &p.id);
                self.log.push(LookupLog::Info(format!(
                    "DB: client({}) UNREGISTER category:{} key:{} subkey:{}",
                    p.id,
                    r.category.as_str(),
                    r.key,
                    r.subkey
                )));
            }
        }
    }

    /// What to write to `peer`, and whether to close it after.
    pub fn take_output(&mut self, peer: PeerId) -> (Vec<u8>, bool) {
        match self.conns.get_mut(&peer) {
            Some(c) => (std::mem::take(&mut c.out), c.close),
            None => (Vec::new(), true),
        }
    }

    /// Bytes from `peer`.
    pub fn handle_bytes(&mut self, now: Time, peer: PeerId, data: &[u8]) {
        let Some(c) = self.conns.get_mut(&peer) else {
            return;
        };
        if c.close {
            return;
        }
        c.inbuf.extend_from_slice(data);
        if !c.magic_ok {
            if c.inbuf.len() < 4 {
                return;
            }
            if &c.inbuf[..4] != b"  V1" {
                let magic = String::from_utf8_lossy(&c.inbuf[..4]).into_owned();
                self.log.push(LookupLog::Error(format!(
                    "client({}) bad protocol magic '{magic}'",
                    c.remote
                )));
                respond(&mut c.out, b"E_BAD_PROTOCOL");
                c.close = true;
                return;
            }
            c.magic_ok = true;
            c.inbuf.drain(..4);
        }
        loop {
            let c = self.conns.get_mut(&peer).expect("connection exists");
            if c.close {
                return;
            }
            let result = if c.awaiting_body {
                if c.inbuf.len() < 4 {
                    return;
                }
                let size = i32::from_be_bytes(c.inbuf[..4].try_into().expect("4 bytes"));
                if size < 0 || size as usize > MAX_BODY {
                    Err(fatal("E_BAD_BODY", "IDENTIFY failed to read body size"))
                } else if c.inbuf.len() < 4 + size as usize {
                    return;
                } else {
                    let body: Vec<u8> = c.inbuf.drain(..4 + size as usize).skip(4).collect();
                    c.awaiting_body = false;
                    self.identify(now, peer, &body)
                }
            } else {
                let Some(nl) = c.inbuf.iter().position(|&b| b == b'\n') else {
                    if c.inbuf.len() > MAX_LINE {
                        let e = fatal("E_INVALID", "invalid command (line too long)");
                        self.fail(peer, e);
                    }
                    return;
                };
                let line: Vec<u8> = c.inbuf.drain(..=nl).collect();
                let line = String::from_utf8_lossy(&line).trim().to_string();
                self.command(now, peer, &line)
            };
            match result {
                Ok(Some(resp)) => {
                    let c = self.conns.get_mut(&peer).expect("connection exists");
                    respond(&mut c.out, &resp);
                }
                Ok(None) => {}
                Err(e) => self.fail(peer, e),
            }
        }
    }

    fn fail(&mut self, peer: PeerId, Fatal(text): Fatal) {
        let c = self.conns.get_mut(&peer).expect("connection exists");
        self.log
            .push(LookupLog::Error(format!("[{}] - {text}", c.remote)));
        respond(&mut c.out, text.as_bytes());
        c.close = true;
    }

    /// One command line; `Ok(None)` when IDENTIFY's body is still to come.
    fn command(&mut self, now: Time, peer: PeerId, line: &str) -> Result<Option<Vec<u8>>, Fatal> {
        let params: Vec<&str> = line.split(' ').collect();
        match params[0] {
            "PING" => {
                let c = self.conns.get_mut(&peer).expect("connection exists");
                if let Some(p) = &c.peer {
                    let mut info = (**p).clone();
                    let since = now.saturating_sub(info.last_update);
                    info.last_update = now;
                    let info = Arc::new(info);
                    c.peer = Some(info.clone());
                    self.log.push(LookupLog::Info(format!(
                        "CLIENT({}): pinged (last ping {})",
                        info.id,
                        crate::time::go_duration(since)
                    )));
                    self.db.update_peer(&info);
                }
                Ok(Some(b"OK".to_vec()))
            }
            "IDENTIFY" => {
                let c = self.conns.get_mut(&peer).expect("connection exists");
                if c.peer.is_some() {
                    return Err(fatal("E_INVALID", "cannot IDENTIFY again"));
                }
                c.awaiting_body = true;
                Ok(None)
            }
            "REGISTER" => self.register(peer, &params[1..], true),
            "UNREGISTER" => self.register(peer, &params[1..], false),
            other => Err(fatal("E_INVALID", format!("invalid command {other}"))),
        }
    }

    fn identify(&mut self, now: Time, peer: PeerId, body: &[u8]) -> Result<Option<Vec<u8>>, Fatal> {
        let remote = self.conns[&peer].remote.clone();
        // Go's decoder turns bytes that are not UTF-8 into U+FFFD.
        let text = String::from_utf8_lossy(body);
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|_| fatal("E_BAD_BODY", "IDENTIFY failed to decode JSON body"))?;
        let obj = match &v {
            serde_json::Value::Object(o) => o.clone(),
            serde_json::Value::Null => serde_json::Map::new(),
            _ => return Err(fatal("E_BAD_BODY", "IDENTIFY failed to decode JSON body")),
        };
        // Go's decoder: keys match case-insensitively; a wrong type is an error.
        let field = |name: &str| {
            obj.iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
                .next_back()
        };
        let bad = || fatal("E_BAD_BODY", "IDENTIFY failed to decode JSON body");
        let string = |name: &str| -> Result<String, Fatal> {
            match field(name) {
                None | Some(serde_json::Value::Null) => Ok(String::new()),
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(bad()),
            }
        };
        let int = |name: &str| -> Result<i64, Fatal> {
            match field(name) {
                None | Some(serde_json::Value::Null) => Ok(0),
                Some(serde_json::Value::Number(n)) => n.as_i64().ok_or_else(bad),
                Some(_) => Err(bad()),
            }
        };
        // Decoded into PeerInfo's field (so its type is checked), then replaced by the
        // connection's address, as nsqlookupd does.
        string("remote_address")?;
        let info = PeerInfo {
            remote_address: remote.clone(),
            hostname: string("hostname")?,
            broadcast_address: string("broadcast_address")?,
            tcp_port: int("tcp_port")?,
            http_port: int("http_port")?,
            version: string("version")?,
            id: remote.clone(),
            last_update: now,
        };
        if info.broadcast_address.is_empty()
            || info.tcp_port == 0
            || info.http_port == 0
            || info.version.is_empty()
        {
            return Err(fatal("E_BAD_BODY", "IDENTIFY missing fields"));
        }
        self.log.push(LookupLog::Info(format!(
            "CLIENT({remote}): IDENTIFY Address:{} TCP:{} HTTP:{} Version:{}",
            info.broadcast_address, info.tcp_port, info.http_port, info.version
        )));
        let info = Arc::new(info);
        self.conns.get_mut(&peer).expect("connection exists").peer = Some(info.clone());
        if self.db.add_producer(Registration::client(), &info) {
            self.log.push(LookupLog::Info(format!(
                "DB: client({remote}) REGISTER category:client key: subkey:"
            )));
        }
        // A Go map, so the keys come sorted.
        let reply = serde_json::json!({
            "broadcast_address": self.opts.broadcast_address,
            "hostname": self.opts.hostname,
            "http_port": self.opts.http_port,
            "tcp_port": self.opts.tcp_port,
            "version": crate::VERSION,
        });
        Ok(Some(
            crate::protocol::to_go_json(&reply).expect("reply serialises"),
        ))
    }

    fn register(
        &mut self,
        peer: PeerId,
        params: &[&str],
        add: bool,
    ) -> Result<Option<Vec<u8>>, Fatal> {
        let cmd = if add { "REGISTER" } else { "UNREGISTER" };
        let Some(p) = self.conns[&peer].peer.clone() else {
            return Err(fatal("E_INVALID", "client must IDENTIFY"));
        };
        if params.is_empty() {
            return Err(fatal(
                "E_INVALID",
                format!("{cmd} insufficient number of params"),
            ));
        }
        let topic = params[0];
        let channel = params.get(1).copied().unwrap_or("");
        if !is_valid_name(topic) {
            return Err(fatal(
                "E_BAD_TOPIC",
                format!("{cmd} topic name '{topic}' is not valid"),
            ));
        }
        if !channel.is_empty() && !is_valid_name(channel) {
            return Err(fatal(
                "E_BAD_CHANNEL",
                format!("{cmd} channel name '{channel}' is not valid"),
            ));
        }
        let id = p.id.clone();
        let log_db = |log: &mut Vec<LookupLog>, verb: &str, r: &Registration| {
            log.push(LookupLog::Info(format!(
                "DB: client({id}) {verb} category:{} key:{} subkey:{}",
                r.category.as_str(),
                r.key,
                r.subkey
            )));
        };
        if add {
            if !channel.is_empty() {
                let r = Registration::channel(topic, channel);
                if self.db.add_producer(r.clone(), &p) {
                    log_db(&mut self.log, "REGISTER", &r);
                }
            }
            let r = Registration::topic(topic);
            if self.db.add_producer(r.clone(), &p) {
                log_db(&mut self.log, "REGISTER", &r);
            }
        } else if !channel.is_empty() {
            let r = Registration::channel(topic, channel);
            let (removed, left) = self.db.remove_producer(&r, &p.id);
            if removed {
                log_db(&mut self.log, "UNREGISTER", &r);
            }
            // An ephemeral channel goes with its last producer.
            if left == 0 && crate::protocol::is_ephemeral(channel) {
                self.db.remove_registration(&r);
            }
        } else {
            for r in self.channel_registrations(topic) {
                if self.db.remove_producer(&r, &p.id).0 {
                    self.log.push(LookupLog::Warn(format!(
                        "client({id}) unexpected UNREGISTER category:channel key:{topic} subkey:{}",
                        r.subkey
                    )));
                }
            }
            let r = Registration::topic(topic);
            let (removed, left) = self.db.remove_producer(&r, &p.id);
            if removed {
                log_db(&mut self.log, "UNREGISTER", &r);
            }
            if left == 0 && crate::protocol::is_ephemeral(topic) {
                self.db.remove_registration(&r);
            }
        }
        Ok(Some(b"OK".to_vec()))
    }

    /// Every channel registration of `topic`.
    fn channel_registrations(&self, topic: &str) -> Vec<Registration> {
        self.db
            .find_registrations(Category::Channel, topic, "*")
            .cloned()
            .collect()
    }

    // ------------------------------------------------------------ HTTP queries

    /// `/topics`.
    pub fn topics(&self) -> Vec<String> {
        self.db
            .find_registrations(Category::Topic, "*", "")
            .map(|r| r.key.clone())
            .collect()
    }

    /// `/channels?topic=`.
    pub fn channels(&self, topic: &str) -> Vec<String> {
        self.db
            .find_registrations(Category::Channel, topic, "*")
            .map(|r| r.subkey.clone())
            .collect()
    }

    /// `/lookup?topic=`; `None` when the topic is not registered (404 TOPIC_NOT_FOUND). As
    /// nsqlookupd's registry matches them, `topic=*` is every topic: all their channels, and
    /// each producer once.
    pub fn lookup(&self, now: Time, topic: &str) -> Option<LookupAnswer> {
        self.db
            .find_registrations(Category::Topic, topic, "")
            .next()?;
        let producers = active(
            self.db.find_producers(Category::Topic, topic, ""),
            now,
            self.opts.inactive_producer_timeout,
            self.opts.tombstone_lifetime,
        )
        .into_iter()
        .map(|p| (*p.peer).clone())
        .collect();
        Some(LookupAnswer {
            channels: self.channels(topic),
            producers,
        })
    }

    /// `/nodes`.
    pub fn nodes(&self, now: Time) -> Vec<NodeInfo> {
        let clients = self.db.find_producers(Category::Client, "", "");
        active(clients, now, self.opts.inactive_producer_timeout, 0)
            .into_iter()
            .map(|p| {
                let mut topics = Vec::new();
                let mut tombstones = Vec::new();
                for r in self.db.lookup_registrations(&p.peer.id) {
                    if r.category != Category::Topic {
                        continue;
                    }
                    let t = self
                        .db
                        .producers(&r)
                        .and_then(|ps| ps.get(&p.peer.id))
                        .is_some_and(|tp| tp.is_tombstoned(now, self.opts.tombstone_lifetime));
                    topics.push(r.key.clone());
                    tombstones.push(t);
                }
                NodeInfo {
                    peer: (*p.peer).clone(),
                    tombstones,
                    topics,
                }
            })
            .collect()
    }

    /// `/debug`: every registration with producers, as `category:key:subkey`.
    pub fn debug(&self) -> BTreeMap<String, Vec<DebugProducer>> {
        let mut out = BTreeMap::new();
        for (r, ps) in self.db.iter() {
            if ps.is_empty() {
                continue;
            }
            let list = ps
                .values()
                .map(|p| DebugProducer {
                    broadcast_address: p.peer.broadcast_address.clone(),
                    hostname: p.peer.hostname.clone(),
                    http_port: p.peer.http_port,
                    id: p.peer.id.clone(),
                    last_update: p.peer.last_update as i64,
                    tcp_port: p.peer.tcp_port,
                    tombstoned: p.tombstoned,
                    tombstoned_at: if p.tombstoned {
                        p.tombstoned_at as i64
                    } else {
                        GO_ZERO_TIME_UNIX_NANO
                    },
                    version: p.peer.version.clone(),
                })
                .collect();
            out.insert(
                format!("{}:{}:{}", r.category.as_str(), r.key, r.subkey),
                list,
            );
        }
        out
    }

    /// `/topic/create`.
    pub fn create_topic(&mut self, topic: &str) {
        self.log
            .push(LookupLog::Info(format!("DB: adding topic({topic})")));
        self.db.add_registration(Registration::topic(topic));
    }

    /// `/topic/delete`: the topic and its channels, with their producers (`topic=*`: every
    /// topic, as nsqlookupd's registry matches it).
    pub fn delete_topic(&mut self, topic: &str) {
        for r in self.channel_registrations(topic) {
            self.log.push(LookupLog::Info(format!(
                "DB: removing channel({}) from topic({topic})",
                r.subkey
            )));
            self.db.remove_registration(&r);
        }
        let topics: Vec<Registration> = self
            .db
            .find_registrations(Category::Topic, topic, "")
            .cloned()
            .collect();
        for r in topics {
            self.log
                .push(LookupLog::Info(format!("DB: removing topic({topic})")));
            self.db.remove_registration(&r);
        }
    }

    /// `/topic/tombstone?topic=&node=`: producers whose `broadcast_address:http_port` is
    /// `node` leave `/lookup` for this topic for `--tombstone-lifetime`. With `topic=*`, as
    /// nsqlookupd (which finds each producer once, in whichever topic it meets it first), one
    /// topic's registration of that node: here the first topic by name.
    pub fn tombstone(&mut self, now: Time, topic: &str, node: &str) {
        self.log.push(LookupLog::Info(format!(
            "DB: setting tombstone for producer@{node} of topic({topic})"
        )));
        let regs: Vec<Registration> = self
            .db
            .find_registrations(Category::Topic, topic, "")
            .cloned()
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for r in regs {
            let Some(ps) = self.db.producers_mut(&r) else {
                continue;
            };
            for (id, p) in ps.iter_mut() {
                if !seen.insert(id.clone()) {
                    continue;
                }
                if format!("{}:{}", p.peer.broadcast_address, p.peer.http_port) == node {
                    p.tombstoned = true;
                    p.tombstoned_at = now;
                }
            }
        }
    }

    /// `/channel/create`.
    pub fn create_channel(&mut self, topic: &str, channel: &str) {
        self.log.push(LookupLog::Info(format!(
            "DB: adding channel({channel}) in topic({topic})"
        )));
        self.db
            .add_registration(Registration::channel(topic, channel));
        self.log
            .push(LookupLog::Info(format!("DB: adding topic({topic})")));
        self.db.add_registration(Registration::topic(topic));
    }

    /// `/channel/delete`; false when there is no such channel (404 CHANNEL_NOT_FOUND).
    pub fn delete_channel(&mut self, topic: &str, channel: &str) -> bool {
        let r = Registration::channel(topic, channel);
        if !self.db.has(&r) {
            return false;
        }
        self.log.push(LookupLog::Info(format!(
            "DB: removing channel({channel}) from topic({topic})"
        )));
        self.db.remove_registration(&r)
    }
}

fn respond(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}
