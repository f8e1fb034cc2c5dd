//! Go-style command lines. NSQ's programs use Go's `flag` package, so scripts pass
//! `-flag value`, `-flag=value`, `--flag value` or `--flag=value`, and booleans as `-flag` or
//! `-flag=false`. [`normalize`] rewrites single-dash long flags so clap sees `--flag`.

use std::time::Duration;

/// Rewrite `-flag…` to `--flag…` (Go has no short flags); leave values such as `-1` alone.
pub fn normalize(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest_positional = false;
    for a in args {
        if rest_positional {
            out.push(a);
            continue;
        }
        if a == "--" {
            rest_positional = true;
            out.push(a);
        } else if a.len() > 2
            && a.starts_with('-')
            && !a.starts_with("--")
            && a.as_bytes()[1].is_ascii_alphabetic()
        {
            out.push(format!("-{a}"));
        } else if a == "-h" || a == "-help" {
            out.push("--help".into());
        } else {
            out.push(a);
        }
    }
    out
}

/// Go's error for reading a whole file that failed: `open <path>: no such file or
/// directory` (`read <path>: is a directory`).
pub fn go_read_error(path: &str, e: &std::io::Error) -> String {
    let text = match e.raw_os_error() {
        // Rust's text is the C library's, then " (os error N)"; Go's starts in lower case.
        Some(n) => {
            let c = std::io::Error::from_raw_os_error(n).to_string();
            let c = c.split(" (os error").next().unwrap_or_default().to_string();
            let mut chars = c.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => c,
            }
        }
        None => e.to_string(),
    };
    let op = if e.kind() == std::io::ErrorKind::IsADirectory {
        "read"
    } else {
        "open"
    };
    format!("{op} {path}: {text}")
}

/// Go's `strconv.ParseBool`, which its `flag` package uses for booleans: `1 t T TRUE true
/// True`, `0 f F FALSE false False`.
pub fn go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("strconv.ParseBool: parsing {s:?}: invalid syntax")),
    }
}

/// Parse a Go `time.Duration` string: `300ms`, `1.5h`, `2h45m`, `-1.5s`, `0`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("time: invalid duration {s:?}");
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.starts_with('-') {
        return Err(format!("negative duration {s:?} is not allowed here"));
    }
    if t.is_empty() {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    let mut rest = t;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_end == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(format!("time: unknown unit {unit:?} in duration {s:?}")),
        };
        total += n * scale;
    }
    Ok(Duration::from_nanos(total.round() as u64))
}

/// Go's `Duration.String()`: `1h0m0s`, `1m0s`, `250ms`, `2s`.
pub fn format_duration(d: Duration) -> String {
    nsqlab_core::time::go_duration(d.as_nanos().min(u64::MAX as u128) as u64)
}

/// A clap value parser for Go durations.
pub fn duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_flag_forms() {
        let a = normalize(
            [
                "-tcp-address=x",
                "-max-rdy-count",
                "-1",
                "--snappy=false",
                "-v",
            ]
            .map(String::from),
        );
        assert_eq!(
            a,
            [
                "--tcp-address=x",
                "--max-rdy-count",
                "-1",
                "--snappy=false",
                "-v"
            ]
        );
    }

    #[test]
    fn durations_like_go() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("5x").is_err());
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_duration(Duration::from_secs(60)), "1m0s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
    }
}
