//! `nsqlab nsqd`: the server. Binds the TCP and HTTP listeners, starts the broker task, and
//! shuts down cleanly on SIGINT/SIGTERM.

pub mod auth;

pub mod driver;
pub mod http;
pub mod link;
pub mod lookup;
pub mod options;
pub mod replica;
pub mod statsd;
pub mod store;
pub mod tcp;
pub mod tls;
pub mod ws;

pub use options::NsqdArgs;

use crate::net::Local;
use nsqlab_core::Broker;
use std::net::SocketAddr;
use tokio::sync::watch;

/// What a running server bound to.
#[derive(Debug, Clone)]
pub struct Bound {
    pub tcp: Local,
    /// `None` with an empty `--http-address` (no HTTP, as nsqd v1.3).
    pub http: Option<Local>,
    pub https: Option<SocketAddr>,
}

impl Bound {
    /// The HTTP port, 0 without HTTP or on a unix socket (nsqd's `RealHTTPAddr` is then no
    /// TCP address).
    pub fn http_port(&self) -> u16 {
        self.http.as_ref().map_or(0, Local::port)
    }
}

/// Run nsqd until a signal arrives, or until a replicated node cannot go on (its raft log
/// could not be written): then it shuts down and fails, so that the process exits with an
/// error rather than linger as a node that takes no part.
pub async fn run(args: NsqdArgs) -> anyhow::Result<()> {
    // Catch SIGTERM/SIGINT before anything is bound: a harness may signal as soon as it reads
    // the listening lines.
    let signals = crate::common::Signals::new()?;
    crate::net::raise_open_file_limit();
    tune_allocator();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut server = start(args, shutdown_rx).await?;
    let stopped = async {
        match server.stopped.take() {
            // Dropped unsent: the node stopped because the server is shutting down.
            Some(rx) => match rx.await {
                Ok(why) => why,
                Err(_) => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    };
    let failed = tokio::select! {
        _ = signals.wait() => None,
        why = stopped => Some(why),
    };
    tracing::info!("TCP: closing {}", server.bound.tcp);
    let _ = shutdown_tx.send(true);
    server.finish().await;
    match failed {
        None => Ok(()),
        Some(why) => Err(Stopped(why).into()),
    }
}

/// A replicated node stopped on its own while running (not at start-up): why.
#[derive(Debug, thiserror::Error)]
#[error("replication stopped: {0}")]
pub struct Stopped(pub String);

/// A started server.
pub struct Server {
    pub bound: Bound,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// A replicated node's reason for stopping, should it stop on its own.
    stopped: Option<tokio::sync::oneshot::Receiver<String>>,
}

impl Server {
    async fn finish(self) {
        for t in self.tasks {
            let _ = t.await;
        }
        tracing::info!("exiting");
    }
}

/// Bind and start everything; stop when `shutdown` flips to true.
pub async fn start(args: NsqdArgs, shutdown: watch::Receiver<bool>) -> anyhow::Result<Server> {
    args.validate().map_err(anyhow::Error::msg)?;
    let tls = tls::server_config(&args)?;
    let client_tls = tls::client_config(&args)?;
    // As nsqd's New(): the version once the options passed their checks.
    tracing::info!("{}", crate::version_line("nsqd"));
    let mut opts = args.core_options();
    opts.tls_enabled = tls.is_some();
    tracing::info!("ID: {}", opts.node_id);
    opts.durable = args.durable;
    opts.evict_bodies = args.durable;
    opts.registry = true;
    let now = crate::clock::now();
    let replicated = args.replicas > 1;
    let count = if replicated {
        1
    } else {
        args.partition_count()
    };
    opts.partitions = count;
    let data_path = if args.data_path.is_empty() {
        std::env::current_dir()?
    } else {
        std::path::PathBuf::from(&args.data_path)
    };
    let mut parts = Vec::new();
    // Replicated, the broker is the node's (rebuilt from the raft log), not the files'.
    for p in (0..count).filter(|_| !replicated) {
        let opts = nsqlab_core::Options {
            partition: p,
            ..opts.clone()
        };
        let mut broker = Broker::new(opts, now.wrapping_add(p as u64), now);
        // What the restore creates is registered when nsqlookupd connects; only later changes
        // are news.
        broker.set_registry(false);
        let store = if args.durable {
            let cfg = store::StoreConfig {
                data_path: data_path.clone(),
                // Record offsets are 32-bit.
                max_bytes_per_file: args.max_bytes_per_file.clamp(4096, 1 << 30) as u64,
                sync_every: args.sync_every.max(1) as u64,
                sync_timeout: args.sync_timeout,
                partition: (p, count),
            };
            let (s, rec) = store::Store::open(cfg, &mut broker, now)
                .map_err(|e| anyhow::anyhow!("failed to open the data path: {e}"))?;
            tracing::info!(
                "storage: partition {p}: restored {} topic(s), {} channel(s), {} message copies{}",
                rec.topics,
                rec.channels,
                rec.messages,
                if rec.corrupt_ranges > 0 {
                    format!(" ({} corrupt range(s) set aside)", rec.corrupt_ranges)
                } else {
                    String::new()
                }
            );
            if let Some(e) = rec.no_room {
                // Consumers are served (their FINs free room); publishes wait for room.
                tracing::error!(
                    "storage: partition {p}: {e}; publishing is refused until there is room"
                );
                broker.set_health(Some(nsqlab_core::StoreFailure::new(e)));
            }
            Some(s)
        } else {
            None
        };
        broker.set_registry(true);
        parts.push(driver::Opened { broker, store });
    }
    tracing::info!("{count} partition(s)");
    if args.durable {
        release_free_memory();
    }
    let auth = auth::AuthConfig {
        addresses: args.auth_http_address.clone(),
        method_post: args.auth_http_request_method.eq_ignore_ascii_case("post"),
        connect_timeout: args.http_client_connect_timeout,
        request_timeout: args.http_client_request_timeout,
        tls: client_tls,
    };
    let (registry_tx, registry_rx) = tokio::sync::mpsc::unbounded_channel();
    let (driver, broker_tasks, stopped) = if replicated {
        let (node, log, transport, inbox, reports) =
            replica::driver::open(&args, opts.clone(), &data_path, now).await?;
        let parts = replica::driver::Parts {
            node,
            log,
            data_path: data_path.clone(),
            transport,
            inbox,
            reports,
            standby: Broker::new(opts.clone(), now, now),
            auth,
            registry: registry_tx,
        };
        let (handle, task, stopped) = replica::driver::spawn(parts, shutdown.clone());
        (handle, vec![task], Some(stopped))
    } else {
        let (handle, tasks) = driver::spawn(parts, auth, registry_tx, shutdown.clone());
        (handle, tasks, None)
    };

    // TCP and HTTP on a unix socket too, for a path (nsqd v1.3).
    let tcp = crate::net::listen_any_or_fail(&args.tcp_address).await?;
    let tcp_addr = tcp.local()?;
    tracing::info!("TCP: listening on {tcp_addr}");
    let http = if args.http_address.is_empty() {
        None
    } else {
        let l = crate::net::listen_any_or_fail(&args.http_address).await?;
        tracing::info!("HTTP: listening on {}", l.local()?);
        Some(l)
    };
    let http_addr = http.as_ref().map(|l| l.local()).transpose()?;
    // HTTPS when a certificate is configured (nsqd's rule).
    let https = match (&tls, args.https_address.is_empty()) {
        (Some(cfg), false) => {
            let l = crate::net::listen_or_fail(&args.https_address).await?;
            let addr = l.local_addr()?;
            tracing::info!("HTTPS: listening on {addr}");
            let l = crate::net::Listener::Tcp(l);
            Some((l, addr, tokio_rustls::TlsAcceptor::from(cfg.clone())))
        }
        _ => None,
    };
    let bound = Bound {
        tcp: tcp_addr,
        http: http_addr,
        https: https.as_ref().map(|h| h.1),
    };

    let info = http::ServerInfo::new(&args, &bound, crate::clock::now());
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(tcp::serve(
        tcp,
        driver.clone(),
        tls,
        shutdown.clone(),
    )));
    let (lookupd_tx, lookupd_rx) = watch::channel(args.lookupd_tcp_address.clone());
    let (tcp_port, http_port) = args.broadcast_ports(&bound);
    let node = lookup::NodeInfo {
        broadcast_address: args.broadcast_address(),
        hostname: crate::common::hostname(),
        tcp_port,
        http_port,
        http_connect_timeout: args.http_client_connect_timeout,
        http_request_timeout: args.http_client_request_timeout,
    };
    tasks.push(tokio::spawn(lookup::run(
        driver.clone(),
        node,
        lookupd_rx,
        registry_rx,
        shutdown.clone(),
    )));
    let app = http::router(driver.clone(), info, lookupd_tx);
    // --tls-required=true (not tcp-https) also closes plain HTTP, as nsqd.
    let plain_app = if args.tls_required_mode() == options::TlsRequired::Yes {
        http::tls_required_app(bound.https.map_or(0, |a| a.port()))
    } else {
        app.clone()
    };
    let timeout = args.http_header_timeout;
    if let Some(http) = http {
        tasks.push(tokio::spawn(http::serve(
            http,
            plain_app,
            timeout,
            None,
            shutdown.clone(),
        )));
    }
    if !args.statsd_address.is_empty() {
        let prefix = statsd::prefix(&args.statsd_prefix, &args.broadcast_address(), http_port);
        let cfg = statsd::StatsdConfig {
            address: args.statsd_address.clone(),
            prefix,
            interval: args.statsd_interval,
            packet_size: args.statsd_udp_packet_size.max(0) as usize,
            mem_stats: args.statsd_mem_stats,
            exclude_ephemeral: args.statsd_exclude_ephemeral,
        };
        tasks.push(tokio::spawn(statsd::run(
            driver.clone(),
            cfg,
            shutdown.clone(),
        )));
    }
    if let Some((listener, _, acceptor)) = https {
        tasks.push(tokio::spawn(http::serve(
            listener,
            app,
            timeout,
            Some(acceptor),
            shutdown.clone(),
        )));
    }
    tasks.push(tokio::spawn(trim_after_churn(shutdown.clone())));
    drop(driver);
    for t in broker_tasks {
        tasks.push(tokio::spawn(async move {
            let _ = t.await;
        }));
    }
    Ok(Server {
        bound,
        tasks,
        stopped,
    })
}

/// Give back what connections that came and went left in the allocator. Their buffers (64 KiB
/// each to read and write) stay in glibc's arenas once freed: 20 rounds of 3 000 connections
/// opened and closed left 330 MB resident (24 MB after `POST /debug/freememory`). Every
/// second: after [`TRIM_AFTER`] closes since the last look, if the arenas hold more than
/// [`TRIM_FREE`] unused, `malloc_trim` returns it, on a blocking thread (it walks the arenas).
/// A churn is counted as its connections close, before the broker has freed all they held,
/// so the first quiet second after it looks once more and returns what is left past
/// [`SETTLED_FREE`] (a trim in the middle of the churn once left 90 MB resident for good).
/// A steady server with few connections never trims (a trim holds each arena's lock while it
/// works, which publishers on other threads would wait for).
async fn trim_after_churn(mut shutdown: watch::Receiver<bool>) {
    use std::sync::atomic::Ordering;
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut seen = crate::common::CLOSED_CONNECTIONS.load(Ordering::Relaxed);
    let mut churning = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        let closed = crate::common::CLOSED_CONNECTIONS.load(Ordering::Relaxed);
        let limit = if closed - seen >= TRIM_AFTER {
            seen = closed;
            churning = true;
            TRIM_FREE
        } else if std::mem::take(&mut churning) {
            SETTLED_FREE
        } else {
            continue;
        };
        if held_free_bytes() > limit {
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
        }
    }
}

/// Closed connections that make [`trim_after_churn`] look at the allocator.
const TRIM_AFTER: u64 = 100;
/// Free bytes inside the allocator's arenas past which it trims.
const TRIM_FREE: usize = 32 << 20;
/// Free bytes past which it trims once a churn is over.
const SETTLED_FREE: usize = 4 << 20;

/// Bytes free inside the allocator's arenas (not given back to the system).
fn held_free_bytes() -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's statistics; it has no preconditions.
        unsafe { libc::mallinfo2() }.fordblks
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    0
}

/// Keep freed memory in the allocator rather than giving the top of each arena back to the
/// system as soon as 128 KiB of it is free (glibc's default). A connection's 64 KiB read
/// buffers are handed to the broker and freed by whichever thread it runs on; with the top
/// given back at once, the next buffers faulted in fresh pages, and zeroing them was 14 % of
/// the server's time while `bench_writer` published to `--durable=false`. Memory is returned
/// explicitly instead ([`trim_after_churn`], [`release_free_memory`] after recovery,
/// `POST /debug/freememory`). Allocations up to [`MMAP_THRESHOLD`] come from the arenas (fixing
/// the trim threshold would otherwise pin glibc's mmap threshold at 128 KiB).
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets the allocator's parameters; it has no preconditions and
        // takes the allocator's own lock.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int);
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        }
    }
}

/// Free bytes at an arena's top past which glibc gives them back by itself.
const TRIM_THRESHOLD: usize = 64 << 20;
/// Allocations from this size on are mapped on their own (and unmapped when freed).
const MMAP_THRESHOLD: usize = 4 << 20;

/// Give the memory the allocator holds free back to the system. After recovery that is most
/// of what it took: rebuilding a backlog of millions of messages needs far more than the
/// queues it leaves (with 2 M held 200-byte messages, 359 MB resident after the restart
/// against 78 MB before it, without this), and it is spread among what stays, where it is
/// never at the top of the heap for the allocator to return by itself.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only returns free pages of the allocator's own arenas to the
        // system (madvise); it has no preconditions.
        let _ = unsafe { libc::malloc_trim(0) };
    }
}
