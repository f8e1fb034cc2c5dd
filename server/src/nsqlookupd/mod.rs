//! `nsqlab nsqlookupd`: a drop-in nsqlookupd v1.3. The registration logic is the core's
//! [`nsqlab_core::lookup::Lookupd`]; this is its TCP and HTTP front.

pub mod http;

use crate::cli::duration_arg;
use clap::Parser;
use nsqlab_core::lookup::{LookupLog, Lookupd, LookupdOptions};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// `nsqlab nsqlookupd`: nsqlookupd v1.3's flags and defaults.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "nsqlookupd",
    disable_version_flag = true,
    args_override_self = true,
    about = "nsqlab nsqlookupd: NSQ's discovery service"
)]
pub struct LookupdArgs {
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
    #[arg(long, default_value = "[nsqlookupd] ")]
    pub log_prefix: String,
    /// [deprecated] has no effect, use --log-level
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub verbose: Option<bool>,
    /// <addr>:<port> to listen on for TCP clients
    #[arg(long, default_value = "0.0.0.0:4160")]
    pub tcp_address: String,
    /// <addr>:<port> to listen on for HTTP clients
    #[arg(long, default_value = "0.0.0.0:4161")]
    pub http_address: String,
    /// address of this lookupd node, (default to the OS hostname)
    #[arg(long)]
    pub broadcast_address: Option<String>,
    /// duration of time a producer will remain in the active list since its last ping
    #[arg(long, default_value = "5m0s", value_parser = duration_arg)]
    pub inactive_producer_timeout: Duration,
    /// duration of time a producer will remain tombstoned if registration remains
    #[arg(long, default_value = "45s", value_parser = duration_arg)]
    pub tombstone_lifetime: Duration,
}

/// The shared state: one lookupd, behind a lock (its traffic is a few commands per node every
/// 15 s).
pub type Shared = Arc<Mutex<Lookupd>>;

/// Write the core's log lines.
pub(crate) fn flush_log(l: &mut Lookupd) {
    for line in l.take_log() {
        match line {
            LookupLog::Info(m) => tracing::info!("{m}"),
            LookupLog::Warn(m) => tracing::warn!("{m}"),
            LookupLog::Error(m) => tracing::error!("{m}"),
        }
    }
}

/// What a running nsqlookupd bound to.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub tcp: SocketAddr,
    pub http: SocketAddr,
}

/// Run until SIGINT/SIGTERM.
pub async fn run(args: LookupdArgs) -> anyhow::Result<()> {
    let signals = crate::common::Signals::new()?;
    crate::net::raise_open_file_limit();
    let (tx, rx) = watch::channel(false);
    let (bound, tasks) = start(args, rx).await?;
    signals.wait().await;
    tracing::info!("TCP: closing {}", bound.tcp);
    tracing::info!("HTTP: closing {}", bound.http);
    let _ = tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}

/// Bind and serve until `shutdown` flips.
pub async fn start(
    args: LookupdArgs,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<(Bound, Vec<tokio::task::JoinHandle<()>>)> {
    tracing::info!("{}", crate::version_line("nsqlookupd"));
    let tcp = crate::net::listen_or_fail(&args.tcp_address).await?;
    let http = crate::net::listen_or_fail(&args.http_address).await?;
    let bound = Bound {
        tcp: tcp.local_addr()?,
        http: http.local_addr()?,
    };
    let host = crate::common::hostname();
    let lookupd = Lookupd::new(LookupdOptions {
        broadcast_address: args
            .broadcast_address
            .clone()
            .unwrap_or_else(|| host.clone()),
        hostname: host,
        tcp_port: bound.tcp.port(),
        http_port: bound.http.port(),
        inactive_producer_timeout: args.inactive_producer_timeout.as_nanos() as u64,
        tombstone_lifetime: args.tombstone_lifetime.as_nanos() as u64,
    });
    let shared: Shared = Arc::new(Mutex::new(lookupd));
    tracing::info!("TCP: listening on {}", bound.tcp);
    tracing::info!("HTTP: listening on {}", bound.http);
    let tasks = vec![
        tokio::spawn(serve_tcp(tcp, shared.clone(), shutdown.clone())),
        tokio::spawn(crate::http::serve(
            crate::net::Listener::Tcp(http),
            http::router(shared),
            Duration::from_secs(10),
            None,
            shutdown,
        )),
    ];
    Ok((bound, tasks))
}

async fn serve_tcp(listener: TcpListener, shared: Shared, mut shutdown: watch::Receiver<bool>) {
    let mut conns = Vec::new();
    while let Some((stream, remote)) = crate::net::accept(&listener, &mut shutdown, "TCP").await {
        conns.retain(|t: &tokio::task::JoinHandle<()>| !t.is_finished());
        conns.push(tokio::spawn(serve_conn(
            stream,
            remote,
            shared.clone(),
            shutdown.clone(),
        )));
    }
    for c in conns {
        c.abort();
    }
}

async fn serve_conn(
    mut stream: TcpStream,
    remote: SocketAddr,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    tracing::info!("TCP: new client({remote})");
    let peer = shared
        .lock()
        .expect("lookupd lock")
        .connect(remote.to_string());
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            r = stream.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = shutdown.changed() => break,
        };
        let (out, close) = {
            let mut l = shared.lock().expect("lookupd lock");
            l.handle_bytes(crate::clock::now(), peer, &buf[..n]);
            let r = l.take_output(peer);
            flush_log(&mut l);
            r
        };
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            break;
        }
        if close {
            break;
        }
    }
    tracing::info!("PROTOCOL(V1): [{remote}] exiting ioloop");
    let mut l = shared.lock().expect("lookupd lock");
    l.disconnect(peer);
    flush_log(&mut l);
}
