//! statsd push, as nsqd's `statsd.go`: every `--statsd-interval`, counters (the change since
//! the last push) and gauges per topic and channel, as `<prefix><stat>:<value>|c` or `|g`
//! lines, packed whole into UDP packets of at most `--statsd-udp-packet-size` bytes.

use super::driver::DriverHandle;
use nsqlab_core::stats::TopicStats;
use nsqlab_core::StatsFilter;
use std::collections::HashMap;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::watch;

/// nsqd's prefix rewrite: `%s` becomes `host_port` (with `.` and `:` as `_`), and the prefix
/// ends in a dot.
pub fn prefix(template: &str, broadcast_address: &str, http_port: u16) -> String {
    if template.is_empty() {
        return String::new();
    }
    let host_key = format!("{broadcast_address}:{http_port}").replace(['.', ':'], "_");
    let mut p = template.replace("%s", &host_key);
    if !p.ends_with('.') {
        p.push('.');
    }
    p
}

/// The lines for one push; `last` holds the counters of the previous push.
pub fn lines(
    topics: &[TopicStats],
    last: &mut HashMap<String, u64>,
    prefix: &str,
    exclude_ephemeral: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut incr = |out: &mut Vec<String>, stat: String, now: u64| {
        let before = last.insert(stat.clone(), now).unwrap_or(0);
        out.push(format!("{prefix}{stat}:{}|c", now as i64 - before as i64));
    };
    let gauge =
        |out: &mut Vec<String>, stat: String, v: u64| out.push(format!("{prefix}{stat}:{v}|g"));
    for t in topics {
        let tn = &t.topic_name;
        if exclude_ephemeral && tn.ends_with("#ephemeral") {
            continue;
        }
        incr(
            &mut out,
            format!("topic.{tn}.message_count"),
            t.message_count,
        );
        incr(
            &mut out,
            format!("topic.{tn}.message_bytes"),
            t.message_bytes,
        );
        gauge(&mut out, format!("topic.{tn}.depth"), t.depth);
        gauge(
            &mut out,
            format!("topic.{tn}.backend_depth"),
            t.backend_depth,
        );
        for p in t.e2e_processing_latency.percentiles.iter().flatten() {
            let q = format!("{:.0}", p.quantile * 100.0);
            gauge(
                &mut out,
                format!("topic.{tn}.e2e_processing_latency_{q}"),
                p.value,
            );
        }
        for c in &t.channels {
            let cn = &c.channel_name;
            if exclude_ephemeral && cn.ends_with("#ephemeral") {
                continue;
            }
            let base = format!("topic.{tn}.channel.{cn}");
            incr(&mut out, format!("{base}.message_count"), c.message_count);
            gauge(&mut out, format!("{base}.depth"), c.depth);
            gauge(&mut out, format!("{base}.backend_depth"), c.backend_depth);
            gauge(
                &mut out,
                format!("{base}.in_flight_count"),
                c.in_flight_count,
            );
            gauge(&mut out, format!("{base}.deferred_count"), c.deferred_count);
            incr(&mut out, format!("{base}.requeue_count"), c.requeue_count);
            incr(&mut out, format!("{base}.timeout_count"), c.timeout_count);
            gauge(&mut out, format!("{base}.clients"), c.client_count);
            for p in c.e2e_processing_latency.percentiles.iter().flatten() {
                let q = format!("{:.0}", p.quantile * 100.0);
                gauge(
                    &mut out,
                    format!("{base}.e2e_processing_latency_{q}"),
                    p.value,
                );
            }
        }
    }
    out
}

/// Pack lines into packets of at most `size` bytes, never splitting a line.
pub fn packets(lines: &[String], size: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut cur = Vec::new();
    for l in lines {
        if !cur.is_empty() && cur.len() + l.len() + 1 > size {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend_from_slice(l.as_bytes());
        cur.push(b'\n');
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct StatsdConfig {
    pub address: String,
    pub prefix: String,
    pub interval: Duration,
    pub packet_size: usize,
    pub mem_stats: bool,
    pub exclude_ephemeral: bool,
}

/// Push until `shutdown` flips.
pub async fn run(driver: DriverHandle, cfg: StatsdConfig, mut shutdown: watch::Receiver<bool>) {
    let StatsdConfig {
        address,
        prefix,
        interval,
        packet_size,
        mem_stats,
        exclude_ephemeral,
    } = cfg;
    let mut last = HashMap::new();
    let mut tick = tokio::time::interval(interval.max(Duration::from_millis(10)));
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let Some((stats, _)) = driver.stats(StatsFilter::default()).await else {
            return;
        };
        let mut ls = lines(
            stats.topics.as_deref().unwrap_or_default(),
            &mut last,
            &prefix,
            exclude_ephemeral,
        );
        if mem_stats {
            let rss = super::http::resident_bytes();
            ls.push(format!("{prefix}mem.heap_in_use_bytes:{rss}|g"));
        }
        let sock = match UdpSocket::bind("0.0.0.0:0").await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("failed to create UDP socket to statsd({address}) - {e}");
                continue;
            }
        };
        if let Err(e) = sock.connect(&address).await {
            tracing::error!("failed to create UDP socket to statsd({address}) - {e}");
            continue;
        }
        tracing::debug!("STATSD: pushing stats to {address}");
        for p in packets(&ls, packet_size.max(64)) {
            let _ = sock.send(&p).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_as_nsqd() {
        assert_eq!(prefix("nsq.%s", "my.host", 4151), "nsq.my_host_4151.");
        assert_eq!(prefix("app.", "h", 1), "app.");
        assert_eq!(prefix("", "h", 1), "");
    }

    #[test]
    fn packets_keep_lines_whole() {
        let ls: Vec<String> = (0..50)
            .map(|i| format!("nsq.x.topic.t{i}.depth:{i}|g"))
            .collect();
        let ps = packets(&ls, 100);
        assert!(ps.iter().all(|p| p.len() <= 100 && p.ends_with(b"\n")));
        let joined: Vec<u8> = ps.concat();
        assert_eq!(String::from_utf8(joined).unwrap().lines().count(), 50);
    }
}
