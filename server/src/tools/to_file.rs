//! `nsqlab to_file` (and `nsq_to_file`): write each topic's messages to files, one body per
//! line, rotating by time, size or datetime, optionally gzipped, as nsq_to_file.
//!
//! # Format
//! File names come from `--filename-format` (default `<TOPIC>.<HOST><REV>.<DATETIME>.log`):
//! `<TOPIC>`, `<HOST>` (short hostname or `--host-identifier`), `<PID>`, `<DATETIME>`
//! (`--datetime-format`, strftime, local time) and `<REV>` (`-000000`, `-000001`, … ; required
//! with gzip, rotation or a separate `--work-dir`, removed otherwise); `.gz` is appended with
//! `--gzip`. A message is FINished only once its line is synced to disk. With `--work-dir`,
//! a finished file is moved (hard link, then unlink) to `--output-dir`.
//!
//! Differences from nsq_to_file: literal text in `--datetime-format` is kept as written (Go
//! re-reads digits such as `1` as layout fields), and a file is synced whenever the
//! messages that arrived so far are written (not only when the consumer is nearly starved).

use crate::client::{consume, http_get_json, ClientConfig, Delivery, Discovery};
use clap::{ArgAction, Parser};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

#[derive(Debug, Clone, Parser)]
#[command(name = "nsqd", disable_version_flag = true)]
pub struct ToFileArgs {
    /// nsq channel
    #[arg(long, default_value = "nsq_to_file")]
    pub channel: String,
    /// option to passthrough to nsq.Consumer (may be given multiple times, http://godoc.org/github.com/nsqio/go-nsq#Config)
    #[arg(long, action = ArgAction::Append)]
    pub consumer_opt: Vec<String>,
    /// strftime compatible format for <DATETIME> in filename format
    #[arg(long, default_value = "%Y-%m-%d_%H")]
    pub datetime_format: String,
    /// output filename format (<TOPIC>, <HOST>, <PID>, <DATETIME>, <REV> are replaced. <REV> is increased when file already exists)
    #[arg(long, default_value = "<TOPIC>.<HOST><REV>.<DATETIME>.log")]
    pub filename_format: String,
    /// gzip output files.
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub gzip: bool,
    /// gzip compression level (1-9, 1=BestSpeed, 9=BestCompression)
    #[arg(long, default_value_t = 6)]
    pub gzip_level: i64,
    /// value to output in log filename in place of hostname. <SHORT_HOST> and <HOSTNAME> are valid replacement tokens
    #[arg(long, default_value = "")]
    pub host_identifier: String,
    /// timeout for HTTP connect
    #[arg(long, default_value = "2s", value_parser = crate::cli::duration_arg)]
    pub http_client_connect_timeout: Duration,
    /// timeout for HTTP request
    #[arg(long, default_value = "5s", value_parser = crate::cli::duration_arg)]
    pub http_client_request_timeout: Duration,
    /// set log verbosity: debug, info, warn, error, or fatal
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// log message prefix
    #[arg(long, default_value = "[nsq_to_file] ")]
    pub log_prefix: String,
    /// lookupd HTTP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub lookupd_http_address: Vec<String>,
    /// max number of messages to allow in flight
    #[arg(long, default_value_t = 200)]
    pub max_in_flight: i64,
    /// nsqd TCP address (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub nsqd_tcp_address: Vec<String>,
    /// directory to write output files to
    #[arg(long, default_value = "/tmp")]
    pub output_dir: String,
    /// rotate the file every duration
    #[arg(long, default_value = "0", value_parser = crate::cli::duration_arg)]
    pub rotate_interval: Duration,
    /// rotate the file when it grows bigger than `rotate-size` bytes
    #[arg(long, default_value_t = 0)]
    pub rotate_size: i64,
    /// skip writing empty files
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub skip_empty_files: bool,
    /// sync file to disk every duration
    #[arg(long, default_value = "30s", value_parser = crate::cli::duration_arg)]
    pub sync_interval: Duration,
    /// nsq topic (may be given multiple times)
    #[arg(long, action = ArgAction::Append)]
    pub topic: Vec<String>,
    /// only log topics matching the following pattern
    #[arg(long, default_value = "")]
    pub topic_pattern: String,
    /// how frequently the topic list should be refreshed
    #[arg(long, default_value = "1m0s", value_parser = crate::cli::duration_arg)]
    pub topic_refresh: Duration,
    /// print version string
    #[arg(long, value_parser = crate::cli::go_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub version: bool,
    /// directory for in-progress files before moving to output-dir
    #[arg(long, default_value = "")]
    pub work_dir: String,
    /// (positional arguments are refused, as nsq_to_file)
    #[arg(hide = true)]
    pub rest: Vec<String>,
}

pub fn main(args: Vec<String>) {
    let mut a = crate::cli::parse::<ToFileArgs>(args);
    if !a.rest.is_empty() {
        super::fatal(format!("unknown arguments: [{}]", a.rest.join(" ")));
    }
    if crate::logging::parse_level(&a.log_level).is_err() {
        super::fatal("--log-level is invalid");
    }
    if a.version {
        println!("nsq_to_file v{}", nsqlab_core::VERSION);
        return;
    }
    if a.channel.is_empty() {
        super::fatal("--channel is required");
    }
    if a.http_client_connect_timeout.is_zero() {
        super::fatal("--http-client-connect-timeout should be positive");
    }
    if a.http_client_request_timeout.is_zero() {
        super::fatal("--http-client-request-timeout should be positive");
    }
    if a.nsqd_tcp_address.is_empty() && a.lookupd_http_address.is_empty() {
        super::fatal("--nsqd-tcp-address or --lookupd-http-address required.");
    }
    if !a.nsqd_tcp_address.is_empty() && !a.lookupd_http_address.is_empty() {
        super::fatal("use --nsqd-tcp-address or --lookupd-http-address not both");
    }
    if !(1..=9).contains(&a.gzip_level) {
        super::fatal(format!(
            "invalid --gzip-level value ({}), should be 1-9",
            a.gzip_level
        ));
    }
    if a.topic.is_empty() && a.topic_pattern.is_empty() {
        super::fatal("--topic or --topic-pattern required");
    }
    if a.topic.is_empty() && a.lookupd_http_address.is_empty() {
        super::fatal("--lookupd-http-address must be specified when no --topic specified");
    }
    if a.work_dir.is_empty() {
        a.work_dir = a.output_dir.clone();
    }
    let mut cfg = ClientConfig::default();
    for o in &a.consumer_opt {
        if let Err(e) = cfg.set(o) {
            super::fatal(e);
        }
    }
    cfg.user_agent = format!("nsq_to_file/{} nsqlab", nsqlab_core::VERSION);
    cfg.max_in_flight = a.max_in_flight;
    cfg.http_timeout = a.http_client_request_timeout;
    let _ = crate::logging::init(&a.log_prefix, &a.log_level);
    super::runtime().block_on(run(a, cfg));
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Control {
    Hup,
    Term,
}

async fn run(a: ToFileArgs, cfg: ClientConfig) {
    let (ctl_tx, _) = broadcast::channel::<Control>(16);
    let (stop_tx, stop_rx) = watch::channel(false);
    let pattern = (!a.topic_pattern.is_empty()).then(|| regex::Regex::new(&a.topic_pattern));
    let allowed = |t: &str| match &pattern {
        None => true,
        Some(Ok(re)) => re.is_match(t),
        Some(Err(_)) => false,
    };
    let mut known: Vec<String> = Vec::new();
    let mut loggers = Vec::new();
    let mut start = |topics: Vec<String>, known: &mut Vec<String>| {
        for t in topics {
            if known.contains(&t) {
                continue;
            }
            known.push(t.clone());
            if !allowed(&t) {
                tracing::warn!(
                    "skipping topic {t} (doesn't match pattern {})",
                    a.topic_pattern
                );
                continue;
            }
            match FileLogger::new(&a, &t) {
                Ok(fl) => {
                    let how = if a.nsqd_tcp_address.is_empty() {
                        Discovery::Lookupd(a.lookupd_http_address.clone())
                    } else {
                        Discovery::Nsqd(a.nsqd_tcp_address.clone())
                    };
                    let rx = consume(t, a.channel.clone(), how, cfg.clone(), stop_rx.clone());
                    loggers.push(tokio::spawn(fl.router(rx, ctl_tx.subscribe())));
                }
                Err(e) => tracing::error!("couldn't create logger for new topic {t}: {e}"),
            }
        }
    };
    start(a.topic.clone(), &mut known);
    let refresh = a.topic.is_empty();
    let mut tick = tokio::time::interval(a.topic_refresh.max(Duration::from_millis(10)));
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick(), if refresh => {
                match topics(&a.lookupd_http_address, a.http_client_request_timeout).await {
                    Ok(ts) => start(ts, &mut known),
                    Err(e) => tracing::error!("could not retrieve topic list: {e}"),
                }
            }
            sig = super::termination(true) => {
                if sig == "SIGHUP" {
                    let _ = ctl_tx.send(Control::Hup);
                } else {
                    // The loggers sync and FIN what they wrote; then the consumers close
                    // (what they still held goes back to nsqd unFINished).
                    let _ = ctl_tx.send(Control::Term);
                    break;
                }
            }
        }
    }
    for l in loggers {
        let _ = l.await;
    }
    let _ = stop_tx.send(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Every lookupd's topics, merged and sorted (any failure fails the refresh).
async fn topics(lookupds: &[String], timeout: Duration) -> Result<Vec<String>, String> {
    let mut all = Vec::new();
    for l in lookupds {
        let v = http_get_json(l, "/topics", timeout).await?;
        for t in v["topics"].as_array().cloned().unwrap_or_default() {
            if let Some(t) = t.as_str() {
                all.push(t.to_string());
            }
        }
    }
    all.sort();
    all.dedup();
    Ok(all)
}

enum Writer {
    Plain(File),
    Gzip(flate2::write::GzEncoder<File>),
    /// Only while a gzip member is being finished.
    Swapping,
}

struct Open {
    writer: Writer,
    /// The path written to (in the work dir).
    path: PathBuf,
    opened: Instant,
}

/// One topic's files.
struct FileLogger {
    topic: String,
    channel: String,
    /// The filename format with everything but `<DATETIME>` and `<REV>` filled in.
    template: String,
    datetime_format: String,
    work_dir: PathBuf,
    output_dir: PathBuf,
    gzip: Option<u32>,
    rotate_size: i64,
    rotate_interval: Duration,
    skip_empty: bool,
    sync_interval: Duration,
    max_in_flight: usize,
    /// The current name (with `<DATETIME>`, still with `<REV>`).
    filename: String,
    rev: u32,
    filesize: i64,
    out: Option<Open>,
}

fn short_hostname() -> (String, String) {
    let h = crate::common::hostname();
    let short = h.split('.').next().unwrap_or_default().to_string();
    (h, short)
}

impl FileLogger {
    fn new(a: &ToFileArgs, topic: &str) -> Result<FileLogger, String> {
        let (host, short) = short_hostname();
        let identifier = if a.host_identifier.is_empty() {
            short.clone()
        } else {
            a.host_identifier
                .replace("<SHORT_HOST>", &short)
                .replace("<HOSTNAME>", &host)
        };
        let mut t = a.filename_format.clone();
        let needs_rev = a.gzip
            || a.rotate_size > 0
            || !a.rotate_interval.is_zero()
            || a.work_dir != a.output_dir;
        if needs_rev {
            if !t.contains("<REV>") {
                return Err(
                    "missing <REV> in --filename-format when gzip, rotation, or work dir enabled"
                        .into(),
                );
            }
        } else {
            t = t.replace("<REV>", "");
        }
        t = t
            .replace("<TOPIC>", topic)
            .replace("<HOST>", &identifier)
            .replace("<PID>", &std::process::id().to_string());
        if a.gzip && !t.ends_with(".gz") {
            t.push_str(".gz");
        }
        Ok(FileLogger {
            topic: topic.to_string(),
            channel: a.channel.clone(),
            template: t,
            datetime_format: literal_unknown(&a.datetime_format),
            work_dir: PathBuf::from(&a.work_dir),
            output_dir: PathBuf::from(&a.output_dir),
            gzip: a.gzip.then_some(a.gzip_level as u32),
            rotate_size: a.rotate_size,
            rotate_interval: a.rotate_interval,
            skip_empty: a.skip_empty_files,
            sync_interval: a.sync_interval.max(Duration::from_millis(1)),
            max_in_flight: a.max_in_flight.max(1) as usize,
            filename: String::new(),
            rev: 0,
            filesize: 0,
            out: None,
        })
    }

    fn tag(&self) -> String {
        format!("[{}/{}]", self.topic, self.channel)
    }

    fn current_filename(&self) -> String {
        let dt = chrono::Local::now()
            .format(&self.datetime_format)
            .to_string();
        self.template.replace("<DATETIME>", &dt)
    }

    fn needs_rotation(&self) -> bool {
        let Some(o) = &self.out else { return true };
        let name = self.current_filename();
        if name != self.filename {
            tracing::info!("{} new filename {name}, rotating...", self.tag());
            return true;
        }
        if !self.rotate_interval.is_zero() && o.opened.elapsed() > self.rotate_interval {
            tracing::info!(
                "{} {} since last open, rotating...",
                self.tag(),
                nsqlab_core::time::go_duration(o.opened.elapsed().as_nanos() as u64)
            );
            return true;
        }
        if self.rotate_size > 0 && self.filesize > self.rotate_size {
            tracing::info!(
                "{} {} currently {} bytes (> {}), rotating...",
                self.tag(),
                o.path.display(),
                self.filesize,
                self.rotate_size
            );
            return true;
        }
        false
    }

    fn fatal(&self, what: impl std::fmt::Display) -> ! {
        tracing::error!("{} {what}", self.tag());
        std::process::exit(1);
    }

    fn with_rev(&self, s: &str, rev: u32) -> String {
        s.replace("<REV>", &format!("-{rev:06}"))
    }

    fn update_file(&mut self) {
        self.close();
        let name = self.current_filename();
        if name != self.filename {
            self.rev = 0;
        } else {
            self.rev += 1;
        }
        self.filename = name;
        let full = self.work_dir.join(&self.filename);
        make_dir(&full).unwrap_or_else(|e| self.fatal(format!("unable to create dir: {e}")));
        let exclusive = self.gzip.is_some() || !self.rotate_interval.is_zero();
        loop {
            let abs = PathBuf::from(self.with_rev(&full.to_string_lossy(), self.rev));
            if self.work_dir != self.output_dir {
                let dst = self.output_path(&abs);
                let _ = make_dir(&dst);
                if dst.exists() {
                    tracing::warn!(
                        "{} output file already exists: {}",
                        self.tag(),
                        dst.display()
                    );
                    self.rev += 1;
                    continue;
                }
            }
            let mut oo = OpenOptions::new();
            oo.write(true);
            if exclusive {
                oo.create_new(true);
            } else {
                oo.create(true).append(true);
            }
            let f = match oo.open(&abs) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    tracing::warn!(
                        "{} working file already exists: {}",
                        self.tag(),
                        abs.display()
                    );
                    self.rev += 1;
                    continue;
                }
                Err(e) => self.fatal(format!("unable to open {}: {e}", abs.display())),
            };
            tracing::info!("{} opening {}", self.tag(), abs.display());
            self.filesize = f.metadata().map(|m| m.len() as i64).unwrap_or(0);
            if self.rotate_size > 0 && self.filesize > self.rotate_size {
                tracing::info!(
                    "{} {} currently {} bytes (> {}), rotating...",
                    self.tag(),
                    abs.display(),
                    self.filesize,
                    self.rotate_size
                );
                self.rev += 1;
                continue;
            }
            let writer = match self.gzip {
                Some(level) => Writer::Gzip(flate2::write::GzEncoder::new(
                    f,
                    flate2::Compression::new(level),
                )),
                None => Writer::Plain(f),
            };
            self.out = Some(Open {
                writer,
                path: abs,
                opened: Instant::now(),
            });
            return;
        }
    }

    fn output_path(&self, work_path: &Path) -> PathBuf {
        let rel = work_path.strip_prefix(&self.work_dir).unwrap_or(work_path);
        self.output_dir.join(rel)
    }

    fn write(&mut self, body: &[u8]) {
        let Some(o) = self.out.as_mut() else { return };
        let r = match &mut o.writer {
            Writer::Plain(f) => f.write_all(body).and_then(|_| f.write_all(b"\n")),
            Writer::Gzip(g) => g.write_all(body).and_then(|_| g.write_all(b"\n")),
            Writer::Swapping => Err(std::io::Error::other("file already closed")),
        };
        if let Err(e) = r {
            self.fatal(format!("writing message to disk: {e}"));
        }
        self.filesize += body.len() as i64 + 1;
    }

    /// fsync (a gzip member ends here; the next write starts a new one).
    fn sync(&mut self) {
        let level = self.gzip;
        let Some(o) = self.out.as_mut() else { return };
        let r = match std::mem::replace(&mut o.writer, Writer::Swapping) {
            Writer::Plain(f) => {
                let r = f.sync_all();
                o.writer = Writer::Plain(f);
                r
            }
            Writer::Gzip(g) => match g.finish() {
                Ok(f) => {
                    let r = f.sync_all();
                    o.writer = Writer::Gzip(flate2::write::GzEncoder::new(
                        f,
                        flate2::Compression::new(level.unwrap_or(6)),
                    ));
                    r
                }
                Err(e) => Err(e),
            },
            Writer::Swapping => Ok(()),
        };
        if let Err(e) = r {
            self.fatal(format!("failed syncing messages: {e}"));
        }
    }

    fn close(&mut self) {
        let Some(o) = self.out.take() else { return };
        let f = match o.writer {
            Writer::Plain(f) => f,
            Writer::Gzip(g) => g
                .finish()
                .unwrap_or_else(|e| self.fatal(format!("failed to close GZIP writer: {e}"))),
            Writer::Swapping => return,
        };
        if let Err(e) = f.sync_all() {
            self.fatal(format!("failed to fsync output file: {e}"));
        }
        drop(f);
        if self.work_dir == self.output_dir {
            return;
        }
        let src = o.path;
        let dst = self.output_path(&src);
        tracing::info!(
            "{} moving finished file {} to {}",
            self.tag(),
            src.display(),
            dst.display()
        );
        match exclusive_rename(&src, &dst) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let (dir, tmpl) = (
                    dst.parent().map(Path::to_path_buf).unwrap_or_default(),
                    Path::new(&self.filename)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                );
                let mut i = self.rev + 1;
                loop {
                    tracing::warn!(
                        "{} destination file already exists: {}",
                        self.tag(),
                        dst.display()
                    );
                    let d = dir.join(self.with_rev(&tmpl, i));
                    match exclusive_rename(&src, &d) {
                        Ok(()) => {
                            tracing::info!(
                                "{} renamed finished file {} to {} to avoid overwrite",
                                self.tag(),
                                src.display(),
                                d.display()
                            );
                            break;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => i += 1,
                        Err(e) => self.fatal(format!(
                            "unable to rename file from {} to {}: {e}",
                            src.display(),
                            d.display()
                        )),
                    }
                }
            }
            Err(e) => self.fatal(format!(
                "unable to move file from {} to {}: {e}",
                src.display(),
                dst.display()
            )),
        }
    }

    /// The per-topic loop: write, sync, FIN after the sync, rotate, obey HUP and TERM.
    async fn router(
        mut self,
        mut rx: tokio::sync::mpsc::Receiver<Delivery>,
        mut ctl: broadcast::Receiver<Control>,
    ) {
        let mut pending: Vec<Delivery> = Vec::new();
        let mut tick = tokio::time::interval(self.sync_interval);
        tick.tick().await;
        loop {
            let mut sync = false;
            let mut close = false;
            let mut exit = false;
            tokio::select! {
                m = rx.recv() => match m {
                    Some(d) => {
                        if self.needs_rotation() {
                            self.update_file();
                            sync = true;
                        }
                        self.write(&d.msg.body);
                        pending.push(d);
                        if pending.len() >= self.max_in_flight {
                            sync = true;
                        }
                        // Nothing more waiting: the batch so far goes to disk.
                        if rx.is_empty() {
                            sync = true;
                        }
                    }
                    None => {
                        sync = true;
                        close = true;
                        exit = true;
                    }
                },
                c = ctl.recv() => match c {
                    Ok(Control::Hup) => {
                        sync = true;
                        close = true;
                    }
                    _ => {
                        sync = true;
                        close = true;
                        exit = true;
                    }
                },
                _ = tick.tick() => {
                    if self.needs_rotation() {
                        if self.skip_empty {
                            close = true;
                        } else {
                            self.update_file();
                        }
                    }
                    sync = true;
                }
            }
            if sync && !pending.is_empty() {
                tracing::info!("{} syncing {} records to disk", self.tag(), pending.len());
                self.sync();
                for d in pending.drain(..) {
                    d.finish();
                }
            }
            if close {
                self.close();
            }
            if exit {
                // FINs out before the connections close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                break;
            }
        }
    }
}

fn make_dir(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => std::fs::create_dir_all(d),
        _ => Ok(()),
    }
}

/// Link then unlink: never overwrites.
fn exclusive_rename(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::hard_link(src, dst)?;
    std::fs::remove_file(src)
}

/// A `--datetime-format` chrono can always format: as nsq_to_file's strftime, a `%` sequence
/// it does not know (or a `%` at the end) stands for itself (chrono would fail on it).
fn literal_unknown(format: &str) -> String {
    use chrono::format::{Item, StrftimeItems};
    let mut out = String::with_capacity(format.len());
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(n) => {
                let spec = format!("%{n}");
                if StrftimeItems::new(&spec).any(|i| matches!(i, Item::Error)) {
                    out.push_str("%%");
                    out.push(n);
                } else {
                    out.push_str(&spec);
                }
            }
            None => out.push_str("%%"),
        }
    }
    out
}

#[cfg(test)]
mod datetime_tests {
    #[test]
    fn unknown_sequences_stand_for_themselves() {
        let t = chrono::NaiveDate::from_ymd_opt(2026, 12, 1)
            .unwrap()
            .and_hms_opt(7, 5, 0)
            .unwrap();
        for (format, want) in [
            ("%Y-%m-%d_%H", "2026-12-01_07"),
            ("%Q-%Y", "%Q-2026"),
            ("%H%", "07%"),
            ("100%%", "100%"),
        ] {
            let f = super::literal_unknown(format);
            assert_eq!(t.format(&f).to_string(), want, "{format}");
        }
    }
}
