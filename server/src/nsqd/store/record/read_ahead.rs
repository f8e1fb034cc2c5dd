//! The loader's read-ahead: stretches of a segment read for evicted bodies, handed out as
//! ranges rather than copies, and read with direct I/O where the page cache dropped them.

use super::*;

/// A stretch of a segment read for loading evicted bodies. A load reads its segment forward
/// from where the index points (see `index.rs`) to its record, skipping the records before
/// it by their headers. Consumers load a backlog in order: a load that follows the one
/// before it (a little further on in the same segment) starts where that one ended and reads
/// [`ReadAhead::SIZE`] ahead, so one read serves the thousands of records after it (one
/// `pread` per record cost more than the rest of a delivery). A lone load (a deferred message
/// coming due) reads little: its own record when the index has its entry, else a short
/// stretch.
///
/// Bodies are not copied out: each is a range of the stretch it was read into, which stays
/// in memory while any of them does. A stretch that none is using any more is read into
/// again: the loader thread's topics share [`Spare`] stretches for that.
#[derive(Debug, Default)]
pub struct ReadAhead {
    pub(super) seg: u64,
    pub(super) at: u64,
    /// The stretch: `len` bytes from `base` on are the segment's from `at`.
    pub(super) buf: std::sync::Arc<[u8]>,
    pub(super) base: usize,
    pub(super) len: usize,
    /// Stretches read (in part) with direct I/O.
    pub(super) direct_reads: u64,
    /// Stretches read before, shared with the thread's other topics.
    pub(super) spare: Spare,
    /// The segment of the last load, the offset after its record, and its ID.
    pub(super) last: Option<(u64, u64, MessageId)>,
}

/// Stretches read before (some perhaps still holding bodies in use), for reading into
/// again: at most `ReadAhead::SPARE`, however many topics share them.
#[derive(Debug, Default, Clone)]
pub struct Spare(pub(super) std::rc::Rc<std::cell::RefCell<Vec<std::sync::Arc<[u8]>>>>);

impl ReadAhead {
    /// A whole stretch: 1 MiB. Against 256 KiB, a disk read (and its wake-ups) per 4 000
    /// records of 200-byte messages rather than per 1 000, and the drain of a backlog read
    /// from the disk spent less CPU per message (with 1 MiB read ahead in the broker, see
    /// `read_ahead` in `core/src/broker/delivery.rs`).
    pub const SIZE: usize = 1 << 20;
    /// Whole stretches kept for reading into again, per loader thread.
    pub(super) const SPARE: usize = 8;
    /// How far after the last load the next one still follows it.
    const FOLLOWS: u64 = 64 << 10;
    /// What a lone load reads at first: its own record, if the index points at it...
    pub(super) const LONE: usize = 4 << 10;
    /// ...or a stretch to look for it in (the index has an entry every 16 KiB at most).
    const SCAN: usize = 16 << 10;

    /// A read-ahead for one topic that shares `spare` with others.
    pub fn sharing(spare: &Spare) -> ReadAhead {
        ReadAhead {
            spare: spare.clone(),
            ..ReadAhead::default()
        }
    }

    /// Where to start looking for message `id` of segment `seg`, whose index entry is
    /// message `from_id`'s: after the last load, if that was between the two.
    pub fn resume(&self, seg: u64, from_id: u64, id: u64) -> Option<u64> {
        let (s, end, last) = self.last?;
        (s == seg && last.0 >= from_id && last.0 < id).then_some(end)
    }

    /// As [`ReadAhead::find_unchecked`], with the record's check made: an error when it
    /// does not match.
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    pub fn find(
        &mut self,
        file: (&std::fs::File, Option<&std::fs::File>),
        seg: u64,
        salt: Salt,
        from: u64,
        end: u64,
        id: MessageId,
        exact: bool,
    ) -> std::io::Result<Option<Body>> {
        let Some(found) = self.find_unchecked(file, seg, salt, from, end, id, exact)? else {
            return Ok(None);
        };
        if intact_all([&found]) != [true] {
            return Err(checksum_mismatch());
        }
        Ok(Some(found.body))
    }

    /// The record of message `id`, looked for in segment `seg` (the file `file`, `end`
    /// bytes long, salted with `salt`) from the record at `from` on; `exact`: that record
    /// is the message's. `None` when the segment does not hold it. Its check is left to
    /// [`intact_all`].
    #[allow(clippy::too_many_arguments)]
    pub fn find_unchecked(
        &mut self,
        file: (&std::fs::File, Option<&std::fs::File>),
        seg: u64,
        salt: Salt,
        from: u64,
        end: u64,
        id: MessageId,
        exact: bool,
    ) -> std::io::Result<Option<Found>> {
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
        let follows = self
            .last
            .is_some_and(|(s, o, _)| s == seg && from >= o && from - o <= Self::FOLLOWS);
        let chunk = match (follows, exact) {
            (true, _) => Self::SIZE,
            (false, true) => Self::LONE,
            (false, false) => Self::SCAN,
        };
        let mut off = from;
        while off + HEADER as u64 <= end {
            // The header and, for a message, the fields up to its ID.
            let head = self.bytes(file, seg, off, HEADER + PUB_ID + 8, chunk, end)?;
            let len = u32_at(head, 0).expect("a header") as usize;
            let next = off + (HEADER + len) as u64;
            if len == 0 || len > MAX_PAYLOAD || next > end {
                return Err(bad("bad record length"));
            }
            if head.get(HEADER) == Some(&PUB) && len >= PUB_FIELDS {
                let at = u64_at(head, HEADER + PUB_ID).expect("a message's ID");
                if at > id.0 {
                    return Ok(None);
                }
                if at == id.0 {
                    // Read whole (a message's, as its kind said); the body is a range of the
                    // stretch, not a copy.
                    self.bytes(file, seg, off, HEADER + len, chunk, end)?;
                    self.last = Some((seg, next, id));
                    let rel = self.base + (off - self.at) as usize;
                    let (start, body_end) = (rel + HEADER + PUB_FIELDS, rel + HEADER + len);
                    return Ok(Some(Found {
                        body: Body::range_of(&self.buf, start..body_end),
                        seal: Seal { salt, base: off },
                    }));
                }
            }
            off = next;
        }
        Ok(None)
    }

    /// Loads start again from the index: the record the last one found was not intact.
    pub fn lose_place(&mut self) {
        self.last = None;
    }

    /// Segment `seg` is deleted (or its end cut back): what was read of it goes (and its
    /// memory).
    pub fn forget(&mut self, seg: u64) {
        if self.seg == seg {
            self.buf = Default::default();
            self.len = 0;
        }
        if self.last.is_some_and(|(s, _, _)| s == seg) {
            self.last = None;
        }
    }

    /// At least `need` bytes of segment `seg` from `off` (fewer before `end`), from memory or
    /// read now: `chunk` bytes, or `need` when more.
    ///
    /// A whole stretch comes from the page cache as far as the cache holds it, and the rest
    /// with direct I/O (`file.1`), into this memory: the page cache drops older segments
    /// (see `cache.rs`), and reading one back through it would take a new page of memory
    /// per 4 KiB, which on a virtual machine costs a fault in its host each; the copy out of
    /// those pages was over half of what this thread did while a consumer drained a backlog.
    fn bytes(
        &mut self,
        (file, direct): (&std::fs::File, Option<&std::fs::File>),
        seg: u64,
        off: u64,
        need: usize,
        chunk: usize,
        end: u64,
    ) -> std::io::Result<&[u8]> {
        use std::os::unix::fs::FileExt;
        let left = usize::try_from(end.saturating_sub(off)).unwrap_or(usize::MAX);
        let need = need.min(left);
        let cached =
            self.seg == seg && off >= self.at && off + need as u64 <= self.at + self.len as u64;
        if !cached {
            let size = need.max(chunk).min(left);
            let whole = chunk == Self::SIZE && size <= Self::SIZE;
            self.fresh(size, whole);
            self.seg = seg;
            self.at = off;
            let buf = std::sync::Arc::get_mut(&mut self.buf).expect("a stretch of its own");
            let read = if whole {
                // Where a direct read of the page `off` is in lands aligned.
                // (`align_offset` may give up, with usize::MAX: then no direct I/O.)
                let pad = buf.as_ptr().align_offset(ALIGN).min(ALIGN);
                self.base = pad + (off % ALIGN as u64) as usize;
                let direct = direct.filter(|_| pad < ALIGN);
                read_stretch(file, direct, &mut buf[pad..], off, size)
                    .map(|d| self.direct_reads += u64::from(d))
            } else {
                self.base = 0;
                file.read_exact_at(&mut buf[..size], off)
            };
            if let Err(e) = read {
                self.len = 0;
                return Err(e);
            }
            self.len = size;
        }
        let rel = self.base + (off - self.at) as usize;
        Ok(&self.buf[rel..rel + need])
    }

    /// Make `buf` a buffer of at least `size` bytes that no body uses. A whole stretch
    /// (`whole`) is one a body no longer uses, or a new one; anything else is the size
    /// asked for (a lone load's few KiB, or a record larger than a stretch, which is not
    /// kept after).
    fn fresh(&mut self, size: usize, whole: bool) {
        use std::sync::Arc;
        let old = std::mem::take(&mut self.buf);
        self.len = 0;
        let mut spare = self.spare.0.borrow_mut();
        if old.len() == STRETCH {
            spare.push(old);
        }
        if whole {
            if let Some(i) = spare.iter_mut().position(|b| Arc::get_mut(b).is_some()) {
                self.buf = spare.swap_remove(i);
                return;
            }
        }
        if spare.len() > Self::SPARE {
            // All still in use: the oldest is let go (its memory goes with its last body).
            spare.remove(0);
        }
        drop(spare);
        let n = if whole { STRETCH } else { size };
        self.buf = std::iter::repeat_n(0u8, n).collect();
    }
}

/// Direct I/O's alignment (of file offsets, lengths and memory): a page, which covers any
/// logical block size.
pub(super) const ALIGN: usize = 4096;

/// A whole stretch's buffer: [`ReadAhead::SIZE`], and room to align a direct read of it.
pub(super) const STRETCH: usize = ReadAhead::SIZE + 3 * ALIGN;

/// Read `size` bytes at `off` of a segment into `dst` from `off % ALIGN` on (`dst` starts
/// aligned): what the page cache holds, then the rest with direct I/O when there is a
/// `direct` file. Returns whether direct I/O read any of it.
fn read_stretch(
    file: &std::fs::File,
    direct: Option<&std::fs::File>,
    dst: &mut [u8],
    off: u64,
    size: usize,
) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let lead = (off % ALIGN as u64) as usize;
    let Some(direct) = direct else {
        file.read_exact_at(&mut dst[lead..lead + size], off)?;
        return Ok(false);
    };
    // Read through the cache only what it holds whole. A read with RWF_NOWAIT of pages it
    // does not hold starts the kernel reading them into the cache as well, so a dropped
    // stretch would be read twice and come back into memory; with one page of it left (a
    // page shared with the stretch before, say), the next stretch would too.
    let pages = (off + size as u64).div_ceil(ALIGN as u64) - off / ALIGN as u64;
    let got = match super::super::sys::cached_pages(file, off, size as u64) {
        Some(n) if n < pages => 0,
        _ => super::super::sys::read_cached(file, &mut dst[lead..lead + size], off)?,
    };
    if got == size {
        return Ok(false);
    }
    // The rest, from the page where the cache stopped, straight into `dst`.
    let page = (off + got as u64) / ALIGN as u64 * ALIGN as u64;
    let at = (page - (off - lead as u64)) as usize;
    let want = (lead + size - at).next_multiple_of(ALIGN);
    let mut n = 0;
    while at + n < lead + size {
        match direct.read_at(&mut dst[at + n..at + want], page + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Direct I/O refused (an odd alignment, say): through the page cache instead.
            Err(_) => break,
        }
        if n % ALIGN != 0 {
            break; // a short read ends a direct read's run
        }
    }
    if at + n >= lead + size {
        return Ok(true);
    }
    let from = lead + got;
    file.read_exact_at(&mut dst[from..lead + size], off + got as u64)?;
    Ok(false)
}
