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

/// Parse a normalized command line as Go's `flag` package would (with `ExitOnError`), through
/// clap: a flag's value may start with `-`; integers take Go's `ParseInt(s, 0, 64)` forms
/// (`0x10`, `0o17`, `017`, `0b101`, `1_000`); parsing stops at the first argument that is not
/// a flag (or after `--`), and the rest is ignored; an error is Go's line (`flag provided but
/// not defined: -foo`, `invalid value "x" for flag -n: parse error`) then Go's usage, exit
/// status 2; `-h` prints the usage and exits 0.
pub fn parse<T: clap::Parser>(argv: impl IntoIterator<Item = String>) -> T {
    parse_showing::<T>(argv, &[])
}

/// [`parse`] for a program on Go's global `flag.CommandLine` (nsq_tail, to_nsq, nsq_stat):
/// its usage names the program as it was invoked, `os.Args[0]` (here `argv`'s first word),
/// not a fixed name as a `flag.NewFlagSet` does (nsqd, nsqlookupd, nsq_to_file).
pub fn parse_command_line<T: clap::Parser>(argv: Vec<String>) -> T {
    let name = argv.first().cloned().unwrap_or_default();
    parse_named::<T>(argv, &[], Some(name))
}

/// [`parse`], with defaults the usage shows for flags whose default is worked out at run
/// time (nsqd's `--broadcast-address` is the hostname).
pub fn parse_showing<T: clap::Parser>(
    argv: impl IntoIterator<Item = String>,
    shown: &[(&str, String)],
) -> T {
    parse_named::<T>(argv, shown, None)
}

/// The parser: `usage_name` replaces the command's name in the usage.
fn parse_named<T: clap::Parser>(
    argv: impl IntoIterator<Item = String>,
    shown: &[(&str, String)],
    usage_name: Option<String>,
) -> T {
    let named = match usage_name {
        Some(n) => T::command().name(Box::leak(n.into_boxed_str()) as &'static str),
        None => T::command(),
    };
    let usage_cmd =
        named.mut_args(
            |a| match shown.iter().find(|(flag, _)| a.get_long() == Some(flag)) {
                Some((_, value)) => {
                    let value: &'static str = Box::leak(value.clone().into_boxed_str());
                    a.default_value(value)
                }
                None => a,
            },
        );
    // As in Go, a flag given again replaces its value (a list flag adds to it).
    let cmd = T::command().args_override_self(true).mut_args(|a| {
        if a.get_action().takes_values() && !a.is_require_equals_set() {
            a.allow_hyphen_values(true)
        } else {
            a
        }
    });
    let argv = match go_args(&cmd, argv.into_iter().collect()) {
        Ok(a) => a,
        Err(line) => go_fail(&usage_cmd, &line),
    };
    match cmd.clone().try_get_matches_from(argv) {
        Ok(mut m) => T::from_arg_matches_mut(&mut m).unwrap_or_else(|e| e.exit()),
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp => {
                eprint!("{}", go_usage(&usage_cmd));
                std::process::exit(0)
            }
            clap::error::ErrorKind::DisplayVersion => e.exit(),
            _ => go_fail(&usage_cmd, &go_error_line(&cmd, &e)),
        },
    }
}

/// Go's failure: the error line, the usage, exit status 2.
fn go_fail(cmd: &clap::Command, line: &str) -> ! {
    eprintln!("{line}");
    eprint!("{}", go_usage(cmd));
    std::process::exit(2)
}

/// How many words of `args` (argv[0] first) Go's `flag` package reads as flags: up to the
/// first that is not one (`--`, `-` or a plain word), a flag of `value_flags` given without
/// `=` taking the next word too.
pub fn go_flag_words(args: &[String], value_flags: &[String]) -> usize {
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        if a == "--" || a == "-" || !a.starts_with('-') {
            return i;
        }
        let name = a.trim_start_matches('-');
        i += if value_flags.iter().any(|f| f == name) {
            2
        } else {
            1
        };
    }
    args.len()
}

/// What Go's `flag` package makes of each argument: stop at the first non-flag (or after
/// `--`), and integer values in Go's forms rewritten as decimal for clap.
pub(crate) fn go_args(cmd: &clap::Command, mut argv: Vec<String>) -> Result<Vec<String>, String> {
    let end = go_flag_words(&argv, &value_flags(cmd)).min(argv.len());
    let mut rest = argv.split_off(end);
    let mut out = Vec::with_capacity(argv.len() + rest.len() + 1);
    let mut it = argv.into_iter();
    out.extend(it.next());
    while let Some(a) = it.next() {
        // (Go reads `-n` as `--n`; `normalize` left one-letter names alone.)
        let flag = a.strip_prefix("--").or_else(|| a.strip_prefix('-'));
        let flag = flag.unwrap_or_default();
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (flag.to_string(), None),
        };
        let Some(arg) = cmd
            .get_arguments()
            .find(|x| x.get_long() == Some(name.as_str()))
        else {
            if name == "help" {
                out.push(a);
                continue;
            }
            return Err(format!("flag provided but not defined: -{name}"));
        };
        let takes_next = arg.get_action().takes_values() && !arg.is_require_equals_set();
        let value = match inline {
            Some(v) => Some(v),
            None if takes_next => match it.next() {
                Some(v) => Some(v),
                None => return Err(format!("flag needs an argument: -{name}")),
            },
            None => None,
        };
        match value {
            Some(v) => {
                let v = match go_type(arg) {
                    "int" => go_parse_int(&v)
                        .map(|n| n.to_string())
                        .map_err(|e| format!("invalid value {v:?} for flag -{name}: {e}"))?,
                    _ => v,
                };
                out.push(format!("--{name}={v}"));
            }
            None => out.push(a),
        }
    }
    // What is left is Go's `flag.Args()` (the terminator itself not included), for a program
    // that has positional arguments (nsq_to_file refuses them).
    if rest.first().is_some_and(|a| a == "--") {
        rest.remove(0);
    }
    if cmd.get_positionals().next().is_some() && !rest.is_empty() {
        out.push("--".to_string());
        out.extend(rest);
    }
    Ok(out)
}

/// Go's `strconv.ParseInt(s, 0, 64)`, with `flag`'s error words: an optional sign, then
/// `0x`/`0X` hex, `0o`/`0O` or a leading `0` octal, `0b`/`0B` binary, else decimal;
/// underscores only between digits (or after the base prefix).
pub fn go_parse_int(s: &str) -> Result<i64, &'static str> {
    const PARSE: &str = "parse error";
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d, true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d, true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    // Go's underscoreOK: `_` only between digits, or right after a base prefix.
    let bytes = digits.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let after_prefix = i == 0 && prefixed;
            let between = i > 0 && bytes[i - 1] != b'_' && i + 1 < bytes.len();
            if !(after_prefix || between) || i + 1 == bytes.len() {
                return Err(PARSE);
            }
        }
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || clean.starts_with(['+', '-']) {
        return Err(PARSE);
    }
    let mag = u64::from_str_radix(&clean, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => "value out of range",
        _ => PARSE,
    })?;
    if neg {
        if mag > i64::MIN.unsigned_abs() {
            return Err("value out of range");
        }
        Ok((mag as i64).wrapping_neg())
    } else {
        i64::try_from(mag).map_err(|_| "value out of range")
    }
}

/// Go's type word for a flag in its usage: `""` for a boolean, `duration`, `int`, `float`,
/// `string`, or `value` for one given several times or with a parser of its own.
fn go_type(a: &clap::Arg) -> &'static str {
    use std::any::TypeId;
    let t = a.get_value_parser().type_id();
    if !a.get_action().takes_values() || a.is_require_equals_set() {
        ""
    } else if a
        .get_value_names()
        .is_some_and(|n| n.first().is_some_and(|n| n == "value"))
    {
        // One of Go's `flag.Var` types (its own parsing), marked `value_name = "value"`.
        "value"
    } else if t == TypeId::of::<Duration>() {
        "duration"
    } else if [
        TypeId::of::<i64>(),
        TypeId::of::<i32>(),
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<u16>(),
        TypeId::of::<usize>(),
    ]
    .iter()
    .any(|id| t == *id)
    {
        "int"
    } else if t == TypeId::of::<f64>() {
        "float"
    } else if matches!(a.get_action(), clap::ArgAction::Append) {
        "value"
    } else {
        "string"
    }
}

/// Go's `FlagSet.PrintDefaults` after `Usage of <name>:`, from clap's flags: sorted by name,
/// each `  -name type` then its help on the next line, with `(default …)` unless the
/// default is the zero value.
pub fn go_usage(cmd: &clap::Command) -> String {
    let mut args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.get_long().is_some_and(|l| l != "help"))
        .collect();
    args.sort_by_key(|a| a.get_long());
    let mut out = format!("Usage of {}:\n", cmd.get_name());
    for a in args {
        let ty = go_type(a);
        out.push_str("  -");
        out.push_str(a.get_long().unwrap_or_default());
        if !ty.is_empty() {
            out.push(' ');
            out.push_str(ty);
        }
        out.push_str("\n    \t");
        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&help.replace('\n', "\n    \t"));
        if let Some(d) = a.get_default_values().first() {
            let d = d.to_string_lossy();
            let zero = matches!(d.as_ref(), "" | "0" | "0s" | "false");
            if !zero {
                if ty == "string" {
                    out.push_str(&format!(" (default {d:?})"));
                } else {
                    out.push_str(&format!(" (default {d})"));
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Go's error line for what clap refused.
fn go_error_line(cmd: &clap::Command, e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let ctx = |k: ContextKind| match e.get(k) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(v)) => v.first().cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let arg = ctx(ContextKind::InvalidArg);
    let name = arg
        .trim_start_matches('-')
        .split(['=', ' ', '['])
        .next()
        .unwrap_or_default()
        .to_string();
    match e.kind() {
        ErrorKind::UnknownArgument => format!("flag provided but not defined: -{name}"),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let value = ctx(ContextKind::InvalidValue);
            let flag = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(name.as_str()));
            let ty = flag.map_or("string", go_type);
            let why = match (ty, std::error::Error::source(e)) {
                ("" | "duration" | "int" | "float", _) => "parse error".to_string(),
                (_, Some(src)) => src.to_string(),
                (_, None) => "parse error".to_string(),
            };
            if ty.is_empty() {
                format!("invalid boolean value {value:?} for -{name}: {why}")
            } else {
                format!("invalid value {value:?} for flag -{name}: {why}")
            }
        }
        _ => e
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_string(),
    }
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

/// Parse a Go `time.Duration` string: `300ms`, `1.5h`, `2h45m`, `.5s`, `0`. As Go's
/// `time.ParseDuration`, in integer nanoseconds: each component's whole part times its unit,
/// plus its fraction scaled (truncated), overflow past 2^63-1 ns refused. A negative duration
/// is refused: none of the flags that take one means anything by it.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const LIMIT: u64 = 1 << 63;
    let bad = || format!("time: invalid duration {s:?}");
    let mut t = s;
    if let Some(rest) = t.strip_prefix('+') {
        t = rest;
    } else if t.starts_with('-') {
        return Err(format!("negative duration {s:?} is not allowed here"));
    }
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() {
        return Err(bad());
    }
    let digits = |x: &str| x.bytes().take_while(u8::is_ascii_digit).count();
    let mut total: u64 = 0;
    while !t.is_empty() {
        if !t.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(bad());
        }
        // The whole part: an overflow is an invalid duration.
        let n = digits(t);
        let mut whole: u64 = 0;
        for b in t[..n].bytes() {
            if whole > LIMIT / 10 {
                return Err(bad());
            }
            whole = whole * 10 + u64::from(b - b'0');
            if whole > LIMIT {
                return Err(bad());
            }
        }
        t = &t[n..];
        // The fraction: digits past what fits are ignored.
        let (mut frac, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = t.strip_prefix('.') {
            let m = digits(rest);
            post = m > 0;
            let mut overflow = false;
            for b in rest[..m].bytes() {
                if overflow || frac > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = frac * 10 + u64::from(b - b'0');
                if y > LIMIT {
                    overflow = true;
                    continue;
                }
                frac = y;
                scale *= 10.0;
            }
            t = &rest[m..];
        }
        if n == 0 && !post {
            return Err(bad());
        }
        let unit_len = t
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(t.len());
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {s:?}"));
        }
        let unit = match &t[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            u => return Err(format!("time: unknown unit {u:?} in duration {s:?}")),
        };
        t = &t[unit_len..];
        if whole > LIMIT / unit {
            return Err(bad());
        }
        let mut v = whole * unit;
        if frac > 0 {
            // Go: v += uint64(float64(f) * (float64(unit) / scale)).
            v += (frac as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(bad());
            }
        }
        total += v;
        if total > LIMIT {
            return Err(bad());
        }
    }
    if total > LIMIT - 1 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total))
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

    /// Go's `strconv.ParseInt(s, 0, 64)`, as its `flag` package reads an int.
    #[test]
    fn ints_in_go_forms() {
        for (s, n) in [
            ("10", 10),
            ("-7", -7),
            ("+7", 7),
            ("0x10", 16),
            ("0X1f", 31),
            ("0o17", 15),
            ("017", 15),
            ("0b101", 5),
            ("1_000", 1000),
            ("0x_ff", 255),
            ("0", 0),
            ("-9223372036854775808", i64::MIN),
        ] {
            assert_eq!(go_parse_int(s), Ok(n), "{s}");
        }
        for s in ["", "x", "0x", "1_", "_1", "1__0", "09", "1e3", "--1", "0b2"] {
            assert_eq!(go_parse_int(s), Err("parse error"), "{s}");
        }
        assert_eq!(
            go_parse_int("9223372036854775808"),
            Err("value out of range")
        );
    }

    /// `PrintDefaults`' layout: sorted, the type word, the help on its own line, the default
    /// unless it is the zero value (strings quoted).
    #[test]
    fn usage_as_go_prints_it() {
        let cmd = clap::Command::new("demo")
            .arg(
                clap::Arg::new("b")
                    .long("b-flag")
                    .help("a bool")
                    .value_parser(go_bool)
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_value("true"),
            )
            .arg(
                clap::Arg::new("a")
                    .long("a-flag")
                    .help("a string")
                    .default_value("x y"),
            )
            .arg(
                clap::Arg::new("n")
                    .long("n-flag")
                    .help("an int")
                    .value_parser(clap::value_parser!(i64))
                    .default_value("0"),
            )
            .arg(
                clap::Arg::new("d")
                    .long("d-flag")
                    .help("a duration")
                    .value_parser(duration_arg)
                    .default_value("1m0s"),
            );
        assert_eq!(
            go_usage(&cmd),
            "Usage of demo:\n  -a-flag string\n    \ta string (default \"x y\")\n  -b-flag\n    \ta bool (default true)\n  -d-flag duration\n    \ta duration (default 1m0s)\n  -n-flag int\n    \tan int\n"
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
        // Integer nanoseconds, as Go: a fraction is truncated, big values stay exact.
        assert_eq!(
            parse_duration("1.9999999999s").unwrap(),
            Duration::from_nanos(1_999_999_999)
        );
        assert_eq!(
            parse_duration("9007199254740993ns").unwrap(),
            Duration::from_nanos(9_007_199_254_740_993)
        );
        assert_eq!(
            parse_duration("2562047h47m16.854775807s").unwrap(),
            Duration::from_nanos(i64::MAX as u64)
        );
        assert_eq!(
            parse_duration("2562047h47m16.854775808s"),
            Err(r#"time: invalid duration "2562047h47m16.854775808s""#.to_string())
        );
        assert_eq!(parse_duration(".5s").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.s").unwrap(), Duration::from_secs(1));
        assert_eq!(
            parse_duration("+2\u{b5}s").unwrap(),
            Duration::from_micros(2)
        );
        assert_eq!(
            parse_duration("10"),
            Err(r#"time: missing unit in duration "10""#.to_string())
        );
        assert_eq!(
            parse_duration(".s"),
            Err(r#"time: invalid duration ".s""#.to_string())
        );
        assert_eq!(
            parse_duration("3d"),
            Err(r#"time: unknown unit "d" in duration "3d""#.to_string())
        );
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_duration(Duration::from_secs(60)), "1m0s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
    }
}
