//! The visualiser page in real headless Chromium (Debian's, driven by playwright-core),
//! served by the real binary: every scenario, heap order at every step, phone layout.
//! Needs `scripts/build-web.sh` (the test command runs it) for `www/pkg`.

use nsqlab_tests::{target_dir, Nsqd};
use std::path::Path;
use std::process::Command;

#[test]
fn visualiser_in_headless_chromium() {
    let www = Path::new(env!("CARGO_MANIFEST_DIR")).join("../www");
    assert!(
        www.join("pkg/web_bg.wasm").exists(),
        "www/pkg is missing: run scripts/build-web.sh (the test command does)"
    );
    let tools = target_dir().join("node-tools");
    assert!(
        tools.join("node_modules/playwright-core").exists(),
        "run scripts/setup.sh"
    );
    let d = Nsqd::start(&[&format!("-www-dir={}", www.display())]);
    let shots = target_dir().join("screenshots");
    let out = Command::new("node")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/visualiser.mjs"))
        .arg(format!("http://{}", d.http))
        .arg(&shots)
        .env("NODE_TOOLS", &tools)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "visualiser checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
