//! One binary with the page inside: the committed build of the visualiser (`www/pkg`) must be
//! that of the sources, and the test command says so when it is not.

use std::path::Path;
use std::process::Command;

fn run(dir: &Path, cmd: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// In a clean clone of this repository's HEAD the committed build matches its sources; after
/// a change to a web/ source (or a core/ one) without a rebuild, the check fails and says
/// what to run.
#[test]
fn a_stale_visualiser_build_fails_the_check_and_says_what_to_run() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = nsqlab_tests::tempdir::TempDir::new();
    let clone = tmp.path().join("clone");
    let (ok, text) = run(
        tmp.path(),
        "git",
        &[
            "clone",
            "--quiet",
            "--no-hardlinks",
            repo.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    assert!(ok, "git clone: {text}");
    let (ok, text) = run(&clone, "bash", &["scripts/web-stamp.sh", "--check"]);
    assert!(ok, "HEAD's committed www/pkg is stale: {text}");
    for (file, change) in [
        ("web/src/lib.rs", "\n// a change\n"),
        ("core/src/lib.rs", "\n// a change\n"),
    ] {
        let path = clone.join(file);
        let before = std::fs::read(&path).unwrap();
        let mut after = before.clone();
        after.extend_from_slice(change.as_bytes());
        std::fs::write(&path, &after).unwrap();
        let (ok, text) = run(&clone, "bash", &["scripts/web-stamp.sh", "--check"]);
        assert!(!ok, "{file} changed, and the check passed: {text}");
        assert!(
            text.contains("run 'bash scripts/build-web.sh' and commit www/pkg"),
            "{text}"
        );
        std::fs::write(&path, &before).unwrap();
        let (ok, text) = run(&clone, "bash", &["scripts/web-stamp.sh", "--check"]);
        assert!(ok, "{file} restored: {text}");
    }
}
