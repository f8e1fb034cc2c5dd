//! nsqjs (from npm, unchanged) against the real binary over plain, snappy, deflate and TLS.
//! The README's test command installs it into `target/node-interop`.

use nsqlab_tests::{need, tempdir::TempDir, Nsqd, Tool};
use std::process::Command;

fn run_mode(mode: &str) {
    let Some(dir) = need(Tool::Nsqjs) else {
        return;
    };
    let tmp = TempDir::new();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let (c, k) = (tmp.path().join("c.pem"), tmp.path().join("k.pem"));
    std::fs::write(&c, cert.cert.pem()).unwrap();
    std::fs::write(&k, cert.key_pair.serialize_pem()).unwrap();
    let d = Nsqd::start(&[
        &format!("-tls-cert={}", c.display()),
        &format!("-tls-key={}", k.display()),
    ]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/nsqjs_check.js");
    let out = Command::new("node")
        .arg(script)
        .arg(d.tcp.to_string())
        .arg(format!("nsqjs_{mode}"))
        .arg(mode)
        .env("NODE_PATH", dir.join("node_modules"))
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "nsqjs check ({mode}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn nsqjs_plain() {
    run_mode("plain");
}

#[test]
fn nsqjs_snappy() {
    run_mode("snappy");
}

#[test]
fn nsqjs_deflate() {
    run_mode("deflate");
}

#[test]
fn nsqjs_tls() {
    run_mode("tls");
}
