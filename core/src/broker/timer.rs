//! The timer table: what is due when, and what happens when it is.
//!
//! Every timer the broker keeps is a [`TimerKey`] in one indexed min-heap: a channel's next
//! deferred message or in-flight timeout, a client's heartbeat, read deadline or next MPUB
//! step, and nsqd's scan loop. [`Broker::poll_timeout`] is the earliest of them.

use super::Broker;
use crate::client::Client;
use crate::event::CloseReason;
use crate::iqueue::IndexedQueue;
use crate::options::TimerStrategy;
use crate::pqueue::HeapItem;
use crate::protocol::{FRAME_TYPE_RESPONSE, HEARTBEAT};
use crate::time::Time;
use crate::{ChannelId, ClientId};

/// What a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimerKey {
    /// The channel's next deferred message falls due or in-flight message times out.
    Channel(ChannelId),
    /// The client's next heartbeat.
    Heartbeat(ClientId),
    /// The client's read deadline (nsqd closes a client silent for twice its heartbeat).
    Read(ClientId),
    /// The next step of the client's large MPUB (see [`Broker::mpub`]).
    Mpub(ClientId),
    /// nsqd's queue-scan loop (only for [`TimerStrategy::ScanLoop`]).
    Scan,
}

impl HeapItem for TimerKey {
    /// Unique per key: the kind in the top byte, the channel or client number below it
    /// (client numbers stay far below 2^56).
    fn heap_id(&self) -> u64 {
        let (kind, n) = match *self {
            TimerKey::Channel(ch) => (1, ch.0 as u64),
            TimerKey::Heartbeat(c) => (2, c.0),
            TimerKey::Read(c) => (3, c.0),
            TimerKey::Scan => (4, 0),
            TimerKey::Mpub(c) => (5, c.0),
        };
        debug_assert!(n < 1 << 56, "timer number {n} overflows into the kind");
        kind << 56 | n
    }
}

/// The broker's timers, earliest first.
#[derive(Debug, Clone, Default)]
pub(super) struct Timers {
    queue: IndexedQueue<TimerKey>,
}

impl Timers {
    /// When the earliest timer is due.
    pub(super) fn next(&self) -> Option<Time> {
        self.queue.peek_key()
    }

    /// Set `key` to fire at `at`, armed or not.
    pub(super) fn set(&mut self, key: TimerKey, at: Time) {
        self.queue.upsert(at, key);
    }

    /// Arm `key`, which is not armed, for `at`.
    pub(super) fn start(&mut self, key: TimerKey, at: Time) {
        self.queue.push(at, key);
    }

    pub(super) fn cancel(&mut self, key: TimerKey) {
        self.queue.remove(key.heap_id());
    }

    /// Cancel every timer of client `id` (it left, or moved to another partition).
    pub(super) fn cancel_client(&mut self, id: ClientId) {
        for key in [
            TimerKey::Heartbeat(id),
            TimerKey::Read(id),
            TimerKey::Mpub(id),
        ] {
            self.cancel(key);
        }
    }

    /// The next timer due at or before `now`, with the time it was due.
    pub(super) fn pop_due(&mut self, now: Time) -> Option<(Time, TimerKey)> {
        self.queue.pop_due(now).map(|e| (e.key, e.item))
    }
}

impl Broker {
    /// When [`Broker::handle_timeout`] must next be called, if anything is pending.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        self.timers.next()
    }

    /// Everything due at or before `now`: deferred messages become ready, in-flight messages
    /// time out, heartbeats are sent, silent clients are closed.
    pub fn handle_timeout(&mut self, now: Time) {
        let now = self.clock.advance(now);
        while let Some((due, key)) = self.timers.pop_due(now) {
            match key {
                TimerKey::Channel(ch) => {
                    if let Some(c) = self
                        .channels
                        .get_mut(ch.0 as usize)
                        .and_then(|c| c.as_mut())
                    {
                        // Its timer entry was just taken.
                        c.armed = None;
                    }
                    self.process_channel_timers(now, ch);
                    self.rearm_channel(ch);
                }
                TimerKey::Heartbeat(cid) => self.heartbeat(now, cid, due),
                TimerKey::Mpub(cid) => self.continue_mpub(now, cid, false),
                TimerKey::Read(cid) => {
                    let Some(c) = self.clients.get_mut(&cid) else {
                        continue;
                    };
                    c.read_armed = None;
                    match c.read_deadline() {
                        Some(d) if d <= now => {
                            self.remove_client(now, cid, CloseReason::ReadTimeout, true)
                        }
                        d => self.arm_read_timer(cid, d),
                    }
                }
                TimerKey::Scan => self.scan_loop(now),
            }
        }
    }

    pub(super) fn rearm_channel(&mut self, ch: ChannelId) {
        if self.opts.timer_strategy != TimerStrategy::Exact {
            return;
        }
        let key = TimerKey::Channel(ch);
        let Some(c) = self.channels[ch.0 as usize].as_mut() else {
            self.timers.cancel(key);
            return;
        };
        let due = c.next_due();
        if due == c.armed {
            return;
        }
        c.armed = due;
        match due {
            Some(due) => self.timers.set(key, due),
            None => self.timers.cancel(key),
        }
    }

    pub(super) fn heartbeat(&mut self, now: Time, id: ClientId, was_due: Time) {
        let Some(c) = self.clients.get(&id) else {
            return;
        };
        let Some(hb) = c.settings.heartbeat_interval else {
            return;
        };
        self.send_frame(id, FRAME_TYPE_RESPONSE, HEARTBEAT);
        let mut next = was_due.saturating_add(hb);
        if next <= now {
            next = now.saturating_add(hb);
        }
        self.timers.set(TimerKey::Heartbeat(id), next);
    }

    pub(super) fn arm_client_timers(&mut self, id: ClientId, now: Time, reset_heartbeat: bool) {
        let Some(c) = self.clients.get(&id) else {
            return;
        };
        let (hb, read) = (c.settings.heartbeat_interval, c.read_deadline());
        self.arm_read_timer(id, read);
        if reset_heartbeat {
            match hb {
                Some(hb) => self
                    .timers
                    .set(TimerKey::Heartbeat(id), now.saturating_add(hb)),
                None => self.timers.cancel(TimerKey::Heartbeat(id)),
            }
        }
    }

    /// Arm a client's read timer for `deadline`. A deadline that only moved later (every
    /// command moves it) leaves an armed timer as it is: when that fires, it is re-armed.
    pub(super) fn arm_read_timer(&mut self, id: ClientId, deadline: Option<Time>) {
        if let Some(c) = self.clients.get_mut(&id) {
            arm_read(&mut self.timers, c, deadline);
        }
    }
}

/// Arm client `c`'s read timer for `deadline` (see [`Broker::arm_read_timer`]).
pub(super) fn arm_read(timers: &mut Timers, c: &mut Client, deadline: Option<Time>) {
    match (deadline, c.read_armed) {
        (Some(d), Some(armed)) if armed <= d => {}
        (Some(d), _) => {
            c.read_armed = Some(d);
            timers.set(TimerKey::Read(c.id), d);
        }
        (None, None) => {}
        (None, Some(_)) => {
            c.read_armed = None;
            timers.cancel(TimerKey::Read(c.id));
        }
    }
}
