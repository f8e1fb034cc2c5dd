//! Segments written before salts (no file header, 8-byte record headers with a plain
//! CRC-32C): read once when the store opens, and written again salted.

use super::*;

/// A legacy record's header: payload length and a plain CRC-32C of the payload.
pub(super) const LEGACY_HEADER: usize = 8;

/// Append a legacy record (for tests: segments as the store wrote them before salts).
#[cfg(test)]
pub fn put_legacy(out: &mut Vec<u8>, rec: &Record) {
    let mut b = Vec::new();
    let seal = Seal {
        salt: Salt(0),
        base: 0,
    };
    match rec {
        Record::Mark { last_id } => put_mark(&mut b, seal, *last_id),
        Record::Pub { held, due, msg } => put_pub(&mut b, seal, *held, *due, msg),
        Record::Fin { key, ids } => put_fin(&mut b, seal, *key, ids),
        Record::Req { key, id, due } => put_req(&mut b, seal, *key, *id, *due),
        Record::Dispatch => put_dispatch(&mut b, seal),
        Record::DropHeld => put_drop_held(&mut b, seal),
    }
    // The payload is the same in both formats; only the header differs.
    let payload = &b[HEADER..];
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// The legacy record at `at` of `b`, and its length, if one is there whole and intact.
fn record_at(b: &[u8], at: usize, bodies: bool) -> Option<(Record, usize)> {
    let len = u32_at(b, at)? as usize;
    let crc = u32_at(b, at + 4)?;
    if len == 0 || len > MAX_PAYLOAD {
        return None;
    }
    let payload = b.get(at + LEGACY_HEADER..at + LEGACY_HEADER + len)?;
    if crc32c::crc32c(payload) != crc {
        return None;
    }
    Some((decode_payload(payload, bodies)?, LEGACY_HEADER + len))
}

/// A legacy segment starts with its mark (or, that mark damaged, with a mark's length
/// followed by an intact record).
pub(super) fn starts(b: &[u8]) -> bool {
    const MARK_LEN: usize = LEGACY_HEADER + 9;
    matches!(record_at(b, 0, false), Some((Record::Mark { .. }, _)))
        || (u32_at(b, 0) == Some(9) && record_at(b, MARK_LEN, false).is_some())
}

/// Its intact records. A bad one is skipped only when its length field leads to an intact
/// record; otherwise the rest of the file is bad. There is no search for the next record:
/// a plain CRC-32C is one a client can compute for a record it puts in a body.
pub(super) fn scan(b: &[u8], bodies: bool, out: &mut Scan) {
    let mut at = 0;
    while at < b.len() {
        if let Some((rec, n)) = record_at(b, at, bodies) {
            out.records.push((at, rec));
            at += n;
            continue;
        }
        let next = u32_at(b, at)
            .and_then(|len| at.checked_add(LEGACY_HEADER + len as usize))
            .filter(|&n| n < b.len() && record_at(b, n, false).is_some());
        match next {
            Some(n) => {
                out.bad.push(at..n);
                at = n;
            }
            None => {
                out.bad.push(at..b.len());
                return;
            }
        }
    }
}
