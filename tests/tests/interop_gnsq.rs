//! gnsq (from PyPI, unchanged: gevent-based, a second Python client with its own protocol
//! code) against the real binary started as `nsqd` on port 0: its raw connection, its
//! Producer and Consumer over every transport, its HTTP client on every endpoint it wraps, and
//! its nsqlookupd client and a Consumer that finds nsqd through nsqlookupd. The README's test
//! command installs gnsq into `target/venv-interop` with pynsq.

use nsqlab_tests::{
    binary, need, python_check, tempdir::TempDir, tls_flags, Nsqd, Nsqlookupd, Tool,
};
use std::process::Command;

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

/// gnsq 1.0.2's own test suite (its sdist's `tests/`, unchanged): its harness starts `nsqd`
/// and `nsqlookupd` from PATH (here nsqlab, through symlinks of those names) with TLS and
/// HTTPS on port 0, parses their listening lines, and at the end of each test sends SIGTERM and
/// reads stderr to the end, so a server that does not close its clients' connections and exit
/// fails it (nsqd v1.3.0 passes all 108).
#[test]
fn gnsq_own_test_suite_passes() {
    let (Some(suite), Some(python)) = (need(Tool::GnsqSuite), need(Tool::Python)) else {
        return;
    };
    let bin = TempDir::new();
    for name in ["nsqd", "nsqlookupd"] {
        std::os::unix::fs::symlink(binary(), bin.path().join(name)).expect("symlink");
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(python)
        .args([
            "-m",
            "pytest",
            "tests",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:warnings",
        ])
        .current_dir(&suite)
        .env("PATH", path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "gnsq's suite failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("108 passed"), "{stdout}");
}
