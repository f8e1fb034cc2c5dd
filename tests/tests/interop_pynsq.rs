//! pynsq (from PyPI, unchanged) against the real binary, started as NSQ's own harnesses do
//! (a symlink named `nsqd`, single-dash flags, port 0), over every transport nsqd offers.
//! The README's test command installs pynsq and python-snappy into `target/venv-interop`.

use nsqlab_tests::{python_check, tempdir::TempDir, tls_flags, Nsqd};

fn run_mode(mode: &str) {
    // A fresh self-signed certificate for TLS modes.
    let dir = TempDir::new();
    let [tls_cert, tls_key] = tls_flags(dir.path());
    let d = Nsqd::start(&[&tls_cert, &tls_key]);
    let topic = format!("pynsq_{}", mode.replace('+', "_"));
    python_check("pynsq_check.py", &[d.tcp.to_string(), topic, mode.into()]);
}

#[test]
fn pynsq_plain() {
    run_mode("plain");
}

#[test]
fn pynsq_snappy() {
    run_mode("snappy");
}

#[test]
fn pynsq_deflate() {
    run_mode("deflate");
}

#[test]
fn pynsq_tls() {
    run_mode("tls");
}

#[test]
fn pynsq_tls_snappy() {
    run_mode("tls+snappy");
}

#[test]
fn pynsq_tls_deflate() {
    run_mode("tls+deflate");
}
