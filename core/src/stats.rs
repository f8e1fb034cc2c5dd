//! A snapshot with the fields of nsqd's `/stats` JSON, in nsqd's field order.

use crate::broker::Broker;
use crate::protocol::decode::ClientState;
use crate::ClientId;
use serde::Serialize;

pub use crate::e2e::E2eLatency;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientStats {
    pub client_id: String,
    pub hostname: String,
    pub version: String,
    pub remote_address: String,
    /// nsqd's numeric state: 1 init, 3 subscribed, 4 closing.
    pub state: i32,
    pub ready_count: i64,
    pub in_flight_count: u64,
    pub message_count: u64,
    pub finish_count: u64,
    pub requeue_count: u64,
    /// Connect time in Unix seconds (the caller's epoch / 1e9).
    pub connect_ts: i64,
    pub sample_rate: i32,
    pub deflate: bool,
    pub snappy: bool,
    pub user_agent: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub authed: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub auth_identity: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub auth_identity_url: String,
    /// nsqd reports at most one entry (its loop breaks after the first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pub_counts: Vec<PubCount>,
    pub tls: bool,
    pub tls_cipher_suite: String,
    pub tls_version: String,
    pub tls_negotiated_protocol: String,
    pub tls_negotiated_protocol_is_mutual: bool,
    /// The broker's own id for the connection (not in nsqd's JSON).
    #[serde(skip)]
    pub id: ClientId,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PubCount {
    pub topic: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelStats {
    pub channel_name: String,
    pub depth: u64,
    pub backend_depth: u64,
    pub in_flight_count: u64,
    pub deferred_count: u64,
    pub message_count: u64,
    pub requeue_count: u64,
    pub timeout_count: u64,
    pub client_count: u64,
    /// `null` when clients were not asked for, as nsqd.
    pub clients: Option<Vec<ClientStats>>,
    pub paused: bool,
    pub e2e_processing_latency: E2eLatency,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicStats {
    pub topic_name: String,
    pub channels: Vec<ChannelStats>,
    pub depth: u64,
    pub backend_depth: u64,
    pub message_count: u64,
    pub message_bytes: u64,
    pub paused: bool,
    pub e2e_processing_latency: E2eLatency,
}

/// Which parts of the snapshot to include (nsqd's `/stats` query parameters).
#[derive(Debug, Clone, Default)]
pub struct StatsFilter {
    pub topic: Option<String>,
    pub channel: Option<String>,
    pub include_clients: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// `None` when the topic filter names a topic that does not exist (nsqd's `null`).
    pub topics: Option<Vec<TopicStats>>,
    /// Clients that have published (nsqd's `producers`); `None` when there are none or
    /// clients were not asked for (nsqd's `null`).
    pub producers: Option<Vec<ClientStats>>,
}

fn state_code(s: ClientState) -> i32 {
    match s {
        ClientState::Init => 0,
        ClientState::Subscribed => 3,
        ClientState::Closing => 4,
    }
}

impl Broker {
    fn client_stats(&self, c: &crate::client::Client, topic: Option<&str>) -> ClientStats {
        ClientStats {
            client_id: c.identify.client_id.clone(),
            hostname: c.identify.hostname.clone(),
            version: "V2".into(),
            remote_address: c.remote_address.clone(),
            state: state_code(c.state),
            ready_count: c.ready_count,
            in_flight_count: c.in_flight_count,
            message_count: c.message_count,
            finish_count: c.finish_count,
            requeue_count: c.requeue_count,
            connect_ts: (c.connect_ts / 1_000_000_000) as i64,
            sample_rate: c.settings.sample_rate,
            deflate: c.deflate,
            snappy: c.snappy,
            user_agent: c.identify.user_agent.clone(),
            authed: c.auth.is_some(),
            auth_identity: c
                .auth
                .as_ref()
                .map(|a| a.identity.clone())
                .unwrap_or_default(),
            auth_identity_url: c
                .auth
                .as_ref()
                .map(|a| a.identity_url.clone())
                .unwrap_or_default(),
            pub_counts: c
                .pub_counts
                .iter()
                .filter(|(t, _)| topic.is_none_or(|f| f == &**t))
                .min_by(|a, b| a.0.cmp(&b.0))
                .map(|(t, n)| PubCount {
                    topic: t.to_string(),
                    count: *n,
                })
                .into_iter()
                .collect(),
            tls: c.tls,
            tls_cipher_suite: if c.tls {
                tls_cipher_suite_name(c.tls_peer.cipher_suite)
            } else {
                String::new()
            },
            tls_version: if c.tls {
                tls_version_name(c.tls_peer.version)
            } else {
                String::new()
            },
            // No ALPN (nsqd offers none); Go's ConnectionState says "mutual" always.
            tls_negotiated_protocol: String::new(),
            tls_negotiated_protocol_is_mutual: c.tls,
            id: c.id,
        }
    }

    /// A stats snapshot.
    pub fn stats(&self, f: &StatsFilter) -> Stats {
        Stats::merge(vec![self.stats_part(f)])
    }

    /// This broker's part of a snapshot of several partitions (see [`Stats::merge`]): its
    /// topics (`None` when the filter names a topic it does not have) and the clients that
    /// have published (when `f` asks for clients), by ID.
    pub fn stats_part(&self, f: &StatsFilter) -> (Option<Vec<TopicStats>>, Vec<ClientStats>) {
        let producers = if f.include_clients {
            self.clients()
                .filter(|c| !c.pub_counts.is_empty())
                .map(|c| self.client_stats(c, f.topic.as_deref()))
                .collect()
        } else {
            Vec::new()
        };
        if let Some(name) = &f.topic {
            if self.topic(name).is_none() {
                return (None, producers);
            }
        }
        let mut topics = Vec::new();
        for t in self.topics() {
            if f.topic.as_deref().is_some_and(|n| n != &*t.name) {
                continue;
            }
            if let Some(ch) = &f.channel {
                if !t.channels.contains_key(ch.as_str()) {
                    continue;
                }
            }
            let (now, quantiles, window) = (
                self.now(),
                &self.options().e2e_percentiles,
                self.options().e2e_window,
            );
            let e2e = |c: &crate::channel::Channel, acc: &mut crate::e2e::Samples| {
                if let Some(w) = &c.e2e {
                    w.collect(now, window, acc);
                }
            };
            // A topic's latency merges all its channels'; with no channel keeping latencies
            // there is nothing to merge (nsqd's nil stream: count 0, percentiles null).
            let mut topic_e2e = crate::e2e::Samples::default();
            let mut streams = 0;
            for id in t.channels.values() {
                if let Some(c) = self.channel_by_id(*id) {
                    streams += usize::from(c.e2e.is_some());
                    e2e(c, &mut topic_e2e);
                }
            }
            let mut channels = Vec::new();
            for (name, &id) in &t.channels {
                if f.channel.as_deref().is_some_and(|n| n != &**name) {
                    continue;
                }
                let Some(c) = self.channel_by_id(id) else {
                    continue;
                };
                let mut channel_e2e = crate::e2e::Samples::default();
                e2e(c, &mut channel_e2e);
                let clients = f.include_clients.then(|| {
                    c.clients
                        .iter()
                        .filter_map(|id| self.client(*id))
                        .map(|cl| self.client_stats(cl, f.topic.as_deref()))
                        .collect()
                });
                channels.push(ChannelStats {
                    channel_name: name.to_string(),
                    depth: c.depth() as u64,
                    backend_depth: c.queue.backend_len() as u64,
                    in_flight_count: c.in_flight.len() as u64,
                    deferred_count: c.deferred.len() as u64,
                    message_count: c.message_count,
                    requeue_count: c.requeue_count,
                    timeout_count: c.timeout_count,
                    client_count: c.clients.len() as u64,
                    clients,
                    paused: c.paused,
                    e2e_processing_latency: channel_e2e.result(quantiles),
                });
            }
            topics.push(TopicStats {
                topic_name: t.name.to_string(),
                channels,
                depth: t.depth() as u64,
                backend_depth: t.queue.backend_len() as u64,
                message_count: t.message_count,
                message_bytes: t.message_bytes,
                paused: t.paused,
                e2e_processing_latency: if streams == 0 {
                    crate::e2e::E2eLatency::default()
                } else {
                    topic_e2e.result(quantiles)
                },
            });
        }
        (Some(topics), producers)
    }
}

impl Stats {
    /// One snapshot of several partitions (see [`crate::partition`]), from each partition's
    /// [`Broker::stats_part`] with the same filter: what one broker holding all of it would
    /// report.
    pub fn merge(parts: Vec<(Option<Vec<TopicStats>>, Vec<ClientStats>)>) -> Stats {
        let mut topics: Option<Vec<TopicStats>> = None;
        let mut producers = Vec::new();
        for (t, p) in parts {
            if let Some(t) = t {
                topics.get_or_insert_with(Vec::new).extend(t);
            }
            producers.extend(p);
        }
        let Some(mut topics) = topics else {
            // The filter names a topic no partition has.
            return Stats {
                topics: None,
                producers: None,
            };
        };
        topics.sort_by(|a, b| a.topic_name.cmp(&b.topic_name));
        // A client moving between partitions while they answered is reported once.
        producers.sort_by_key(|c| c.id);
        producers.dedup_by_key(|c| c.id);
        Stats {
            topics: Some(topics),
            producers: (!producers.is_empty()).then_some(producers),
        }
    }
}

/// A TLS version as nsqd's `/stats` names it (`prettyConnectionState.GetVersion`): it knows
/// SSL 3.0 to TLS 1.2, so TLS 1.3 is `Unknown 772`.
pub fn tls_version_name(version: u16) -> String {
    match version {
        0x0300 => "SSL30".into(),
        0x0301 => "TLS1.0".into(),
        0x0302 => "TLS1.1".into(),
        0x0303 => "TLS1.2".into(),
        v => format!("Unknown {v}"),
    }
}

/// A cipher suite as nsqd's `/stats` names it (`prettyConnectionState.GetCipherSuite`): the
/// thirteen suites it lists by name, any other (every TLS 1.3 suite among them) as
/// `Unknown <number>`.
pub fn tls_cipher_suite_name(suite: u16) -> String {
    let name = match suite {
        0x0005 => "TLS_RSA_WITH_RC4_128_SHA",
        0x000a => "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        0x002f => "TLS_RSA_WITH_AES_128_CBC_SHA",
        0x0035 => "TLS_RSA_WITH_AES_256_CBC_SHA",
        0xc007 => "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
        0xc009 => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        0xc00a => "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        0xc011 => "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
        0xc012 => "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
        0xc013 => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        0xc014 => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        0xc02f => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        0xc02b => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        s => return format!("Unknown {s}"),
    };
    name.into()
}
