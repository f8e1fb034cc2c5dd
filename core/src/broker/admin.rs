//! nsqd's HTTP-style calls (publish, create, delete, empty, pause) and the topic and
//! channel lifecycle behind them and behind SUB.

use super::timer::TimerKey;
use super::{AdminError, Broker};
use crate::channel::Channel;
use crate::event::{CloseReason, Name};
use crate::message::{Body, MessageId};
use crate::protocol::is_valid_name;
use crate::time::{Nanos, Time};
use crate::topic::Topic;
use crate::ChannelId;
use rand_core::RngCore;
use std::sync::Arc;

impl Broker {
    /// Publish bodies to a topic (nsqd's `/pub` and `/mpub`), creating it if needed.
    /// `defer` (DPUB / `/pub?defer=`) is range-checked against `max_req_timeout`.
    pub fn publish(
        &mut self,
        now: Time,
        topic: &str,
        bodies: Vec<Body>,
        defer: Option<Nanos>,
    ) -> Result<Vec<MessageId>, AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        if let Some(d) = defer {
            if d > self.opts.max_req_timeout {
                return Err(AdminError::InvalidDefer);
            }
        }
        if self.health.is_some() {
            return Err(AdminError::Exiting);
        }
        if bodies.is_empty() {
            // (`/mpub` of no lines, or a forwarded refused MPUB): the topic is made, as nsqd's.
            self.get_or_create_topic(now, topic);
            return Ok(Vec::new());
        }
        let mut ids = Vec::with_capacity(bodies.len());
        self.publish_inner(now, topic, bodies.into_iter(), defer, None, Some(&mut ids));
        Ok(ids)
    }

    pub fn create_topic(&mut self, now: Time, topic: &str) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        self.get_or_create_topic(now, topic);
        Ok(())
    }

    pub fn delete_topic(&mut self, now: Time, topic: &str) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let name = self.topic_name(topic)?;
        self.delete_topic_inner(now, &name);
        Ok(())
    }

    pub fn empty_topic(&mut self, now: Time, topic: &str) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let name = self.topic_name(topic)?;
        let store = self.stores(&name);
        let t = self.topics.get_mut(&name).expect("topic exists");
        let dropped = store.then(|| t.queue.ids().collect());
        t.queue.clear();
        t.held_due.clear();
        self.out.topic_emptied(now, &name, dropped);
        Ok(())
    }

    pub fn pause_topic(&mut self, now: Time, topic: &str, paused: bool) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let name = self.topic_name(topic)?;
        self.topics.get_mut(&name).expect("topic exists").paused = paused;
        let stored = self.stores(&name);
        self.out.topic_paused(now, &name, paused, stored);
        if !paused {
            self.flush_topic(now, &name);
        }
        Ok(())
    }

    pub fn create_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        if !is_valid_name(channel) {
            return Err(AdminError::InvalidChannel);
        }
        let t = self.get_or_create_topic(now, topic);
        self.get_or_create_channel(now, &t, channel);
        Ok(())
    }

    /// Make several channels of `topic` at once, and only then hand them what the topic
    /// holds, so each gets a copy: nsqd creates a new topic's channels known to nsqlookupd
    /// before its first message goes anywhere. Invalid and existing names are skipped.
    pub fn create_channels(
        &mut self,
        now: Time,
        topic: &str,
        channels: &[String],
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        let t = self.get_or_create_topic(now, topic);
        for c in channels.iter().filter(|c| is_valid_name(c)) {
            self.add_channel(now, &t, c);
        }
        self.flush_topic(now, &t);
        Ok(())
    }

    pub fn delete_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let ch = self.channel_id(topic, channel)?;
        self.delete_channel_inner(now, ch);
        Ok(())
    }

    pub fn empty_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let ch = self.channel_id(topic, channel)?;
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("channel exists");
        let stored = c
            .stored
            .then(|| (self.topics[&c.topic].channel_start(), c.message_ids()));
        c.empty();
        for cid in &c.clients {
            if let Some(cl) = self.clients.get_mut(cid) {
                cl.in_flight_count = 0;
            }
        }
        self.drain_heap_trace(now, ch);
        let c = self.channels[ch.0 as usize]
            .as_ref()
            .expect("channel exists");
        self.out.channel_emptied(now, c, stored);
        self.settle(now, ch, true);
        Ok(())
    }

    pub fn pause_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
        paused: bool,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let ch = self.channel_id(topic, channel)?;
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("channel exists");
        c.paused = paused;
        self.out.channel_paused(now, c);
        if !paused {
            self.pump(now, ch);
        }
        Ok(())
    }

    pub(super) fn get_or_create_topic(&mut self, now: Time, name: &str) -> Name {
        let slot = self.topic_slot(now, name);
        self.topics.at(slot).name.clone()
    }

    /// The slot of topic `name`, made now if it does not exist.
    pub(super) fn topic_slot(&mut self, now: Time, name: &str) -> u32 {
        if let Some(slot) = self.topics.slot(name) {
            return slot;
        }
        let name: Name = Arc::from(name);
        let slot = self
            .topics
            .insert(Topic::new(name.clone(), self.opts.node_id));
        let stored = self.stores(&name);
        self.out.topic_created(now, &name, stored);
        slot
    }

    pub(super) fn get_or_create_channel(
        &mut self,
        now: Time,
        topic: &Name,
        name: &str,
    ) -> ChannelId {
        if let Some(&id) = self.topics[topic].channels.get(name) {
            return id;
        }
        let id = self.add_channel(now, topic, name);
        self.flush_topic(now, topic);
        id
    }

    /// Find or make a channel (stored, if it is), without handing it held messages.
    pub(super) fn add_channel(&mut self, now: Time, topic: &Name, name: &str) -> ChannelId {
        if let Some(&id) = self.topics[topic].channels.get(name) {
            return id;
        }
        let name: Name = Arc::from(name);
        let mut ch = Channel::new(topic.clone(), name.clone(), self.opts.heap_trace);
        if !self.opts.e2e_percentiles.is_empty() {
            ch.e2e = Some(crate::e2e::E2eWindow::new(now, self.rng.next_u64()));
        }
        ch.stored = self.opts.durable && !ch.ephemeral && !self.topics[topic].ephemeral;
        ch.unstored = self.topics[topic].unstored;
        let start = ch.stored.then(|| self.topics[topic].channel_start());
        let id = match self.free_channels.pop() {
            Some(i) => {
                self.channels[i as usize] = Some(ch);
                ChannelId(i)
            }
            None => {
                self.channels.push(Some(ch));
                ChannelId(self.channels.len() as u32 - 1)
            }
        };
        self.topics
            .get_mut(topic)
            .expect("topic exists")
            .channels
            .insert(name.clone(), id);
        self.out.channel_created(now, topic, &name, start);
        id
    }

    pub(super) fn delete_channel_inner(&mut self, now: Time, ch: ChannelId) {
        let Some(c) = self.channels[ch.0 as usize].take() else {
            return;
        };
        self.free_channels.push(ch.0);
        self.timers.cancel(TimerKey::Channel(ch));
        self.scan.channels.retain(|&x| x != ch);
        let topic = c.topic.clone();
        if let Some(t) = self.topics.get_mut(&topic) {
            t.channels.remove(&c.name);
        }
        self.out.channel_deleted(now, &c);
        for cid in c.clients {
            if let Some(cl) = self.clients.get_mut(&cid) {
                cl.channel = None;
            }
            self.remove_client(now, cid, CloseReason::ChannelDeleted, true);
        }
        if let Some(t) = self.topics.get(&topic) {
            if t.ephemeral && t.channels.is_empty() {
                self.delete_topic_inner(now, &topic);
            }
        }
    }

    pub(super) fn delete_topic_inner(&mut self, now: Time, topic: &Name) {
        let stored = self.stores(topic);
        let Some(t) = self.topics.get(topic) else {
            return;
        };
        let chans: Vec<ChannelId> = t.channels.values().copied().collect();
        // Mark non-ephemeral so deleting its last channel does not recurse.
        for ch in chans {
            if let Some(t) = self.topics.get_mut(topic) {
                t.ephemeral = false;
            }
            self.delete_channel_inner(now, ch);
        }
        if self.topics.remove(topic).is_some() {
            self.out.topic_deleted(now, topic, stored);
        }
    }
}
