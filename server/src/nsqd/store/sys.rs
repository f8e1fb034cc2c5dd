//! The system calls the store makes beyond `std::fs`: writing a file whole, syncing by path,
//! making and deleting files in an open directory, reserving and giving back blocks, and
//! dropping pages from the cache.

use super::error::{io_err, StoreError};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Write a file whole and durably (temp file, fsync, rename, fsync the directory).
pub(super) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), StoreError> {
    write_atomic_io(path, data).map_err(|(what, p, e)| io_err(what, &p, e))
}

/// [`write_atomic`], its error with the operation and path (so a full disk can be told).
pub(super) fn write_atomic_io(
    path: &Path,
    data: &[u8],
) -> Result<(), (&'static str, PathBuf, std::io::Error)> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| ("create", tmp.clone(), e))?;
    let written = f
        .write_all(data)
        .map_err(|e| ("write", e))
        .and_then(|()| fsync(&f).map_err(|e| ("sync", e)));
    if let Err((what, e)) = written {
        let _ = fs::remove_file(&tmp);
        return Err((what, tmp, e));
    }
    fs::rename(&tmp, path).map_err(|e| ("rename", path.to_path_buf(), e))?;
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

/// Write a file whole (temp file, rename) without waiting for the disk: a process crash
/// leaves the old file or the new one, never a part; the caller has it synced later.
pub(super) fn write_unsynced(path: &Path, data: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
    if let Err(e) = f.write_all(data) {
        let _ = fs::remove_file(&tmp);
        return Err(io_err("write", &tmp, e));
    }
    fs::rename(&tmp, path).map_err(|e| io_err("rename", path, e))
}

/// fsync a file by path (one written whole; gone or replaced meanwhile is fine).
pub(super) fn sync_file(path: &Path) {
    if let Ok(f) = File::open(path) {
        if let Err(e) = fsync(&f) {
            tracing::error!("storage: fsync {} failed: {e}", path.display());
        }
    }
}

/// fsync a directory by path (the names made, renamed and removed in it).
pub(super) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        if d.sync_all().is_ok() {
            #[cfg(test)]
            synced::tell(synced::Synced::Dir(dir));
        }
    }
}

/// fsync an open directory (`file` names a file in it: only the test's listener reads it).
#[cfg_attr(not(test), allow(unused_variables))]
pub(super) fn sync_dir_fd(dir: &File, file: &Path) {
    if dir.sync_all().is_ok() {
        #[cfg(test)]
        synced::tell(synced::Synced::Dir(file.parent().unwrap_or(Path::new("."))));
    }
}

/// `fdatasync` of an open file. Every sync of the store's files goes through here or
/// [`sync_dir`]: a test sees each (see [`synced`]).
pub(super) fn fsync(f: &File) -> std::io::Result<()> {
    f.sync_data()?;
    #[cfg(test)]
    synced::tell(synced::Synced::File(f));
    Ok(())
}

/// Create the file named as `path`'s last part in directory `dir`, for appending; `None` if
/// it exists (the roll came first) or cannot be made (the roll then reports why).
pub(super) fn create_in(dir: &File, path: &Path) -> Option<File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, path.file_name()?, flags, Mode::from_raw_mode(0o644));
    fd.ok().map(File::from)
}

#[cfg(target_os = "linux")]
pub(super) fn reserve(f: &File, at: u64, len: u64) {
    use rustix::fs::FallocateFlags;
    // A failure (no space, a file system without it) is otherwise ignored: the write then
    // allocates as it would have, and fails by itself if it must. A reservation that failed
    // part way (no space) may hold what it got: give it back.
    if rustix::fs::fallocate(f, FallocateFlags::KEEP_SIZE, at, len).is_err() {
        let _ = f.set_len(at);
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn reserve(_: &File, _: u64, _: u64) {}

/// A full segment frees the blocks reserved past its end (truncating it to its own length).
/// On the sync thread: with `-o discard` the freed blocks are discarded before the call
/// returns, which can take long on a busy disk. A segment deleted meanwhile is skipped, and
/// one without blocks past its end is not touched (a truncate would still rewrite its inode:
/// a restart checks every full segment).
#[cfg(unix)]
pub(super) fn give_back_reserved(path: &Path, len: u64) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(f) = OpenOptions::new().write(true).open(path) {
        let reserved =
            |m: fs::Metadata| m.len() == len && m.blocks() * 512 > len.next_multiple_of(4096);
        if f.metadata().is_ok_and(reserved) {
            let _ = f.set_len(len);
        }
    }
}

#[cfg(not(unix))]
pub(super) fn give_back_reserved(_: &Path, _: u64) {}

/// Bytes this process may still write on the file system holding `path` (`None` where that
/// cannot be asked).
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(path).ok()?;
    // (Root may also write the blocks kept back for it.)
    let blocks = match rustix::process::geteuid().is_root() {
        true => st.f_bfree,
        false => st.f_bavail,
    };
    Some(blocks.saturating_mul(st.f_frsize))
}

/// The open file `f` has no name left (deleted, or its directory was).
pub(super) fn removed(f: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    f.metadata().is_ok_and(|m| m.nlink() == 0)
}

/// Drop `len` bytes at `at` of `f` from the page cache.
#[cfg(target_os = "linux")]
pub(super) fn drop_cached(f: &File, at: u64, len: u64) {
    // (A length of 0, `None`, is to the end of the file, as in posix_fadvise.)
    let len = std::num::NonZeroU64::new(len);
    let _ = rustix::fs::fadvise(f, at, len, rustix::fs::Advice::DontNeed);
}

#[cfg(not(target_os = "linux"))]
pub(super) fn drop_cached(_: &File, _: u64, _: u64) {}

/// Delete the file named as `path`'s last part in directory `dir`, wherever that directory
/// is now. (It can be gone already: its topic was deleted meanwhile, with its directory.)
pub(super) fn remove_in(dir: &File, path: &Path) {
    let Some(name) = path.file_name() else {
        return;
    };
    match rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(e) => tracing::warn!(
            "storage: failed to remove {}: {}",
            path.display(),
            std::io::Error::from(e)
        ),
    }
}

/// `path` opened for reading with direct I/O, bypassing the page cache; `None` where the file
/// system does not do it (tmpfs) or off Linux.
#[cfg(target_os = "linux")]
pub(super) fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
        .open(path)
        .ok()
}

/// Reads of `f` read what they ask for and no more: the kernel's read-ahead would bring
/// what direct I/O is to read into the page cache first.
#[cfg(target_os = "linux")]
pub(super) fn no_read_ahead(f: &File) {
    let _ = rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::Random);
}

#[cfg(not(target_os = "linux"))]
pub(super) fn no_read_ahead(_: &File) {}

#[cfg(not(target_os = "linux"))]
pub(super) fn open_direct(_: &Path) -> Option<File> {
    None
}

/// How many pages of `len` bytes at `at` of `f` the page cache holds (`cachestat`, Linux
/// 6.5 and later); `None` where that cannot be asked.
///
/// A read with `RWF_NOWAIT` ([`read_cached`]) of pages the cache does not hold still starts
/// the kernel's read of them into the cache, so a stretch not wholly cached is better read
/// with direct I/O alone: otherwise the disk reads it twice and the dropped pages come back.
/// (Pages here are 4 KiB; where the kernel's are larger, a count never looks whole, and
/// stretches are read with direct I/O, which is correct, only slower for cached ones.)
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(super) fn cached_pages(f: &File, at: u64, len: u64) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // The same number on every architecture with the common system call table.
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    let range = Range { off: at, len };
    let mut stat = Stat::default();
    // SAFETY: both pointers are to live values of the layouts cachestat(2) reads and writes;
    // the descriptor is open for as long as `f` is borrowed.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            f.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0u32,
        )
    };
    (r == 0).then_some(stat.nr_cache)
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub(super) fn cached_pages(_: &File, _: u64, _: u64) -> Option<u64> {
    None
}

/// Read what the page cache holds of `buf.len()` bytes at `at` of `f`, stopping at the first
/// page it does not hold (0 when that is the first); it never waits for the disk.
#[cfg(target_os = "linux")]
pub(super) fn read_cached(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use rustix::io::{preadv2, Errno, ReadWriteFlags};
    let mut bufs = [std::io::IoSliceMut::new(buf)];
    match preadv2(f, &mut bufs, at, ReadWriteFlags::NOWAIT) {
        Ok(n) => Ok(n),
        // Not cached; or RWF_NOWAIT is not known here.
        Err(Errno::AGAIN | Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn read_cached(_: &File, _: &mut [u8], _: u64) -> std::io::Result<usize> {
    Ok(0)
}

/// What a test hears of the store's syncs, as they complete: the power-loss simulation
/// (`store/power_loss.rs`) keeps what each made durable.
#[cfg(test)]
pub(super) mod synced {
    use std::fs::File;
    use std::path::Path;
    use std::sync::Mutex;

    pub(crate) enum Synced<'a> {
        File(&'a File),
        Dir(&'a Path),
    }

    type Listener = Box<dyn FnMut(Synced<'_>) + Send>;

    static LISTENER: Mutex<Option<Listener>> = Mutex::new(None);

    /// Hear every sync from now on (`None`: stop).
    pub(crate) fn listen(l: Option<Listener>) {
        *LISTENER.lock().unwrap_or_else(|e| e.into_inner()) = l;
    }

    pub(super) fn tell(s: Synced<'_>) {
        if let Some(l) = LISTENER.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            l(s);
        }
    }
}
