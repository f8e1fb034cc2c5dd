//! `/stats`: JSON as nsqd's, and its text form; memory statistics.

use super::AppState;
use super::ServerInfo;
use crate::http::query::{bool_param, first, query};
use crate::http::response::{json, ok_text, ApiErr, ApiResult};
use axum::extract::{RawQuery, State};
use nsqlab_core::stats::{ChannelStats, ClientStats, TopicStats};
use nsqlab_core::StatsFilter;
use serde::Serialize;

/// Memory figures in nsqd's shape (Go's `runtime.MemStats`). nsqlab has no garbage collector,
/// so the GC fields are zero. With glibc the heap fields come from its allocator
/// (`mallinfo2`): in use = bytes allocated (in arenas and mmapped), idle = free bytes the
/// allocator holds; released and heap_objects are not tracked (0). Elsewhere in use is the
/// resident size.
#[derive(Serialize)]
pub(super) struct MemStats {
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
pub(super) fn heap_bytes() -> Option<(u64, u64)> {
    // SAFETY: mallinfo2 only reads the allocator's own statistics (under its locks); it has
    // no preconditions.
    let m = unsafe { libc::mallinfo2() };
    Some(((m.uordblks + m.hblkhd) as u64, m.fordblks as u64))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(super) fn heap_bytes() -> Option<(u64, u64)> {
    None
}

pub(super) fn mem_stats() -> MemStats {
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

pub(super) async fn stats(
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
    body: axum::body::Body,
) -> ApiResult {
    let q = query(&raw)?;
    // (nsqd reads its body, as it parses its parameters.)
    crate::http::body::read_away(body).await;
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
    let (st, health) = s.driver.stats(filter).await.ok_or(ApiErr::Exiting)?;
    // nsqlab: a replicated node says how its group stands (nothing otherwise: nsqd's bytes).
    let replication = super::raft::replication(&s).await;
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
            #[serde(skip_serializing_if = "Option::is_none")]
            replication: Option<super::raft::Status>,
        }
        return Ok(json(&Out {
            version: &s.info.version,
            health: &health,
            start_time: s.info.start_time,
            topics: &st.topics,
            memory: mem,
            producers: &st.producers,
            replication,
        }));
    }
    let mut text = stats_text(&s.info, &st, mem.as_ref(), &health);
    if let Some(r) = replication {
        use std::fmt::Write;
        let _ = writeln!(
            text,
            "\nReplication: node {} {} term {} leader {} voters {:?} commit {} applied {}{}",
            r.id,
            r.role,
            r.term,
            r.leader,
            r.voters,
            r.commit,
            r.applied,
            if r.catching_up { " (catching up)" } else { "" }
        );
        for p in &r.peers {
            let _ = writeln!(
                text,
                "   node {}: matched {} lag {}",
                p.id, p.matched, p.lag
            );
        }
    }
    Ok(ok_text(text))
}

/// nsqd's `printStats`.
pub(super) fn stats_text(
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

pub(super) fn channel_line(w: &mut String, c: &ChannelStats) {
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
pub(super) fn client_line(c: &ClientStats) -> String {
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
pub(super) fn rfc3339(unix: i64) -> String {
    let at = crate::logging::utc(unix.max(0) as u64 * 1_000_000_000);
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Go's `time.Since(start)` printed with `%s`, e.g. `1m5.123456789s`.
pub(super) fn uptime(since_ns: u64) -> String {
    nsqlab_core::time::go_duration(crate::clock::now().saturating_sub(since_ns))
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

    /// `/stats?format=text`: nsqd's layout, from a broker with a topic, a paused channel and
    /// a consumer.
    #[test]
    fn the_text_form_lays_out_topics_channels_and_clients_as_nsqd() {
        use nsqlab_core::{Broker, Options, StatsFilter};
        let opts = Options::default();
        let mut b = Broker::new(opts.clone(), 1, 0);
        let c = b.connect(0, "127.0.0.1:50001");
        b.handle_bytes(1, c, b"  V2SUB orders billing\nRDY 0\n");
        b.publish(
            2,
            "orders",
            vec![b"one".to_vec().into(), b"two".to_vec().into()],
            None,
        )
        .unwrap();
        b.pause_channel(3, "orders", "billing", true).unwrap();
        let filter = StatsFilter {
            include_clients: true,
            ..StatsFilter::default()
        };
        let st = b.stats(&filter);
        let info = super::super::ServerInfo {
            version: "1.3.0".into(),
            broadcast_address: "h".into(),
            hostname: "h".into(),
            http_port: 4151,
            tcp_port: 4150,
            start_time: 1_582_981_445,
            start_ns: crate::clock::now(),
            max_heartbeat_interval: 0,
            max_output_buffer_size: 0,
            max_output_buffer_timeout: 0,
            max_deflate_level: 6,
            limits: opts.limits(),
            max_req_timeout: 0,
            www_dir: None,
            config: Vec::new(),
        };
        let text = super::stats_text(&info, &st, None, "OK");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            format!("nsqd v1.3.0 (built w/nsqlab-{})", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(lines[1], "start_time 2020-02-29T13:04:05Z");
        assert!(lines[2].starts_with("uptime "), "{}", lines[2]);
        assert_eq!(&lines[3..6], ["", "Health: OK", ""]);
        assert_eq!(lines[6], "Topics:");
        assert_eq!(
            lines[7],
            "   [orders         ] depth: 0     be-depth: 0     msgs: 2        e2e%: "
        );
        assert_eq!(
            lines[8],
            "   *P [billing                  ] depth: 2     be-depth: 0     inflt: 0    \
             def: 0    re-q: 0     timeout: 0     msgs: 2        e2e%: "
        );
        assert!(
            lines[9].starts_with("        [V2 127.0.0.1:50001      ] state: 3 inflt: 0    rdy: 0    fin: 0        re-q: 0        msgs: 0        connected: "),
            "{}",
            lines[9]
        );
        assert_eq!(&lines[10..], ["", "Producers: None"]);
    }
}
