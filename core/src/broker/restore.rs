//! Restoring the broker from storage at start.

use super::Broker;
use crate::event::Name;
use crate::message::{Message, MessageId};
use crate::protocol::is_valid_name;
use crate::time::Time;

impl Broker {
    /// Restore a topic from storage (not stored again).
    pub fn restore_topic(&mut self, now: Time, topic: &str, paused: bool) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return;
        }
        self.restoring = true;
        let name = self.get_or_create_topic(now, topic);
        self.topics.get_mut(&name).expect("topic exists").paused = paused;
        self.restoring = false;
    }

    /// Restore a channel from storage (not stored again; held messages stay held until
    /// [`Broker::finish_restore`]).
    pub fn restore_channel(&mut self, now: Time, topic: &str, channel: &str, paused: bool) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) || !is_valid_name(channel) {
            return;
        }
        self.restoring = true;
        let t = self.get_or_create_topic(now, topic);
        let ch = self.create_channel_inner(now, &t, channel);
        self.ch(ch).paused = paused;
        self.restoring = false;
    }

    /// Restore a message from storage: into `channel` (ready, or deferred until `due`), or,
    /// with no channel, held by the topic. Later IDs of the topic are above its ID.
    pub fn restore_message(
        &mut self,
        now: Time,
        topic: &str,
        channel: Option<&str>,
        msg: Message,
        due: Option<Time>,
    ) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return;
        }
        self.restoring = true;
        let name = self.get_or_create_topic(now, topic);
        let t = self.topics.get_mut(&name).expect("topic exists");
        t.seen_id(msg.id);
        match channel {
            None => {
                let mem = self.opts.mem_queue_size;
                if let Some(d) = due {
                    t.held_due.insert(msg.id, d);
                }
                t.queue.put(msg, mem, false);
            }
            Some(channel) if is_valid_name(channel) => {
                let ch = self.create_channel_inner(now, &name, channel);
                self.enter_channel(now, ch, msg, due);
            }
            Some(_) => {}
        }
        self.restoring = false;
    }

    /// Storage saw message IDs up to `id` for `topic` (finished ones too): later IDs must be
    /// above them.
    pub fn restore_seen_id(&mut self, now: Time, topic: &str, id: MessageId) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return;
        }
        self.restoring = true;
        let name = self.get_or_create_topic(now, topic);
        self.topics
            .get_mut(&name)
            .expect("topic exists")
            .seen_id(id);
        self.restoring = false;
    }

    /// Restoring is done: topics hand held messages to their channels and delivery starts.
    pub fn finish_restore(&mut self, now: Time) {
        let now = self.clock.advance(now);
        let names: Vec<Name> = self.topics.keys().cloned().collect();
        for name in names {
            self.flush_topic(now, &name);
        }
    }
}
