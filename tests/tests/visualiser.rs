//! The visualiser page in real headless Chromium (Debian's, driven by playwright-core),
//! served by the real binary: every scenario, heap order at every step, phone layout.
//! Needs `scripts/build-web.sh` (the test command runs it) for `www/pkg`.

use nsqlab_tests::{http_raw, need, target_dir, Nsqd, Tool};
use std::process::Command;

#[test]
fn visualiser_in_headless_chromium() {
    let (Some(www), Some(tools), Some(_)) = (
        need(Tool::VisualiserBuild),
        need(Tool::PageTools),
        need(Tool::Chromium),
    ) else {
        return;
    };
    let d = Nsqd::start(&[&format!("-www-dir={}", www.display())]);
    let shots = target_dir().join("screenshots");
    let out = Command::new("node")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/visualiser.mjs"))
        .arg(format!("http://{}", d.http))
        .arg(&shots)
        .arg(d.tcp.to_string())
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

/// Issue item 12: the page's assets go compressed (precompressed at build) with cache headers,
/// and a first load is at most 400 KiB on the wire; a revalidation is a 304.
#[test]
fn visualiser_assets_are_compressed_and_cached() {
    let Some(www) = need(Tool::VisualiserBuild) else {
        return;
    };
    let d = Nsqd::start(&[&format!("-www-dir={}", www.display())]);
    let get = |path: &str, extra: &str| {
        let req =
            format!("GET {path} HTTP/1.1\r\nHost: nsqlab\r\n{extra}Connection: close\r\n\r\n");
        http_raw(d.http, req.as_bytes())
    };
    let mut wire = 0;
    for path in ["/", "/style.css", "/pkg/web.js", "/pkg/web_bg.wasm"] {
        let r = get(path, "Accept-Encoding: gzip, deflate, br, zstd\r\n");
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{path}");
        if path.starts_with("/pkg/") {
            assert!(
                matches!(r.header("content-encoding"), Some("gzip" | "br")),
                "{path}: {:?}",
                r.headers
            );
        }
        wire += r.body.len();
        let modified = r
            .header("last-modified")
            .expect("last-modified")
            .to_string();
        let again = get(path, &format!("If-Modified-Since: {modified}\r\n"));
        assert_eq!(again.status, 304, "{path} revalidates");
    }
    assert!(
        wire <= 400 * 1024,
        "a first load is {wire} bytes on the wire"
    );
    // A client that does not take gzip gets the file as it is.
    let plain = get("/pkg/web_bg.wasm", "");
    assert_eq!(plain.header("content-encoding"), None);
    assert!(plain.body.starts_with(b"\0asm"));
}
