//! AUTH against a small nsqauthd-compatible server run by the test.

use nsqlab_core::protocol::Command;
use nsqlab_tests::{target_dir, Nsqd};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Serves `GET /auth?...`: the secret "pynsq-secret" or "good" gets publish+subscribe on
/// topics starting with "ok" or "pynsq"; anything else gets 403. Records the query strings.
fn auth_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap_or(0);
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let query = line.split(' ').nth(1).unwrap_or("").to_string();
            seen2.lock().unwrap().push(query.clone());
            let ok = query.contains("secret=good") || query.contains("secret=pynsq-secret");
            let (status, body) = if ok {
                (
                    "200 OK",
                    r#"{"ttl":3600,"identity":"tester","identity_url":"http://x/tester","authorizations":[{"topic":"^(ok|pynsq)","channels":[".*"],"permissions":["subscribe","publish"]}]}"#,
                )
            } else {
                ("403 Forbidden", r#"{"message":"NOT_AUTHORIZED"}"#)
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, seen)
}

#[test]
fn auth_against_an_auth_server() {
    let (addr, seen) = auth_server();
    let d = Nsqd::start(&[&format!("-auth-http-address={addr}")]);

    let mut c = d.client();
    c.cmd(&Command::Identify(
        br#"{"feature_negotiation":true}"#.to_vec(),
    ));
    let reply = c.next_text();
    assert!(reply.contains(r#""auth_required":true"#), "{reply}");
    c.cmd(&Command::Pub {
        topic: "ok".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(c.next_text(), "E:E_AUTH_FIRST AUTH required before PUB");

    let mut c = d.client();
    c.cmd(&Command::Auth(b"good".to_vec()));
    assert_eq!(
        c.next_text(),
        r#"R:{"identity":"tester","identity_url":"http://x/tester","permission_count":1}"#
    );
    c.cmd(&Command::Pub {
        topic: "ok1".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Pub {
        topic: "other".into(),
        body: b"x"[..].into(),
    });
    assert_eq!(
        c.next_text(),
        r#"E:E_UNAUTHORIZED AUTH failed for PUB on "other" """#
    );
    assert!(c.closed_within(Duration::from_secs(2)));

    let mut c = d.client();
    c.cmd(&Command::Auth(b"bad".to_vec()));
    assert_eq!(c.next_text(), "E:E_AUTH_FAILED AUTH failed");

    let q = seen.lock().unwrap().clone();
    assert!(
        q.iter()
            .any(|q| q.starts_with("/auth?common_name=&remote_ip=127.0.0.1&secret=good&tls=false")),
        "{q:?}"
    );

    // pynsq, unchanged, with an auth secret.
    let python = target_dir().join("venv-interop/bin/python");
    let out = std::process::Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/interop/pynsq_check.py"
        ))
        .arg(d.tcp.to_string())
        .arg("pynsq_auth")
        .arg("auth")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pynsq auth failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|q| q.contains("secret=pynsq-secret")));
}
