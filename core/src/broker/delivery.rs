//! Delivery: a published message's way through its topic and channels to consumers (route,
//! queue, defer, pump), and channel timers (deferred messages falling due, in-flight
//! timeouts).

use super::outbox::Stored;
use super::Broker;
use crate::channel::{Channel, Due, InFlight};
use crate::client::{Client, LastPub};
use crate::event::{EventKind, HeapKind, Name, Place};
use crate::message::{Body, Message, MessageId};
use crate::protocol::encode_message_frame;
use crate::store::{LoadRun, Ticket};
use crate::time::{Nanos, Time};
use crate::{ChannelId, ClientId};
use rand_core::RngCore;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::Arc;

/// Bodies read ahead from the store per channel while a consumer takes messages, fetched or
/// on their way (see `Broker::pump`): about this many bytes of them...
const READ_AHEAD_BYTES: usize = 1 << 20;
/// ...and at least this many, at most [`READ_AHEAD_MAX`]; before any came back, this many.
const READ_AHEAD_MIN: usize = 16;
const READ_AHEAD_MAX: usize = 4096;
const READ_AHEAD_FIRST: usize = 256;

/// How many bodies to read ahead for a channel whose loaded bodies are `size` bytes on
/// average. They are asked for once fewer than half of that are left, and then up to it,
/// while the consumer still has the rest to take: the store's thread wakes once per half a
/// read-ahead, not per handful of FINs, and is never waited for between batches.
fn read_ahead(size: u32) -> usize {
    match size {
        0 => READ_AHEAD_FIRST,
        n => (READ_AHEAD_BYTES / n as usize).clamp(READ_AHEAD_MIN, READ_AHEAD_MAX),
    }
}

impl Broker {
    pub(super) fn publish_inner(
        &mut self,
        now: Time,
        topic: &str,
        bodies: impl ExactSizeIterator<Item = Body>,
        defer: Option<Nanos>,
        from: Option<ClientId>,
        mut ids: Option<&mut Vec<MessageId>>,
    ) -> Option<Ticket> {
        let slot = self.publish_slot(now, topic, from);
        let due = defer.filter(|&d| d > 0).map(|d| now.saturating_add(d));
        let n = bodies.len() as u64;
        let t = self.topics.at(slot);
        let name = t.name.clone();
        let topic_held = t.paused || t.channels.is_empty();
        let store = self.opts.durable && !self.out.restoring() && !t.ephemeral;
        let stored = store.then(|| {
            self.last_ticket += 1;
            let held = topic_held;
            Stored {
                ticket: self.last_ticket,
                held,
                copies: if held { 1 } else { self.stored_copies(&name) },
            }
        });
        // The topic's channels, looked up once for the whole publish (routing a message does
        // not change them); a held topic goes through `route`, which keeps it.
        let mut chans = std::mem::take(&mut self.pub_scratch);
        chans.clear();
        chans.extend(self.topics.at(slot).channels.values().copied());
        let mut first = None;
        let bytes_before = self.topics.at(slot).message_bytes;
        let batch = n as u32;
        for (nth, body) in (1..).zip(bodies) {
            let t = self.topics.at_mut(slot);
            let id = t.next_id(now);
            first.get_or_insert(id);
            t.message_count += 1;
            t.message_bytes += body.len() as u64;
            let msg = Message::new(id, now, body);
            if let Some(ids) = ids.as_deref_mut() {
                ids.push(id);
            }
            self.out
                .published(now, &name, &msg, due, from, (nth, batch), stored.as_ref());
            if topic_held {
                self.route(now, slot, msg, due, false);
            } else {
                self.fan_out(now, &chans, msg, due, false);
            }
        }
        if let Some(c) = from.and_then(|cid| self.clients.get_mut(&cid)) {
            let count = match &c.last_pub {
                Some(last) if last.slot == slot && Arc::ptr_eq(&last.name, &name) => last.count,
                _ => {
                    let count = match c.pub_counts.iter().position(|(t, _)| *t == name) {
                        Some(i) => i,
                        None => {
                            c.pub_counts.push((name.clone(), 0));
                            c.pub_counts.len() - 1
                        }
                    };
                    c.last_pub = Some(LastPub { name, slot, count });
                    count
                }
            };
            c.pub_counts[count].1 += n;
        }
        if let (Some(s), Some(first)) = (&stored, first) {
            // Nothing of it goes out before the store has it (see `Topic::unstored`).
            let t = self.topics.at(slot);
            let (last, bytes) = (t.last_id, t.message_bytes - bytes_before);
            self.wait_for_store(slot, s.ticket, (first, last), (n, bytes));
        }
        for &ch in &chans {
            self.pump(now, ch);
        }
        self.pub_scratch = chans;
        stored.map(|s| s.ticket)
    }

    /// The slot of the topic a publish names (made now if new). A client publishing to the
    /// topic it published to last skips the search: the slot still holds that topic when
    /// it holds the very same name (the client's clone keeps the name's pointer unique).
    pub(super) fn publish_slot(&mut self, now: Time, topic: &str, from: Option<ClientId>) -> u32 {
        let last = from
            .and_then(|cid| self.clients.get(&cid))
            .and_then(|c| c.last_pub.as_ref());
        if let Some(last) = last {
            if &*last.name == topic
                && self
                    .topics
                    .at_slot(last.slot)
                    .is_some_and(|t| Arc::ptr_eq(&t.name, &last.name))
            {
                return last.slot;
            }
        }
        self.topic_slot(now, topic)
    }

    /// How many of a topic's channels keep stored copies.
    pub(super) fn stored_copies(&self, topic: &Name) -> u32 {
        self.topics[topic]
            .channels
            .values()
            .filter(|ch| {
                self.channels[ch.0 as usize]
                    .as_ref()
                    .is_some_and(|c| c.stored)
            })
            .count() as u32
    }

    /// Whether changes to this topic go to the store now.
    pub(super) fn stores(&self, topic: &Name) -> bool {
        self.opts.durable
            && !self.out.restoring()
            && self.topics.get(topic).is_some_and(|t| !t.ephemeral)
    }

    /// Deliver what a topic's channels can send now.
    pub(super) fn pump_topic(&mut self, now: Time, topic: &Name) {
        let mut chans = std::mem::take(&mut self.scratch);
        chans.clear();
        chans.extend(self.topics[topic].channels.values().copied());
        for &ch in &chans {
            self.pump(now, ch);
        }
        self.scratch = chans;
    }

    /// Hand a message to the channels of the topic in `slot`, or hold it in the topic.
    pub(super) fn route(
        &mut self,
        now: Time,
        slot: u32,
        msg: Message,
        due: Option<Time>,
        pump: bool,
    ) {
        let mem = self.opts.mem_queue_size;
        let evict = self.opts.evict_bodies && self.opts.durable;
        let t = self.topics.at_mut(slot);
        if t.paused || t.channels.is_empty() {
            let id = msg.id;
            // An ephemeral topic has no backend either: past --mem-queue-size what it holds
            // for its channels is dropped, as nsqd drops it.
            if t.ephemeral && t.queue.len() >= mem {
                let topic = t.name.clone();
                self.emit(now, EventKind::TopicDropped { topic, id });
                return;
            }
            if let Some(d) = due {
                t.held_due.insert(id, d);
            }
            let place = if t.queue.put(msg, mem, evict && !t.ephemeral) {
                Place::Backend
            } else {
                Place::Memory
            };
            if self.out.events_on() {
                let topic = self.topics.at(slot).name.clone();
                self.emit(now, EventKind::HeldInTopic { topic, id, place });
            }
            return;
        }
        let mut chans = std::mem::take(&mut self.scratch);
        chans.clear();
        chans.extend(t.channels.values().copied());
        self.fan_out(now, &chans, msg, due, pump);
        self.scratch = chans;
    }

    /// Give each of `chans` (a topic's channels) its copy of `msg`.
    pub(super) fn fan_out(
        &mut self,
        now: Time,
        chans: &[ChannelId],
        msg: Message,
        due: Option<Time>,
        pump: bool,
    ) {
        // Every channel but the last gets a clone; the last gets the message itself.
        let mut msg = Some(msg);
        let n = chans.len();
        for (i, &ch) in chans.iter().enumerate() {
            self.ch(ch).message_count += 1;
            let m = if i + 1 == n {
                msg.take().expect("message for the last channel")
            } else {
                msg.clone().expect("message")
            };
            self.enter_channel(now, ch, m, due);
            if pump {
                self.pump(now, ch);
            }
        }
    }

    /// A message enters a channel: deferred if it is not due yet, else queued.
    pub(super) fn enter_channel(
        &mut self,
        now: Time,
        ch: ChannelId,
        msg: Message,
        due: Option<Time>,
    ) {
        match due {
            Some(due) if due > now => {
                let evict = self.opts.evict_bodies;
                let id = msg.id;
                self.ch(ch).defer(msg, due, evict);
                self.emit_ch(now, ch, |topic, channel| EventKind::Deferred {
                    topic,
                    channel,
                    id,
                    due,
                });
                self.settle(now, ch, false);
            }
            _ => self.queue(now, ch, msg),
        }
    }

    pub(super) fn queue(&mut self, now: Time, ch: ChannelId, mut msg: Message) {
        if msg.attempts > 0 {
            // Back again (timed out, or REQ): it may wait long, so not with the rest of the
            // buffer its body came in (an MPUB's, or a stretch read back from the store).
            msg.body = msg.body.unshared();
        }
        let mem = self.opts.mem_queue_size;
        let evict = self.opts.evict_bodies;
        let room = if mem == 0 && self.ch(ch).ephemeral {
            self.ready_room(ch)
        } else {
            0
        };
        let c = self.ch(ch);
        let id = msg.id;
        // An ephemeral channel has no backend: nsqd drops what does not fit in memory. With
        // --mem-queue-size=0 its memory queue is unbuffered: a message is taken only by a
        // client ready for it at that moment.
        let full = if mem == 0 {
            c.paused || c.queue.len() as i64 >= room
        } else {
            c.queue.len() >= mem
        };
        if c.ephemeral && full {
            let (topic, channel) = (c.topic.clone(), c.name.clone());
            self.emit(now, EventKind::Dropped { topic, channel, id });
            return;
        }
        // Past mem_queue_size a stored copy's body waits in the store (nsqd's disk backend).
        let place = if c.queue.put(msg, mem, evict && c.stored) {
            Place::Backend
        } else {
            Place::Memory
        };
        self.emit_ch(now, ch, |topic, channel| EventKind::Queued {
            topic,
            channel,
            id,
            place,
        });
    }

    /// Hand held topic messages to its channels, if it has some and is not paused.
    pub(super) fn flush_topic(&mut self, now: Time, topic: &Name) {
        let t = &self.topics[topic];
        if t.paused || t.channels.is_empty() {
            return;
        }
        let store = self.stores(topic);
        let slot = self.topics.slot(topic).expect("topic exists");
        let mut moved = Vec::new();
        loop {
            let t = self.topics.at_mut(slot);
            let Some(msg) = t.queue.pop() else { break };
            let due = t.held_due.remove(&msg.id);
            if store {
                moved.push(msg.id);
            }
            self.route(now, slot, msg, due, false);
        }
        if !moved.is_empty() {
            let copies = self.stored_copies(topic);
            self.out.dispatched(topic, moved, copies);
        }
        self.pump_topic(now, topic);
    }

    /// How many more messages the channel's clients are ready for right now.
    pub(super) fn ready_room(&self, ch: ChannelId) -> i64 {
        match self.channels[ch.0 as usize].as_ref() {
            Some(c) => room_of(c, &self.clients),
            None => 0,
        }
    }

    /// Send queued messages to ready clients, round-robin, as long as both last.
    pub(super) fn pump(&mut self, now: Time, ch: ChannelId) {
        let Broker {
            channels,
            clients,
            rng,
            opts,
            out,
            dirty,
            loads,
            ..
        } = self;
        let Some(c) = channels[ch.0 as usize].as_mut() else {
            return;
        };
        let mut sent = false;
        // The clients' room for messages now. Bodies fetched from the store are for it: no
        // more on their way at once than that (besides the read-ahead below). (Only evicted
        // bodies are fetched; without eviction the clients' RDY is the bound.)
        let fetching = opts.evict_bodies && opts.durable;
        let mut room: i64 = if fetching {
            room_of(c, clients)
        } else {
            i64::MAX
        };
        // Messages the store has not written yet wait (see `Topic::unstored`).
        let gate = c.unstored;
        let waits = |id: Option<MessageId>| matches!((gate, id), (Some(g), Some(id)) if id >= g);
        while !c.paused
            && !c.queue.is_empty()
            && !c.clients.is_empty()
            && room > 0
            && !waits(c.queue.front_id())
        {
            let n = c.clients.len();
            let mut found = None;
            for k in 0..n {
                let idx = (c.next_client + k) % n;
                if clients.get(&c.clients[idx]).is_some_and(|cl| cl.is_ready()) {
                    found = Some(idx);
                    break;
                }
            }
            let Some(idx) = found else { break };
            if c.queue.next_is_evicted() {
                // Its body is in the store: fetch it; it is sent when it comes back (to
                // whichever client is ready then).
                if c.loading.len() as i64 >= room {
                    break; // those on their way fill the room
                }
                fetch_next(c, loads);
                continue;
            }
            c.next_client = (idx + 1) % n;
            let cid = c.clients[idx];
            let cl = clients.get_mut(&cid).expect("ready client exists");
            let mut msg = c.queue.pop().expect("queue not empty");
            room -= 1;
            let rate = cl.settings.sample_rate;
            if rate > 0 && (rng.next_u64() % 100) as i32 > rate {
                // Not sampled: gone for this channel, as in nsqd; the store lets it go too.
                let id = msg.id;
                out.finished(now, c, id, |topic, channel| EventKind::Unsampled {
                    topic,
                    channel,
                    id,
                    client: cid,
                });
                continue;
            }
            // nsqd's `msg.Attempts++` on a uint16: the 65 536th delivery says 0.
            msg.attempts = msg.attempts.wrapping_add(1);
            let deadline = now.saturating_add(cl.settings.msg_timeout);
            encode_message_frame(cl.out_buf(), &msg);
            if !cl.out_queued {
                cl.out_queued = true;
                dirty.push_back(cid);
            }
            cl.in_flight_count += 1;
            cl.message_count += 1;
            let (id, attempts) = (msg.id, msg.attempts);
            out.channel_event(now, c, |topic, channel| EventKind::Sent {
                topic,
                channel,
                id,
                client: cid,
                attempts,
                deadline,
            });
            c.in_flight.push(
                deadline,
                InFlight {
                    msg,
                    client: cid,
                    delivered_at: now,
                },
            );
            sent = true;
        }
        // Read ahead: while a consumer takes messages (RDY above 0), the bodies of the next
        // ones are fetched before it asks, so one that finishes a message finds the next in
        // memory rather than waiting for the store (a round trip to its thread). Up to
        // `read_ahead` of them, fetched or on their way, topped up once under half.
        let ahead = read_ahead(c.loaded_size);
        if fetching
            && !c.paused
            && c.queue.unfetched_is_evicted()
            && !waits(c.queue.unfetched_front_id())
            && c.loading.len() + c.queue.fetched_len() < ahead.div_ceil(2)
            && c.clients
                .iter()
                .any(|id| clients.get(id).is_some_and(|cl| cl.wants_messages()))
        {
            while c.loading.len() + c.queue.fetched_len() < ahead
                && c.queue.unfetched_is_evicted()
                && !waits(c.queue.unfetched_front_id())
            {
                fetch_next(c, loads);
            }
        }
        if sent {
            self.drain_heap_trace(now, ch);
            self.rearm_channel(ch);
        }
    }

    /// Move recorded heap operations into the event stream.
    pub(super) fn drain_heap_trace(&mut self, now: Time, ch: ChannelId) {
        if !self.opts.heap_trace {
            return;
        }
        let c = self.ch(ch);
        let (topic, channel) = (c.topic.clone(), c.name.clone());
        let d = c.deferred.drain_trace();
        let f = c.in_flight.drain_trace();
        for (heap, ops) in [(HeapKind::Deferred, d), (HeapKind::InFlight, f)] {
            for op in ops {
                self.emit(
                    now,
                    EventKind::Heap {
                        topic: topic.clone(),
                        channel: channel.clone(),
                        heap,
                        op,
                    },
                );
            }
        }
    }

    /// After a change to channel `ch`: its heap operations into the event stream, then (with
    /// `pump`) messages to its ready clients, and its timer re-armed to its earliest head.
    pub(super) fn settle(&mut self, now: Time, ch: ChannelId, pump: bool) {
        self.drain_heap_trace(now, ch);
        if pump {
            self.pump(now, ch);
        }
        self.rearm_channel(ch);
    }

    /// Process a channel's due deferred messages and in-flight timeouts; returns whether
    /// anything was due (nsqd's "dirty").
    pub(super) fn process_channel_timers(&mut self, now: Time, ch: ChannelId) -> bool {
        if self.channels.get(ch.0 as usize).is_none_or(|c| c.is_none()) {
            return false;
        }
        let mut dirty = false;
        while let Some(due) = self.ch(ch).pop_due(now) {
            dirty = true;
            let msg = match due {
                Due::Deferred { msg, due } => {
                    let id = msg.id;
                    self.emit_ch(now, ch, |topic, channel| EventKind::BecameDue {
                        topic,
                        channel,
                        id,
                        due,
                    });
                    // An evicted body stays in the store while the message queues; the pump
                    // fetches it when a consumer has room (so many falling due at once are
                    // not all loaded).
                    msg
                }
                Due::TimedOut(InFlight { msg, client, .. }) => {
                    if let Some(cl) = self.clients.get_mut(&client) {
                        cl.in_flight_count = cl.in_flight_count.saturating_sub(1);
                    }
                    let id = msg.id;
                    self.emit_ch(now, ch, |topic, channel| EventKind::TimedOut {
                        topic,
                        channel,
                        id,
                        client,
                    });
                    msg
                }
            };
            // Its pop (take, move, each sift swap) before it is queued, so the event stream
            // tells the story in the order it happened.
            self.drain_heap_trace(now, ch);
            self.queue(now, ch, msg);
        }
        if dirty {
            self.settle(now, ch, true);
        }
        dirty
    }
}

/// How many more messages channel `c`'s clients are ready for right now.
fn room_of(c: &Channel, clients: &FxHashMap<ClientId, Client>) -> i64 {
    c.clients
        .iter()
        .filter_map(|id| clients.get(id))
        .filter(|cl| cl.is_ready())
        .map(|cl| cl.ready_count - cl.in_flight_count as i64)
        .sum()
}

/// Take channel `c`'s next message after those fetched, whose body is in the store, and ask
/// for the body.
fn fetch_next(c: &mut Channel, loads: &mut VecDeque<LoadRun>) {
    let msg = c.queue.pop_unfetched().expect("a next message");
    let id = msg.id;
    c.loading.push_back(msg);
    match loads.back_mut() {
        Some(run) if Arc::ptr_eq(&run.channel, &c.name) && Arc::ptr_eq(&run.topic, &c.topic) => {
            run.ids.push(id)
        }
        _ => loads.push_back(LoadRun {
            topic: c.topic.clone(),
            channel: c.name.clone(),
            ids: vec![id],
        }),
    }
}
