//! Helpers for black-box tests: start the real `nsqlab` binary the way NSQ client test
//! harnesses start nsqd (a symlink named `nsqd`, single-dash flags, port 0, then read the
//! `TCP: listening on` / `HTTP: listening on` lines), and speak raw bytes to it.

use nsqlab_core::protocol::{decode_frame, Frame};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The workspace's target directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// The `nsqlab` binary, built once if needed (`NSQLAB_BIN` overrides).
pub fn binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("NSQLAB_BIN") {
            return PathBuf::from(p);
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "nsqlab", "--bin", "nsqlab"])
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building nsqlab failed");
        target_dir().join("debug/nsqlab")
    })
    .clone()
}

/// A symlink to the binary named `name` (e.g. `nsqd`) in a fresh temp directory.
pub fn symlink_as(name: &str) -> (tempdir::TempDir, PathBuf) {
    let dir = tempdir::TempDir::new();
    let link = dir.path().join(name);
    #[cfg(unix)]
    std::os::unix::fs::symlink(binary(), &link).expect("symlink");
    (dir, link)
}

/// A minimal temp dir (removed on drop).
/// Temporary directories for tests: `tempfile`'s, made where a test cannot go on without one.
pub mod tempdir {
    use std::path::Path;

    /// A fresh directory, removed with everything in it when dropped.
    pub struct TempDir(tempfile::TempDir);

    impl TempDir {
        pub fn new() -> TempDir {
            let d = tempfile::Builder::new().prefix("nsqlab-test-").tempdir();
            TempDir(d.expect("temp dir"))
        }

        pub fn path(&self) -> &Path {
            self.0.path()
        }
    }

    impl Default for TempDir {
        fn default() -> Self {
            Self::new()
        }
    }
}

/// A fresh self-signed certificate (for `localhost` and `127.0.0.1`) and its key, written to
/// `dir`: nsqd's `-tls-cert=…` and `-tls-key=…` flags.
pub fn tls_flags(dir: &Path) -> [String; 2] {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("cert");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("write cert");
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).expect("write key");
    [
        format!("-tls-cert={}", cert_path.display()),
        format!("-tls-key={}", key_path.display()),
    ]
}

/// Something the README's test command installs that a plain `cargo test` checkout may lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// The interop venv's Python, with pynsq and gnsq (`target/venv-interop`).
    Python,
    /// nsqjs from npm (`target/node-interop`).
    Nsqjs,
    /// playwright-core and axe-core from npm (`target/node-tools`), for the page tests.
    PageTools,
    /// Debian's Chromium, which the page tests drive.
    Chromium,
    /// gnsq 1.0.2's own test suite, from its sdist (`target/gnsq-suite`), with pytest and
    /// pytest-timeout in the interop venv.
    GnsqSuite,
}

impl Tool {
    /// Where it is, and the file whose presence says it is installed.
    fn paths(self) -> (PathBuf, PathBuf, &'static str) {
        match self {
            Tool::Python => {
                let p = target_dir().join("venv-interop/bin/python");
                (p.clone(), p, "pynsq and gnsq")
            }
            Tool::Nsqjs => {
                let d = target_dir().join("node-interop");
                (d.clone(), d.join("node_modules/nsqjs"), "nsqjs")
            }
            Tool::PageTools => {
                let d = target_dir().join("node-tools");
                let p = d.join("node_modules/axe-core/axe.min.js");
                (d, p, "playwright-core and axe-core")
            }
            Tool::Chromium => {
                let p = PathBuf::from("/usr/bin/chromium");
                (p.clone(), p, "Debian's chromium")
            }
            Tool::GnsqSuite => {
                let d = target_dir().join("gnsq-suite");
                (
                    d.join("gnsq-1.0.2"),
                    d.join("ready"),
                    "gnsq's own test suite",
                )
            }
        }
    }
}

/// NSQ v1.3.0's own program `name` (`nsqd`, `nsq_tail`, `nsqadmin`, …), for the tests that
/// compare with it or run it against nsqlab: in `NSQ_BIN`, else `../shared/nsq-v1.3.0/bin`
/// beside the checkout, else this machine kind's `/work/shared/nsq-v1.3.0/bin` (for a clone
/// made elsewhere, as a fresh-clone check is). `None` when it is in none of them.
pub fn nsq_v13(name: &str) -> Option<PathBuf> {
    let dirs = [
        std::env::var_os("NSQ_BIN").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/nsq-v1.3.0/bin")),
        Some(PathBuf::from("/work/shared/nsq-v1.3.0/bin")),
    ];
    dirs.into_iter()
        .flatten()
        .map(|d| d.join(name))
        .find(|p| p.exists())
}

/// `tool`'s path, or `None` when it is not installed: the caller then returns, and the test is
/// skipped with a message on stderr. Under the README's test command (which sets
/// `NSQLAB_ALL_TOOLS`), a missing tool fails the test instead.
pub fn need(tool: Tool) -> Option<PathBuf> {
    let (path, marker, what) = tool.paths();
    let installed = marker.exists()
        && (tool != Tool::PageTools || path.join("node_modules/playwright-core").exists());
    if installed {
        return Some(path);
    }
    let why = format!(
        "{} is missing: run scripts/test.sh (it installs {what})",
        marker.display()
    );
    assert!(std::env::var_os("NSQLAB_ALL_TOOLS").is_none(), "{why}");
    // Straight to the process's stderr, past the test harness's capture: a plain `cargo test`
    // shows which checks it skipped.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
    None
}

/// Run `tests/interop/<script>` with `args` in the interop venv (pynsq and gnsq, installed by
/// the README's test command) and assert it passed every check ("N passed, 0 failed"). Without
/// the venv the check is skipped (see [`need`]).
pub fn python_check(script: &str, args: &[String]) {
    let Some(python) = need(Tool::Python) else {
        return;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(script);
    let out = Command::new(python)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(path)
        .args(args)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} {args:?} failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// A real, small file system that fills: a tmpfs of `size` bytes mounted on a fresh temp
/// directory (unmounted when dropped). Needs root (`mount`), as CI has; a test that needs it
/// fails, not skips, without it.
pub struct Tmpfs {
    dir: tempdir::TempDir,
}

impl Tmpfs {
    pub fn new(size: u64) -> Tmpfs {
        let dir = tempdir::TempDir::new();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "mount -t tmpfs (the test needs root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes free for writing.
    pub fn free(&self) -> u64 {
        let out = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(self.path())
            .output()
            .expect("run df");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .expect("df's answer")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A running nsqd.
pub struct Nsqd {
    child: Child,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    /// Log lines after the listening lines.
    pub log: mpsc::Receiver<String>,
    _dir: tempdir::TempDir,
}

impl Nsqd {
    /// Start `nsqd -tcp-address=127.0.0.1:0 -http-address 127.0.0.1:0
    /// -https-address=127.0.0.1:0 <extra>` through a symlink named `nsqd` (HTTPS is only bound
    /// when a certificate is given, as in nsqd).
    pub fn start(extra: &[&str]) -> Nsqd {
        Nsqd::start_in(None, extra)
    }

    /// [`Nsqd::start`] with its working directory — nsqd's default `--data-path` — in `data`
    /// (to restart on the same data), else in a fresh temp directory.
    pub fn start_in(data: Option<&std::path::Path>, extra: &[&str]) -> Nsqd {
        Nsqd::start_wrapped(data, extra, &[])
    }

    /// [`Nsqd::start_in`] run by `wrapper` (a command that runs the rest of its arguments,
    /// e.g. `prlimit --fsize=1:`): the process keeps the wrapper's PID once it `exec`s.
    pub fn start_wrapped(data: Option<&std::path::Path>, extra: &[&str], wrapper: &[&str]) -> Nsqd {
        let (dir, link) = symlink_as("nsqd");
        let cwd = data.unwrap_or(dir.path()).to_path_buf();
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&link);
                c
            }
            None => Command::new(&link),
        };
        let mut child = cmd
            .current_dir(cwd)
            .args([
                "-tcp-address=127.0.0.1:0",
                "-http-address",
                "127.0.0.1:0",
                "-https-address=127.0.0.1:0",
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nsqd");
        let (tcp, http, log) = listening_lines(&mut child);
        Nsqd {
            child,
            tcp,
            http,
            log,
            _dir: dir,
        }
    }

    /// A raw TCP client that has sent the V2 magic.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.tcp);
        c.send(b"  V2");
        c
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's exit status, if it has exited (on its own: nothing was sent to it).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("wait")
    }

    /// SIGKILL: the process dies at once, mid-write if it was writing.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Send SIGTERM and wait for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        #[cfg(unix)]
        unsafe_kill(self.child.id(), 15);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "nsqd did not exit on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// An HTTP request; returns (status, headers lowercased, body).
    pub fn http(&self, method: &str, path: &str, body: &[u8]) -> HttpResponse {
        http_request(self.http, method, path, body)
    }
}

/// Send SIGTERM to a process.
pub fn sigterm(pid: u32) {
    #[cfg(unix)]
    unsafe_kill(pid, 15);
}

/// Stop a process (SIGSTOP) as a machine that hangs does: its connections stay open, it
/// answers nothing until [`sigcont`].
pub fn sigstop(pid: u32) {
    #[cfg(unix)]
    unsafe_kill(pid, 19);
}

/// Let a process stopped by [`sigstop`] go on.
pub fn sigcont(pid: u32) {
    #[cfg(unix)]
    unsafe_kill(pid, 18);
}

#[cfg(unix)]
fn unsafe_kill(pid: u32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

impl Drop for Nsqd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running nsqlookupd (through a symlink named `nsqlookupd`).
pub struct Nsqlookupd {
    child: Child,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    pub log: mpsc::Receiver<String>,
    _dir: tempdir::TempDir,
}

impl Nsqlookupd {
    /// `nsqlookupd -tcp-address=127.0.0.1:0 -http-address=127.0.0.1:0
    /// -broadcast-address=127.0.0.1 <extra>` (later flags win).
    pub fn start(extra: &[&str]) -> Nsqlookupd {
        let (dir, link) = symlink_as("nsqlookupd");
        let mut child = Command::new(&link)
            .args([
                "-tcp-address=127.0.0.1:0",
                "-http-address=127.0.0.1:0",
                "-broadcast-address=127.0.0.1",
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nsqlookupd");
        let (tcp, http, log) = listening_lines(&mut child);
        Nsqlookupd {
            child,
            tcp,
            http,
            log,
            _dir: dir,
        }
    }

    pub fn http(&self, method: &str, path: &str, body: &[u8]) -> HttpResponse {
        http_request(self.http, method, path, body)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nsqlookupd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read a child's stderr until its `TCP: listening on` and `HTTP: listening on` lines.
fn listening_lines(child: &mut Child) -> (SocketAddr, SocketAddr, mpsc::Receiver<String>) {
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut tcp, mut http) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while tcp.is_none() || http.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("the listening lines ({e}); it said: {seen:#?}"));
        seen.push(line.clone());
        let addr = |l: &str, tag: &str| -> Option<SocketAddr> {
            l.split(tag).nth(1).and_then(|a| a.trim().parse().ok())
        };
        tcp = tcp.or_else(|| addr(&line, "TCP: listening on "));
        http = http.or_else(|| addr(&line, "HTTP: listening on "));
    }
    (tcp.unwrap(), http.unwrap(), rx)
}

/// One of NSQ's tools (`nsq_tail`, `nsq_to_file`, `to_nsq`, `nsq_stat`) through a symlink with
/// its name; keep the returned directory alive while the command runs.
pub fn tool(name: &str) -> (tempdir::TempDir, Command) {
    let (dir, link) = symlink_as(name);
    (dir, Command::new(link))
}

/// A raw protocol client.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).ok();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, b: &[u8]) {
        self.stream.write_all(b).expect("write");
    }

    pub fn cmd(&mut self, c: &nsqlab_core::protocol::Command) {
        self.send(&c.to_bytes());
    }

    /// Read once, waiting at most until `deadline`, into the buffer.
    fn read_until(&mut self, deadline: Instant) -> ReadOutcome {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return ReadOutcome::TimedOut;
        }
        self.stream.set_read_timeout(Some(left)).ok();
        let mut tmp = [0u8; 65536];
        match self.stream.read(&mut tmp) {
            Ok(0) => ReadOutcome::Closed,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                ReadOutcome::Data
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                ReadOutcome::TimedOut
            }
            Err(_) => ReadOutcome::Closed,
        }
    }

    /// The next frame, or `None` if the server closed the connection (or `timeout` passed).
    pub fn frame_within(&mut self, timeout: Duration) -> Option<Frame> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some((f, n))) = decode_frame(&self.buf) {
                self.buf.drain(..n);
                return Some(f);
            }
            if self.read_until(deadline) != ReadOutcome::Data {
                return None;
            }
        }
    }

    pub fn frame(&mut self) -> Frame {
        self.frame_within(Duration::from_secs(10)).expect("a frame")
    }

    /// The next frame's text, prefixed `R:` (response), `E:` (error) or `M:` (message body).
    pub fn next_text(&mut self) -> String {
        match self.frame() {
            Frame::Response(r) => format!("R:{}", String::from_utf8_lossy(&r)),
            Frame::Error(e) => format!("E:{}", String::from_utf8_lossy(&e)),
            Frame::Message(m) => format!("M:{}", String::from_utf8_lossy(&m.body)),
            Frame::Unknown(t, _) => format!("?:{t}"),
        }
    }

    /// True once the server has closed the connection (within `timeout`).
    pub fn closed_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match self.read_until(deadline) {
                ReadOutcome::Data => continue,
                ReadOutcome::Closed => return true,
                ReadOutcome::TimedOut => return false,
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum ReadOutcome {
    Data,
    Closed,
    TimedOut,
}

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// A one-shot HTTP/1.1 request with `Connection: close`.
pub fn http_request(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> HttpResponse {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body);
    http_raw(addr, &raw)
}

/// Send `request` (head and body, as given) and read the response until the server closes.
pub fn http_raw(addr: SocketAddr, request: &[u8]) -> HttpResponse {
    let mut s = TcpStream::connect(addr).expect("connect http");
    // The server may answer (and close) before reading a body it refuses.
    let _ = s.write_all(request);
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read http response");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(nl) = b[i..].windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[i..i + nl]).unwrap_or("0").trim(), 16)
                .unwrap_or(0);
        i += nl + 2;
        if size == 0 {
            break;
        }
        out.extend_from_slice(&b[i..i + size]);
        i += size + 2;
    }
    out
}
