//! For tests: a fresh directory of their own (or a file in one), removed when dropped.

use std::path::{Path, PathBuf};

/// A path in a directory of its own, which goes when this is dropped. It derefs to the path.
pub(crate) struct TestPath {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for TestPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TestPath {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

fn new_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("nsqlab-{name}-"))
        .tempdir()
        .expect("a temporary directory")
}

/// A new empty directory.
pub(crate) fn test_dir(name: &str) -> TestPath {
    let dir = new_dir(name);
    TestPath {
        path: dir.path().to_path_buf(),
        _dir: dir,
    }
}

/// A path for a file named `name`, in a new directory.
pub(crate) fn test_file(name: &str) -> TestPath {
    let dir = new_dir(name);
    TestPath {
        path: dir.path().join(name),
        _dir: dir,
    }
}
