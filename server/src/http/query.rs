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
            return Err(ApiErr::InvalidRequest);
        }
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let dec = |s: &str| percent_decode(&s.replace('+', " ")).ok_or(ApiErr::InvalidRequest);
        m.entry(dec(k)?).or_default().push(dec(v)?);
    }
    Ok(m)
}

/// Go's `url.QueryUnescape` without the `+` rule (the caller applies it). Written here, not
/// taken from the `percent-encoding` crate: that one passes a `%` without two hex digits
/// through, where Go fails the whole query (and nsqd answers `INVALID_REQUEST`).
pub(crate) fn percent_decode(s: &str) -> Option<String> {
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
pub(crate) fn bool_param(v: &str) -> Option<bool> {
    match v {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(raw: &str) -> Result<HashMap<String, Vec<String>>, ApiErr> {
        query(&Some(raw.to_string()))
    }

    #[test]
    fn queries_parse_as_go_parses_them() {
        let m = q("topic=a%2Fb&channel=c+d&topic=second&&flag").unwrap();
        assert_eq!(m["topic"], ["a/b", "second"]);
        assert_eq!(m["channel"], ["c d"]);
        assert_eq!(m["flag"], [""]);
        assert_eq!(first(&m, "topic"), Some("a/b"));
        assert_eq!(first(&m, "missing"), None);
        assert!(query(&None).unwrap().is_empty());
        // Go refuses the whole query for a `;` or a bad escape.
        for bad in ["topic=a;b", "a=1&b=%zz", "a=%4", "%=1"] {
            assert_eq!(q(bad), Err(ApiErr::InvalidRequest), "{bad}");
        }
    }

    #[test]
    fn percent_decoding_is_strict_and_keeps_bytes() {
        assert_eq!(percent_decode("%41%62c").as_deref(), Some("Abc"));
        assert_eq!(percent_decode("100%").as_deref(), None);
        assert_eq!(percent_decode("%e4%b8%ad").as_deref(), Some("中"));
        // Invalid UTF-8 becomes U+FFFD (which no topic name check accepts).
        assert_eq!(percent_decode("%ff").as_deref(), Some("\u{fffd}"));
    }

    #[test]
    fn only_nsqds_four_spellings_are_booleans() {
        assert_eq!(bool_param("true"), Some(true));
        assert_eq!(bool_param("1"), Some(true));
        assert_eq!(bool_param("false"), Some(false));
        assert_eq!(bool_param("0"), Some(false));
        for v in ["TRUE", "yes", "", "t"] {
            assert_eq!(bool_param(v), None, "{v}");
        }
    }
}
