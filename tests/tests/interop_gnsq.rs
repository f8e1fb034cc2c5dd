//! gnsq (from PyPI, unchanged: gevent-based, a second Python client with its own protocol
//! code) against the real binary started as `nsqd` on port 0: its raw connection, its
//! Producer and Consumer over every transport, its HTTP client on every endpoint it wraps, and
//! its nsqlookupd client and a Consumer that finds nsqd through nsqlookupd. The README's test
//! command installs gnsq into `target/venv-interop` with pynsq.

use nsqlab_tests::{python_check, tempdir::TempDir, tls_flags, Nsqd, Nsqlookupd};

fn run(mode: &str, with_lookupd: bool) {
    let dir = TempDir::new();
    let lookupd = with_lookupd.then(|| Nsqlookupd::start(&[]));
    let mut flags = tls_flags(dir.path()).to_vec();
    if let Some(l) = &lookupd {
        flags.push(format!("-lookupd-tcp-address={}", l.tcp));
        flags.push("-broadcast-address=127.0.0.1".into());
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let d = Nsqd::start(&flags);
    let lookupd_http = lookupd.as_ref().map_or("-".into(), |l| l.http.to_string());
    python_check(
        "gnsq_check.py",
        &[
            d.tcp.to_string(),
            d.http.to_string(),
            lookupd_http,
            format!("gnsq_{}", mode.replace('+', "_")),
            mode.into(),
        ],
    );
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
