//! `nsqlab tail` (and `nsq_tail`): consume topics and print each message body on stdout.
//!
//! # Format
//! One record per message: `[<topic> " | "]<body>"\n"` (the prefix with `--print-topic`),
//! written whole. Everything else goes to stderr.

use crate::client::{consume, ClientConfig, Discovery};
use clap::{ArgAction, Parser};
use std::io::Write;

#[derive(Debug, Parser)]
#[command(name = "nsq_tail", disable_version_flag = true)]
pub struct TailArgs {
    /// NSQ channel
    #[arg(long, default_value = "")]
    pub channel: String,
    /// option to passthrough to nsq.Consumer (may be given multiple times, http://godoc.org/github.com/nsqio/go-nsq#Config)
    #[arg(long, action = ArgAction::Append)]
    pub consumer_opt: Vec<String>,
    /// lookupd HTTP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub lookupd_http_address: Vec<String>,
    /// max number of messages to allow in flight
    #[arg(long, default_value_t = 200)]
    pub max_in_flight: i64,
    /// total messages to show (will wait if starved)
    #[arg(long = "n", default_value_t = 0)]
    pub n: i64,
    /// nsqd TCP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub nsqd_tcp_address: Vec<String>,
    /// print topic name where message was received
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub print_topic: bool,
    /// NSQ topic (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub topic: Vec<String>,
    /// print version string
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub version: bool,
}

pub fn main(args: Vec<String>) {
    let mut a = crate::cli::parse_command_line::<TailArgs>(args);
    if a.version {
        println!("nsq_tail v{}", nsqlab_core::VERSION);
        return;
    }
    let mut cfg = ClientConfig::default();
    for o in &a.consumer_opt {
        if let Err(e) = cfg.set(o) {
            eprintln!("invalid value {o:?} for flag -consumer-opt: {e}");
            std::process::exit(2);
        }
    }
    if a.channel.is_empty() {
        let n = crate::clock::now() % 999_999;
        a.channel = format!("tail{n:06}#ephemeral");
    }
    if a.nsqd_tcp_address.is_empty() && a.lookupd_http_address.is_empty() {
        super::fatal("--nsqd-tcp-address or --lookupd-http-address required");
    }
    if !a.nsqd_tcp_address.is_empty() && !a.lookupd_http_address.is_empty() {
        super::fatal("use --nsqd-tcp-address or --lookupd-http-address not both");
    }
    if a.topic.is_empty() {
        super::fatal("--topic required");
    }
    // Don't ask for more messages than we want.
    if a.n > 0 && a.n < a.max_in_flight {
        a.max_in_flight = a.n;
    }
    cfg.max_in_flight = a.max_in_flight;
    cfg.user_agent = format!("nsq_tail/{} nsqlab", nsqlab_core::VERSION);
    super::init_log("");
    super::runtime().block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let how = if a.nsqd_tcp_address.is_empty() {
            Discovery::Lookupd(a.lookupd_http_address.clone())
        } else {
            Discovery::Nsqd(a.nsqd_tcp_address.clone())
        };
        let mut tasks = Vec::new();
        for topic in &a.topic {
            super::logf(format!("Adding consumer for topic: {topic}"));
            // As go-nsq's ConnectToNSQDs, which nsq_tail's log.Fatal ends on: an nsqd that
            // cannot be dialled at the start is an error (later, its connection is redialled).
            if let Discovery::Nsqd(addrs) = &how {
                for addr in addrs {
                    let dial = tokio::net::TcpStream::connect(addr.as_str());
                    match tokio::time::timeout(std::time::Duration::from_secs(1), dial).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => super::fatal(format!(
                            "dial tcp {addr}: connect: {}",
                            crate::cli::go_errno_text(&e)
                        )),
                        Err(_) => super::fatal(format!("dial tcp {addr}: i/o timeout")),
                    }
                }
            }
            let mut rx = consume(
                topic.clone(),
                a.channel.clone(),
                how.clone(),
                cfg.clone(),
                stop_rx.clone(),
            );
            let (n, print_topic) = (a.n, a.print_topic);
            tasks.push(tokio::spawn(async move {
                let mut shown = 0;
                while let Some(d) = rx.recv().await {
                    shown += 1;
                    let mut rec = Vec::with_capacity(d.msg.body.len() + 64);
                    if print_topic {
                        rec.extend_from_slice(d.topic.as_bytes());
                        rec.extend_from_slice(b" | ");
                    }
                    rec.extend_from_slice(&d.msg.body);
                    rec.push(b'\n');
                    let mut out = std::io::stdout().lock();
                    if let Err(e) = out.write_all(&rec).and_then(|_| out.flush()) {
                        if e.kind() == std::io::ErrorKind::BrokenPipe {
                            std::process::exit(1);
                        }
                        super::fatal(format!("ERROR: failed to write to os.Stdout - {e}"));
                    }
                    if n > 0 && shown >= n {
                        std::process::exit(0);
                    }
                    d.finish();
                }
            }));
        }
        super::termination(false).await;
        let _ = stop_tx.send(true);
        // Let the connections send CLS.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-n 5` is nsq_tail's count; Go has no `-n5`.
    #[test]
    fn go_reads_the_count_as_nsq_tail_does() {
        use clap::CommandFactory;
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let tail = TailArgs::command();
        assert_eq!(
            crate::cli::go_args(&tail, argv(&["nsq_tail", "-n", "5"])),
            Ok(argv(&["nsq_tail", "--n=5"]))
        );
        assert_eq!(
            crate::cli::go_args(&tail, argv(&["nsq_tail", "-n5"])),
            Err("flag provided but not defined: -n5".to_string())
        );
    }
}
