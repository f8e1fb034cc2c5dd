//! Restoring the broker from storage at start.
//!
//! [`Broker::restore`] opens a [`Restore`]: while it lives, what it puts back is not stored
//! again (see [`crate::store`]). [`Restore::finish`] hands the topics' held messages to their
//! channels and starts delivery; dropping the view without finishing only ends restoring.

use super::Broker;
use crate::event::Name;
use crate::message::{Message, MessageId};
use crate::protocol::is_valid_name;
use crate::time::Time;

/// A broker being restored from storage (see [`Broker::restore`]). Names that are not
/// valid topic or channel names are skipped.
pub struct Restore<'a> {
    broker: &'a mut Broker,
    now: Time,
}

impl Broker {
    /// Start restoring from storage at `now`.
    pub fn restore(&mut self, now: Time) -> Restore<'_> {
        let now = self.clock.advance(now);
        self.out.set_restoring(true);
        Restore { broker: self, now }
    }
}

impl Restore<'_> {
    /// A topic.
    pub fn topic(&mut self, topic: &str, paused: bool) {
        if !is_valid_name(topic) {
            return;
        }
        let b = &mut *self.broker;
        let name = b.get_or_create_topic(self.now, topic);
        b.topics.get_mut(&name).expect("topic exists").paused = paused;
    }

    /// A channel (its messages stay held until [`Restore::finish`]).
    pub fn channel(&mut self, topic: &str, channel: &str, paused: bool) {
        if !is_valid_name(topic) || !is_valid_name(channel) {
            return;
        }
        let b = &mut *self.broker;
        let t = b.get_or_create_topic(self.now, topic);
        let ch = b.add_channel(self.now, &t, channel);
        b.ch(ch).paused = paused;
    }

    /// A message: into `channel` (ready, or deferred until `due`), or, with no channel, held
    /// by the topic. Later IDs of the topic are above its ID.
    pub fn message(&mut self, topic: &str, channel: Option<&str>, msg: Message, due: Option<Time>) {
        if !is_valid_name(topic) {
            return;
        }
        let (b, now) = (&mut *self.broker, self.now);
        let name = b.get_or_create_topic(now, topic);
        let t = b.topics.get_mut(&name).expect("topic exists");
        t.seen_id(msg.id);
        match channel {
            None => {
                let mem = b.opts.mem_queue_size;
                if let Some(d) = due {
                    t.held_due.insert(msg.id, d);
                }
                t.queue.put(msg, mem, false);
            }
            Some(channel) if is_valid_name(channel) => {
                let ch = b.add_channel(now, &name, channel);
                b.enter_channel(now, ch, msg, due);
            }
            Some(_) => {}
        }
    }

    /// Storage saw message IDs up to `id` for `topic` (finished ones too): later IDs must be
    /// above them.
    pub fn seen_id(&mut self, topic: &str, id: MessageId) {
        if !is_valid_name(topic) {
            return;
        }
        let b = &mut *self.broker;
        let name = b.get_or_create_topic(self.now, topic);
        b.topics.get_mut(&name).expect("topic exists").seen_id(id);
    }

    /// Restoring is done: topics hand held messages to their channels and delivery starts.
    pub fn finish(self) {
        let (b, now) = (&mut *self.broker, self.now);
        b.out.set_restoring(false);
        let names: Vec<Name> = b.topics.keys().cloned().collect();
        for name in names {
            b.flush_topic(now, &name);
        }
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.broker.out.set_restoring(false);
    }
}
