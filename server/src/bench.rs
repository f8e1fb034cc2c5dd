//! `nsqlab bench …`: NSQ-compatible benchmark clients, usable against any NSQ server.
//!
//! - `writer` / `reader`: NSQ's `bench_writer` / `bench_reader` (one connection per core,
//!   MPUB batches; SUB with RDY and FIN per message) and their summary line.
//! - `lateness`: DPUB N messages due over a window on a channel created just before, consume,
//!   print how late each arrived (p50/p99/max) and how many arrived early.
//! - `deferred-mem`: RSS growth of a local nsqd per pending deferred message (with
//!   `--backlog`, per message queued for a consumer that takes none).
//! - `latency`: publish round trips at a fixed rate (e.g. half of `writer`'s peak), measured
//!   from each batch's scheduled send time (no coordinated omission): p50/p99/max. Each
//!   connection first publishes one batch, untimed (the topic is made, the connection moves
//!   to its partition), as the throughput runs create their topic first.
//! - `null-server`: a stand-in server that answers every publish with `OK` and keeps nothing
//!   (`bench/null_server.rs`), for what the machine allows `latency` without a broker.

mod null_server;

use clap::{Args, Subcommand};
use nsqlab_core::protocol::Command;
use std::io::{BufWriter, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// Publish as fast as possible (NSQ's bench_writer).
    Writer(WriterArgs),
    /// Consume as fast as possible (NSQ's bench_reader).
    Reader(ReaderArgs),
    /// DPUB lateness: how late deferred messages are delivered.
    Lateness(LatenessArgs),
    /// Resident memory per pending deferred (or, with --backlog, queued) message of a local
    /// nsqd (by pid).
    DeferredMem(DeferredMemArgs),
    /// Publish round-trip latency at a fixed rate (after one untimed batch per connection)
    Latency(LatencyArgs),
    /// A stand-in server: every publish gets OK, nothing is kept.
    NullServer(null_server::NullServerArgs),
}

#[derive(Debug, Args)]
pub struct LatencyArgs {
    #[arg(long, default_value = "10s", value_parser = crate::cli::duration_arg)]
    pub runfor: Duration,
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    /// messages per second, in total
    #[arg(long)]
    pub rate: u64,
    #[arg(long, default_value_t = 200)]
    pub size: usize,
    /// messages per MPUB (1: PUB)
    #[arg(long, default_value_t = 200)]
    pub batch_size: usize,
    #[arg(long, default_value = "latency_bench")]
    pub topic: String,
    /// connections (default: one per core)
    #[arg(long)]
    pub connections: Option<usize>,
    /// also write every round trip to this file, a line each: when it was due to be sent
    /// (ms after the start) and how long it took (ms)
    #[arg(long)]
    pub dump: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct WriterArgs {
    #[arg(long, default_value = "10s", value_parser = crate::cli::duration_arg)]
    pub runfor: Duration,
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    #[arg(long, default_value_t = 200)]
    pub size: usize,
    #[arg(long, default_value_t = 200)]
    pub batch_size: usize,
    #[arg(long, default_value = "sub_bench")]
    pub topic: String,
    /// deadline to start the benchmark run (unused: starts at once)
    #[arg(long, default_value = "")]
    pub deadline: String,
    /// connections (default: one per core, as NSQ's GOMAXPROCS)
    #[arg(long)]
    pub connections: Option<usize>,
}

#[derive(Debug, Args)]
pub struct ReaderArgs {
    #[arg(long, default_value = "10s", value_parser = crate::cli::duration_arg)]
    pub runfor: Duration,
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    #[arg(long, default_value_t = 200)]
    pub size: usize,
    #[arg(long, default_value = "sub_bench")]
    pub topic: String,
    #[arg(long, default_value = "ch")]
    pub channel: String,
    #[arg(long, default_value = "")]
    pub deadline: String,
    #[arg(long, default_value_t = 2500)]
    pub rdy: i64,
    #[arg(long)]
    pub connections: Option<usize>,
}

#[derive(Debug, Args)]
pub struct LatenessArgs {
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    /// messages to DPUB
    #[arg(long, default_value_t = 2000)]
    pub count: usize,
    /// the due times are spread over this window
    #[arg(long, default_value = "1s", value_parser = crate::cli::duration_arg)]
    pub window: Duration,
    /// extra delay added to every message (e.g. to let earlier ones pile up)
    #[arg(long, default_value = "100ms", value_parser = crate::cli::duration_arg)]
    pub base_delay: Duration,
    /// messages already pending (deferred far into the future) before the measured ones
    #[arg(long, default_value_t = 0)]
    pub background: usize,
}

#[derive(Debug, Args)]
pub struct DeferredMemArgs {
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    /// the server's process id (its RSS is read from /proc)
    #[arg(long)]
    pub pid: u32,
    #[arg(long, default_value_t = 200_000)]
    pub count: usize,
    #[arg(long, default_value_t = 100)]
    pub size: usize,
    /// PUB instead of DPUB: the messages wait as a channel's backlog (its consumer has RDY 0)
    #[arg(long)]
    pub backlog: bool,
}

pub fn run(b: Bench) -> anyhow::Result<()> {
    match b {
        Bench::Writer(a) => writer(a),
        Bench::Reader(a) => reader(a),
        Bench::Lateness(a) => lateness(a),
        Bench::DeferredMem(a) => deferred_mem(a),
        Bench::Latency(a) => latency(a),
        Bench::NullServer(a) => null_server::run(a),
    }
}

fn latency(a: LatencyArgs) -> anyhow::Result<()> {
    let n = a.connections.unwrap_or_else(cores);
    let batch = a.batch_size.max(1);
    let body = vec![b'a'; a.size];
    let cmd = if batch == 1 {
        Command::Pub {
            topic: a.topic.as_str().into(),
            body: body.into(),
        }
    } else {
        Command::Mpub {
            topic: a.topic.as_str().into(),
            bodies: (0..batch).map(|_| body.clone().into()).collect(),
        }
    }
    .to_bytes();
    let cmd = Arc::new(cmd);
    // Each connection sends a batch every `every`, on a fixed schedule.
    let per_conn = (a.rate as f64 / batch as f64 / n as f64).max(0.001);
    let every = Duration::from_secs_f64(1.0 / per_conn);
    // The clock starts once every connection has published one batch, untimed: the topic
    // exists and each connection is at home in its partition (a connection moves there with
    // its first publish), as for producers that have been publishing for a while.
    let ready = Arc::new(std::sync::Barrier::new(n));
    let started: Arc<std::sync::OnceLock<Instant>> = Arc::default();
    let runfor = a.runfor;
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (cmd, addr) = (cmd.clone(), a.tcp_address.clone());
            let (ready, started) = (ready.clone(), started.clone());
            std::thread::spawn(move || -> anyhow::Result<Vec<(Instant, i64)>> {
                let warm = (|| -> anyhow::Result<_> {
                    let mut c = Conn::connect(&addr)?;
                    let mut w = c.stream.try_clone()?;
                    w.write_all(&cmd)?;
                    let mut ok = false;
                    c.read_frames(|f, _| {
                        ok = frame_type(f) == 0 && &f[8..] == b"OK";
                        !ok && frame_type(f) != 1
                    })?;
                    anyhow::ensure!(ok, "publish failed");
                    Ok((c, w))
                })();
                // (Every connection gets here, failed or not: none waits for ever.)
                if ready.wait().is_leader() {
                    started.get_or_init(|| Instant::now() + Duration::from_millis(100));
                }
                ready.wait();
                let (mut c, mut w) = warm?;
                let start = *started.get().expect("set by the leader");
                let end = start + runfor;
                // Stagger the connections over one interval.
                let first = start + every.mul_f64(i as f64 / n as f64);
                let (tx, rx) = std::sync::mpsc::channel::<Instant>();
                let sender = std::thread::spawn(move || -> std::io::Result<()> {
                    let mut k = 0u32;
                    loop {
                        let at = first + every * k;
                        if at >= end {
                            return Ok(());
                        }
                        let now = Instant::now();
                        if at > now {
                            std::thread::sleep(at - now);
                        }
                        // Latency counts from the scheduled instant, not from when we got
                        // to send (a stalled server cannot hide its stall).
                        let _ = tx.send(at);
                        w.write_all(&cmd)?;
                        k += 1;
                    }
                });
                let mut lat = Vec::new();
                while let Ok(at) = rx.recv() {
                    let mut ok = false;
                    c.read_frames(|f, _| {
                        ok = frame_type(f) == 0 && &f[8..] == b"OK";
                        !ok && frame_type(f) != 1
                    })?;
                    if !ok {
                        anyhow::bail!("publish failed");
                    }
                    lat.push((at, at.elapsed().as_nanos() as i64));
                }
                sender
                    .join()
                    .map_err(|_| anyhow::anyhow!("sender panicked"))??;
                Ok(lat)
            })
        })
        .collect();
    let mut trips = Vec::new();
    for h in handles {
        trips.extend(
            h.join()
                .map_err(|_| anyhow::anyhow!("latency thread panicked"))??,
        );
    }
    if let Some(path) = &a.dump {
        trips.sort_unstable_by_key(|t| t.0);
        let mut f = BufWriter::new(std::fs::File::create(path)?);
        for (at, ns) in &trips {
            let due = at
                .saturating_duration_since(*started.get().expect("started"))
                .as_secs_f64()
                * 1e3;
            writeln!(f, "{due:.3} {:.3}", *ns as f64 / 1e6)?;
        }
        f.flush()?;
    }
    let mut all: Vec<i64> = trips.into_iter().map(|t| t.1).collect();
    all.sort_unstable();
    let ms = |ns: i64| ns as f64 / 1e6;
    println!(
        "latency: {} msg/s in batches of {batch} on {n} connection(s), {} round trips - p50 {:.3}ms - p90 {:.3}ms - p99 {:.3}ms - p99.9 {:.3}ms - max {:.3}ms",
        a.rate,
        all.len(),
        ms(percentile(&all, 50.0)),
        ms(percentile(&all, 90.0)),
        ms(percentile(&all, 99.0)),
        ms(percentile(&all, 99.9)),
        ms(*all.last().unwrap_or(&0))
    );
    Ok(())
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// bench_writer's summary line.
fn summary(duration: Duration, msgs: u64, size: usize) -> String {
    let secs = duration.as_secs_f64();
    format!(
        "duration: {} - {:.03}mb/s - {:.03}ops/s - {:.03}us/op",
        crate::cli::format_duration(duration),
        msgs as f64 * size as f64 / secs / 1024.0 / 1024.0,
        msgs as f64 / secs,
        duration.as_micros() as f64 / msgs.max(1) as f64
    )
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    filled: usize,
}

impl Conn {
    fn connect(addr: &str) -> anyhow::Result<Conn> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.write_all(b"  V2")?;
        Ok(Conn {
            stream,
            buf: vec![0; 1 << 20],
            filled: 0,
        })
    }

    /// Read frames until `f` returns false; `f` gets every frame.
    fn read_frames(&mut self, mut f: impl FnMut(&[u8], &mut Self) -> bool) -> anyhow::Result<()> {
        loop {
            let mut at = 0;
            let mut go_on = true;
            while self.filled - at >= 8 {
                let size = u32::from_be_bytes(self.buf[at..at + 4].try_into()?) as usize;
                if self.filled - at < 4 + size {
                    break;
                }
                let frame = self.buf[at..at + 4 + size].to_vec();
                at += 4 + size;
                if !f(&frame, self) {
                    go_on = false;
                    break;
                }
            }
            self.buf.copy_within(at..self.filled, 0);
            self.filled -= at;
            if !go_on {
                return Ok(());
            }
            if self.filled == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self.stream.read(&mut self.buf[self.filled..])?;
            if n == 0 {
                anyhow::bail!("connection closed");
            }
            self.filled += n;
        }
    }
}

impl Conn {
    /// One read: hand every complete frame it completes to `f`, then return.
    fn read_once(&mut self, mut f: impl FnMut(&[u8])) -> std::io::Result<()> {
        if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = self.stream.read(&mut self.buf[self.filled..])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.filled += n;
        let mut at = 0;
        while self.filled - at >= 8 {
            let size =
                u32::from_be_bytes(self.buf[at..at + 4].try_into().unwrap_or_default()) as usize;
            if self.filled - at < 4 + size {
                break;
            }
            f(&self.buf[at..at + 4 + size]);
            at += 4 + size;
        }
        self.buf.copy_within(at..self.filled, 0);
        self.filled -= at;
        Ok(())
    }
}

/// Write `n` pipelined commands and wait for their `n` OK responses.
fn send_and_await_oks(c: &mut Conn, buf: &[u8], n: usize) -> anyhow::Result<()> {
    c.stream.write_all(buf)?;
    let mut oks = 0;
    c.read_frames(|f, _| {
        if frame_type(f) == 0 && &f[8..] == b"OK" {
            oks += 1;
        }
        oks < n
    })
}

/// A connection subscribed to `topic`/`c` (its OK read).
fn subscribe(addr: &str, topic: &str) -> anyhow::Result<Conn> {
    let mut c = Conn::connect(addr)?;
    let sub = Command::Sub {
        topic: topic.into(),
        channel: "c".into(),
    };
    c.stream.write_all(&sub.to_bytes())?;
    c.read_frames(|f, _| frame_type(f) != 0)?;
    Ok(c)
}

fn frame_type(frame: &[u8]) -> i32 {
    i32::from_be_bytes(frame[4..8].try_into().unwrap_or_default())
}

fn writer(a: WriterArgs) -> anyhow::Result<()> {
    let n = a.connections.unwrap_or_else(cores);
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let body = vec![b'a'; a.size];
    let mut cmd = Vec::new();
    Command::Mpub {
        topic: a.topic.as_str().into(),
        bodies: (0..a.batch_size).map(|_| body.clone().into()).collect(),
    }
    .encode(&mut cmd);
    let cmd = Arc::new(cmd);
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (count, stop, cmd, addr, batch) = (
                count.clone(),
                stop.clone(),
                cmd.clone(),
                a.tcp_address.clone(),
                a.batch_size as u64,
            );
            std::thread::spawn(move || -> anyhow::Result<()> {
                let mut c = Conn::connect(&addr)?;
                while !stop.load(Ordering::Relaxed) {
                    c.stream.write_all(&cmd)?;
                    let mut ok = false;
                    c.read_frames(|f, _| {
                        ok = frame_type(f) == 0 && &f[8..] != b"_heartbeat_";
                        !ok && frame_type(f) != 1
                    })?;
                    if !ok {
                        anyhow::bail!("MPUB failed");
                    }
                    count.fetch_add(batch, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(a.runfor);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("writer thread panicked"))??;
    }
    let d = start.elapsed();
    println!("{}", summary(d, count.load(Ordering::Relaxed), a.size));
    Ok(())
}

fn reader(a: ReaderArgs) -> anyhow::Result<()> {
    let n = a.connections.unwrap_or_else(cores);
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (count, stop, addr) = (count.clone(), stop.clone(), a.tcp_address.clone());
            let (topic, channel, rdy) = (a.topic.clone(), a.channel.clone(), a.rdy);
            std::thread::spawn(move || -> anyhow::Result<()> {
                let mut c = Conn::connect(&addr)?;
                c.stream
                    .write_all(&Command::Sub { topic, channel }.to_bytes())?;
                c.stream.write_all(&Command::Rdy(rdy).to_bytes())?;
                c.stream
                    .set_read_timeout(Some(Duration::from_millis(200)))?;
                let mut out = BufWriter::with_capacity(256 * 1024, c.stream.try_clone()?);
                while !stop.load(Ordering::Relaxed) {
                    let r = c.read_once(|f| {
                        if frame_type(f) == 2 {
                            // FIN <id>: the ID sits after the timestamp and attempts.
                            let _ = out.write_all(b"FIN ");
                            let _ = out.write_all(&f[18..34]);
                            let _ = out.write_all(b"\n");
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                    out.flush()?;
                    if let Err(e) = r {
                        if !matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) {
                            return Err(e.into());
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(a.runfor);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    let d = start.elapsed();
    println!("{}", summary(d, count.load(Ordering::Relaxed), a.size));
    Ok(())
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn lateness(a: LatenessArgs) -> anyhow::Result<()> {
    let topic = format!("lateness_{}", unix_ns() % 1_000_000_000);
    // SUB creates the channel just before the DPUBs.
    let mut consumer = subscribe(&a.tcp_address, &topic)?;
    consumer.stream.write_all(&Command::Rdy(2500).to_bytes())?;
    let mut producer = Conn::connect(&a.tcp_address)?;
    // Optional background load: messages due long after the run.
    for chunk in (0..a.background).collect::<Vec<_>>().chunks(10_000) {
        let mut buf = Vec::new();
        for _ in chunk {
            Command::Dpub {
                topic: topic.as_str().into(),
                defer_ms: 3_000_000,
                body: b"bg"[..].into(),
            }
            .encode(&mut buf);
        }
        send_and_await_oks(&mut producer, &buf, chunk.len())?;
    }
    // The measured messages: body = the defer in ms. A message is due at its publish
    // timestamp (the server's clock, in the message frame) plus its defer.
    let window = a.window.as_nanos() as u64;
    let base = a.base_delay.as_nanos() as u64;
    let mut buf = Vec::new();
    for i in 0..a.count as u64 {
        let defer_ms = (base + window * i / a.count.max(1) as u64) / 1_000_000;
        Command::Dpub {
            topic: topic.as_str().into(),
            defer_ms,
            body: defer_ms.to_string().into_bytes().into(),
        }
        .encode(&mut buf);
    }
    let sent_at = unix_ns();
    producer.stream.write_all(&buf)?;
    let send_ms = (unix_ns() - sent_at) as f64 / 1e6;
    let mut late: Vec<i64> = Vec::with_capacity(a.count);
    let mut early = 0usize;
    let deadline = Instant::now() + a.window + a.base_delay + Duration::from_secs(30);
    consumer
        .stream
        .set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut fins = Vec::new();
    while late.len() < a.count && Instant::now() < deadline {
        let _ = consumer.read_frames(|f, _| {
            if frame_type(f) == 2 {
                let arrived = unix_ns() as i64;
                let published = i64::from_be_bytes(f[8..16].try_into().unwrap_or_default());
                let defer_ms: i64 = std::str::from_utf8(&f[34..])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let due = published + defer_ms * 1_000_000;
                if arrived < due {
                    early += 1;
                }
                late.push(arrived - due);
                fins.extend_from_slice(b"FIN ");
                fins.extend_from_slice(&f[18..34]);
                fins.push(b'\n');
            }
            late.len() < a.count
        });
        consumer.stream.write_all(&fins)?;
        fins.clear();
    }
    late.sort_unstable();
    let ms = |ns: i64| ns as f64 / 1e6;
    println!(
        "lateness: {} of {} delivered ({} pending in background, sending took {send_ms:.1} ms) - p50 {:.3}ms - p99 {:.3}ms - max {:.3}ms - early {early}",
        late.len(),
        a.count,
        a.background,
        ms(percentile(&late, 50.0)),
        ms(percentile(&late, 99.0)),
        ms(*late.last().unwrap_or(&0)),
    );
    if late.len() < a.count {
        anyhow::bail!("only {} of {} messages arrived", late.len(), a.count);
    }
    Ok(())
}

fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/statm"))?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("statm"))?
        .parse()?;
    Ok(pages * 4096)
}

fn deferred_mem(a: DeferredMemArgs) -> anyhow::Result<()> {
    let topic = format!("defmem_{}", unix_ns() % 1_000_000_000);
    let c = subscribe(&a.tcp_address, &topic)?;
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_bytes(a.pid)?;
    let mut p = Conn::connect(&a.tcp_address)?;
    let body = vec![b'x'; a.size];
    let batch = 10_000;
    let mut sent = 0;
    while sent < a.count {
        let n = batch.min(a.count - sent);
        let mut buf = Vec::with_capacity(n * (a.size + 40));
        for _ in 0..n {
            let (topic, body) = (topic.as_str().into(), body.clone().into());
            let cmd = if a.backlog {
                Command::Pub { topic, body }
            } else {
                Command::Dpub {
                    topic,
                    defer_ms: 3_000_000,
                    body,
                }
            };
            cmd.encode(&mut buf);
        }
        send_and_await_oks(&mut p, &buf, n)?;
        sent += n;
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_bytes(a.pid)?;
    println!(
        "deferred-mem: {} pending {} {}-byte messages - RSS {:.1} MiB -> {:.1} MiB - {:.1} bytes per message",
        a.count,
        if a.backlog { "backlog" } else { "deferred" },
        a.size,
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        (after.saturating_sub(before)) as f64 / a.count as f64
    );
    drop(c);
    Ok(())
}
