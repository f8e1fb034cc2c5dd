//! The real binary over TCP, raw bytes: success frames and error paths with nsqd's exact texts.

use nsqlab_core::protocol::{Command, Frame};
use nsqlab_tests::{Client, Nsqd};
use std::time::Duration;

fn pub_cmd(topic: &str, body: &[u8]) -> Command {
    Command::Pub {
        topic: topic.into(),
        body: body.into(),
    }
}

#[test]
fn publish_subscribe_fin() {
    let d = Nsqd::start(&[]);
    let mut p = d.client();
    p.cmd(&pub_cmd("t", b"hello"));
    assert_eq!(p.next_text(), "R:OK");
    p.cmd(&Command::Mpub {
        topic: "t".into(),
        bodies: vec![b"a"[..].into(), b"b"[..].into()],
    });
    assert_eq!(p.next_text(), "R:OK");

    let mut c = d.client();
    c.cmd(&Command::Identify(
        br#"{"feature_negotiation":true,"client_id":"x"}"#.to_vec(),
    ));
    let Frame::Response(json) = c.frame() else {
        panic!("identify reply")
    };
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["max_rdy_count"], 2500);
    assert_eq!(v["msg_timeout"], 60000);
    c.cmd(&Command::Sub {
        topic: "t".into(),
        channel: "c".into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Rdy(10));
    let mut got = Vec::new();
    for _ in 0..3 {
        let Frame::Message(m) = c.frame() else {
            panic!("message")
        };
        assert_eq!(m.attempts, 1);
        got.push(m.body.to_vec());
        c.cmd(&Command::Fin(m.id.to_hex()));
    }
    assert_eq!(got, vec![b"hello".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    // FIN of an unknown ID: not fatal.
    c.cmd(&Command::Fin(*b"0000000000000000"));
    assert_eq!(
        c.next_text(),
        "E:E_FIN_FAILED FIN 0000000000000000 failed ID not in flight"
    );
    c.cmd(&Command::Nop);
    c.cmd(&Command::Cls);
    assert_eq!(c.next_text(), "R:CLOSE_WAIT");
    assert_eq!(d.terminate().code(), Some(0), "clean exit on SIGTERM");
}

#[test]
fn dpub_waits_for_its_time() {
    let d = Nsqd::start(&[]);
    let mut c = d.client();
    c.cmd(&Command::Sub {
        topic: "d".into(),
        channel: "c".into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Rdy(1));
    let mut p = d.client();
    // (The wall clock: due times are wall-clock times, see nsqd_storage.rs.)
    let start = std::time::SystemTime::now();
    p.cmd(&Command::Dpub {
        topic: "d".into(),
        defer_ms: 300,
        body: b"later"[..].into(),
    });
    assert_eq!(p.next_text(), "R:OK");
    assert_eq!(c.next_text(), "M:later");
    let waited = start.elapsed().unwrap_or_default();
    assert!(waited >= Duration::from_millis(300), "early: {waited:?}");
    assert!(waited < Duration::from_millis(800), "late: {waited:?}");
}

/// Each case: bytes after the magic, the error frame expected, and whether the connection
/// closes (fatal).
#[test]
fn error_paths_match_nsqd() {
    let d = Nsqd::start(&["-max-msg-size=100", "-max-body-size=1000"]);
    let cases: &[(&[u8], &str, bool)] = &[
        (b"BOGUS\n", "E_INVALID invalid command BOGUS", true),
        (
            b"PUB bad!topic\n",
            "E_BAD_TOPIC PUB topic name \"bad!topic\" is not valid",
            true,
        ),
        (
            b"MPUB bad!topic\n",
            "E_BAD_TOPIC E_BAD_TOPIC MPUB topic name \"bad!topic\" is not valid",
            true,
        ),
        (
            b"PUB t\n\x00\x00\x00\x65",
            "E_BAD_MESSAGE PUB message too big 101 > 100",
            true,
        ),
        (
            b"PUB t\n\x7f\xff\xff\xff",
            "E_BAD_MESSAGE PUB message too big 2147483647 > 100",
            true,
        ),
        (
            b"PUB t\n\x00\x00\x00\x00",
            "E_BAD_MESSAGE PUB invalid message body size 0",
            true,
        ),
        (
            b"MPUB t\n\x00\x00\x04\x00",
            "E_BAD_BODY MPUB body too big 1024 > 1000",
            true,
        ),
        (
            b"DPUB t 3600001\n",
            "E_INVALID DPUB timeout 3600001 out of range 0-3600000",
            true,
        ),
        (
            b"DPUB t -1\n",
            "E_INVALID DPUB could not parse timeout -1",
            true,
        ),
        (b"RDY 1\n", "E_INVALID cannot RDY in current state", true),
        (
            b"FIN 0123456789abcdef\n",
            "E_INVALID cannot FIN in current state",
            true,
        ),
        (
            b"SUB t\n",
            "E_INVALID SUB insufficient number of parameters",
            true,
        ),
        (
            b"SUB t c!\n",
            "E_BAD_CHANNEL SUB channel name \"c!\" is not valid",
            true,
        ),
        (b"CLS\n", "E_INVALID cannot CLS in current state", true),
        (
            b"AUTH\n\x00\x00\x00\x01x",
            "E_AUTH_DISABLED AUTH disabled",
            true,
        ),
        (
            b"IDENTIFY\n\x00\x00\x00\x1a{\"heartbeat_interval\":100}",
            "E_BAD_BODY IDENTIFY heartbeat interval (100) is invalid",
            true,
        ),
        (
            b"IDENTIFY\n\x00\x00\x00\x01{",
            "E_BAD_BODY IDENTIFY failed to decode JSON body",
            true,
        ),
        (
            b"IDENTIFY\n\x00\x00\x10\x00",
            "E_BAD_BODY IDENTIFY body too big 4096 > 1000",
            true,
        ),
    ];
    for (bytes, want, fatal) in cases {
        let mut c = d.client();
        c.send(bytes);
        assert_eq!(
            c.next_text(),
            format!("E:{want}"),
            "for {:?}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(
            c.closed_within(Duration::from_secs(2)),
            *fatal,
            "close after {want}"
        );
    }
    // Subscribed: RDY out of range, REQ/TOUCH of unknown IDs (not fatal).
    let mut c = d.client();
    c.send(b"SUB t c\n");
    assert_eq!(c.next_text(), "R:OK");
    c.send(b"REQ 0000000000000000 10\nTOUCH 0000000000000000\n");
    assert_eq!(
        c.next_text(),
        "E:E_REQ_FAILED REQ 0000000000000000 failed ID not in flight"
    );
    assert_eq!(
        c.next_text(),
        "E:E_TOUCH_FAILED TOUCH 0000000000000000 failed ID not in flight"
    );
    c.send(b"RDY 2501\n");
    assert_eq!(
        c.next_text(),
        "E:E_INVALID RDY count 2501 out of range 0-2500"
    );
    assert!(c.closed_within(Duration::from_secs(2)));
}

#[test]
fn bad_magic_and_garbage_do_not_hurt_other_clients() {
    let d = Nsqd::start(&[]);
    let mut bad = Client::connect(d.tcp);
    bad.send(b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(bad.next_text(), "E:E_BAD_PROTOCOL");
    assert!(bad.closed_within(Duration::from_secs(2)));

    // A consumer keeps working while others send junk.
    let mut c = d.client();
    c.send(b"SUB g c\nRDY 100\n");
    assert_eq!(c.next_text(), "R:OK");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20 {
        let mut junk = d.client();
        let n = 1 + (seed % 3000) as usize;
        let bytes: Vec<u8> = (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        junk.send(&bytes);
    }
    // A line longer than nsqd's 16 KiB read buffer closes the connection without a frame.
    let mut long = d.client();
    long.send(&vec![b'A'; 17_000]);
    assert!(long.closed_within(Duration::from_secs(5)));
    assert!(long.frame_within(Duration::from_millis(10)).is_none());

    let mut p = d.client();
    for i in 0..50 {
        p.cmd(&pub_cmd("g", format!("m{i}").as_bytes()));
    }
    for i in 0..50 {
        assert_eq!(p.next_text(), "R:OK");
        assert_eq!(c.next_text(), format!("M:m{i}"));
    }
}

#[test]
fn partial_frames_across_writes() {
    let d = Nsqd::start(&[]);
    let mut p = d.client();
    let bytes = pub_cmd("slow", b"0123456789").to_bytes();
    for b in &bytes {
        p.send(std::slice::from_ref(b));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(p.next_text(), "R:OK");
}

#[test]
fn tls_required_refuses_plaintext_commands() {
    let dir = nsqlab_tests::tempdir::TempDir::new();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&c, cert.cert.pem()).unwrap();
    std::fs::write(&k, cert.key_pair.serialize_pem()).unwrap();
    let d = Nsqd::start(&[
        &format!("-tls-cert={}", c.display()),
        &format!("-tls-key={}", k.display()),
        "-tls-required=true",
    ]);
    let mut p = d.client();
    p.cmd(&pub_cmd("t", b"x"));
    assert_eq!(
        p.next_text(),
        "E:E_INVALID cannot PUB in current state (TLS required)"
    );
    assert!(p.closed_within(Duration::from_secs(2)));
    // IDENTIFY is allowed and offers TLS.
    let mut q = d.client();
    q.cmd(&Command::Identify(
        br#"{"feature_negotiation":true}"#.to_vec(),
    ));
    let Frame::Response(json) = q.frame() else {
        panic!()
    };
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["tls_v1"], false, "not asked for, not negotiated");
}

/// Output buffering: IDENTIFY's output_buffer_size and output_buffer_timeout are validated
/// and echoed as nsqd does, but a message is never held back waiting for the buffer to fill or
/// the timeout to pass while the consumer could take more (nsqd would hold it for up to
/// output_buffer_timeout): everything one broker wake-up produces goes out in one write.
#[test]
fn output_buffer_settings_never_delay_a_message() {
    let d = Nsqd::start(&[]);
    let mut c = d.client();
    c.cmd(&Command::Identify(
        br#"{"feature_negotiation":true,"output_buffer_size":65536,"output_buffer_timeout":1000}"#
            .to_vec(),
    ));
    let Frame::Response(json) = c.frame() else {
        panic!("identify reply")
    };
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["output_buffer_size"], 65536);
    assert_eq!(v["output_buffer_timeout"], 1000);
    c.cmd(&Command::Sub {
        topic: "ob".into(),
        channel: "c".into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Rdy(100));
    let mut p = d.client();
    for i in 0..3 {
        let sent = std::time::Instant::now();
        p.cmd(&pub_cmd("ob", format!("m{i}").as_bytes()));
        assert_eq!(p.next_text(), "R:OK");
        let Some(Frame::Message(m)) = c.frame_within(Duration::from_millis(500)) else {
            panic!("message {i} held back")
        };
        assert_eq!(m.body.as_ref(), format!("m{i}").as_bytes());
        assert!(sent.elapsed() < Duration::from_millis(500));
    }
    // Out-of-range values get nsqd's errors.
    let mut bad = d.client();
    bad.cmd(&Command::Identify(
        br#"{"output_buffer_timeout":5}"#.to_vec(),
    ));
    assert_eq!(
        bad.next_text(),
        "E:E_BAD_BODY IDENTIFY output buffer timeout (5) is invalid"
    );
}

/// A bad option stops nsqd as Go's does: one `FATAL: failed to instantiate nsqd - …` line
/// (after the log prefix and time) and exit status 1; a flag value Go's parser refuses is a
/// usage error, exit status 2.
#[test]
fn startup_errors_as_nsqd() {
    let run = |args: &[&str]| {
        std::process::Command::new(nsqlab_tests::binary())
            .arg("nsqd")
            .args(args)
            .output()
            .expect("run nsqlab nsqd")
    };
    for (args, text) in [
        (&["--node-id=2000"][..], "--node-id must be [0,1024)"),
        (
            &["--auth-http-request-method=POST"][..],
            "--auth-http-request-method must be post or get",
        ),
        (
            &["--tls-required=1"][..],
            "cannot require TLS client connections without TLS key and cert",
        ),
        (
            &[
                "--tls-cert=/nonexistent/c.pem",
                "--tls-key=/nonexistent/k.pem",
            ][..],
            "failed to build TLS config - open /nonexistent/c.pem: no such file or directory",
        ),
        // nsqd v1.3 builds the auth client's TLS config at start, certificate or not.
        (
            &["--tls-root-ca-file=/nonexistent/ca.pem"][..],
            "failed to build client TLS config - open /nonexistent/ca.pem: no such file or directory",
        ),
        (
            &["--tls-root-ca-file=/dev/null"][..],
            "failed to build client TLS config - failed to append certificate to pool",
        ),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        // As nsqd's New(): no version line before the options passed their checks.
        assert!(!err.contains(" INFO: nsqd v"), "{err}");
        let line = err.lines().last().unwrap_or_default();
        assert!(line.starts_with("[nsqd] "), "{line}");
        assert!(
            line.ends_with(&format!(" FATAL: failed to instantiate nsqd - {text}")),
            "{line}"
        );
    }
    // Go's flag package: its error line, then its usage, exit status 2.
    for (bad, line) in [
        (
            &["--snappy=yes"][..],
            r#"invalid boolean value "yes" for -snappy: parse error"#,
        ),
        (
            &["-tls-min-version=tls9"][..],
            r#"invalid value "tls9" for flag -tls-min-version: unknown tlsVersionOption "tls9""#,
        ),
        (
            &["--worker-id=5"][..],
            r#"invalid boolean value "5" for -worker-id: parse error"#,
        ),
        (
            &["-mem-queue-size", "0x1z"][..],
            r#"invalid value "0x1z" for flag -mem-queue-size: parse error"#,
        ),
        (
            &["-log-level=loud"][..],
            "invalid value \"loud\" for flag -log-level: invalid log level 'loud' (debug, info, warn, error, fatal)",
        ),
        (&["--no-such-flag=1"][..], "flag provided but not defined: -no-such-flag"),
        (&["-sync-every"][..], "flag needs an argument: -sync-every"),
    ] {
        let out = run(bad);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        let mut lines = err.lines();
        assert_eq!(lines.next(), Some(line), "{err}");
        assert_eq!(lines.next(), Some("Usage of nsqd:"), "{err}");
        assert!(err.contains("\n  -mem-queue-size int\n    \tnumber of messages to keep in memory (per topic/channel) (default 10000)\n"), "{err}");
    }
    let out = run(&["-h"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr)
        .starts_with("Usage of nsqd:\n  -auth-http-address value\n"));
}

/// Go's forms of an int (`0x10`, `010`, `1_0`) are read as its flag package reads them, and
/// parsing stops at the first argument that is not a flag.
#[test]
fn ints_in_go_forms_and_a_stray_argument() {
    let d = Nsqd::start(&[
        "-mem-queue-size=0x10",
        "-max-rdy-count",
        "010",
        "stray",
        "--max-msg-size=x",
    ]);
    assert_eq!(d.http("GET", "/config/mem_queue_size", b"").text(), "16");
    assert_eq!(d.http("GET", "/config/max_rdy_count", b"").text(), "8");
    assert_eq!(d.http("GET", "/config/max_msg_size", b"").text(), "1048576");
}

/// `--version` (a Go bool: `--version=true` too) prints before any config file is read; an
/// empty `--config` reads none; a missing one fails in Go's words.
#[test]
fn version_and_config_file_as_nsqd() {
    let run = |program: &str, args: &[&str]| {
        std::process::Command::new(nsqlab_tests::binary())
            .arg(program)
            .args(args)
            .output()
            .expect("run nsqlab")
    };
    for args in [
        &["--version"][..],
        &["-version=true", "--config=/nonexistent/nsqd.toml"][..],
    ] {
        let out = run("nsqd", args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        // One token in the parentheses, as Go's `go1.21.8`: version checkers split on spaces.
        let want = format!(
            "nsqd v1.3.0 (built w/nsqlab-{})\n",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(text, want, "{args:?}");
    }
    let out = run("nsqlookupd", &["--version=1"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "nsqlookupd v1.3.0 (built w/nsqlab-{})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let last_line = |out: &std::process::Output| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        err.lines().last().unwrap_or_default().to_string()
    };
    // An empty path: no config; the run goes on to fail on its own flags.
    let out = run("nsqd", &["--config=", "--node-id=2000"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        last_line(&out).ends_with("failed to instantiate nsqd - --node-id must be [0,1024)"),
        "{}",
        last_line(&out)
    );
    let out = run("nsqd", &["--config=/nonexistent/nsqd.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        last_line(&out).ends_with(
            " FATAL: failed to load config file /nonexistent/nsqd.toml - open \
             /nonexistent/nsqd.toml: no such file or directory"
        ),
        "{}",
        last_line(&out)
    );
}

/// An empty `--http-address` turns HTTP off (nsqd v1.3): TCP still serves.
#[test]
fn an_empty_http_address_turns_http_off() {
    use std::io::{BufRead, BufReader};
    let dir = nsqlab_tests::tempdir::TempDir::new();
    let mut child = std::process::Command::new(nsqlab_tests::binary())
        .args([
            "nsqd",
            "--tcp-address=127.0.0.1:0",
            "--http-address=",
            &format!("--data-path={}", dir.path().display()),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start nsqd");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let tcp: std::net::SocketAddr = loop {
        let line = lines.next().expect("a listening line").unwrap();
        seen.push(line.clone());
        if let Some(a) = line.split("TCP: listening on ").nth(1) {
            break a.trim().parse().unwrap();
        }
    };
    let mut c = nsqlab_tests::Client::connect(tcp);
    c.send(b"  V2");
    c.cmd(&pub_cmd("t", b"hi"));
    assert_eq!(c.next_text(), "R:OK");
    nsqlab_tests::sigterm(child.id());
    assert!(child.wait().unwrap().success());
    seen.extend(lines.map_while(Result::ok));
    assert!(
        !seen.iter().any(|l| l.contains("HTTP: listening")),
        "{seen:#?}"
    );
}

/// A path for `--tcp-address` or `--http-address` is a unix socket (nsqd v1.3): the protocol
/// and HTTP are served there, the broadcast ports read 0, and a clean stop removes the files.
#[test]
fn tcp_and_http_on_unix_sockets() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::os::unix::net::UnixStream;
    let dir = nsqlab_tests::tempdir::TempDir::new();
    let (tcp, http) = (dir.path().join("nsqd.sock"), dir.path().join("http.sock"));
    let mut child = std::process::Command::new(nsqlab_tests::binary())
        .args([
            "nsqd",
            &format!("--tcp-address={}", tcp.display()),
            &format!("--http-address={}", http.display()),
            &format!("--data-path={}", dir.path().display()),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start nsqd");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let want = format!("HTTP: listening on {}", http.display());
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.ends_with(&want)) {
        seen.push(lines.next().expect("the listening lines").unwrap());
    }
    assert!(
        seen.iter()
            .any(|l| l.ends_with(&format!("TCP: listening on {}", tcp.display()))),
        "{seen:#?}"
    );
    let mut c = UnixStream::connect(&tcp).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    c.write_all(b"  V2").unwrap();
    c.write_all(&pub_cmd("t", b"over a unix socket").to_bytes())
        .unwrap();
    let mut frame = [0u8; 10];
    c.read_exact(&mut frame).unwrap();
    assert_eq!(&frame[8..], b"OK");
    let get = |path: &str| {
        let mut h = UnixStream::connect(&http).unwrap();
        write!(h, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        h.read_to_string(&mut out).unwrap();
        out.split("\r\n\r\n").nth(1).unwrap_or_default().to_string()
    };
    assert_eq!(get("/ping"), "OK");
    assert_eq!(get("/config/broadcast_tcp_port"), "0");
    // nsqd's /info has no port to give for a unix socket: -1.
    let info: serde_json::Value = serde_json::from_str(&get("/info")).unwrap();
    assert_eq!(
        (&info["tcp_port"], &info["http_port"]),
        (&(-1).into(), &(-1).into())
    );
    let stats: serde_json::Value = serde_json::from_str(&get("/stats?format=json")).unwrap();
    assert_eq!(stats["topics"][0]["message_count"], 1, "{stats}");
    nsqlab_tests::sigterm(child.id());
    assert!(child.wait().unwrap().success());
    assert!(!tcp.exists() && !http.exists(), "the sockets are removed");
}
