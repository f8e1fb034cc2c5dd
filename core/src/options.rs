//! The subset of nsqd's options that shape broker behaviour, with nsqd v1.3's defaults.
//!
//! Names follow nsqd's flags (`--msg-timeout` is [`Options::msg_timeout`], and so on); all
//! durations are nanoseconds. The server maps its command line onto this struct.

use crate::time::{ms, Nanos, SECOND};
use serde::{Deserialize, Serialize};

/// How the broker finds deferred messages that are due and in-flight messages that timed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimerStrategy {
    /// Every timer fires exactly at its deadline (the default, and the point of nsqlab).
    #[default]
    Exact,
    /// nsqd's `queueScanLoop`, for teaching: every 100 ms a random sample of up to
    /// `queue_scan_selection_count` channels is scanned (and again at once while more than 25%
    /// of the sample was dirty); the channel list is refreshed every 5 s.
    ScanLoop,
}

/// Broker options (nsqd's names and defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    /// `--node-id`: 10-bit node id mixed into message IDs.
    pub node_id: u16,
    /// `--mem-queue-size`: messages kept in memory per topic and per channel before the backend.
    pub mem_queue_size: usize,
    /// `--msg-timeout`: default time a message may stay in flight.
    pub msg_timeout: Nanos,
    /// `--max-msg-timeout`: upper bound for a client's `msg_timeout` and for TOUCH.
    pub max_msg_timeout: Nanos,
    /// `--max-msg-size`: largest single message body.
    pub max_msg_size: u64,
    /// `--max-body-size`: largest MPUB, IDENTIFY or AUTH body.
    pub max_body_size: u64,
    /// `--max-req-timeout`: upper bound of REQ delay and DPUB defer.
    pub max_req_timeout: Nanos,
    /// `--max-rdy-count`: upper bound of RDY.
    pub max_rdy_count: i64,
    /// `--client-timeout`: the default heartbeat interval is half of it.
    pub client_timeout: Nanos,
    /// `--max-heartbeat-interval`.
    pub max_heartbeat_interval: Nanos,
    /// `--max-output-buffer-size`.
    pub max_output_buffer_size: i64,
    /// `--max-output-buffer-timeout`.
    pub max_output_buffer_timeout: Nanos,
    /// `--min-output-buffer-timeout`.
    pub min_output_buffer_timeout: Nanos,
    /// `--output-buffer-timeout` (default for clients that do not say).
    pub output_buffer_timeout: Nanos,
    /// `--max-channel-consumers`: 0 means unlimited.
    pub max_channel_consumers: usize,
    /// `--max-deflate-level`.
    pub max_deflate_level: i32,
    /// `--deflate`: whether clients may negotiate deflate.
    pub deflate: bool,
    /// `--snappy`: whether clients may negotiate snappy.
    pub snappy: bool,
    /// Whether TLS is configured, so clients may negotiate `tls_v1`.
    pub tls_enabled: bool,
    /// `--tls-required`: every command but IDENTIFY needs TLS first.
    pub tls_required: bool,
    /// Whether `--auth-http-address` is set.
    pub auth_enabled: bool,
    /// `--topology-region`.
    pub topology_region: String,
    /// `--topology-zone`.
    pub topology_zone: String,
    /// The version string reported in IDENTIFY replies.
    pub version: String,
    /// How timers are found (exact by default).
    pub timer_strategy: TimerStrategy,
    /// `--queue-scan-selection-count` (only for [`TimerStrategy::ScanLoop`]).
    pub queue_scan_selection_count: usize,
    /// Emit [`crate::Event`]s (the visualiser and live stream want them; benchmarks may not).
    pub events: bool,
    /// Record heap operations (push, swaps, pop) for animation.
    pub heap_trace: bool,
    /// Describe every durable change as a [`crate::StoreOp`] and hold publishers' `OK` until
    /// the host reports it stored (see [`crate::store`]).
    pub durable: bool,
    /// With `durable`: the bodies of deferred messages, and of messages past `mem_queue_size`
    /// in a queue (nsqd's disk backend), leave memory (the store has them); the broker asks for
    /// one back with a [`crate::store::LoadRun`] just before it is sent.
    pub evict_bodies: bool,
    /// Report topics and channels as they come and go ([`crate::Output::Registry`]), for
    /// nsqlookupd registration.
    pub registry: bool,
    /// `--e2e-processing-latency-percentile`, highest first (none: not tracked).
    pub e2e_percentiles: Vec<f64>,
    /// `--e2e-processing-latency-window-time`.
    pub e2e_window: Nanos,
    /// This broker is partition `partition` of `partitions` (see [`crate::partition`]); it
    /// owns the topics that [`crate::partition_of`] gives it. One partition owns everything.
    pub partition: u32,
    pub partitions: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            node_id: 0,
            mem_queue_size: 10_000,
            msg_timeout: 60 * SECOND,
            max_msg_timeout: 15 * 60 * SECOND,
            max_msg_size: 1024 * 1024,
            max_body_size: 5 * 1024 * 1024,
            max_req_timeout: 60 * 60 * SECOND,
            max_rdy_count: 2500,
            client_timeout: 60 * SECOND,
            max_heartbeat_interval: 60 * SECOND,
            max_output_buffer_size: 64 * 1024,
            max_output_buffer_timeout: 30 * SECOND,
            min_output_buffer_timeout: ms(25),
            output_buffer_timeout: ms(250),
            max_channel_consumers: 0,
            max_deflate_level: 6,
            deflate: true,
            snappy: true,
            tls_enabled: false,
            tls_required: false,
            auth_enabled: false,
            topology_region: String::new(),
            topology_zone: String::new(),
            version: crate::VERSION.to_string(),
            timer_strategy: TimerStrategy::Exact,
            queue_scan_selection_count: 20,
            events: true,
            heap_trace: false,
            durable: false,
            evict_bodies: false,
            registry: false,
            e2e_percentiles: Vec::new(),
            e2e_window: 600 * SECOND,
            partition: 0,
            partitions: 1,
        }
    }
}

/// Limits the stateless decoder needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_msg_size: u64,
    pub max_body_size: u64,
}

impl Options {
    pub fn limits(&self) -> Limits {
        Limits {
            max_msg_size: self.max_msg_size,
            max_body_size: self.max_body_size,
        }
    }

    /// The default heartbeat interval (half the client timeout).
    pub fn default_heartbeat_interval(&self) -> Nanos {
        self.client_timeout / 2
    }
}
