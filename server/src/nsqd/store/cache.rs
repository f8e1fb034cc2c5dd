//! The page-cache policy: full segments leave the page cache, oldest first, a step at a time.

use super::sys::drop_cached;
use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;

/// How many bytes of full segments stay in the page cache (the newest ones: bodies read back
/// soon, such as deferred messages coming due, come from memory).
pub(super) const CACHE_KEEP: u64 = 512 << 20;

/// Bytes of full segments dropped from the page cache after each sync (see
/// [`PageCache::trim`]). Under load syncs come about every 250 KB written (`--sync-every`
/// times [`SYNC_UNIT`]), or every [`SYNC_GAP`] when that is more: 2 MiB dropped per sync,
/// while the cache is over budget, stays ahead of writes up to 1 GB/s.
///
/// Dropped ranges start at multiples of this: the page cache holds a file in folios of up to
/// 2 MiB, naturally aligned, and a folio that a range covers only in part stays cached.
pub(super) const TRIM_STEP: u64 = 2 << 20;

/// How far the cache may grow past [`CACHE_KEEP`] before trims catch up faster.
pub(super) const TRIM_LAG: u64 = 256 << 20;

/// Full segments, oldest first, and how much of the page cache they may hold.
///
/// Once synced, the pages of older full segments are dropped (`POSIX_FADV_DONTNEED`): the
/// next writes then reuse those pages instead of taking new memory. On a virtual machine
/// that hands memory back to its host, new memory costs a fault in the host per page:
/// writing into the page cache measured 0.4–0.65 GB/s with new pages against 4.2 GB/s with
/// just-freed ones, and with a multi-GB backlog that difference decided whether publishes
/// kept up.
///
/// Only paths are kept (an open file would keep a deleted segment's disk space, and its
/// descriptor, for as long as it is listed); a segment deleted meanwhile has nothing cached.
pub(super) struct PageCache {
    pub(super) full: VecDeque<(PathBuf, u64)>,
    /// Bytes of the listed segments not dropped yet.
    pub(super) bytes: u64,
    pub(super) keep: u64,
    pub(super) lag: u64,
    /// Bytes at the start of the oldest listed segment already dropped.
    pub(super) front_done: u64,
}

impl Default for PageCache {
    fn default() -> Self {
        PageCache {
            full: VecDeque::new(),
            bytes: 0,
            keep: CACHE_KEEP,
            lag: TRIM_LAG,
            front_done: 0,
        }
    }
}

impl PageCache {
    pub(super) fn full(&mut self, path: PathBuf, len: u64) {
        self.bytes += len;
        self.full.push_back((path, len));
    }

    /// After a sync: drop the pages of the oldest full segments beyond `keep` bytes,
    /// [`TRIM_STEP`] at a time (or an eighth of the excess over `keep + lag`, if writes
    /// outpace that, in whole multiples of the step).
    ///
    /// A little after every sync, not a whole segment as it fills: dropping 100 MiB at once
    /// stalled the broker's own writes into the page cache for milliseconds, right after
    /// each roll, where most of the slow publishers' round trips then came.
    pub(super) fn trim(&mut self) {
        let mut budget = TRIM_STEP.max(self.bytes.saturating_sub(self.keep + self.lag) / 8);
        while self.bytes > self.keep && budget > 0 {
            let Some((path, len)) = self.full.front() else {
                break;
            };
            let left = len - self.front_done;
            let n = match File::open(path) {
                Ok(f) => {
                    let n = left.min(budget.next_multiple_of(TRIM_STEP));
                    // The last range runs to the end of the file (0): a folio reaching past
                    // the end is dropped too.
                    drop_cached(&f, self.front_done, if n == left { 0 } else { n });
                    n
                }
                // Deleted: its pages went with it.
                Err(_) => left,
            };
            self.front_done += n;
            self.bytes -= n;
            budget = budget.saturating_sub(n);
            if self.front_done == *len {
                self.full.pop_front();
                self.front_done = 0;
            }
        }
    }
}
