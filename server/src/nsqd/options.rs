//! nsqd v1.3's flags, with its defaults, as clap arguments (see [`crate::cli`] for the Go
//! flag forms), and their mapping onto the core's [`nsqlab_core::Options`].

use crate::cli::duration_arg;
use crate::common::hostname;
use clap::{ArgAction, Parser};
use std::time::Duration;

/// `nsqlab nsqd`: a drop-in nsqd.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "nsqd",
    disable_version_flag = true,
    // Go's flag package takes the next word as a value even when it starts with `-`.
    allow_negative_numbers = true,
    args_override_self = true,
    about = "nsqlab nsqd: an NSQ daemon"
)]
pub struct NsqdArgs {
    /// print version string
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub version: bool,
    /// path to config file
    #[arg(long)]
    pub config: Option<String>,
    /// set log verbosity: debug, info, warn, error, or fatal
    #[arg(long, default_value = "INFO", value_name = "value", value_parser = crate::logging::level_arg)]
    pub log_level: String,
    /// log message prefix
    #[arg(long, default_value = "[nsqd] ")]
    pub log_prefix: String,
    /// [deprecated] has no effect, use --log-level
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub verbose: Option<bool>,

    /// unique part for message IDs, (int) in range [0,1024) (default is hash of hostname)
    #[arg(long)]
    pub node_id: Option<i64>,
    /// [deprecated] use --node-id
    ///
    /// (A boolean with no effect, as in nsqd.)
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub worker_id: Option<bool>,

    /// <addr>:<port> to listen on for TCP clients
    #[arg(long, default_value = "0.0.0.0:4150")]
    pub tcp_address: String,
    /// <addr>:<port> to listen on for HTTP clients
    #[arg(long, default_value = "0.0.0.0:4151")]
    pub http_address: String,
    /// <addr>:<port> to listen on for HTTPS clients
    #[arg(long, default_value = "0.0.0.0:4152")]
    pub https_address: String,
    /// address that will be registered with lookupd (defaults to the OS hostname)
    #[arg(long)]
    pub broadcast_address: Option<String>,
    /// TCP port that will be registered with lookupd (defaults to the TCP port that this nsqd is listening to)
    #[arg(long, default_value_t = 0)]
    pub broadcast_tcp_port: u16,
    /// HTTP port that will be registered with lookupd (defaults to the HTTP port that this nsqd is listening to)
    #[arg(long, default_value_t = 0)]
    pub broadcast_http_port: u16,
    /// lookupd TCP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub lookupd_tcp_address: Vec<String>,
    /// timeout for HTTP connect
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub http_client_connect_timeout: Duration,
    /// timeout for HTTP request
    #[arg(long, default_value = "5s", value_parser = duration_arg)]
    pub http_client_request_timeout: Duration,

    /// path to store disk-backed messages
    #[arg(long, default_value = "")]
    pub data_path: String,
    /// number of messages to keep in memory (per topic/channel)
    #[arg(long, default_value_t = 10_000)]
    pub mem_queue_size: i64,
    /// number of bytes per diskqueue file before rolling
    #[arg(long, default_value_t = 100 * 1024 * 1024)]
    pub max_bytes_per_file: i64,
    /// number of messages per diskqueue fsync
    #[arg(long, default_value_t = 2500)]
    pub sync_every: i64,
    /// duration of time per diskqueue fsync
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub sync_timeout: Duration,

    /// max concurrency for checking in-flight and deferred message timeouts
    ///
    /// nsqlab: unused, timers are exact.
    #[arg(long, default_value_t = 4)]
    pub queue_scan_worker_pool_max: i64,
    /// number of channels to check per cycle (every 100ms) for in-flight and deferred timeouts
    #[arg(long, default_value_t = 20)]
    pub queue_scan_selection_count: i64,

    /// default duration to wait before auto-requeing a message
    #[arg(long, default_value = "1m0s", value_parser = duration_arg)]
    pub msg_timeout: Duration,
    /// maximum duration before a message will timeout
    #[arg(long, default_value = "15m0s", value_parser = duration_arg)]
    pub max_msg_timeout: Duration,
    /// maximum size of a single message in bytes
    #[arg(long, default_value_t = 1024 * 1024)]
    pub max_msg_size: i64,
    /// maximum requeuing timeout for a message
    #[arg(long, default_value = "1h0m0s", value_parser = duration_arg)]
    pub max_req_timeout: Duration,
    /// maximum size of a single command body
    #[arg(long, default_value_t = 5 * 1024 * 1024)]
    pub max_body_size: i64,

    /// maximum client configurable duration of time between client heartbeats
    #[arg(long, default_value = "1m0s", value_parser = duration_arg)]
    pub max_heartbeat_interval: Duration,
    /// maximum RDY count for a client
    #[arg(long, default_value_t = 2500)]
    pub max_rdy_count: i64,
    /// maximum client configurable size (in bytes) for a client output buffer
    #[arg(long, default_value_t = 64 * 1024)]
    pub max_output_buffer_size: i64,
    /// maximum client configurable duration of time between flushing to a client
    #[arg(long, default_value = "30s", value_parser = duration_arg)]
    pub max_output_buffer_timeout: Duration,
    /// minimum client configurable duration of time between flushing to a client
    #[arg(long, default_value = "25ms", value_parser = duration_arg)]
    pub min_output_buffer_timeout: Duration,
    /// default duration of time between flushing data to clients
    #[arg(long, default_value = "250ms", value_parser = duration_arg)]
    pub output_buffer_timeout: Duration,
    /// maximum channel consumer connection count per nsqd instance (default 0, i.e., unlimited)
    #[arg(long, default_value_t = 0)]
    pub max_channel_consumers: i64,

    /// UDP <addr>:<port> of a statsd daemon for pushing stats
    #[arg(long, default_value = "")]
    pub statsd_address: String,
    /// duration between pushing to statsd
    #[arg(long, default_value = "1m0s", value_parser = duration_arg)]
    pub statsd_interval: Duration,
    /// toggle sending memory and GC stats to statsd
    #[arg(long, value_parser = crate::cli::go_bool, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub statsd_mem_stats: bool,
    /// prefix used for keys sent to statsd (%s for host replacement)
    #[arg(long, default_value = "nsq.%s")]
    pub statsd_prefix: String,
    /// the size in bytes of statsd UDP packets
    #[arg(long, default_value_t = 508)]
    pub statsd_udp_packet_size: i64,
    /// exclude ephemeral topics/channels from statsd
    #[arg(long, value_parser = crate::cli::go_bool, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub statsd_exclude_ephemeral: bool,

    /// calculate end to end latency quantiles for this duration of time (ie: 60s would only show quantile calculations from the past 60 seconds)
    #[arg(long, default_value = "10m0s", value_parser = duration_arg)]
    pub e2e_processing_latency_window_time: Duration,
    /// message processing time percentiles (as float (0, 1.0]) to track (can be specified multiple times or comma separated '1.0,0.99,0.95', default none)
    #[arg(long, action = ArgAction::Append)]
    pub e2e_processing_latency_percentile: Vec<String>,

    /// path to certificate file
    #[arg(long, default_value = "")]
    pub tls_cert: String,
    /// path to key file
    #[arg(long, default_value = "")]
    pub tls_key: String,
    /// client certificate auth policy ('require' or 'require-verify')
    #[arg(long, default_value = "")]
    pub tls_client_auth_policy: String,
    /// path to certificate authority file
    #[arg(long, default_value = "")]
    pub tls_root_ca_file: String,
    /// require TLS for client connections (true, false, tcp-https)
    #[arg(long, value_parser = tls_required_arg, default_value = "false", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub tls_required: TlsRequired,
    /// minimum SSL/TLS version acceptable ('ssl3.0', 'tls1.0', 'tls1.1', 'tls1.2' or 'tls1.3')
    #[arg(long, value_parser = tls_min_version_arg, default_value = "tls1.0", value_name = "value")]
    pub tls_min_version: String,

    /// enable deflate feature negotiation (client compression)
    #[arg(long, value_parser = crate::cli::go_bool, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub deflate: bool,
    /// max deflate compression level a client can negotiate (> values == > nsqd CPU usage)
    #[arg(long, default_value_t = 6)]
    pub max_deflate_level: i64,
    /// enable snappy feature negotiation (client compression)
    #[arg(long, value_parser = crate::cli::go_bool, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub snappy: bool,

    /// <addr>:<port> or a full url to query auth server (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub auth_http_address: Vec<String>,
    /// HTTP method to use for auth server requests
    #[arg(long, default_value = "get")]
    pub auth_http_request_method: String,

    /// nsqlab: time an HTTP client has to send a request's headers (slowloris protection)
    #[arg(long, default_value = "10s", value_parser = duration_arg)]
    pub http_header_timeout: Duration,
    /// nsqlab: serve the visualiser page from this directory (for development) instead of
    /// the copy built into the binary
    #[arg(long)]
    pub www_dir: Option<String>,
    /// nsqlab: do not serve the visualiser page at GET /
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub no_visualiser: bool,
    /// nsqlab: keep every message on disk before acknowledging it (--durable=false: memory
    /// only, messages lost on exit, as nsqd with a huge --mem-queue-size)
    #[arg(long, value_parser = crate::cli::go_bool, default_value = "true", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub durable: bool,
    /// nsqlab: broker partitions, each owning the topics that hash to it and run on its own
    /// task (0: one per CPU core, at most 8)
    #[arg(long, default_value_t = 0)]
    pub partitions: u32,
    /// nsqlab: threads running the partitions and connections (0: one per CPU core, less one
    /// left to the storage threads when durable)
    #[arg(long, default_value_t = 0)]
    pub worker_threads: u32,
    /// nsqlab: keep every message on this many nodes (a raft group; 1: no replication). An
    /// OK means a majority has it on disk. Needs --node-id, --raft-address and a --raft-peer
    /// for every node (this one included); one partition
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// nsqlab: <addr>:<port> to listen on for the other nodes of the group (--replicas)
    #[arg(long, default_value = "")]
    pub raft_address: String,
    /// nsqlab: a node of the group as <node-id>@<host>:<port> (its --raft-address); may be
    /// given multiple times, or comma-separated
    #[arg(long, action = ArgAction::Append)]
    pub raft_peer: Vec<String>,
    /// nsqlab: join an existing group (start with nothing; the leader sends everything once
    /// `POST /raft/add?id=&address=` adds this node) instead of starting a new one
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub raft_join: bool,
    /// nsqlab: compact the raft log (a snapshot of what is owed, in raft.base, replaces it) once
    /// it holds this many bytes since the last snapshot, or as many as that snapshot, and the
    /// snapshot would at least halve it
    #[arg(long, default_value_t = 64 << 20)]
    pub raft_snapshot_bytes: u64,
    /// nsqlab: refuse publishes (E_PUB_FAILED) while the messages the group owes hold this
    /// many bytes: every node keeps them in memory, the leader about 2.4 times this
    /// (default: a quarter of this machine's memory; 0: no limit)
    #[arg(long)]
    pub raft_max_backlog_bytes: Option<u64>,
}

impl NsqdArgs {
    /// The node id: the flag, else nsqd's default, `crc32(md5(hostname)) % 1024`.
    pub fn node_id(&self) -> u16 {
        if let Some(id) = self.node_id {
            return (id.rem_euclid(1024)) as u16;
        }
        default_node_id(&hostname())
    }

    /// Where the visualiser page comes from: nowhere (`--no-visualiser`), `--www-dir`, or
    /// the copy built into the binary.
    pub fn visualiser(&self) -> Option<Option<std::path::PathBuf>> {
        (!self.no_visualiser).then(|| self.www_dir.as_ref().map(Into::into))
    }

    /// How many partitions to run (`--partitions`, or one per core).
    pub fn partition_count(&self) -> u32 {
        match self.partitions {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get() as u32)
                .min(8),
            n => n.min(64),
        }
    }

    /// How many runtime worker threads to run (`--worker-threads`, or automatic).
    ///
    /// Durable, one core is left to the storage threads (the loader reading a backlog back,
    /// the sync thread): on two cores, with both taken by workers, they preempted the broker
    /// and the connections at every wake-up, and a drain of a backlog from the disk was
    /// slower with two workers than with one (docs/benchmarks.md).
    pub fn worker_thread_count(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        worker_threads(self.worker_threads, self.durable, cores)
    }

    pub fn broadcast_address(&self) -> String {
        self.broadcast_address.clone().unwrap_or_else(hostname)
    }

    /// Checks nsqd makes at start (its error texts).
    /// The group's nodes from `--raft-peer` (id and address), in id order.
    pub fn raft_peers(&self) -> Result<Vec<(u64, String)>, String> {
        let mut peers = Vec::new();
        for p in self
            .raft_peer
            .iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
        {
            let (id, addr) = p
                .split_once('@')
                .ok_or_else(|| format!("--raft-peer {p:?} is not <node-id>@<host>:<port>"))?;
            let id: u64 = id
                .parse()
                .ok()
                .filter(|id| (1..1024).contains(id))
                .ok_or_else(|| format!("--raft-peer {p:?}: the node id must be [1,1024)"))?;
            if peers.iter().any(|(i, _)| *i == id) {
                return Err(format!("--raft-peer: node {id} is given twice"));
            }
            peers.push((id, addr.to_string()));
        }
        peers.sort();
        Ok(peers)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.replicas > 1 {
            let peers = self.raft_peers()?;
            let me = self.node_id.unwrap_or(0) as u64;
            if !(1..1024).contains(&me) {
                return Err("--replicas needs --node-id [1,1024)".into());
            }
            if self.raft_address.is_empty() {
                return Err("--replicas needs --raft-address".into());
            }
            let counted = self.raft_join || peers.len() == self.replicas as usize;
            if !counted || !peers.iter().any(|(i, _)| *i == me) {
                return Err(format!(
                    "--replicas={} needs a --raft-peer for each node, this one (node {me}) included",
                    self.replicas
                ));
            }
            if !self.durable {
                return Err("--replicas needs --durable=true".into());
            }
            if self.partitions > 1 {
                return Err("--replicas works with one partition (--partitions=1)".into());
            }
        }
        if let Some(id) = self.node_id {
            if !(0..1024).contains(&id) {
                return Err("--node-id must be [0,1024)".into());
            }
        }
        if !(1..=9).contains(&self.max_deflate_level) {
            return Err("--max-deflate-level must be [1,9]".into());
        }
        if self.auth_http_request_method != "post" && self.auth_http_request_method != "get" {
            return Err("--auth-http-request-method must be post or get".into());
        }
        for p in self
            .e2e_processing_latency_percentile
            .iter()
            .flat_map(|s| s.split(','))
        {
            match p.trim().parse::<f64>() {
                Ok(v) if v > 0.0 && v <= 1.0 => {}
                _ => return Err(format!("invalid E2E processing latency percentile: {p}")),
            }
        }
        Ok(())
    }

    /// The broadcast (TCP, HTTP) ports: nsqd's New() fills in one left at 0 with the port it
    /// bound (0 for a unix socket or no HTTP), in the options themselves.
    pub fn broadcast_ports(&self, bound: &super::Bound) -> (u16, u16) {
        let or_bound = |port: u16, bound: u16| if port != 0 { port } else { bound };
        (
            or_bound(self.broadcast_tcp_port, bound.tcp.port()),
            or_bound(self.broadcast_http_port, bound.http_port()),
        )
    }

    /// `--e2e-processing-latency-percentile`, all uses and comma lists, highest first (nsqd's
    /// FloatArray sorts them so).
    pub fn e2e_percentiles(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .e2e_processing_latency_percentile
            .iter()
            .flat_map(|s| s.split(','))
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        v.sort_by(|a, b| b.total_cmp(a));
        v
    }

    /// Every option `/config/:opt` can read, by nsqd's config name, in nsqd's order (strings
    /// raw, the rest as JSON; durations in nanoseconds).
    pub fn config_values(
        &self,
        bound: &super::Bound,
    ) -> Vec<(String, crate::nsqd::http::ConfigValue)> {
        use crate::nsqd::http::ConfigValue::{Json, Str};
        use serde_json::json;
        let ns = |d: Duration| json!(d.as_nanos() as u64);
        // nsqd's TLSRequired constants.
        let tls_required = match self.tls_required_mode() {
            TlsRequired::Yes => 2,
            TlsRequired::TcpHttps => 1,
            TlsRequired::No => 0,
        };
        let tls_min = match self.tls_min_version.as_str() {
            "ssl3.0" => 768,
            "tls1.1" => 770,
            "tls1.2" => 771,
            "tls1.3" => 772,
            _ => 769,
        };
        let percentiles: Vec<f64> = self.e2e_percentiles();
        let (tcp_port, http_port) = self.broadcast_ports(bound);
        vec![
            ("id".into(), Json(json!(self.node_id()))),
            ("log_prefix".into(), Str(self.log_prefix.clone())),
            ("tcp_address".into(), Str(self.tcp_address.clone())),
            ("http_address".into(), Str(self.http_address.clone())),
            ("https_address".into(), Str(self.https_address.clone())),
            ("broadcast_address".into(), Str(self.broadcast_address())),
            ("broadcast_tcp_port".into(), Json(json!(tcp_port))),
            ("broadcast_http_port".into(), Json(json!(http_port))),
            (
                "auth_http_addresses".into(),
                Json(json!(self.auth_http_address)),
            ),
            (
                "auth_http_request_method".into(),
                Str(self.auth_http_request_method.clone()),
            ),
            (
                "http_client_connect_timeout".into(),
                Json(ns(self.http_client_connect_timeout)),
            ),
            (
                "http_client_request_timeout".into(),
                Json(ns(self.http_client_request_timeout)),
            ),
            ("data_path".into(), Str(self.data_path.clone())),
            ("mem_queue_size".into(), Json(json!(self.mem_queue_size))),
            (
                "max_bytes_per_file".into(),
                Json(json!(self.max_bytes_per_file)),
            ),
            ("sync_every".into(), Json(json!(self.sync_every))),
            ("sync_timeout".into(), Json(ns(self.sync_timeout))),
            (
                "queue_scan_selection_count".into(),
                Json(json!(self.queue_scan_selection_count)),
            ),
            (
                "queue_scan_worker_pool_max".into(),
                Json(json!(self.queue_scan_worker_pool_max)),
            ),
            ("msg_timeout".into(), Json(ns(self.msg_timeout))),
            ("max_msg_timeout".into(), Json(ns(self.max_msg_timeout))),
            ("max_msg_size".into(), Json(json!(self.max_msg_size))),
            ("max_body_size".into(), Json(json!(self.max_body_size))),
            ("max_req_timeout".into(), Json(ns(self.max_req_timeout))),
            (
                "max_heartbeat_interval".into(),
                Json(ns(self.max_heartbeat_interval)),
            ),
            ("max_rdy_count".into(), Json(json!(self.max_rdy_count))),
            (
                "max_output_buffer_size".into(),
                Json(json!(self.max_output_buffer_size)),
            ),
            (
                "max_output_buffer_timeout".into(),
                Json(ns(self.max_output_buffer_timeout)),
            ),
            (
                "min_output_buffer_timeout".into(),
                Json(ns(self.min_output_buffer_timeout)),
            ),
            (
                "output_buffer_timeout".into(),
                Json(ns(self.output_buffer_timeout)),
            ),
            (
                "max_channel_consumers".into(),
                Json(json!(self.max_channel_consumers)),
            ),
            ("statsd_address".into(), Str(self.statsd_address.clone())),
            (
                "statsd_prefix".into(),
                Str(crate::nsqd::statsd::prefix(
                    &self.statsd_prefix,
                    &self.broadcast_address(),
                    http_port,
                )),
            ),
            ("statsd_interval".into(), Json(ns(self.statsd_interval))),
            (
                "statsd_mem_stats".into(),
                Json(json!(self.statsd_mem_stats)),
            ),
            (
                "statsd_udp_packet_size".into(),
                Json(json!(self.statsd_udp_packet_size)),
            ),
            (
                "statsd_exclude_ephemeral".into(),
                Json(json!(self.statsd_exclude_ephemeral)),
            ),
            (
                "e2e_processing_latency_window_time".into(),
                Json(ns(self.e2e_processing_latency_window_time)),
            ),
            (
                "e2e_processing_latency_percentiles".into(),
                Json(json!(percentiles)),
            ),
            ("tls_cert".into(), Str(self.tls_cert.clone())),
            ("tls_key".into(), Str(self.tls_key.clone())),
            (
                "tls_client_auth_policy".into(),
                Str(self.tls_client_auth_policy.clone()),
            ),
            (
                "tls_root_ca_file".into(),
                Str(self.tls_root_ca_file.clone()),
            ),
            ("tls_required".into(), Json(json!(tls_required))),
            ("tls_min_version".into(), Json(json!(tls_min))),
            ("deflate".into(), Json(json!(self.deflate))),
            (
                "max_deflate_level".into(),
                Json(json!(self.max_deflate_level)),
            ),
            ("snappy".into(), Json(json!(self.snappy))),
        ]
    }

    /// `--tls-required` as nsqd applies it: a client auth policy turns `false` into `true`
    /// (TCP and plain HTTP both then require TLS).
    pub fn tls_required_mode(&self) -> TlsRequired {
        match self.tls_required {
            TlsRequired::No if !self.tls_client_auth_policy.is_empty() => TlsRequired::Yes,
            m => m,
        }
    }

    /// The core's options.
    pub fn core_options(&self) -> nsqlab_core::Options {
        let ns = |d: Duration| d.as_nanos() as u64;
        nsqlab_core::Options {
            node_id: self.node_id(),
            mem_queue_size: self.mem_queue_size.max(0) as usize,
            msg_timeout: ns(self.msg_timeout),
            max_msg_timeout: ns(self.max_msg_timeout),
            max_msg_size: self.max_msg_size.max(0) as u64,
            max_body_size: self.max_body_size.max(0) as u64,
            max_req_timeout: ns(self.max_req_timeout),
            max_rdy_count: self.max_rdy_count,
            max_heartbeat_interval: ns(self.max_heartbeat_interval),
            max_output_buffer_size: self.max_output_buffer_size,
            max_output_buffer_timeout: ns(self.max_output_buffer_timeout),
            min_output_buffer_timeout: ns(self.min_output_buffer_timeout),
            output_buffer_timeout: ns(self.output_buffer_timeout),
            max_channel_consumers: self.max_channel_consumers.max(0) as usize,
            max_deflate_level: self.max_deflate_level as i32,
            deflate: self.deflate,
            snappy: self.snappy,
            // Set by the server once a certificate is loaded.
            tls_enabled: false,
            tls_required: self.tls_required_mode() != TlsRequired::No,
            auth_enabled: !self.auth_http_address.is_empty(),
            queue_scan_selection_count: self.queue_scan_selection_count.max(1) as usize,
            events: false,
            e2e_percentiles: self.e2e_percentiles(),
            e2e_window: ns(self.e2e_processing_latency_window_time),
            ..nsqlab_core::Options::default()
        }
    }
}

/// `--tls-required`: whether clients must use TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsRequired {
    /// `false`: TLS is optional.
    No,
    /// `tcp-https`: TCP clients must upgrade to TLS; plain HTTP is served as usual.
    TcpHttps,
    /// `true`: TCP clients must upgrade, and plain HTTP answers every request with nsqd's 403
    /// `TLS_REQUIRED`.
    Yes,
}

impl TlsRequired {
    /// The flag's spelling, as nsqd prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsRequired::No => "false",
            TlsRequired::TcpHttps => "tcp-https",
            TlsRequired::Yes => "true",
        }
    }
}

impl PartialEq<&str> for TlsRequired {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// `--tls-required` as nsqd's `tlsRequiredOption.Set` reads it: lowercased, `tcp-https` or a
/// Go boolean.
fn tls_required_arg(s: &str) -> Result<TlsRequired, String> {
    let s = s.to_ascii_lowercase();
    if s == "tcp-https" {
        return Ok(TlsRequired::TcpHttps);
    }
    crate::cli::go_bool(&s).map(|b| if b { TlsRequired::Yes } else { TlsRequired::No })
}

/// `--tls-min-version` as nsqd's `tlsMinVersionOption.Set` reads it: lowercased, one it knows.
fn tls_min_version_arg(s: &str) -> Result<String, String> {
    let s = s.to_ascii_lowercase();
    match s.as_str() {
        "" | "ssl3.0" | "tls1.0" | "tls1.1" | "tls1.2" | "tls1.3" => Ok(s),
        _ => Err(format!("unknown tlsVersionOption {s:?}")),
    }
}

/// nsqd's default node id for a hostname: `crc32.ChecksumIEEE(md5(hostname)) % 1024`.
pub fn default_node_id(hostname: &str) -> u16 {
    use md5::Digest;
    let digest = md5::Md5::digest(hostname.as_bytes());
    (crc32fast::hash(&digest) % 1024) as u16
}

/// nsqd's config-file name for a flag is its `cfg` tag, else the flag with `-` → `_`; these
/// are the ones that differ.
const CFG_RENAMES: &[(&str, &str)] = &[
    ("id", "node-id"),
    ("nsqlookupd_tcp_addresses", "lookupd-tcp-address"),
    ("auth_http_addresses", "auth-http-address"),
    (
        "e2e_processing_latency_percentiles",
        "e2e-processing-latency-percentile",
    ),
];

const DURATION_FLAGS: &[&str] = &[
    "inactive-producer-timeout",
    "tombstone-lifetime",
    "http-client-connect-timeout",
    "http-client-request-timeout",
    "sync-timeout",
    "msg-timeout",
    "max-msg-timeout",
    "max-req-timeout",
    "max-heartbeat-interval",
    "max-output-buffer-timeout",
    "min-output-buffer-timeout",
    "output-buffer-timeout",
    "statsd-interval",
    "e2e-processing-latency-window-time",
];

/// Flags that are not options nsqd reads from a config file (its `Options` has no field for
/// them).
const NOT_IN_CONFIG: &[&str] = &["config", "version", "verbose", "worker-id", "help"];

/// Repeatable flags whose config value may also be one comma-separated string (go-options'
/// `coerceStringSlice`).
const LIST_FLAGS: &[&str] = &["lookupd-tcp-address", "auth-http-address"];

/// Apply `--config <file>` (nsqd's TOML): its options become flags placed before the command
/// line's own, so a flag given on the command line wins (for repeatable flags, entirely).
/// As go-options resolves them: keys are nsqd's config names (unknown ones are ignored), an
/// integer duration is in milliseconds, and a list may be one comma-separated string.
/// `command` is the daemon's (nsqd's or nsqlookupd's): its options are the ones that exist.
pub fn with_config_file(args: Vec<String>, command: &clap::Command) -> Result<Vec<String>, String> {
    // Only what Go's flag package reads counts: up to the first argument that is not a flag.
    let read = crate::cli::go_flag_words(&args, &crate::cli::value_flags(command));
    let flags = &args[..read.min(args.len())];
    let mut path = None;
    for (i, a) in flags.iter().enumerate() {
        if let Some(p) = a.strip_prefix("--config=") {
            path = Some(p.to_string());
        } else if a == "--config" {
            path = flags.get(i + 1).cloned();
        }
    }
    // As nsqd's main: `--version` prints before any config is read, and an empty path reads
    // none. (The last `--version` counts, as on the command line.)
    let version = flags
        .iter()
        .rev()
        .find_map(|a| match a.as_str() {
            "--version" => Some(true),
            a => a
                .strip_prefix("--version=")
                .map(|v| crate::cli::go_bool(v).unwrap_or(false)),
        })
        .unwrap_or(false);
    let Some(path) = path.filter(|p| !p.is_empty() && !version) else {
        return Ok(args);
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "failed to load config file {path} - {}",
            crate::cli::go_read_error(&path, &e)
        )
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("failed to load config file {path} - {e}"))?;
    let given = |flag: &str| {
        let long = format!("--{flag}");
        flags
            .iter()
            .any(|a| a == &long || a.starts_with(&format!("{long}=")))
    };
    let known: Vec<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    let mut pre = Vec::new();
    for (key, value) in &table {
        let flag = match CFG_RENAMES.iter().find(|(k, _)| k == key) {
            Some((_, f)) => f.to_string(),
            None => {
                let f = key.replace('_', "-");
                // A renamed option is read only under its config name (`id`, not `node_id`).
                if CFG_RENAMES.iter().any(|(_, renamed)| *renamed == f) {
                    continue;
                }
                f
            }
        };
        if NOT_IN_CONFIG.contains(&flag.as_str()) || !known.contains(&flag) {
            continue;
        }
        if given(&flag) {
            continue;
        }
        let one = |v: &toml::Value| -> Result<String, String> {
            Ok(match v {
                toml::Value::String(s) => s.clone(),
                // go-options' coerceDuration: "treat like ms".
                toml::Value::Integer(i) if DURATION_FLAGS.contains(&flag.as_str()) => {
                    format!("{i}ms")
                }
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "failed to load config file {path} - bad value for {key}: {other}"
                    ))
                }
            })
        };
        match value {
            toml::Value::Array(items) => {
                for v in items {
                    pre.push(format!("--{flag}={}", one(v)?));
                }
            }
            toml::Value::String(s) if LIST_FLAGS.contains(&flag.as_str()) => {
                for part in s.split(',') {
                    pre.push(format!("--{flag}={part}"));
                }
            }
            v => pre.push(format!("--{flag}={}", one(v)?)),
        }
    }
    let mut out = Vec::with_capacity(args.len() + pre.len());
    let mut it = args.into_iter();
    if let Some(prog) = it.next() {
        out.push(prog);
    }
    out.extend(pre);
    out.extend(it);
    Ok(out)
}

/// `--worker-threads` as given, or else (0) one per core, less one when `durable` and
/// there are two or more.
fn worker_threads(flag: u32, durable: bool, cores: usize) -> usize {
    match flag {
        0 if durable && cores >= 2 => cores - 1,
        0 => cores.max(1),
        n => (n as usize).min(1024),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The values of nsqd's flags start with a dash when Go's would: after a flag that takes
    /// one, the next word; not after a boolean.
    #[test]
    fn a_value_may_start_with_a_dash() {
        use clap::CommandFactory;
        let flags = crate::cli::value_flags(&NsqdArgs::command());
        assert!(flags.contains(&"log-prefix".to_string()));
        assert!(!flags.contains(&"snappy".to_string()), "a boolean");
        let argv = std::iter::once("nsqd".to_string()).chain(crate::cli::normalize(
            ["-log-prefix", "-x-", "-snappy", "-mem-queue-size", "7"].map(String::from),
            &flags,
        ));
        let a: NsqdArgs = crate::cli::parse(argv);
        assert_eq!(a.log_prefix, "-x-");
        assert_eq!(a.mem_queue_size, 7);
    }

    /// Go stops at the first argument that is not a flag; ints are rewritten for clap.
    #[test]
    fn go_stops_at_the_first_non_flag() {
        use clap::CommandFactory;
        let cmd = NsqdArgs::command();
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            crate::cli::go_args(
                &cmd,
                argv(&[
                    "nsqd",
                    "--mem-queue-size",
                    "0x10",
                    "--snappy",
                    "stray",
                    "--bad"
                ])
            ),
            Ok(argv(&["nsqd", "--mem-queue-size=16", "--snappy"]))
        );
        assert_eq!(
            crate::cli::go_args(&cmd, argv(&["nsqd", "--max-rdy-count=1_0", "--", "--x"])),
            Ok(argv(&["nsqd", "--max-rdy-count=10"]))
        );
        assert_eq!(
            crate::cli::go_args(&cmd, argv(&["nsqd", "--sync-every=12z"])),
            Err(r#"invalid value "12z" for flag -sync-every: parse error"#.to_string())
        );
        assert_eq!(
            crate::cli::go_args(&cmd, argv(&["nsqd", "--sync-every"])),
            Err("flag needs an argument: -sync-every".to_string())
        );
        // The first unknown flag is the error, before any later value's.
        assert_eq!(
            crate::cli::go_args(&cmd, argv(&["nsqd", "--bogus", "--mem-queue-size=0xZ"])),
            Err("flag provided but not defined: -bogus".to_string())
        );
    }

    #[test]
    fn default_node_id_as_nsqd() {
        // md5("localhost") = 421aa90e079fa326b6494f812ad13e79; crc32 (IEEE) of those 16 bytes
        // is computed independently here with the bitwise algorithm.
        let digest: [u8; 16] = [
            0x42, 0x1a, 0xa9, 0x0e, 0x07, 0x9f, 0xa3, 0x26, 0xb6, 0x49, 0x4f, 0x81, 0x2a, 0xd1,
            0x3e, 0x79,
        ];
        let mut crc: u32 = !0;
        for b in digest {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        assert_eq!(default_node_id("localhost") as u32, !crc % 1024);
    }

    /// nsqd's arguments from `--config <a file holding cfg>` followed by `flags`.
    fn parse_with_config(name: &str, cfg: &str, flags: &[&str]) -> NsqdArgs {
        let dir = crate::common::test_dir(name);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("nsqd.cfg");
        std::fs::write(&f, cfg).unwrap();
        let argv: Vec<String> = ["nsqd", "--config", f.to_str().unwrap()]
            .iter()
            .chain(flags)
            .map(|s| s.to_string())
            .collect();
        let a: NsqdArgs = crate::cli::parse(
            with_config_file(argv, &<NsqdArgs as clap::CommandFactory>::command()).unwrap(),
        );
        std::fs::remove_dir_all(&dir).ok();
        a
    }

    /// Go's flag package stops at the first argument that is not a flag: what follows neither
    /// sets an option nor keeps the config file from setting it.
    #[test]
    fn flags_after_a_stray_argument_do_not_count() {
        let a = parse_with_config(
            "cfg3",
            "max_rdy_count = 10\n",
            &["--mem-queue-size", "7", "stray", "--max-rdy-count=20"],
        );
        assert_eq!((a.mem_queue_size, a.max_rdy_count), (7, 10));
    }

    #[test]
    fn config_file_then_flags_win() {
        let a = parse_with_config(
            "cfg",
            "mem_queue_size = 5\nmsg_timeout = \"10s\"\nnsqlookupd_tcp_addresses = [\"a:1\", \"b:2\"]\nsnappy = false\nid = 7\nmax_rdy_count = 10\n",
            &["--max-rdy-count=20"],
        );
        assert_eq!(a.mem_queue_size, 5);
        assert_eq!(a.msg_timeout, Duration::from_secs(10));
        assert_eq!(a.lookupd_tcp_address, vec!["a:1", "b:2"]);
        assert!(!a.snappy);
        assert_eq!(a.node_id, Some(7));
        assert_eq!(a.max_rdy_count, 20, "the command line wins");
    }

    /// go-options' rules: unknown keys (and names nsqd reads only as flags) are ignored, an
    /// integer duration is milliseconds, a list may be one comma-separated string.
    #[test]
    fn config_file_as_go_options_reads_it() {
        let a = parse_with_config(
            "cfg2",
            "msg_timeout = 60000\nnsqlookupd_tcp_addresses = \"a:1,b:2\"\nno_such_option = 1\nnode_id = 9\nworker_id = 3\nverbose = true\n",
            &[],
        );
        assert_eq!(a.msg_timeout, Duration::from_secs(60));
        assert_eq!(a.lookupd_tcp_address, vec!["a:1", "b:2"]);
        assert_eq!(a.node_id, None, "nsqd's config name is `id`");
        assert_eq!((a.worker_id, a.verbose), (None, None));
    }

    /// Go's flag package: booleans as `strconv.ParseBool` reads them, `--worker-id` a
    /// deprecated boolean, values that start with `-`, and nsqd's own parsing of
    /// `--tls-required` and `--tls-min-version`.
    #[test]
    fn flag_values_as_go_reads_them() {
        let parse = |args: &[&str]| {
            NsqdArgs::try_parse_from(std::iter::once("nsqd").chain(args.iter().copied()))
        };
        let a = parse(&[
            "--snappy=0",
            "--deflate=F",
            "--worker-id",
            "--max-rdy-count",
            "-1",
        ])
        .unwrap();
        assert!(!a.snappy && !a.deflate);
        assert_eq!(a.worker_id, Some(true));
        assert_eq!(a.max_rdy_count, -1);
        assert_eq!(a.node_id, None);
        assert!(parse(&["--snappy=yes"]).is_err());
        assert!(parse(&["--worker-id=5"]).is_err(), "a boolean in nsqd");
        let a = parse(&["--tls-required=TRUE", "--tls-min-version=TLS1.3"]).unwrap();
        assert_eq!(
            (a.tls_required.as_str(), a.tls_min_version.as_str()),
            ("true", "tls1.3")
        );
        assert_eq!(parse(&["--tls-required=0"]).unwrap().tls_required, "false");
        assert_eq!(
            parse(&["--tls-required=TCP-HTTPS"]).unwrap().tls_required,
            "tcp-https"
        );
        assert!(parse(&["--tls-required=bogus"]).is_err());
        assert!(parse(&["--tls-min-version=tls9"]).is_err());
        let bad = parse(&["--auth-http-request-method=POST"]).unwrap();
        assert_eq!(
            bad.validate().unwrap_err(),
            "--auth-http-request-method must be post or get"
        );
    }

    #[test]
    fn worker_threads_leave_a_core_to_storage_when_durable() {
        assert_eq!(worker_threads(0, true, 2), 1);
        assert_eq!(worker_threads(0, true, 8), 7);
        assert_eq!(worker_threads(0, true, 1), 1);
        assert_eq!(worker_threads(0, false, 2), 2);
        assert_eq!(worker_threads(0, false, 1), 1);
        assert_eq!(worker_threads(3, true, 2), 3);
        let args = NsqdArgs::try_parse_from(["nsqd", "--worker-threads=2"]).unwrap();
        assert_eq!(args.worker_thread_count(), 2);
    }
}
