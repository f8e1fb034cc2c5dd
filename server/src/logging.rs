//! Logs in nsqd's format: `[nsqd] 2006/01/02 15:04:05.000000 INFO: message`.
//!
//! NSQ client test harnesses start nsqd and read its `TCP: listening on …` line, so the
//! prefix and level tags follow nsqd's `lg` package.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter;
use tracing_subscriber::fmt::{format::Writer, FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// A tracing formatter that writes nsqd-style lines.
pub struct NsqFormat {
    pub prefix: String,
}

/// `2006/01/02 15:04:05.000000` in UTC for a Unix time in nanoseconds (Go's log flags
/// `LstdFlags|Lmicroseconds|LUTC`, as nsqd's logger).
pub fn timestamp(ns: u64) -> String {
    utc(ns).format("%Y/%m/%d %H:%M:%S%.6f").to_string()
}

/// A Unix time in nanoseconds as a UTC date and time.
pub fn utc(ns: u64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_nanos(i64::try_from(ns).unwrap_or(i64::MAX))
}

impl<S, N> FormatEvent<S, N> for NsqFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "ERROR",
            Level::WARN => "WARNING",
            Level::INFO => "INFO",
            Level::DEBUG | Level::TRACE => "DEBUG",
        };
        write!(
            w,
            "{}{} {level}: ",
            self.prefix,
            timestamp(crate::clock::now())
        )?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// nsqd's log levels: DEBUG=1, INFO=2, WARN=3, ERROR=4, FATAL=5 (`/config/log_level` reports the
/// number).
static LEVEL: AtomicU8 = AtomicU8::new(2);

/// nsqd's `lg.ParseLogLevel`.
pub fn parse_level(s: &str) -> Result<u8, String> {
    match s.to_ascii_lowercase().as_str() {
        "debug" => Ok(1),
        "info" => Ok(2),
        "warn" => Ok(3),
        "error" => Ok(4),
        "fatal" => Ok(5),
        _ => Err(format!(
            "invalid log level '{s}' (debug, info, warn, error, fatal)"
        )),
    }
}

/// A clap value parser for `--log-level` (nsqd's `LogLevel.Set`: refused at parse time).
pub fn level_arg(s: &str) -> Result<String, String> {
    parse_level(s).map(|_| s.to_string())
}

/// The current level (1–5).
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Change the level at run time (`PUT /config/log_level`).
pub fn set_level(l: u8) {
    LEVEL.store(l, Ordering::Relaxed);
}

fn rank(l: &Level) -> u8 {
    match *l {
        Level::ERROR => 4,
        Level::WARN => 3,
        Level::INFO => 2,
        Level::DEBUG | Level::TRACE => 1,
    }
}

/// Install the nsqd-style logger at `level` (nsqd's `--log-level`).
pub fn init(prefix: &str, level: &str) -> Result<(), String> {
    set_level(parse_level(level)?);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .event_format(NsqFormat {
            prefix: prefix.to_string(),
        })
        .with_filter(filter::filter_fn(|meta| {
            rank(meta.level()) >= self::level()
        }));
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_like_go() {
        // 2020-02-29T13:04:05.123456Z
        let ns = 1_582_981_445_123_456_000u64;
        assert_eq!(super::timestamp(ns), "2020/02/29 13:04:05.123456");
    }
}
