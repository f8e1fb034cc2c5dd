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
