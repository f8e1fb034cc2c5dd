//! The timer table: what is due when, and what happens when it is.

use super::{
    Broker, TIMER_CHANNEL, TIMER_HEARTBEAT, TIMER_KIND_MASK, TIMER_MPUB, TIMER_READ, TIMER_SCAN,
};
use crate::client::Client;
use crate::event::CloseReason;
use crate::iqueue::IndexedQueue;
use crate::options::TimerStrategy;
use crate::protocol::{FRAME_TYPE_RESPONSE, HEARTBEAT};
use crate::time::Time;
use crate::{ChannelId, ClientId};

impl Broker {
    /// When [`Broker::handle_timeout`] must next be called, if anything is pending.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        self.timers.peek_key()
    }

    /// Everything due at or before `now`: deferred messages become ready, in-flight messages
    /// time out, heartbeats are sent, silent clients are closed.
    pub fn handle_timeout(&mut self, now: Time) {
        let now = self.clock.advance(now);
        while let Some(e) = self.timers.pop_due(now) {
            let key = e.item;
            let id = key & !TIMER_KIND_MASK;
            match key & TIMER_KIND_MASK {
                TIMER_CHANNEL => {
                    let ch = ChannelId(id as u32);
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
                TIMER_HEARTBEAT => self.heartbeat(now, ClientId(id), e.key),
                TIMER_MPUB => self.continue_mpub(now, ClientId(id), false),
                TIMER_READ => {
                    let cid = ClientId(id);
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
                TIMER_SCAN => self.scan_loop(now),
                _ => unreachable!("unknown timer kind {key:#x}"),
            }
        }
    }

    pub(super) fn rearm_channel(&mut self, ch: ChannelId) {
        if self.opts.timer_strategy != TimerStrategy::Exact {
            return;
        }
        let key = TIMER_CHANNEL | ch.0 as u64;
        let Some(c) = self.channels[ch.0 as usize].as_mut() else {
            self.timers.remove(key);
            return;
        };
        let due = c.next_due();
        if due == c.armed {
            return;
        }
        c.armed = due;
        match due {
            Some(due) => self.timers.upsert(due, key),
            None => {
                self.timers.remove(key);
            }
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
        self.timers.upsert(next, TIMER_HEARTBEAT | id.0);
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
                    .upsert(now.saturating_add(hb), TIMER_HEARTBEAT | id.0),
                None => {
                    self.timers.remove(TIMER_HEARTBEAT | id.0);
                }
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
pub(super) fn arm_read(timers: &mut IndexedQueue<u64>, c: &mut Client, deadline: Option<Time>) {
    match (deadline, c.read_armed) {
        (Some(d), Some(armed)) if armed <= d => {}
        (Some(d), _) => {
            c.read_armed = Some(d);
            timers.upsert(d, TIMER_READ | c.id.0);
        }
        (None, None) => {}
        (None, Some(_)) => {
            c.read_armed = None;
            timers.remove(TIMER_READ | c.id.0);
        }
    }
}
