//! What a failed store operation says.

use std::path::Path;

/// What a failed write leaves behind.
pub type StoreError = String;

pub(super) fn io_err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    format!("{what} {}: {e}", path.display())
}

/// An error that says the file system is out of room (full, over quota, over the file size
/// limit), rather than unusable.
pub(super) fn is_no_room(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
    )
}
