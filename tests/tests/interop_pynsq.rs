//! pynsq (from PyPI, unchanged) against the real binary, started as NSQ's own harnesses do.
//! The README's test command installs pynsq into `target/venv-interop`.

use nsqlab_tests::{target_dir, Nsqd};
use std::process::Command;

#[test]
fn pynsq_publishes_and_consumes() {
    let python = target_dir().join("venv-interop/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh (it installs pynsq)",
        python.display()
    );
    let d = Nsqd::start(&[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/pynsq_check.py");
    let out = Command::new(python)
        .arg(script)
        .arg(d.tcp.to_string())
        .arg("pynsq_interop")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pynsq check failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("pynsq: ") && stdout.contains(" passed, 0 failed"),
        "{stdout}"
    );
}
