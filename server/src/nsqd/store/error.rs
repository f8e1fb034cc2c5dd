//! What a failed store operation says.
//!
//! A [`StoreError`] is typed so that the cases that call for different handling can be told
//! apart (a full disk is waited out, a failing device is not); its text is what nsqd-style
//! answers carry to publishers (`E_PUB_FAILED PUB failed <text>`) and to `/ping`.

use nsqlab_core::{MessageId, Name};
use rustix::io::Errno;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// A system call on one of the store's files or directories failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done: `create`, `open`, `read`, `write`, `sync`, `rename`, …
        op: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A topic whose files could not be made (writes to it fail until a probe makes them).
    #[error("topic {0} has no storage")]
    NoStorage(Name),
    /// A message the store does not hold (finished, or lost with its segment).
    #[error("message {id} of {topic} is not stored")]
    NotStored { topic: Name, id: MessageId },
    /// The segment that held a message was deleted before the message could be read.
    #[error("message {id} of {topic}: segment {seg} is gone")]
    SegmentGone {
        topic: Name,
        id: MessageId,
        seg: u32,
    },
    /// The store was closed (the server is stopping).
    #[error("storage is closed")]
    Closed,
    /// A replicated node that does not lead (or stopped leading before the write committed).
    #[error("this node does not lead its group")]
    NotLeader,
}

/// Equal when they say the same: the same operation on the same path failing with the same
/// error number (or kind), or the same other failure.
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        use StoreError::*;
        match (self, other) {
            (
                Io { op, path, source },
                Io {
                    op: op2,
                    path: path2,
                    source: source2,
                },
            ) => {
                op == op2
                    && path == path2
                    && source.raw_os_error() == source2.raw_os_error()
                    && source.kind() == source2.kind()
            }
            (NoStorage(a), NoStorage(b)) => a == b,
            (NotStored { topic, id }, NotStored { topic: t, id: i }) => topic == t && id == i,
            (
                SegmentGone { topic, id, seg },
                SegmentGone {
                    topic: t,
                    id: i,
                    seg: s,
                },
            ) => topic == t && id == i && seg == s,
            (Closed, Closed) | (NotLeader, NotLeader) => true,
            _ => false,
        }
    }
}

impl StoreError {
    /// `op` on `path` failed with `e`.
    pub fn io(op: &'static str, path: &Path, e: std::io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.to_path_buf(),
            source: Arc::new(e),
        }
    }

    /// The system's error number, for an I/O failure.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            StoreError::Io { source, .. } => Errno::from_io_error(source),
            _ => None,
        }
    }

    /// The file system is out of room: full (`ENOSPC`), over quota (`EDQUOT`) or over the
    /// file size limit (`EFBIG`). Room comes back as consumers finish messages.
    pub fn is_no_room(&self) -> bool {
        self.errno().is_some_and(is_no_room_errno)
    }

    /// The device failed (`EIO`): what was written may be lost, and room will not fix it.
    pub fn is_device_error(&self) -> bool {
        self.errno() == Some(Errno::IO)
    }
}

/// [`StoreError::io`], as the closure `map_err` takes.
pub(super) fn io_err(op: &'static str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::io(op, path, e)
}

/// An error that says the file system is out of room (see [`StoreError::is_no_room`]).
pub(super) fn is_no_room(e: &std::io::Error) -> bool {
    Errno::from_io_error(e).is_some_and(is_no_room_errno)
}

fn is_no_room_errno(e: Errno) -> bool {
    matches!(e, Errno::NOSPC | Errno::DQUOT | Errno::FBIG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_and_a_failing_device_are_told_apart_and_read_as_before() {
        let path = Path::new("/data/nsqlab/t/00000000000000000001.log");
        let full = StoreError::io("write", path, std::io::Error::from_raw_os_error(28));
        assert!(full.is_no_room());
        assert!(!full.is_device_error());
        // The text publishers and /ping see is the operation, the path and the OS's words.
        assert_eq!(
            full.to_string(),
            format!(
                "write {}: {}",
                path.display(),
                std::io::Error::from_raw_os_error(28)
            )
        );
        let eio = StoreError::io("sync", path, std::io::Error::from_raw_os_error(5));
        assert!(eio.is_device_error());
        assert!(!eio.is_no_room());
        for (errno, room) in [(122, true), (27, true), (13, false)] {
            let e = StoreError::io("create", path, std::io::Error::from_raw_os_error(errno));
            assert_eq!(e.is_no_room(), room, "errno {errno}");
        }
        let topic: Name = "orders".into();
        assert_eq!(
            StoreError::NoStorage(topic.clone()).to_string(),
            "topic orders has no storage"
        );
        let gone = StoreError::NotStored {
            topic,
            id: MessageId(0x1234),
        };
        assert_eq!(
            gone.to_string(),
            format!("message {} of orders is not stored", MessageId(0x1234))
        );
        assert!(!gone.is_no_room() && gone.errno().is_none());
    }
}
