//! The visualiser page in real headless Chromium (Debian's, driven by playwright-core),
//! served by the real binary from the copy built into it (started in an empty directory, no
//! `--www-dir`; under the test command, the binary `cargo install` put in `target/install`):
//! every scenario, heap order at every step, phone layout.

use nsqlab_tests::{http_raw, need, target_dir, Nsqd, Tool};
use std::process::Command;

#[test]
fn visualiser_in_headless_chromium() {
    let (Some(tools), Some(_)) = (need(Tool::PageTools), need(Tool::Chromium)) else {
        return;
    };
    let d = Nsqd::start(&[]);
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

/// The page's assets, from the copy built into the binary (the server started in an empty
/// directory, no `--www-dir`), go compressed (precompressed at build) with cache headers, and
/// a first load is at most 400 KiB on the wire; a revalidation is a 304.
#[test]
fn visualiser_assets_are_compressed_and_cached() {
    let d = Nsqd::start(&[]);
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
    // The Chinese words are not in that first load: the page fetches them when Chinese is
    // first asked for (the e2e walk-through switches language and reads them).
    let next_chapter = "下一章".as_bytes();
    assert!(
        !plain
            .body
            .windows(next_chapter.len())
            .any(|w| w == next_chapter),
        "the wasm carries the Chinese catalogue"
    );
    let zh = get("/pkg/zh.json", "Accept-Encoding: br\r\n");
    assert_eq!(zh.status, 200);
    assert_eq!(zh.header("content-type"), Some("application/json"));
    assert_eq!(zh.header("content-encoding"), Some("br"));
    let zh = get("/pkg/zh.json", "");
    let words: std::collections::HashMap<String, String> =
        serde_json::from_slice(&zh.body).expect("zh.json is a JSON object");
    assert_eq!(
        words.get("ui.tour.next").map(String::as_str),
        Some("下一章 →")
    );
}

/// `--www-dir` serves the page from a directory instead (for development).
#[test]
fn www_dir_overrides_the_built_in_page() {
    let dir = nsqlab_tests::tempdir::TempDir::new();
    std::fs::write(dir.path().join("index.html"), "<p>mine</p>").unwrap();
    let d = Nsqd::start(&[&format!("-www-dir={}", dir.path().display())]);
    let r = http_raw(
        d.http,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((r.status, r.text().as_str()), (200, "<p>mine</p>"));
}
