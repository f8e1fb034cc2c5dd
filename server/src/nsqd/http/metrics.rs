//! `/metrics`: the same statistics for Prometheus.

use super::stats::resident_bytes;
use super::AppState;
use crate::http::response::{ApiErr, ApiResult};
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use nsqlab_core::stats::{ChannelStats, TopicStats};
use nsqlab_core::StatsFilter;

/// A Prometheus label value, escaped.
pub(super) fn prom_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus text exposition of the broker's stats (nsqlab's extra; nsqd has none).
pub(super) async fn metrics(State(s): State<AppState>) -> ApiResult {
    use std::fmt::Write;
    let (st, _) = s
        .driver
        .stats(StatsFilter::default())
        .await
        .ok_or(ApiErr::Exiting)?;
    let topics = st.topics.unwrap_or_default();
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, u64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    };
    let t = |t: &TopicStats| format!("topic=\"{}\"", prom_label(&t.topic_name));
    let c = |t: &TopicStats, c: &ChannelStats| {
        format!(
            "topic=\"{}\",channel=\"{}\"",
            prom_label(&t.topic_name),
            prom_label(&c.channel_name)
        )
    };
    family(
        "nsq_topic_depth",
        "gauge",
        "Messages held by the topic (memory and backend).",
        topics.iter().map(|x| (t(x), x.depth)).collect(),
    );
    family(
        "nsq_topic_messages_total",
        "counter",
        "Messages published to the topic.",
        topics.iter().map(|x| (t(x), x.message_count)).collect(),
    );
    family(
        "nsq_topic_message_bytes_total",
        "counter",
        "Bytes published to the topic.",
        topics.iter().map(|x| (t(x), x.message_bytes)).collect(),
    );
    family(
        "nsq_topic_paused",
        "gauge",
        "1 when the topic is paused.",
        topics.iter().map(|x| (t(x), x.paused as u64)).collect(),
    );
    let chans: Vec<(&TopicStats, &ChannelStats)> = topics
        .iter()
        .flat_map(|x| x.channels.iter().map(move |ch| (x, ch)))
        .collect();
    for (name, kind, help, get) in [
        (
            "nsq_channel_depth",
            "gauge",
            "Messages ready to send (memory and backend).",
            (|c: &ChannelStats| c.depth) as fn(&ChannelStats) -> u64,
        ),
        (
            "nsq_channel_backend_depth",
            "gauge",
            "Messages ready to send in the backend.",
            |c| c.backend_depth,
        ),
        (
            "nsq_channel_in_flight",
            "gauge",
            "Messages sent and not yet finished.",
            |c| c.in_flight_count,
        ),
        (
            "nsq_channel_deferred",
            "gauge",
            "Messages waiting for their due time.",
            |c| c.deferred_count,
        ),
        (
            "nsq_channel_messages_total",
            "counter",
            "Messages that entered the channel.",
            |c| c.message_count,
        ),
        (
            "nsq_channel_requeued_total",
            "counter",
            "Messages requeued by consumers (REQ).",
            |c| c.requeue_count,
        ),
        (
            "nsq_channel_timed_out_total",
            "counter",
            "In-flight messages that timed out.",
            |c| c.timeout_count,
        ),
        (
            "nsq_channel_clients",
            "gauge",
            "Consumers subscribed to the channel.",
            |c| c.client_count,
        ),
        (
            "nsq_channel_paused",
            "gauge",
            "1 when the channel is paused.",
            |c| c.paused as u64,
        ),
    ] {
        family(
            name,
            kind,
            help,
            chans.iter().map(|(x, ch)| (c(x, ch), get(ch))).collect(),
        );
    }
    if let Some(r) = super::raft::replication(&s).await {
        for (name, help, v) in [
            ("nsqlab_raft_term", "The node's raft term.", r.term),
            (
                "nsqlab_raft_leader",
                "The node that leads (0: none known).",
                r.leader,
            ),
            (
                "nsqlab_raft_serving",
                "1 when this node leads and serves clients.",
                r.serving as u64,
            ),
            (
                "nsqlab_raft_catching_up",
                "1 while this node, started with nothing on its disk, has not caught up with a leader.",
                r.catching_up as u64,
            ),
            (
                "nsqlab_raft_voters",
                "Voters in the group.",
                r.voters.len() as u64,
            ),
            (
                "nsqlab_raft_commit_index",
                "The last committed log index.",
                r.commit,
            ),
            (
                "nsqlab_raft_applied_index",
                "The last applied log index.",
                r.applied,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let _ = writeln!(out, "# HELP nsqlab_raft_replica_lag Entries a voter's log is behind the commit index (on the leader).\n# TYPE nsqlab_raft_replica_lag gauge");
        for p in &r.peers {
            let _ = writeln!(
                out,
                "nsqlab_raft_replica_lag{{node=\"{}\"}} {}",
                p.id, p.lag
            );
        }
    }
    let _ = writeln!(out, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}", resident_bytes());
    let mut r = Response::new(axum::body::Body::from(out));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(r)
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_are_escaped_for_prometheus() {
        assert_eq!(super::prom_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(super::prom_label("two\nlines"), "two\\nlines");
        assert_eq!(super::prom_label("plain#ephemeral"), "plain#ephemeral");
    }
}
