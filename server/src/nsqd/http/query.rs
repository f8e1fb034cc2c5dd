//! Query strings as Go's `url.ParseQuery` reads them.

use super::response::ApiErr;
use std::collections::HashMap;

/// Go's `url.ParseQuery`: name → values. A `;` anywhere in a pair, or a `%` without two hex
/// digits, fails the whole query (nsqd answers `INVALID_REQUEST`). Go keeps a value's bytes
/// as they are; invalid UTF-8 here becomes U+FFFD, which no name check accepts either.
pub(crate) fn query(raw: &Option<String>) -> Result<HashMap<String, Vec<String>>, ApiErr> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    let Some(raw) = raw else { return Ok(m) };
    for part in raw.split('&').filter(|p| !p.is_empty()) {
        if part.contains(';') {
            return Err(ApiErr(400, "INVALID_REQUEST"));
        }
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let dec =
            |s: &str| percent_decode(&s.replace('+', " ")).ok_or(ApiErr(400, "INVALID_REQUEST"));
        m.entry(dec(k)?).or_default().push(dec(v)?);
    }
    Ok(m)
}

pub(super) fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = b.get(i + 1..i + 3)?;
            if !h.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

pub(crate) fn first<'a>(q: &'a HashMap<String, Vec<String>>, k: &str) -> Option<&'a str> {
    q.get(k).and_then(|v| v.first()).map(|s| s.as_str())
}

/// nsqd's `boolParams`: only these four spellings are booleans.
pub(super) fn bool_param(v: &str) -> Option<bool> {
    match v {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}
