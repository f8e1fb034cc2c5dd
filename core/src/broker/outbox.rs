//! The one place a change to the broker's state is recorded.
//!
//! A change may concern three listeners: durable storage ([`StoreOp`], with
//! [`Options::durable`](crate::Options::durable)), nsqlookupd ([`RegistryChange`], with
//! [`Options::registry`](crate::Options::registry)) and a visualiser ([`Event`], with
//! [`Options::events`](crate::Options::events)). Each kind of change has one method here that
//! decides what each of them gets, so a mutation cannot tell one and forget another. The queues
//! are private to this file; the broker's `poll_*` drain them.

use crate::channel::Channel;
use crate::event::{Event, EventKind, Name};
use crate::message::{Message, MessageId};
use crate::store::{RegistryChange, StoreOp, Ticket};
use crate::time::Time;
use crate::ClientId;
use std::collections::VecDeque;
use std::sync::Arc;

/// How a publish is stored (see [`StoreOp::Publish`]).
pub(super) struct Stored {
    pub ticket: Ticket,
    pub held: bool,
    pub copies: u32,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Outbox {
    store: VecDeque<StoreOp>,
    registry: VecDeque<RegistryChange>,
    events: VecDeque<Event>,
    registry_on: bool,
    events_on: bool,
    /// The broker is being restored from storage: what it restores is not stored again.
    restoring: bool,
}

impl Outbox {
    pub(super) fn new(registry_on: bool, events_on: bool) -> Self {
        Outbox {
            registry_on,
            events_on,
            ..Outbox::default()
        }
    }

    pub(super) fn set_events(&mut self, on: bool) {
        self.events_on = on;
    }

    /// Whether events are recorded (so a caller can skip building one nobody reads).
    #[inline]
    pub(super) fn events_on(&self) -> bool {
        self.events_on
    }

    pub(super) fn set_restoring(&mut self, on: bool) {
        self.restoring = on;
    }

    pub(super) fn restoring(&self) -> bool {
        self.restoring
    }

    pub(super) fn pop_store(&mut self) -> Option<StoreOp> {
        let op = self.store.pop_front();
        if op.is_none() && self.store.capacity() > 4096 {
            // A burst's queue is not kept: memory is for messages.
            self.store.shrink_to(4096);
        }
        op
    }

    pub(super) fn set_registry(&mut self, on: bool) {
        self.registry_on = on;
    }

    pub(super) fn pop_registry(&mut self) -> Option<RegistryChange> {
        self.registry.pop_front()
    }

    pub(super) fn pop_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn store(&mut self, op: StoreOp) {
        if !self.restoring {
            self.store.push_back(op);
        }
    }

    fn register(&mut self, topic: &Name, channel: Option<&Name>, on: bool) {
        if self.registry_on {
            let (topic, channel) = (topic.clone(), channel.cloned());
            self.registry.push_back(if on {
                RegistryChange::Register { topic, channel }
            } else {
                RegistryChange::Unregister { topic, channel }
            });
        }
    }

    // ------------------------------------------------------------ changes without a record

    /// Something happened that only a visualiser is told about.
    #[inline]
    pub(super) fn event(&mut self, at: Time, kind: EventKind) {
        if self.events_on {
            self.events.push_back(Event { at, kind });
        }
    }

    /// An event about channel `c`, built only when events are on (the per-message path must
    /// not pay for events nobody reads).
    #[inline]
    pub(super) fn channel_event(
        &mut self,
        at: Time,
        c: &Channel,
        f: impl FnOnce(Name, Name) -> EventKind,
    ) {
        if self.events_on {
            let kind = f(c.topic.clone(), c.name.clone());
            self.events.push_back(Event { at, kind });
        }
    }

    // ------------------------------------------------------------ topics and channels

    pub(super) fn topic_created(&mut self, at: Time, topic: &Name, stored: bool) {
        if stored {
            self.store(StoreOp::TopicCreated {
                topic: topic.clone(),
            });
        }
        self.register(topic, None, true);
        self.event(
            at,
            EventKind::TopicCreated {
                topic: topic.clone(),
            },
        );
    }

    pub(super) fn topic_deleted(&mut self, at: Time, topic: &Name, stored: bool) {
        self.register(topic, None, false);
        if stored {
            self.store(StoreOp::TopicDeleted {
                topic: topic.clone(),
            });
        }
        self.event(
            at,
            EventKind::TopicDeleted {
                topic: topic.clone(),
            },
        );
    }

    /// The topic's held messages are gone (`dropped`: their IDs, when the topic is stored).
    pub(super) fn topic_emptied(
        &mut self,
        at: Time,
        topic: &Name,
        dropped: Option<Vec<MessageId>>,
    ) {
        if let Some(dropped) = dropped {
            self.store(StoreOp::TopicEmptied {
                topic: topic.clone(),
                dropped,
            });
        }
        self.event(
            at,
            EventKind::TopicEmptied {
                topic: topic.clone(),
            },
        );
    }

    pub(super) fn topic_paused(&mut self, at: Time, topic: &Name, paused: bool, stored: bool) {
        if stored {
            self.store(StoreOp::TopicPaused {
                topic: topic.clone(),
                paused,
            });
        }
        let topic = topic.clone();
        self.event(
            at,
            if paused {
                EventKind::TopicPaused { topic }
            } else {
                EventKind::TopicUnpaused { topic }
            },
        );
    }

    /// A new channel; `start` (when it is stored): the first message ID it receives.
    pub(super) fn channel_created(
        &mut self,
        at: Time,
        topic: &Name,
        channel: &Name,
        start: Option<MessageId>,
    ) {
        self.register(topic, Some(channel), true);
        self.event(
            at,
            EventKind::ChannelCreated {
                topic: topic.clone(),
                channel: channel.clone(),
            },
        );
        if let Some(start) = start {
            self.store(StoreOp::ChannelCreated {
                topic: topic.clone(),
                channel: channel.clone(),
                start,
            });
        }
    }

    /// Channel `c` is gone, with every message it had.
    pub(super) fn channel_deleted(&mut self, at: Time, c: &Channel) {
        self.register(&c.topic, Some(&c.name), false);
        if c.stored {
            self.store(StoreOp::ChannelDeleted {
                topic: c.topic.clone(),
                channel: c.name.clone(),
                dropped: c.message_ids(),
            });
        }
        self.event(
            at,
            EventKind::ChannelDeleted {
                topic: c.topic.clone(),
                channel: c.name.clone(),
            },
        );
    }

    /// Channel `c` dropped its messages; `stored` (when it is): the first ID it receives
    /// from now on and the IDs it dropped.
    pub(super) fn channel_emptied(
        &mut self,
        at: Time,
        c: &Channel,
        stored: Option<(MessageId, Vec<MessageId>)>,
    ) {
        if let Some((start, dropped)) = stored {
            self.store(StoreOp::ChannelEmptied {
                topic: c.topic.clone(),
                channel: c.name.clone(),
                start,
                dropped,
            });
        }
        self.channel_event(at, c, |topic, channel| EventKind::ChannelEmptied {
            topic,
            channel,
        });
    }

    pub(super) fn channel_paused(&mut self, at: Time, c: &Channel) {
        let paused = c.paused;
        if c.stored {
            self.store(StoreOp::ChannelPaused {
                topic: c.topic.clone(),
                channel: c.name.clone(),
                paused,
            });
        }
        self.channel_event(at, c, |topic, channel| {
            if paused {
                EventKind::ChannelPaused { topic, channel }
            } else {
                EventKind::ChannelUnpaused { topic, channel }
            }
        });
    }

    // ------------------------------------------------------------ messages

    /// A message published to `topic`, the `nth` of `batch` published together (`stored`:
    /// how, when it goes to the store).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn published(
        &mut self,
        at: Time,
        topic: &Name,
        msg: &Message,
        due: Option<Time>,
        client: Option<ClientId>,
        (nth, batch): (u32, u32),
        stored: Option<&Stored>,
    ) {
        if self.events_on {
            let kind = EventKind::Published {
                topic: topic.clone(),
                id: msg.id,
                size: msg.body.len(),
                due,
                client,
                nth,
                batch,
            };
            self.events.push_back(Event { at, kind });
        }
        if let Some(s) = stored {
            // One op per message: no allocation beyond the queue's (a per-publish Vec would
            // leave holes between the bodies that stay in memory).
            self.store(StoreOp::Publish {
                ticket: s.ticket,
                topic: topic.clone(),
                held: s.held,
                copies: s.copies,
                due,
                msg: msg.clone(),
            });
        }
    }

    /// The topic handed the messages it held to its channels (`copies` of them are stored).
    pub(super) fn dispatched(&mut self, topic: &Name, ids: Vec<MessageId>, copies: u32) {
        self.store(StoreOp::Dispatched {
            topic: topic.clone(),
            ids,
            copies,
        });
    }

    /// Channel `c` is done with message `id`: finished, not sampled, or lost by storage; the
    /// event says which.
    #[inline]
    pub(super) fn finished(
        &mut self,
        at: Time,
        c: &Channel,
        id: MessageId,
        event: impl FnOnce(Name, Name) -> EventKind,
    ) {
        if c.stored && !self.restoring {
            // Joins the last op when that is this channel's FINs (a consumer's batch).
            match self.store.back_mut() {
                Some(StoreOp::Finished {
                    topic,
                    channel,
                    ids,
                }) if Arc::ptr_eq(channel, &c.name) && Arc::ptr_eq(topic, &c.topic) => ids.push(id),
                _ => self.store(StoreOp::Finished {
                    topic: c.topic.clone(),
                    channel: c.name.clone(),
                    ids: vec![id],
                }),
            }
        }
        self.channel_event(at, c, event);
    }

    /// A client requeued message `id` of channel `c`, due again after `delay` (at `due`).
    pub(super) fn requeued(
        &mut self,
        at: Time,
        c: &Channel,
        id: MessageId,
        client: ClientId,
        delay: u64,
        due: Option<Time>,
    ) {
        self.channel_event(at, c, |topic, channel| EventKind::Requeued {
            topic,
            channel,
            id,
            client,
            delay,
        });
        if let (Some(due), true) = (due, c.stored) {
            self.store(StoreOp::Requeued {
                topic: c.topic.clone(),
                channel: c.name.clone(),
                id,
                due,
            });
        }
    }
}
