//! nsqd's queue-scan loop, kept for teaching ([`TimerStrategy::ScanLoop`]).

use super::timer::TimerKey;
use super::Broker;
use crate::event::EventKind;
use crate::time::Time;
use crate::time::{Nanos, MILLISECOND, SECOND};
use crate::ChannelId;
use rand_core::RngCore;

/// nsqd's queue-scan cadence and channel-list refresh (only for [`TimerStrategy::ScanLoop`]).
pub(super) const SCAN_INTERVAL: Nanos = 100 * MILLISECOND;
const SCAN_REFRESH: Nanos = 5 * SECOND;

#[derive(Debug, Default, Clone)]
pub(super) struct ScanState {
    pub(super) channels: Vec<ChannelId>,
    pub(super) next_refresh: Time,
}

impl Broker {
    /// nsqd's queueScanLoop: sample up to `queue_scan_selection_count` channels at random,
    /// process them, and go again at once while more than a quarter were dirty.
    pub(super) fn scan_loop(&mut self, now: Time) {
        if now >= self.scan.next_refresh {
            self.scan.channels = (0..self.channels.len() as u32)
                .filter(|&i| self.channels[i as usize].is_some())
                .map(ChannelId)
                .collect();
            self.scan.next_refresh = now + SCAN_REFRESH;
        }
        loop {
            let n = self.scan.channels.len();
            let num = self.opts.queue_scan_selection_count.min(n);
            if num == 0 {
                break;
            }
            // A partial Fisher-Yates shuffle picks `num` distinct channels.
            let mut pool = self.scan.channels.clone();
            let mut dirty = 0;
            for i in 0..num {
                let j = i + (self.rng.next_u64() % (n - i) as u64) as usize;
                pool.swap(i, j);
                if self.process_channel_timers(now, pool[i]) {
                    dirty += 1;
                }
            }
            self.emit(
                now,
                EventKind::Scan {
                    channels: num,
                    dirty,
                },
            );
            if dirty * 4 <= num {
                break;
            }
        }
        self.timers.set(TimerKey::Scan, now + SCAN_INTERVAL);
    }
}
