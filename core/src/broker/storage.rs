//! The hand-off to durable storage: store results, evicted bodies coming back, held
//! acknowledgements and health.

use super::session::push_frame;
use super::{Broker, Transmit};
use crate::event::{EventKind, Name};
use crate::message::MessageId;
use crate::protocol::{ProtocolError, FRAME_TYPE_RESPONSE, OK};
use crate::store::{Hold, LoadedRun, StoreFailure, Ticket};
use crate::time::Time;
use crate::ClientId;
use std::sync::Arc;

/// A publish handed to the store and not written yet: topic `topic`'s messages `first` to
/// `last` (IDs within a topic increase, so these are the IDs between).
#[derive(Debug, Clone)]
pub(super) struct Unstored {
    ticket: Ticket,
    topic: Name,
    first: MessageId,
    last: MessageId,
    /// How many messages, of how many bytes (taken off the topic's counts if it fails).
    count: u64,
    bytes: u64,
}

impl Broker {
    /// Bodies asked for with [`Output::Load`](crate::Output::Load), in the order they were asked for
    /// (or why one could not be read: that message is then dropped, as storage lost it). A
    /// run may come back in parts, each part in order. Hand back as many as are there at
    /// once: each channel is pumped once, after all of them.
    pub fn handle_loaded<E>(&mut self, now: Time, runs: impl IntoIterator<Item = LoadedRun<E>>) {
        let now = self.clock.advance(now);
        let mut pumps = std::mem::take(&mut self.scratch);
        pumps.clear();
        for run in runs {
            let Ok(ch) = self.channel_id(&run.topic, &run.channel) else {
                continue; // the channel went away meanwhile
            };
            for (id, body) in run.bodies {
                let Some(mut msg) = self.ch(ch).take_loading(id) else {
                    continue; // emptied meanwhile
                };
                match body {
                    Ok(body) if !body.is_empty() => {
                        let c = self.ch(ch);
                        c.loaded_size = match c.loaded_size {
                            0 => body.len() as u32,
                            m => ((u64::from(m) * 7 + body.len() as u64) / 8) as u32,
                        };
                        // Next to go (after those fetched before it): it was on its way to a
                        // client, or read ahead for one, when its body was fetched.
                        msg.body = body;
                        c.queue.put_fetched(msg);
                        if !pumps.contains(&ch) {
                            pumps.push(ch);
                        }
                    }
                    _ => {
                        // Storage lost it: release its copy so the rest of the log is not
                        // pinned.
                        let c = self.channels[ch.0 as usize].as_ref();
                        let c = c.expect("live channel");
                        self.out
                            .finished(now, c, id, |topic, channel| EventKind::Dropped {
                                topic,
                                channel,
                                id,
                            });
                    }
                }
            }
        }
        for &ch in &pumps {
            self.pump(now, ch);
        }
        self.scratch = pumps;
    }

    /// The last ticket handed out with a [`StoreOp::Publish`] (0 before the first).
    pub fn last_ticket(&self) -> Ticket {
        self.last_ticket
    }

    /// The store wrote every op up to and including the publish with ticket `through` — or
    /// failed to (`Err` says why). On success the held acknowledgements go out; on failure
    /// each waiting publisher gets nsqd's fatal `E_PUB_FAILED` (`E_MPUB_FAILED`,
    /// `E_DPUB_FAILED`) instead, and the broker turns unhealthy (publishes fail at once) until
    /// [`Broker::set_health`] clears it.
    pub fn handle_stored(&mut self, now: Time, through: Ticket, result: Result<(), StoreFailure>) {
        let now = self.clock.advance(now);
        let held = std::mem::take(&mut self.held_clients);
        let mut failed = Vec::new();
        let mut resume = Vec::new();
        // What goes out of clients still held (the responses before their first one still
        // waiting), after the parked transmits, which come before it.
        let mut partly = Vec::new();
        for id in held {
            let Some(c) = self.clients.get_mut(&id) else {
                continue;
            };
            let Some(h) = c.hold.as_mut() else { continue };
            // A failed write fails a client whose first held publish it had.
            if h.until > through && (result.is_ok() || h.first > through) {
                if result.is_ok() {
                    if let Some(n) = h.release(through) {
                        let rest = c.out.split_off(n);
                        let data = std::mem::replace(&mut c.out, rest);
                        if !data.is_empty() {
                            partly.push(Transmit::Data { client: id, data });
                        }
                    }
                }
                self.held_clients.push(id);
                continue;
            }
            let h = c.hold.take().expect("hold exists");
            match &result {
                Ok(()) => {
                    if !c.out.is_empty() && !c.out_queued {
                        c.out_queued = true;
                        self.dirty.push_back(id);
                    }
                    if c.migrate_wait && !c.settling {
                        resume.push(id);
                    }
                }
                Err(_) => {
                    // Nothing from the failed response on may go out.
                    c.out.truncate(h.at);
                    failed.push((id, h.cmd));
                }
            }
        }
        // Parked transmits in their order, now that what they waited for is decided.
        let parked = std::mem::take(&mut self.parked);
        for (ticket, t) in parked {
            if ticket > through {
                self.parked.push_back((ticket, t));
            } else if result.is_ok() || matches!(t, Transmit::Close { .. }) {
                self.transmits.push_back(t);
            }
        }
        self.transmits.extend(partly);
        self.release_unstored(now, through, result.is_ok());
        if let Err(reason) = result {
            self.health = Some(reason.clone());
            for (id, cmd) in failed {
                self.fail(now, id, store_failed(cmd, &reason));
            }
        }
        // Clients that waited for their output to go out before moving to another partition.
        for id in resume {
            self.resume_migration(now, id);
        }
    }

    /// Publish `ticket` of the topic in `slot` (messages `first` to `last`: `count` of them,
    /// `bytes` long) went to the store: its messages wait until the store has them.
    pub(super) fn wait_for_store(
        &mut self,
        slot: u32,
        ticket: Ticket,
        (first, last): (MessageId, MessageId),
        (count, bytes): (u64, u64),
    ) {
        let t = self.topics.at_mut(slot);
        self.unstored.push_back(Unstored {
            ticket,
            topic: t.name.clone(),
            first,
            last,
            count,
            bytes,
        });
        if t.unstored.is_none() {
            t.unstored = Some(first);
            for ch in t.channels.values() {
                if let Some(c) = self.channels[ch.0 as usize].as_mut() {
                    c.unstored = Some(first);
                }
            }
        }
    }

    /// The publishes up to ticket `through` were written (`stored`), or were not: their
    /// messages may go now, or are taken back (nsqd never enqueues a publish whose put
    /// failed, and its publisher, told so, publishes it again).
    fn release_unstored(&mut self, now: Time, through: Ticket, stored: bool) {
        let mut topics: Vec<Name> = Vec::new();
        while self.unstored.front().is_some_and(|u| u.ticket <= through) {
            let u = self.unstored.pop_front().expect("just seen");
            if !stored {
                self.take_back(now, &u);
            }
            if !topics.iter().any(|t| Arc::ptr_eq(t, &u.topic)) {
                topics.push(u.topic);
            }
        }
        let mut chans = std::mem::take(&mut self.scratch);
        for name in topics {
            let next = self
                .unstored
                .iter()
                .find(|u| *u.topic == *name)
                .map(|u| u.first);
            // (Gone meanwhile: deleted, with its messages.)
            let Some(t) = self.topics.get_mut(&name) else {
                continue;
            };
            t.unstored = next;
            chans.clear();
            chans.extend(t.channels.values().copied());
            for &ch in &chans {
                self.ch(ch).unstored = next;
                self.pump(now, ch);
            }
        }
        self.scratch = chans;
    }

    /// A publish the store failed to write: its messages leave the topic and its channels
    /// (they have not been sent: they waited for the store).
    fn take_back(&mut self, now: Time, u: &Unstored) {
        let Some(t) = self.topics.get_mut(&u.topic) else {
            return;
        };
        let of_it = |id: MessageId| (u.first..=u.last).contains(&id);
        let held = t.queue.remove_where(of_it);
        for id in &held {
            t.held_due.remove(id);
        }
        let chans: Vec<_> = t.channels.values().copied().collect();
        let topic = t.name.clone();
        for id in held {
            self.emit(
                now,
                EventKind::TopicDropped {
                    topic: topic.clone(),
                    id,
                },
            );
        }
        for ch in chans {
            let c = self.ch(ch);
            let mut ids = c.queue.remove_where(of_it);
            ids.extend(
                c.deferred
                    .remove_where(|m| of_it(m.id))
                    .into_iter()
                    .map(|e| e.item.id),
            );
            c.loading.retain(|m| !of_it(m.id));
            c.message_count = c.message_count.saturating_sub(ids.len() as u64);
            for id in ids {
                self.emit_ch(now, ch, |topic, channel| EventKind::Dropped {
                    topic,
                    channel,
                    id,
                });
            }
            self.settle(now, ch, false);
        }
        let t = self.topics.get_mut(&u.topic).expect("topic exists");
        t.message_count = t.message_count.saturating_sub(u.count);
        t.message_bytes = t.message_bytes.saturating_sub(u.bytes);
    }

    /// While storage is failing, publishes fail at once (nsqd: every failed put).
    pub(super) fn check_health(&self, cmd: &'static str) -> Result<(), ProtocolError> {
        match &self.health {
            None => Ok(()),
            Some(reason) => Err(store_failed(cmd, reason)),
        }
    }

    /// Answer a publish with `OK`, held until the store has it when it went to the store.
    pub(super) fn respond_stored(
        &mut self,
        id: ClientId,
        ticket: Option<Ticket>,
        cmd: &'static str,
    ) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let at = c.out.len();
        push_frame(&mut self.dirty, c, FRAME_TYPE_RESPONSE, OK);
        let Some(ticket) = ticket else {
            return;
        };
        match &mut c.hold {
            Some(h) => {
                h.until = ticket;
                h.later.push_back((ticket, at, cmd));
            }
            None => {
                c.hold = Some(Hold::new(ticket, at, cmd));
                self.held_clients.push(id);
            }
        }
    }
}

/// nsqd's fatal error for a publish `cmd` (PUB, MPUB, DPUB) whose put failed for `reason`:
/// where the failure's text is written for the client.
pub(super) fn store_failed(cmd: &str, reason: &StoreFailure) -> ProtocolError {
    let code = match cmd {
        "MPUB" => "E_MPUB_FAILED",
        "DPUB" => "E_DPUB_FAILED",
        _ => "E_PUB_FAILED",
    };
    ProtocolError::fatal(code, format!("{cmd} failed {reason}"))
}
