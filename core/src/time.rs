//! Time as the core sees it: plain nanosecond counts, handed in by the caller.
//!
//! The core never reads a clock. Every input carries `now`, a [`Time`] in nanoseconds since an
//! epoch the caller chooses: the server passes Unix time (so message timestamps on the wire are
//! nsqd's `UnixNano`), simulations start at 0. Durations are nanosecond counts too.

/// An instant, in nanoseconds since the caller's epoch.
pub type Time = u64;

/// A span of time in nanoseconds.
pub type Nanos = u64;

/// One microsecond in nanoseconds.
pub const MICROSECOND: Nanos = 1_000;
/// One millisecond in nanoseconds.
pub const MILLISECOND: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SECOND: Nanos = 1_000_000_000;

/// `ms` milliseconds as nanoseconds (saturating).
#[inline]
pub const fn ms(ms: u64) -> Nanos {
    ms.saturating_mul(MILLISECOND)
}

/// Whole milliseconds in `ns` (rounded down).
#[inline]
pub const fn as_ms(ns: Nanos) -> u64 {
    ns / MILLISECOND
}

/// A monotonic guard: input times never go backwards inside the core.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Clock {
    last: Time,
}

impl Clock {
    pub(crate) fn new(now: Time) -> Self {
        Self { last: now }
    }

    /// Clamp `now` so it never goes below an earlier input, and remember it.
    #[inline]
    pub(crate) fn advance(&mut self, now: Time) -> Time {
        if now > self.last {
            self.last = now;
        }
        self.last
    }

    #[inline]
    pub(crate) fn now(&self) -> Time {
        self.last
    }
}

/// A duration as Go's `time.Duration.String()` writes it (`1.5s`, `2m0s`, `350µs`).
pub fn go_duration(ns: Nanos) -> String {
    fn frac(v: u64, unit: u64, digits: usize) -> String {
        let (int, rem) = (v / unit, v % unit);
        if rem == 0 {
            return int.to_string();
        }
        let f = format!("{rem:0digits$}");
        format!("{int}.{}", f.trim_end_matches('0'))
    }
    if ns == 0 {
        return "0s".into();
    }
    if ns < MICROSECOND {
        return format!("{ns}ns");
    }
    if ns < MILLISECOND {
        return format!("{}µs", frac(ns, MICROSECOND, 3));
    }
    if ns < SECOND {
        return format!("{}ms", frac(ns, MILLISECOND, 6));
    }
    let (h, rem) = (ns / (3600 * SECOND), ns % (3600 * SECOND));
    let (m, rem) = (rem / (60 * SECOND), rem % (60 * SECOND));
    let s = format!("{}s", frac(rem, SECOND, 9));
    if h > 0 {
        format!("{h}h{m}m{s}")
    } else if m > 0 {
        format!("{m}m{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn go_duration_strings() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(999), "999ns");
        assert_eq!(go_duration(1_500), "1.5µs");
        assert_eq!(go_duration(71_500), "71.5µs");
        assert_eq!(go_duration(ms(2)), "2ms");
        assert_eq!(go_duration(1_234_567), "1.234567ms");
        assert_eq!(go_duration(SECOND + ms(500)), "1.5s");
        assert_eq!(go_duration(120 * SECOND), "2m0s");
        assert_eq!(go_duration(3600 * SECOND + 61 * SECOND), "1h1m1s");
    }
}
