//! Go-style command lines. NSQ's programs use Go's `flag` package, so scripts pass
//! `-flag value`, `-flag=value`, `--flag value` or `--flag=value`, and booleans as `-flag` or
//! `-flag=false`. [`normalize`] rewrites single-dash long flags so clap sees `--flag`.

use std::time::Duration;

/// Rewrite `-flag…` to `--flag…` (Go has no short flags); leave values such as `-1` alone,
/// and the word after a flag of `value_flags` given without `=` (Go's flag package takes it
/// as the value whatever it looks like: `-log-prefix -x-`).
pub fn normalize(args: impl IntoIterator<Item = String>, value_flags: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest_positional = false;
    let mut value_next = false;
    for a in args {
        if rest_positional || std::mem::take(&mut value_next) {
            out.push(a);
            continue;
        }
        let name = a.trim_start_matches('-');
        value_next = a.starts_with('-') && value_flags.iter().any(|f| f == name);
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

/// The long flags of `cmd` that take the next word as their value (not the booleans, which
/// take one only after `=`).
pub fn value_flags(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| a.get_action().takes_values() && !a.is_require_equals_set())
        .filter_map(|a| a.get_long().map(String::from))
        .collect()
}

/// Parse a normalized command line as clap would, except that a flag's value may start with
/// `-` (as Go's flag package allows).
pub fn parse<T: clap::Parser>(argv: impl IntoIterator<Item = String>) -> T {
    let cmd = T::command().mut_args(|a| {
        if a.get_action().takes_values() && !a.is_require_equals_set() {
            a.allow_hyphen_values(true)
        } else {
            a
        }
    });
    let mut matches = cmd.get_matches_from(argv);
    T::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit())
}

/// An OS error's text as Go prints it: `connection refused` (Rust's is the C library's,
/// capitalised, then ` (os error N)`).
pub fn go_errno_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
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
    }
}

/// Go's error for reading a whole file that failed: `open <path>: no such file or
/// directory` (`read <path>: is a directory`).
pub fn go_read_error(path: &str, e: &std::io::Error) -> String {
    let text = go_errno_text(e);
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
                "-log-prefix",
                "-x-",
                "--snappy",
            ]
            .map(String::from),
            &["max-rdy-count".into(), "log-prefix".into()],
        );
        assert_eq!(
            a,
            [
                "--tcp-address=x",
                "--max-rdy-count",
                "-1",
                "--snappy=false",
                "-v",
                "--log-prefix",
                "-x-",
                "--snappy",
            ]
        );
    }

    /// The values of nsqd's flags start with a dash when Go's would: after a flag that takes
    /// one, the next word; not after a boolean.
    #[test]
    fn a_value_may_start_with_a_dash() {
        use clap::CommandFactory;
        let flags = value_flags(&crate::nsqd::NsqdArgs::command());
        assert!(flags.contains(&"log-prefix".to_string()));
        assert!(!flags.contains(&"snappy".to_string()), "a boolean");
        let argv = std::iter::once("nsqd".to_string()).chain(normalize(
            ["-log-prefix", "-x-", "-snappy", "-mem-queue-size", "7"].map(String::from),
            &flags,
        ));
        let a: crate::nsqd::NsqdArgs = parse(argv);
        assert_eq!(a.log_prefix, "-x-");
        assert_eq!(a.mem_queue_size, 7);
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
