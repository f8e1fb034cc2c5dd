//! `nsqlab stat` (and `nsq_stat`): poll `/stats` of every nsqd that has a topic and print a
//! channel's aggregate numbers, as nsq_stat.
//!
//! # Format
//! Every 25 reports the two header lines, then one line per `--interval`:
//! `"%7d %7d | %7d %7d %7d %5d %5d | %7d %7d %12d %7d"` — ingress and egress per second,
//! depth (total, memory, disk), in flight, deferred, requeued, timed out, messages, clients.

use crate::client::{http_get_json, join_host_port, urlencode};
use clap::{ArgAction, Parser};
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(name = "nsq_stat", disable_version_flag = true)]
pub struct StatArgs {
    /// NSQ channel
    #[arg(long, default_value = "")]
    pub channel: String,
    /// number of reports
    #[arg(long)]
    pub count: Option<i32>,
    /// timeout for HTTP connect
    #[arg(long, default_value = "2s", value_parser = crate::cli::duration_arg)]
    pub http_client_connect_timeout: Duration,
    /// timeout for HTTP request
    #[arg(long, default_value = "5s", value_parser = crate::cli::duration_arg)]
    pub http_client_request_timeout: Duration,
    /// duration of time between polling/printing output
    #[arg(long, default_value = "2s", value_parser = crate::cli::duration_arg)]
    pub interval: Duration,
    /// lookupd HTTP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub lookupd_http_address: Vec<String>,
    /// nsqd HTTP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub nsqd_http_address: Vec<String>,
    /// NSQ topic
    #[arg(long, default_value = "")]
    pub topic: String,
    /// print version
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub version: bool,
}

/// A channel's numbers, summed over nodes.
#[derive(Debug, Default, Clone, Copy)]
struct ChannelStats {
    depth: i64,
    backend_depth: i64,
    in_flight: i64,
    deferred: i64,
    requeue: i64,
    timeout: i64,
    messages: i64,
    clients: i64,
}

pub fn main(args: Vec<String>) {
    let a = crate::cli::parse_command_line::<StatArgs>(args);
    if a.version {
        println!("nsq_stat v{}", nsqlab_core::VERSION);
        return;
    }
    if a.topic.is_empty() || a.channel.is_empty() {
        super::fatal("--topic and --channel are required");
    }
    if a.interval.is_zero() {
        super::fatal("--interval should be positive");
    }
    if a.http_client_connect_timeout.is_zero() {
        super::fatal("--http-client-connect-timeout should be positive");
    }
    if a.http_client_request_timeout.is_zero() {
        super::fatal("--http-client-request-timeout should be positive");
    }
    if a.count.is_some_and(|c| c <= 0) {
        super::fatal("--count should be positive");
    }
    if a.nsqd_http_address.is_empty() && a.lookupd_http_address.is_empty() {
        super::fatal("--nsqd-http-address or --lookupd-http-address required");
    }
    if !a.nsqd_http_address.is_empty() && !a.lookupd_http_address.is_empty() {
        super::fatal("use --nsqd-http-address or --lookupd-http-address not both");
    }
    if a.nsqd_http_address.iter().any(|x| x.starts_with("http")) {
        super::fatal("--nsqd-http-address error - address should not contain scheme");
    }
    if a.lookupd_http_address.iter().any(|x| x.starts_with("http")) {
        super::fatal("--lookupd-http-address error - address should not contain scheme");
    }
    super::runtime().block_on(async move {
        tokio::select! {
            _ = stat_loop(&a) => {}
            _ = super::termination(true) => {}
        }
    });
    std::process::exit(0);
}

/// The HTTP addresses of the nodes that have the topic.
async fn producers(a: &StatArgs) -> Result<Vec<String>, String> {
    let t = urlencode(&a.topic);
    let mut out = Vec::new();
    if !a.lookupd_http_address.is_empty() {
        let mut errs = Vec::new();
        for l in &a.lookupd_http_address {
            match http_get_json(
                l,
                &format!("/lookup?topic={t}"),
                a.http_client_request_timeout,
            )
            .await
            {
                Ok(v) => {
                    for p in v["producers"].as_array().cloned().unwrap_or_default() {
                        let addr = join_host_port(
                            p["broadcast_address"].as_str().unwrap_or_default(),
                            p["http_port"].as_i64().unwrap_or_default(),
                        );
                        if !out.contains(&addr) {
                            out.push(addr);
                        }
                    }
                }
                Err(e) => errs.push(e),
            }
        }
        if !errs.is_empty() {
            return Err(format!(
                "failed to query any nsqlookupd: {}",
                errs.join(", ")
            ));
        }
    } else {
        for n in &a.nsqd_http_address {
            let v = http_get_json(
                n,
                &format!("/stats?format=json&topic={t}&include_clients=false"),
                a.http_client_request_timeout,
            )
            .await?;
            let has = v["topics"]
                .as_array()
                .is_some_and(|ts| ts.iter().any(|x| x["topic_name"] == a.topic.as_str()));
            if has {
                out.push(n.clone());
            }
        }
    }
    Ok(out)
}

async fn channel_stats(a: &StatArgs, nodes: &[String]) -> Result<Option<ChannelStats>, String> {
    let (t, c) = (urlencode(&a.topic), urlencode(&a.channel));
    let mut sum = ChannelStats::default();
    let mut found = false;
    let mut errs = Vec::new();
    for n in nodes {
        let path = format!("/stats?format=json&topic={t}&channel={c}&include_clients=false");
        let v = match http_get_json(n, &path, a.http_client_request_timeout).await {
            Ok(v) => v,
            Err(e) => {
                errs.push(e);
                continue;
            }
        };
        for topic in v["topics"].as_array().cloned().unwrap_or_default() {
            if topic["topic_name"] != a.topic.as_str() {
                continue;
            }
            for ch in topic["channels"].as_array().cloned().unwrap_or_default() {
                if ch["channel_name"] != a.channel.as_str() {
                    continue;
                }
                found = true;
                let g = |k: &str| ch[k].as_i64().unwrap_or_default();
                sum.depth += g("depth");
                sum.backend_depth += g("backend_depth");
                sum.in_flight += g("in_flight_count");
                sum.deferred += g("deferred_count");
                sum.requeue += g("requeue_count");
                sum.timeout += g("timeout_count");
                sum.messages += g("message_count");
                sum.clients += g("client_count");
            }
        }
    }
    if !errs.is_empty() || nodes.is_empty() {
        return Err(format!("failed to query any nsqd: {}", errs.join(", ")));
    }
    Ok(found.then_some(sum))
}

async fn stat_loop(a: &StatArgs) {
    let mut prev: Option<ChannelStats> = None;
    let secs = a.interval.as_secs_f64();
    let mut i: i64 = 0;
    while a.count.is_none_or(|n| n as i64 >= i) {
        let nodes = producers(a).await.unwrap_or_else(|e| {
            super::fatal(format!("ERROR: failed to get topic producers - {e}"))
        });
        let c = channel_stats(a, &nodes)
            .await
            .unwrap_or_else(|e| super::fatal(format!("ERROR: failed to get nsqd stats - {e}")))
            .unwrap_or_else(|| {
                super::fatal(format!(
                    "ERROR: failed to find channel({}) in stats metadata for topic({})",
                    a.channel, a.topic
                ))
            });
        if i % 25 == 0 {
            println!(
                "------rate------+----------------depth----------------+--------------metadata---------------"
            );
            println!(
                "{:>7} {:>7} | {:>7} {:>7} {:>7} {:>5} {:>5} | {:>7} {:>7} {:>12} {:>7}",
                "ingress",
                "egress",
                "total",
                "mem",
                "disk",
                "inflt",
                "def",
                "req",
                "t-o",
                "msgs",
                "clients"
            );
        }
        if let Some(o) = prev {
            let ingress = ((c.messages - o.messages) as f64 / secs) as i64;
            let egress = ((c.messages - o.messages - (c.depth - o.depth)) as f64 / secs) as i64;
            println!(
                "{:>7} {:>7} | {:>7} {:>7} {:>7} {:>5} {:>5} | {:>7} {:>7} {:>12} {:>7}",
                ingress,
                egress,
                c.depth,
                c.depth - c.backend_depth,
                c.backend_depth,
                c.in_flight,
                c.deferred,
                c.requeue,
                c.timeout,
                c.messages,
                c.clients
            );
        }
        prev = Some(c);
        tokio::time::sleep(a.interval).await;
        i += 1;
    }
}
