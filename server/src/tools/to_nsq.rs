//! `nsqlab to_nsq` (and `to_nsq`): publish stdin, split on a delimiter, to every nsqd given.
//!
//! Empty records are skipped. Unlike NSQ's to_nsq, a last record without a trailing
//! delimiter is published whole (NSQ's drops its last byte).

use crate::client::{ClientConfig, Producer};
use clap::{ArgAction, Parser};
use std::io::BufRead;
use std::time::{Duration, Instant};

#[derive(Debug, Parser)]
#[command(name = "to_nsq")]
pub struct ToNsqArgs {
    /// character to split input from stdin
    #[arg(long, default_value = "\n")]
    pub delimiter: String,
    /// destination nsqd TCP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub nsqd_tcp_address: Vec<String>,
    /// option to passthrough to nsq.Producer (may be given multiple times, http://godoc.org/github.com/nsqio/go-nsq#Config)
    #[arg(long, action = ArgAction::Append)]
    pub producer_opt: Vec<String>,
    /// Throttle messages to n/second. 0 to disable
    #[arg(long, default_value_t = 0)]
    pub rate: i64,
    /// NSQ topic to publish to
    #[arg(long, default_value = "")]
    pub topic: String,
}

pub fn main(args: Vec<String>) {
    let a = crate::cli::parse_command_line::<ToNsqArgs>(args);
    let mut cfg = ClientConfig::default();
    for o in &a.producer_opt {
        if let Err(e) = cfg.set(o) {
            eprintln!("invalid value {o:?} for flag -producer-opt: {e}");
            std::process::exit(2);
        }
    }
    if a.topic.is_empty() {
        super::fatal("--topic required");
    }
    if a.delimiter.len() != 1 {
        super::fatal("--delimiter must be a single byte");
    }
    let mut addrs = a.nsqd_tcp_address.clone();
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        super::fatal("--nsqd-tcp-address required");
    }
    let mut producers: Vec<Producer> = addrs
        .into_iter()
        .map(|a| Producer::new(a, cfg.clone()))
        .collect();
    // SIGINT/SIGTERM end it at once with status 0, as to_nsq.
    std::thread::spawn(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(super::termination(false));
        std::process::exit(0);
    });
    let interval = (a.rate >= 1).then(|| Duration::from_secs(1) / a.rate as u32);
    if a.rate >= 1 {
        super::logf(format!("Throttling messages rate to max:{}/second", a.rate));
    }
    let delim = a.delimiter.as_bytes()[0];
    let stdin = std::io::stdin();
    let mut r = stdin.lock();
    let mut next = Instant::now();
    let mut rec = Vec::new();
    loop {
        if let Some(iv) = interval {
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            next = next.max(now - iv) + iv;
        }
        rec.clear();
        let n = match r.read_until(delim, &mut rec) {
            Ok(n) => n,
            Err(e) => super::fatal(e),
        };
        if n == 0 {
            break;
        }
        if rec.last() == Some(&delim) {
            rec.pop();
        }
        if rec.is_empty() {
            continue;
        }
        for p in producers.iter_mut() {
            if let Err(e) = p.publish(&a.topic, &rec) {
                super::fatal(e);
            }
        }
    }
}
