//! NSQ's utilities (the real binary through symlinks named `nsq_tail`, `nsq_to_file`,
//! `to_nsq`, `nsq_stat`) against a real server.

use nsqlab_tests::tempdir::TempDir;
use nsqlab_tests::{tool, Nsqd};
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn channel_stats(d: &Nsqd, topic: &str, channel: &str) -> serde_json::Value {
    let s = d
        .http("GET", &format!("/stats?format=json&topic={topic}"), b"")
        .json();
    s["topics"][0]["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["channel_name"] == channel)
        .cloned()
        .unwrap_or_default()
}

/// A child process killed if the test fails first.
struct KillOnDrop(std::process::Child);

impl KillOnDrop {
    /// Everything it writes to its (piped) stdout, and whether it then exits 0.
    fn output_to_end(&mut self) -> (String, bool) {
        let mut out = String::new();
        self.0
            .stdout
            .take()
            .expect("stdout piped")
            .read_to_string(&mut out)
            .unwrap();
        (out, self.0.wait().unwrap().success())
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// to_nsq publishing to `d` with `args`, its stdin and stderr piped (keep the directory).
fn spawn_to_nsq(d: &Nsqd, args: &[&str]) -> (TempDir, std::process::Child) {
    let (dir, mut to_nsq) = tool("to_nsq");
    let child = to_nsq
        .args(args)
        .arg(format!("-nsqd-tcp-address={}", d.tcp))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (dir, child)
}

#[test]
fn to_nsq_publishes_every_line_and_tail_prints_them() {
    let d = Nsqd::start(&[]);
    // tail first (an ephemeral channel of its own), stopping after 101 messages.
    let (_t, mut tail) = tool("nsq_tail");
    let mut tail = KillOnDrop(
        tail.args(["--topic=lines", "-n", "101", "--print-topic"])
            .arg(format!("--nsqd-tcp-address={}", d.tcp))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("tail's channel", Duration::from_secs(5), || {
        let s = d.http("GET", "/stats?format=json&topic=lines", b"").json();
        s["topics"][0]["channels"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["client_count"] == 1))
    });
    let (_n, mut to_nsq) = tool("to_nsq");
    let mut p = KillOnDrop(
        to_nsq
            .args(["-topic", "lines"])
            .arg(format!("-nsqd-tcp-address={}", d.tcp))
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut input = String::new();
    for i in 0..100 {
        input.push_str(&format!("line {i}\n"));
        if i % 10 == 0 {
            input.push('\n'); // empty records are skipped
        }
    }
    input.push_str("last, without a newline");
    p.0.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    assert!(p.0.wait().unwrap().success(), "to_nsq exits 0 at EOF");

    let (out, ok) = tail.output_to_end();
    assert!(ok, "tail -n exits 0");
    let mut want: Vec<String> = (0..100).map(|i| format!("lines | line {i}")).collect();
    want.push("lines | last, without a newline".into());
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    let s = d.http("GET", "/stats?format=json&topic=lines", b"").json();
    assert_eq!(s["topics"][0]["message_count"], 101);
}

fn gunzip(b: &[u8]) -> String {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(b)
        .read_to_string(&mut s)
        .expect("gzip");
    s
}

#[test]
fn to_file_writes_rotates_and_finishes_only_what_is_on_disk() {
    let d = Nsqd::start(&[]);
    let (out_dir, work_dir) = (TempDir::new(), TempDir::new());
    let body: Vec<u8> = (0..50)
        .map(|i| format!("message {i:02}"))
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes();
    d.http("POST", "/topic/create?topic=archive", b"");
    for gzip in [false, true] {
        let (_t, mut cmd) = tool("nsq_to_file");
        cmd.args([
            "--topic=archive",
            "--rotate-size=200",
            "--sync-interval=100ms",
        ])
        .arg(format!("--channel=files{}", gzip as u8))
        .arg(format!("--nsqd-tcp-address={}", d.tcp))
        .arg(format!("--output-dir={}", out_dir.path().display()))
        .arg(format!("--work-dir={}", work_dir.path().display()))
        .arg(format!("--gzip={gzip}"))
        .stderr(Stdio::null());
        // The channel must exist before the messages are published to it: create it.
        let ch = format!("files{}", gzip as u8);
        d.http(
            "POST",
            &format!("/channel/create?topic=archive&channel={ch}"),
            b"",
        );
        assert_eq!(d.http("POST", "/mpub?topic=archive", &body).status, 200);
        let mut child = KillOnDrop(cmd.spawn().unwrap());
        wait_until("every message finished", Duration::from_secs(10), || {
            let c = channel_stats(&d, "archive", &ch);
            c["depth"] == 0 && c["in_flight_count"] == 0 && c["message_count"] == 50
        });
        nsqlab_tests::sigterm(child.0.id());
        assert!(child.0.wait().unwrap().success(), "SIGTERM: exit 0");
        // Rotated by size: several files, -000000, -000001, …, all moved out of the work dir.
        let ext = if gzip { ".log.gz" } else { ".log" };
        let mut files: Vec<_> = std::fs::read_dir(out_dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(ext))
            .collect();
        files.sort();
        assert!(files.len() >= 3, "rotated by size: {files:?}");
        let first = files[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            first.starts_with("archive.") && first.contains("-000000."),
            "{first}"
        );
        assert_eq!(std::fs::read_dir(work_dir.path()).unwrap().count(), 0);
        let mut lines = Vec::new();
        for f in &files {
            let b = std::fs::read(f).unwrap();
            let text = if gzip {
                gunzip(&b)
            } else {
                String::from_utf8(b).unwrap()
            };
            lines.extend(text.lines().map(str::to_owned));
        }
        let want: Vec<String> = (0..50).map(|i| format!("message {i:02}")).collect();
        assert_eq!(lines, want, "gzip={gzip}");
        for f in files {
            std::fs::remove_file(f).unwrap();
        }
    }
}

#[test]
fn stat_prints_the_numbers_of_stats() {
    let d = Nsqd::start(&[]);
    d.http("POST", "/topic/create?topic=st", b"");
    d.http("POST", "/channel/create?topic=st&channel=c", b"");
    assert_eq!(d.http("POST", "/mpub?topic=st", b"a\nb\nc\nd").status, 200);
    assert_eq!(
        d.http("POST", "/pub?topic=st&defer=60000", b"later").status,
        200
    );
    let (_t, mut cmd) = tool("nsq_stat");
    let out = cmd
        .args(["--topic=st", "--channel=c", "--interval=200ms", "--count=2"])
        .arg(format!("--nsqd-http-address={}", d.http))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "------rate------+----------------depth----------------+--------------metadata---------------"
    );
    assert_eq!(
        lines[1],
        "ingress  egress |   total     mem    disk inflt   def |     req     t-o         msgs clients"
    );
    assert_eq!(lines.len(), 4, "{text}");
    let c = channel_stats(&d, "st", "c");
    let n = |k: &str| c[k].as_i64().unwrap();
    let want = format!(
        "{:>7} {:>7} | {:>7} {:>7} {:>7} {:>5} {:>5} | {:>7} {:>7} {:>12} {:>7}",
        0,
        0,
        n("depth"),
        n("depth") - n("backend_depth"),
        n("backend_depth"),
        n("in_flight_count"),
        n("deferred_count"),
        n("requeue_count"),
        n("timeout_count"),
        n("message_count"),
        n("client_count")
    );
    assert_eq!(lines[3], want);
    assert_eq!(c["depth"], 4);
    assert_eq!(c["deferred_count"], 1);
}

#[test]
fn to_file_finds_topics_by_pattern_through_lookupd_and_rotates_by_time() {
    let l = nsqlab_tests::Nsqlookupd::start(&[]);
    let d = Nsqd::start(&[
        "--broadcast-address=127.0.0.1",
        &format!("--lookupd-tcp-address={}", l.tcp),
    ]);
    for t in ["pat_a", "other"] {
        assert_eq!(
            d.http("POST", &format!("/pub?topic={t}"), b"first").status,
            200
        );
    }
    wait_until("both topics in lookupd", Duration::from_secs(5), || {
        l.http("GET", "/topics", b"").json()["topics"]
            .as_array()
            .is_some_and(|t| t.len() == 2)
    });
    let out_dir = TempDir::new();
    let (_t, mut cmd) = tool("nsq_to_file");
    let mut child = KillOnDrop(
        cmd.args([
            "--topic-pattern=^pat_",
            "--topic-refresh=200ms",
            "--rotate-interval=500ms",
            "--sync-interval=100ms",
            "--filename-format=<TOPIC>/<REV>.log",
        ])
        .arg(format!("--lookupd-http-address={}", l.http))
        .arg(format!("--output-dir={}", out_dir.path().display()))
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    wait_until("the first message on disk", Duration::from_secs(10), || {
        channel_stats(&d, "pat_a", "nsq_to_file")["message_count"] == 1
            && channel_stats(&d, "pat_a", "nsq_to_file")["in_flight_count"] == 0
    });
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(d.http("POST", "/pub?topic=pat_a", b"second").status, 200);
    wait_until(
        "the second message on disk",
        Duration::from_secs(10),
        || {
            channel_stats(&d, "pat_a", "nsq_to_file")["message_count"] == 2
                && channel_stats(&d, "pat_a", "nsq_to_file")["in_flight_count"] == 0
        },
    );
    nsqlab_tests::sigterm(child.0.id());
    assert!(child.0.wait().unwrap().success());
    // Only the matching topic was consumed ("other" never got the channel).
    assert!(channel_stats(&d, "other", "nsq_to_file").is_null());
    let dir = out_dir.path().join("pat_a");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    // Rotated by time: the second message is in a later file than the first (the ticks in
    // between may leave empty files, as nsq_to_file does without --skip-empty-files).
    assert_eq!(files[0], "-000000.log");
    let contents: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(contents, ["first\n", "second\n"], "{files:?}");
}

/// As NSQ's tools: booleans take Go's spellings, an nsqd nsq_tail cannot dial at the start
/// ends it (go-nsq's ConnectToNSQDs error, log.Fatal), and SIGHUP ends it (it keeps the
/// signal's default; only nsq_to_file handles it).
#[test]
fn go_bools_a_dead_nsqd_and_sighup() {
    for (name, flag) in [
        ("nsq_tail", "--print-topic=1"),
        ("nsq_to_file", "--gzip=T"),
        ("nsq_to_file", "--skip-empty-files=t"),
    ] {
        let (_t, mut cmd) = tool(name);
        let out = cmd.args([flag, "--version"]).output().unwrap();
        assert!(out.status.success(), "{name} {flag}");
    }
    // Port 1 on loopback: nothing listens there.
    let (_t, mut tail) = tool("nsq_tail");
    let out = tail
        .args(["--topic=t", "--nsqd-tcp-address=127.0.0.1:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.trim_end()
            .ends_with(" dial tcp 127.0.0.1:1: connect: connection refused"),
        "{err}"
    );
    let d = Nsqd::start(&[]);
    let (_t, mut tail) = tool("nsq_tail");
    let mut tail = tail
        .args(["--topic=hup"])
        .arg(format!("--nsqd-tcp-address={}", d.tcp))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("tail's channel", Duration::from_secs(5), || {
        let s = d.http("GET", "/stats?format=json&topic=hup", b"").json();
        s["topics"][0]["channels"][0]["client_count"] == 1
    });
    let killed = std::process::Command::new("kill")
        .args(["-HUP", &tail.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = tail.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = tail.kill();
            panic!("nsq_tail lived on after SIGHUP");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(1), "{status}");
}

/// go-nsq's `tls_v1` (with `tls_root_ca_file`, or `tls_insecure_skip_verify`), `snappy` and
/// `deflate` through `--consumer-opt` / `--producer-opt`, against an nsqd that requires TLS;
/// a certificate nothing vouches for is refused. The certificate is self-signed as NSQ's docs
/// make one (`openssl req -x509`: a CA certificate), given to the consumer as its own root.
#[test]
fn the_tools_speak_tls_snappy_and_deflate() {
    let dir = TempDir::new();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    // TLS for TCP, not for the plain HTTP the test reads /stats over.
    let d = Nsqd::start(&[
        &format!("--tls-cert={}", c.display()),
        &format!("--tls-key={}", k.display()),
        "--tls-required=tcp-https",
    ]);
    let (_t, mut tail) = tool("nsq_tail");
    let mut tail = KillOnDrop(
        tail.args(["--topic=sealed", "-n", "2", "--consumer-opt=tls_v1,true"])
            .arg(format!("--consumer-opt=tls_root_ca_file,{}", c.display()))
            .args(["--consumer-opt", "snappy"])
            .arg(format!("--nsqd-tcp-address={}", d.tcp))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let clients = |d: &Nsqd| -> Vec<serde_json::Value> {
        let s = d.http("GET", "/stats?format=json&topic=sealed", b"").json();
        s["topics"][0]["channels"][0]["clients"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    wait_until("tail's subscription", Duration::from_secs(10), || {
        !clients(&d).is_empty()
    });
    let t = &clients(&d)[0];
    assert_eq!(
        (&t["tls"], &t["snappy"], &t["deflate"]),
        (&true.into(), &true.into(), &false.into()),
        "{t}"
    );

    let (_n, mut p) = spawn_to_nsq(
        &d,
        &[
            "-topic",
            "sealed",
            "--producer-opt=tls_v1,true",
            "--producer-opt=tls_insecure_skip_verify,true",
            "--producer-opt=deflate,true",
            "--producer-opt=deflate_level,3",
        ],
    );
    let mut stdin = p.stdin.take().unwrap();
    stdin.write_all(b"one\n").unwrap();
    wait_until("the producer's connection", Duration::from_secs(10), || {
        let s = d.http("GET", "/stats?format=json", b"").json();
        s["producers"].as_array().is_some_and(|p| !p.is_empty())
    });
    let s = d.http("GET", "/stats?format=json", b"").json();
    let pr = &s["producers"][0];
    assert_eq!(
        (&pr["tls"], &pr["deflate"], &pr["snappy"]),
        (&true.into(), &true.into(), &false.into()),
        "{pr}"
    );
    stdin.write_all(b"two\n").unwrap();
    drop(stdin);
    let done = p.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "to_nsq: {err}");
    let (out, ok) = tail.output_to_end();
    assert!(ok);
    assert_eq!(out, "one\ntwo\n");

    // The system's roots do not vouch for the self-signed certificate.
    let (_n, mut p) = spawn_to_nsq(&d, &["-topic", "sealed", "--producer-opt=tls_v1,true"]);
    p.stdin.take().unwrap().write_all(b"three\n").unwrap();
    let done = p.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success());
    // (WebPKI: a CA certificate used as an end entity, and not one of the roots.)
    assert!(err.contains("invalid peer certificate: "), "{err}");
}

/// nsqd closes a connection that sends nothing for two heartbeat intervals; to_nsq, idle on
/// its input, dials again for the next line (as go-nsq's producer reconnects).
#[test]
fn to_nsq_dials_again_after_nsqd_closed_its_idle_connection() {
    let d = Nsqd::start(&[]);
    let (_n, mut p) = spawn_to_nsq(
        &d,
        &["-topic", "idle", "--producer-opt=heartbeat_interval,1s"],
    );
    let mut stdin = p.stdin.take().unwrap();
    stdin.write_all(b"before\n").unwrap();
    let depth = |d: &Nsqd| {
        let s = d.http("GET", "/stats?format=json&topic=idle", b"").json();
        s["topics"][0]["depth"].as_u64().unwrap_or(0)
    };
    wait_until("the first message", Duration::from_secs(10), || {
        depth(&d) == 1
    });
    // Past two heartbeat intervals without a word from the producer.
    std::thread::sleep(Duration::from_millis(3500));
    stdin.write_all(b"after\n").unwrap();
    drop(stdin);
    let done = p.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "to_nsq: {err}");
    assert_eq!(depth(&d), 2);
}

#[test]
fn usage_names_the_program_as_go_flag_does() {
    // nsq_tail, to_nsq and nsq_stat parse Go's global flag.CommandLine: the usage names
    // os.Args[0], the path they were invoked by; nsq_to_file's own FlagSet is named "nsqd".
    for (name, usage_of) in [
        ("nsq_tail", None),
        ("to_nsq", None),
        ("nsq_stat", None),
        ("nsq_to_file", Some("nsqd")),
    ] {
        let (_dir, mut cmd) = tool(name);
        let invoked = cmd.get_program().to_string_lossy().into_owned();
        let out = cmd.arg("-no-such-flag").output().expect("run the tool");
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        let mut lines = err.lines();
        assert_eq!(
            lines.next(),
            Some("flag provided but not defined: -no-such-flag"),
            "{err}"
        );
        let want = format!("Usage of {}:", usage_of.unwrap_or(&invoked));
        assert_eq!(lines.next(), Some(want.as_str()), "{name}: {err}");
        assert!(invoked.ends_with(name), "{invoked}");
    }
}
