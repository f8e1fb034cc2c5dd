//! Finding records: one at an offset if it is whole and intact, a batch checked three CRCs
//! at a time, and a whole segment scanned past torn and corrupt stretches.

use super::legacy::LEGACY_HEADER;
use super::*;

/// The record at `at` of `b` (whose first byte lies at file offset `seal.base`), and its
/// length, if one is there whole and intact.
#[cfg(test)]
pub(super) fn record_at(b: &[u8], at: usize, seal: Seal) -> Option<(Record, usize)> {
    record_at_with(b, at, true, seal)
}

/// The record at `at` of `b` (whose first byte lies at file offset `seal.base`), and its
/// length, if one is there whole and intact; a message comes with its body only if `body`.
fn record_at_with(b: &[u8], at: usize, body: bool, seal: Seal) -> Option<(Record, usize)> {
    let len = u32_at(b, at)? as usize;
    let b = b.get(at..at + HEADER + len)?;
    let seal = Seal {
        base: seal.base + at as u64,
        ..seal
    };
    if !intact(b, seal) {
        return None;
    }
    Some((decode_payload(&b[HEADER..], body)?, HEADER + len))
}

/// The error of a record read back whose check does not match.
pub fn checksum_mismatch() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "record checksum mismatch")
}

/// Whether `b` is exactly one whole record (whose first byte lies at file offset
/// `seal.base`) whose check matches.
fn intact(b: &[u8], seal: Seal) -> bool {
    whole(b) && intact_with(b, seal, crc32c::crc32c(&b[HEADER..]))
}

/// Whether `b` is exactly one whole record by its header's length.
fn whole(b: &[u8]) -> bool {
    u32_at(b, 0).is_some_and(|len| {
        let len = len as usize;
        len != 0 && len <= MAX_PAYLOAD && b.len() == HEADER + len
    })
}

/// Whether whole record `b`'s check matches, its payload's CRC being `crc`.
fn intact_with(b: &[u8], seal: Seal, crc: u32) -> bool {
    u64_at(b, 4).is_some_and(|check| seal.salt.check_of(seal.base, b.len() - HEADER, crc) == check)
}

/// A message's record that a load found, its check not made yet (see [`intact_all`]).
#[derive(Debug)]
pub struct Found {
    /// Its body: a range of the stretch the record was read into.
    pub body: Body,
    /// The segment's salt, and the record's offset in the file.
    pub(super) seal: Seal,
}

impl Found {
    /// The whole record (its body's buffer holds it, just before the body).
    fn record(&self) -> &[u8] {
        let (buf, body) = self.body.backing();
        &buf[body.start - HEADER - PUB_FIELDS..body.end]
    }
}

/// Whether each record found is intact, in order: their CRCs three at a time (see
/// `crc.rs`), which costs about a third of one at a time.
pub fn intact_all<'a>(found: impl IntoIterator<Item = &'a Found>) -> Vec<bool> {
    let found: Vec<&Found> = found.into_iter().collect();
    let mut ok = Vec::with_capacity(found.len());
    for group in found.chunks(3) {
        let rec = |i: usize| group.get(i).map_or(&[][..], |f| f.record());
        let payload = |i: usize| rec(i).get(HEADER..).unwrap_or_default();
        let crcs = super::super::crc::crc32c_3(payload(0), payload(1), payload(2));
        for (i, f) in group.iter().enumerate() {
            let r = rec(i);
            ok.push(whole(r) && intact_with(r, f.seal, crcs[i]));
        }
    }
    ok
}

/// The length of the record at `at` of `b`, one a scan found intact.
pub fn record_len(b: &[u8], at: usize) -> usize {
    HEADER + u32_at(b, at).expect("a scanned record's header") as usize
}

/// The salt in the file header copy at `at` of `b`, if that copy is intact.
fn header_copy(b: &[u8], at: usize) -> Option<Salt> {
    let h = b.get(at..at + COPY)?;
    (h[..8] == MAGIC && u32_at(h, 16)? == crc32c::crc32c(&h[..16]))
        .then(|| Salt(u64_at(h, 8).expect("eight bytes")))
}

/// How a segment file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// This format, with the segment's salt.
    Salted(Salt),
    /// The format before salts: no file header; records `[u32 length][u32 CRC-32C][payload]`.
    Legacy,
    /// Neither: an empty file, a torn or destroyed header.
    Unknown,
}

/// A segment's contents: its layout, its intact records (with their offsets) and the byte
/// ranges that were not (torn or corrupt).
#[derive(Debug)]
pub struct Scan {
    pub layout: Layout,
    pub records: Vec<(usize, Record)>,
    pub bad: Vec<std::ops::Range<usize>>,
}

impl Scan {
    /// The file must be written again: it has bad bytes, or is not in this format.
    pub fn needs_rewrite(&self) -> bool {
        !self.bad.is_empty() || !matches!(self.layout, Layout::Salted(_))
    }

    /// The payload of the intact record at `at` of `b` (the scanned bytes).
    pub fn payload<'a>(&self, b: &'a [u8], at: usize) -> &'a [u8] {
        let header = match self.layout {
            Layout::Legacy => LEGACY_HEADER,
            _ => HEADER,
        };
        let len = u32_at(b, at).expect("a scanned record's header") as usize;
        &b[at + header..at + header + len]
    }
}

/// Read every intact record of a segment. After a bad stretch, reading resumes at the next
/// offset where an intact record starts, so flipped bytes cost only the records they hit and
/// a torn tail is one bad range at the end. Only records this server sealed pass there (see
/// "Why a salt"). A legacy segment is read only along its length fields.
#[cfg(test)]
pub fn scan(b: &[u8]) -> Scan {
    scan_with(b, true)
}

/// [`scan`], but the messages come without their bodies (evicted: they stay in the file), so
/// reading a segment costs no copy of it.
pub fn scan_without_bodies(b: &[u8]) -> Scan {
    scan_with(b, false)
}

/// [`scan_without_bodies`] of a segment whose header copies are both gone, its salt known
/// from elsewhere (its topic's metadata): its records are read with it, the header counted
/// bad. Nothing is found when the salt is not the segment's.
pub fn scan_with_salt(b: &[u8], salt: Salt) -> Scan {
    let mut out = Scan {
        layout: Layout::Salted(salt),
        records: Vec::new(),
        bad: Vec::new(),
    };
    out.bad.push(0..FILE_HEADER.min(b.len()));
    scan_records(b, false, salt, &mut out);
    out
}

fn scan_with(b: &[u8], bodies: bool) -> Scan {
    let mut out = Scan {
        layout: Layout::Unknown,
        records: Vec::new(),
        bad: Vec::new(),
    };
    let first = header_copy(b, 0);
    let Some(salt) = first.or_else(|| header_copy(b, COPY)) else {
        if super::legacy::starts(b) {
            out.layout = Layout::Legacy;
            super::legacy::scan(b, bodies, &mut out);
        } else if !b.is_empty() {
            out.bad.push(0..b.len());
        }
        return out;
    };
    out.layout = Layout::Salted(salt);
    if first.is_none() {
        out.bad.push(0..COPY);
    } else if header_copy(b, COPY) != Some(salt) {
        out.bad.push(COPY..FILE_HEADER.min(b.len()));
    }
    scan_records(b, bodies, salt, &mut out);
    out
}

/// The intact records after the file header, and the stretches between them, into `out`.
fn scan_records(b: &[u8], bodies: bool, salt: Salt, out: &mut Scan) {
    let seal = Seal { salt, base: 0 };
    let mut at = FILE_HEADER;
    while at < b.len() {
        if let Some((rec, n)) = record_at_with(b, at, bodies, seal) {
            out.records.push((at, rec));
            at += n;
            continue;
        }
        let bad_start = at;
        at += 1;
        while at < b.len() && record_at_with(b, at, false, seal).is_none() {
            at += 1;
        }
        out.bad.push(bad_start..at);
    }
}
