//! Real time for the core: Unix nanoseconds, so message timestamps are nsqd's `UnixNano`.

use nsqlab_core::Time;
use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in nanoseconds since the Unix epoch.
pub fn now() -> Time {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as Time)
        .unwrap_or(0)
}
