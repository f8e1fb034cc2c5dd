//! gnsq (from PyPI, unchanged: gevent-based, a second Python client with its own protocol
//! code) against the real binary started as `nsqd` on port 0: its raw connection, its
//! Producer and Consumer over every transport, its HTTP client on every endpoint it wraps, and
//! its nsqlookupd client and a Consumer that finds nsqd through nsqlookupd. The README's test
//! command installs gnsq into `target/venv-interop` with pynsq.

use nsqlab_tests::{target_dir, tempdir::TempDir, Nsqd, Nsqlookupd};
use std::process::Command;

fn run(mode: &str, with_lookupd: bool) {
    let python = target_dir().join("venv-interop/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh (it installs gnsq)",
        python.display()
    );
    let dir = TempDir::new();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("cert");
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    let tls_cert = format!("-tls-cert={}", cert_path.display());
    let tls_key = format!("-tls-key={}", key_path.display());
    let lookupd = with_lookupd.then(|| Nsqlookupd::start(&[]));
    let mut flags = vec![tls_cert, tls_key];
    if let Some(l) = &lookupd {
        flags.push(format!("-lookupd-tcp-address={}", l.tcp));
        flags.push("-broadcast-address=127.0.0.1".into());
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let d = Nsqd::start(&flags);

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/gnsq_check.py");
    let out = Command::new(python)
        .arg(script)
        .arg(d.tcp.to_string())
        .arg(d.http.to_string())
        .arg(lookupd.as_ref().map_or("-".into(), |l| l.http.to_string()))
        .arg(format!("gnsq_{}", mode.replace('+', "_")))
        .arg(mode)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "gnsq check ({mode}) failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn gnsq_plain_http_and_lookupd() {
    run("plain", true);
}

#[test]
fn gnsq_snappy() {
    run("snappy", false);
}

#[test]
fn gnsq_deflate() {
    run("deflate", false);
}

#[test]
fn gnsq_tls_snappy() {
    run("tls+snappy", false);
}
