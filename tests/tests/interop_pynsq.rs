//! pynsq (from PyPI, unchanged) against the real binary, started as NSQ's own harnesses do
//! (a symlink named `nsqd`, single-dash flags, port 0), over every transport nsqd offers.
//! The README's test command installs pynsq and python-snappy into `target/venv-interop`.

use nsqlab_tests::{target_dir, tempdir::TempDir, Nsqd};
use std::process::Command;

fn run_mode(mode: &str) {
    let python = target_dir().join("venv-interop/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh (it installs pynsq)",
        python.display()
    );
    // A fresh self-signed certificate for TLS modes.
    let dir = TempDir::new();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("cert");
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    let tls_cert = format!("-tls-cert={}", cert_path.display());
    let tls_key = format!("-tls-key={}", key_path.display());
    let d = Nsqd::start(&[&tls_cert, &tls_key]);

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/pynsq_check.py");
    let topic = format!("pynsq_{}", mode.replace('+', "_"));
    let out = Command::new(python)
        .arg(script)
        .arg(d.tcp.to_string())
        .arg(&topic)
        .arg(mode)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pynsq check ({mode}) failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
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
