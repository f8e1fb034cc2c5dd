//! A channel: its own copy of every message of its topic, a memory queue with a backend behind
//! it, a deferred heap, an in-flight heap, and the consumers that share it round-robin.

use crate::deque::ChunkedDeque;
use crate::event::Name;
use crate::iqueue::IndexedQueue;
use crate::message::{Body, Message, MessageId};
use crate::pqueue::{HeapItem, PQueue};
use crate::time::Time;
use crate::ClientId;

/// Why FIN, REQ or TOUCH of a message failed (nsqd's texts, after `<CMD> <id> failed `).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InFlightError {
    #[error("ID not in flight")]
    NotInFlight,
    #[error("client does not own message")]
    NotOwner,
}

/// What came due on a channel's timer ([`Channel::pop_due`]).
#[derive(Debug)]
pub enum Due {
    /// A deferred message whose time came (`due`): it joins the queue.
    Deferred { msg: Message, due: Time },
    /// An in-flight message whose deadline passed before its client answered: it goes back
    /// to the queue.
    TimedOut(InFlight),
}

/// A message that was sent and is awaiting FIN, REQ, TOUCH or its timeout.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub msg: Message,
    pub client: ClientId,
    /// When it was sent (TOUCH never extends past `delivered_at + max_msg_timeout`).
    pub delivered_at: Time,
}

impl HeapItem for InFlight {
    fn heap_id(&self) -> u64 {
        self.msg.id.0
    }
}

/// A FIFO of ready messages: `mem_queue_size` in memory, the rest in the backend, in order.
///
/// Once anything is in the backend, new messages go there too until it drains, so messages
/// leave in the order they came (nsqd picks between its memory channel and disk queue at
/// random).
///
/// The backend keeps a 24-byte `Spilled` entry per message, not the message: a durable
/// queue's backlog keeps its bodies in the store (nsqd's disk queue), so a long backlog
/// costs its entries only (a whole [`Message`] is twice that), and a memory-only one keeps
/// the bodies beside them, in `bodies`.
///
/// In front of both, `fetched`: messages whose bodies came back from the store (see
/// [`MessageQueue::put_fetched`]), next to go, in the order they were fetched.
#[derive(Debug, Default, Clone)]
pub struct MessageQueue {
    fetched: std::collections::VecDeque<Message>,
    pub memory: ChunkedDeque<Message>,
    backend: ChunkedDeque<Spilled>,
    /// The bodies of the backend's entries that have theirs in memory, in the same order.
    bodies: ChunkedDeque<Body>,
}

/// A backend entry: what a message is besides its body.
#[derive(Debug, Clone, Copy)]
struct Spilled {
    id: MessageId,
    timestamp: Time,
    attempts: u16,
    /// Its body is the next in [`MessageQueue::bodies`]; otherwise it waits in the store.
    in_memory: bool,
}

impl MessageQueue {
    /// Put a message at the back; returns true when it went to the backend. With `evict`,
    /// a message that goes to the backend leaves its body to the store (as does one whose
    /// body is already there).
    pub fn put(&mut self, msg: Message, mem_queue_size: usize, evict: bool) -> bool {
        if !self.spills(mem_queue_size) {
            self.memory.push_back(msg);
            return false;
        }
        let in_memory = !evict && !msg.is_evicted();
        self.backend.push_back(Spilled {
            id: msg.id,
            timestamp: msg.timestamp,
            attempts: msg.attempts,
            in_memory,
        });
        if in_memory {
            self.bodies.push_back(msg.body);
        }
        true
    }

    /// A message taken with [`MessageQueue::pop`] whose body was fetched from the store:
    /// it goes before the rest, after those fetched before it.
    pub fn put_fetched(&mut self, msg: Message) {
        self.fetched.push_back(msg);
    }

    /// Whether the next message [`MessageQueue::pop`] gives has its body in the store.
    pub fn next_is_evicted(&self) -> bool {
        self.fetched.is_empty() && self.unfetched_is_evicted()
    }

    /// Whether the next message after the fetched ones has its body in the store: one to
    /// read ahead ([`MessageQueue::pop_unfetched`]).
    pub fn unfetched_is_evicted(&self) -> bool {
        match self.memory.front() {
            Some(m) => m.is_evicted(),
            None => self.backend.front().is_some_and(|s| !s.in_memory),
        }
    }

    /// The next message after the fetched ones (as [`MessageQueue::pop`] gives it).
    pub fn pop_unfetched(&mut self) -> Option<Message> {
        if let Some(m) = self.memory.pop_front() {
            return Some(m);
        }
        let s = self.backend.pop_front()?;
        let body = if s.in_memory {
            self.bodies.pop_front().expect("a body per in-memory entry")
        } else {
            crate::message::evicted_body()
        };
        let mut m = Message::new(s.id, s.timestamp, body);
        m.attempts = s.attempts;
        Some(m)
    }

    /// The ID of the next message [`MessageQueue::pop`] gives.
    pub fn front_id(&self) -> Option<MessageId> {
        match self.fetched.front() {
            Some(m) => Some(m.id),
            None => self.unfetched_front_id(),
        }
    }

    /// The ID of the next message after the fetched ones.
    pub fn unfetched_front_id(&self) -> Option<MessageId> {
        match self.memory.front() {
            Some(m) => Some(m.id),
            None => self.backend.front().map(|s| s.id),
        }
    }

    /// Take out the messages whose IDs `remove` says yes to (wherever they are in the
    /// queue); returns their IDs. Rare: the queue is rebuilt.
    pub fn remove_where(&mut self, mut remove: impl FnMut(MessageId) -> bool) -> Vec<MessageId> {
        let mut out: Vec<MessageId> = Vec::new();
        self.fetched.retain(|m| {
            !remove(m.id) || {
                out.push(m.id);
                false
            }
        });
        out.extend(
            self.memory
                .retain_out(|m| !remove(m.id))
                .iter()
                .map(|m| m.id),
        );
        let mut bodies = std::mem::take(&mut self.bodies);
        for s in self.backend.retain_out(|_| false) {
            let body = s
                .in_memory
                .then(|| bodies.pop_front().expect("a body per entry"));
            if remove(s.id) {
                out.push(s.id);
            } else {
                self.backend.push_back(s);
                if let Some(b) = body {
                    self.bodies.push_back(b);
                }
            }
        }
        out
    }

    /// Messages in front whose bodies came back from the store.
    pub fn fetched_len(&self) -> usize {
        self.fetched.len()
    }

    /// Whether the next [`MessageQueue::put`] goes to the backend.
    pub fn spills(&self, mem_queue_size: usize) -> bool {
        !(self.backend.is_empty() && self.memory.len() < mem_queue_size)
    }

    /// The next message; one from the backend whose body is in the store comes with an
    /// evicted body ([`Message::is_evicted`]).
    pub fn pop(&mut self) -> Option<Message> {
        match self.fetched.pop_front() {
            Some(m) => Some(m),
            None => self.pop_unfetched(),
        }
    }

    pub fn len(&self) -> usize {
        self.fetched.len() + self.memory.len() + self.backend.len()
    }

    /// Messages in the backend (nsqd's `backend_depth`).
    pub fn backend_len(&self) -> usize {
        self.backend.len()
    }

    /// Backend messages whose bodies wait in the store.
    pub fn backend_in_store(&self) -> usize {
        self.backend.len() - self.bodies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fetched.is_empty() && self.memory.is_empty() && self.backend.is_empty()
    }

    pub fn clear(&mut self) {
        self.fetched.clear();
        self.memory.clear();
        self.backend.clear();
        self.bodies.clear();
    }

    /// The bodies of the queued messages, in order: `None` for one that waits in the store.
    pub fn bodies(&self) -> impl Iterator<Item = Option<&Body>> + '_ {
        let mut bodies = self.bodies.iter();
        self.fetched
            .iter()
            .chain(self.memory.iter())
            .map(|m| (!m.is_evicted()).then_some(&m.body))
            .chain(
                self.backend
                    .iter()
                    .map(move |s| if s.in_memory { bodies.next() } else { None }),
            )
    }

    /// The IDs of the queued messages, in order.
    pub fn ids(&self) -> impl Iterator<Item = MessageId> + '_ {
        self.fetched
            .iter()
            .chain(self.memory.iter())
            .map(|m| m.id)
            .chain(self.backend.iter().map(|s| s.id))
    }
}

/// A channel of a topic.
#[derive(Debug, Clone)]
pub struct Channel {
    pub topic: Name,
    pub name: Name,
    pub ephemeral: bool,
    /// Its copies are kept by durable storage (durable broker, neither it nor its topic
    /// ephemeral).
    pub stored: bool,
    pub paused: bool,
    /// Its topic's first message the store has not written yet (see `Topic::unstored`):
    /// it and every later one wait in the queue until the store has them.
    pub unstored: Option<MessageId>,
    pub queue: MessageQueue,
    pub deferred: PQueue<Message>,
    pub in_flight: IndexedQueue<InFlight>,
    /// End-to-end latencies of finished messages (with e2e percentiles configured).
    pub e2e: Option<crate::e2e::E2eWindow>,
    /// Messages taken from the queue whose bodies are being loaded from storage (next to
    /// go, or read ahead of the consumers: see `Broker::pump`), in the order asked for.
    pub loading: std::collections::VecDeque<Message>,
    /// The size of the bodies loaded lately (a running mean; 0 before the first): how many
    /// to read ahead (see `Broker::pump`).
    pub loaded_size: u32,
    /// Subscribed consumers, in subscription order; delivery goes round-robin over them.
    pub clients: Vec<ClientId>,
    /// Index into `clients` where the next round-robin search starts.
    pub next_client: usize,
    pub message_count: u64,
    pub requeue_count: u64,
    pub timeout_count: u64,
    /// The channel's key in the broker's timer table (its [`Self::next_due`] when last armed).
    pub armed: Option<Time>,
}

impl Channel {
    pub fn new(topic: Name, name: Name, trace: bool) -> Self {
        let ephemeral = crate::protocol::is_ephemeral(&name);
        let mut deferred = PQueue::plain();
        let mut in_flight = IndexedQueue::new();
        deferred.set_trace(trace);
        in_flight.set_trace(trace);
        Self {
            topic,
            name,
            ephemeral,
            stored: false,
            paused: false,
            unstored: None,
            queue: MessageQueue::default(),
            deferred,
            in_flight,
            loading: std::collections::VecDeque::new(),
            loaded_size: 0,
            e2e: None,
            clients: Vec::new(),
            next_client: 0,
            message_count: 0,
            requeue_count: 0,
            armed: None,
            timeout_count: 0,
        }
    }

    /// The message of `id` whose body was being loaded, no longer. Bodies come back in the
    /// order they were asked for, so it is nearly always the first.
    pub fn take_loading(&mut self, id: MessageId) -> Option<Message> {
        if self.loading.front().is_some_and(|m| m.id == id) {
            return self.loading.pop_front();
        }
        let at = self.loading.iter().position(|m| m.id == id)?;
        self.loading.remove(at)
    }

    /// nsqd's `depth`: ready messages (memory and backend, and those whose bodies are being
    /// loaded to be sent), not in flight, not deferred.
    pub fn depth(&self) -> usize {
        self.queue.len() + self.loading.len()
    }

    /// The IDs of every message the channel holds (ready, deferred and in flight).
    pub fn message_ids(&self) -> Vec<MessageId> {
        let mut ids: Vec<MessageId> = self.queue.ids().collect();
        ids.extend(self.deferred.entries().iter().map(|e| e.item.id));
        ids.extend(self.in_flight.iter().map(|e| e.item.msg.id));
        ids.extend(self.loading.iter().map(|m| m.id));
        ids
    }

    pub fn in_flight_owner(&self, id: MessageId) -> Option<ClientId> {
        self.in_flight.get(id.0).map(|e| e.item.client)
    }

    // The transitions nsqd's channel.go owns. Each changes this channel only; the broker
    // records what happened (events, store ops) and then settles the channel once (its heap
    // trace, the pump, its timer).

    /// nsqd's `FinishMessage`: message `id`, in flight to `client`, is done. Its end-to-end
    /// latency is recorded (with e2e percentiles configured, over `window`).
    pub fn finish(
        &mut self,
        now: Time,
        id: MessageId,
        client: ClientId,
        window: crate::time::Nanos,
    ) -> Result<InFlight, InFlightError> {
        let done = match self.in_flight.remove_if(id.0, |f| f.client == client) {
            Ok(e) => e.item,
            Err(false) => return Err(InFlightError::NotInFlight),
            Err(true) => return Err(InFlightError::NotOwner),
        };
        if let Some(w) = self.e2e.as_mut() {
            w.insert(now, now.saturating_sub(done.msg.timestamp), window);
        }
        Ok(done)
    }

    /// nsqd's `RequeueMessage`, its in-flight half: message `id` leaves `client`'s window and
    /// counts as requeued; the broker puts it back ([`Channel::defer`] for a delay, or the
    /// queue).
    pub fn requeue(&mut self, id: MessageId, client: ClientId) -> Result<Message, InFlightError> {
        self.check_owner(id, client)?;
        let e = self.in_flight.remove(id.0).expect("owned in-flight exists");
        self.requeue_count += 1;
        Ok(e.item.msg)
    }

    /// nsqd's `TouchMessage`: message `id`'s deadline becomes `msg_timeout` from now, never
    /// more than `max` after it was delivered. The new deadline.
    pub fn touch(
        &mut self,
        now: Time,
        id: MessageId,
        client: ClientId,
        msg_timeout: crate::time::Nanos,
        max: crate::time::Nanos,
    ) -> Result<Time, InFlightError> {
        self.check_owner(id, client)?;
        let delivered = self
            .in_flight
            .get(id.0)
            .expect("owned in-flight exists")
            .item
            .delivered_at;
        let mut deadline = now.saturating_add(msg_timeout);
        if deadline.saturating_sub(delivered) >= max {
            deadline = delivered.saturating_add(max);
        }
        self.in_flight.rekey(id.0, deadline);
        Ok(deadline)
    }

    fn check_owner(&self, id: MessageId, client: ClientId) -> Result<(), InFlightError> {
        match self.in_flight_owner(id) {
            None => Err(InFlightError::NotInFlight),
            Some(owner) if owner != client => Err(InFlightError::NotOwner),
            Some(_) => Ok(()),
        }
    }

    /// nsqd's `StartDeferredTimeout`: `msg` waits in the deferred heap until `due`. A body the
    /// store keeps (`evict`, and the channel is stored) stays there until then; otherwise it
    /// is copied out of the buffer it shares (it may wait long).
    pub fn defer(&mut self, mut msg: Message, due: Time, evict: bool) {
        if evict && self.stored {
            msg.body = crate::message::evicted_body();
        } else {
            msg.body = msg.body.unshared();
        }
        self.deferred.push(due, msg);
    }

    /// nsqd's `processDeferredQueue` and `processInFlightQueue`, a message at a time: the next
    /// one due at `now` (deferred ones first), counted if it timed out.
    pub fn pop_due(&mut self, now: Time) -> Option<Due> {
        if let Some(e) = self.deferred.pop_due(now) {
            return Some(Due::Deferred {
                msg: e.item,
                due: e.key,
            });
        }
        let e = self.in_flight.pop_due(now)?;
        self.timeout_count += 1;
        Some(Due::TimedOut(e.item))
    }

    /// nsqd's `Empty`: every message the channel holds goes (ready, deferred, in flight, and
    /// those whose bodies are being loaded).
    pub fn empty(&mut self) {
        self.queue.clear();
        self.deferred.clear();
        self.in_flight.clear();
        self.loading.clear();
    }

    /// The earliest instant one of the channel's heaps needs attention.
    pub fn next_due(&self) -> Option<Time> {
        match (self.deferred.peek_key(), self.in_flight.peek_key()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn remove_client(&mut self, client: ClientId) {
        if let Some(pos) = self.clients.iter().position(|&c| c == client) {
            self.clients.remove(pos);
            if pos < self.next_client {
                self.next_client -= 1;
            }
            if self.next_client >= self.clients.len() {
                self.next_client = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: u64, body: &str) -> Message {
        let mut m = Message::new(MessageId(id), 1_000 + id, Body::from(body));
        m.attempts = id as u16 % 3;
        m
    }

    fn drain(q: &mut MessageQueue) -> Vec<(u64, u64, u16, Vec<u8>)> {
        std::iter::from_fn(|| q.pop())
            .map(|m| (m.id.0, m.timestamp, m.attempts, m.body.to_vec()))
            .collect()
    }

    /// A channel with message `id` in flight to client 1, delivered at `at` with deadline
    /// `deadline`.
    fn in_flight_one(id: u64, at: Time, deadline: Time) -> Channel {
        let mut c = Channel::new("t".into(), "c".into(), false);
        c.in_flight.push(
            deadline,
            InFlight {
                msg: msg(id, "x"),
                client: ClientId(1),
                delivered_at: at,
            },
        );
        c
    }

    /// The transitions nsqd's channel.go owns, with its refusals.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn fin_req_and_touch_check_the_owner_and_touch_stops_at_the_maximum() {
        let (me, other) = (ClientId(1), ClientId(2));
        let mut c = in_flight_one(5, 100, 1_100);
        assert_eq!(
            c.finish(200, MessageId(6), me, 0).unwrap_err(),
            InFlightError::NotInFlight
        );
        assert_eq!(
            c.finish(200, MessageId(5), other, 0).unwrap_err(),
            InFlightError::NotOwner
        );
        assert_eq!(
            c.touch(200, MessageId(5), other, 1_000, 5_000),
            Err(InFlightError::NotOwner)
        );
        // msg_timeout from now, but never more than max (5 000) after delivery (at 100).
        assert_eq!(c.touch(200, MessageId(5), me, 1_000, 5_000), Ok(1_200));
        assert_eq!(c.touch(4_500, MessageId(5), me, 1_000, 5_000), Ok(5_100));
        assert_eq!(c.in_flight.peek_key(), Some(5_100));
        let m = c.requeue(MessageId(5), me).unwrap();
        assert_eq!((m.id, c.requeue_count), (MessageId(5), 1));
        assert!(c.in_flight.is_empty());
        assert_eq!(
            c.requeue(MessageId(5), me).unwrap_err(),
            InFlightError::NotInFlight
        );
        let mut c = in_flight_one(7, 100, 1_100);
        assert_eq!(
            c.finish(300, MessageId(7), me, 0).unwrap().msg.id,
            MessageId(7)
        );
        assert!(c.in_flight.is_empty());
    }

    /// What comes due: deferred messages first, then timeouts (counted), each only when due.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn due_deferred_messages_come_before_timeouts_and_nothing_early() {
        let mut c = in_flight_one(1, 0, 500);
        c.defer(msg(2, "later"), 600, false);
        c.defer(msg(3, "sooner"), 400, false);
        assert!(c.pop_due(399).is_none());
        match c.pop_due(600) {
            Some(Due::Deferred { msg, due }) => assert_eq!((msg.id, due), (MessageId(3), 400)),
            d => panic!("{d:?}"),
        }
        match c.pop_due(600) {
            Some(Due::Deferred { msg, due }) => assert_eq!((msg.id, due), (MessageId(2), 600)),
            d => panic!("{d:?}"),
        }
        assert_eq!(c.timeout_count, 0);
        match c.pop_due(600) {
            Some(Due::TimedOut(f)) => assert_eq!(f.msg.id, MessageId(1)),
            d => panic!("{d:?}"),
        }
        assert_eq!(c.timeout_count, 1);
        assert!(c.pop_due(u64::MAX).is_none());
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn a_backend_entry_is_smaller_than_a_message() {
        assert_eq!(std::mem::size_of::<Spilled>(), 24);
        // Half of one on a 64-bit host (where its body is a 16-byte pointer and two offsets).
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<Message>(), 48);
        assert!(std::mem::size_of::<Message>() > std::mem::size_of::<Spilled>());
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn the_backend_keeps_order_ids_timestamps_and_attempts() {
        let mut q = MessageQueue::default();
        // Two fit in memory; the rest spill, some leaving their bodies to the store.
        for id in 1..=8 {
            let evict = id % 2 == 0;
            let spilled = q.put(msg(id, &format!("m{id}")), 2, evict);
            assert_eq!(spilled, id > 2);
        }
        assert_eq!((q.len(), q.backend_len(), q.backend_in_store()), (8, 6, 3));
        assert_eq!(
            q.ids().map(|i| i.0).collect::<Vec<_>>(),
            (1..=8).collect::<Vec<_>>()
        );
        let in_memory: Vec<_> = q.bodies().map(|b| b.map(|b| b.to_vec())).collect();
        let got = drain(&mut q);
        assert!(q.is_empty());
        let popped: Vec<_> = got
            .iter()
            .map(|(_, _, _, b)| (!b.is_empty()).then(|| b.clone()))
            .collect();
        assert_eq!(in_memory, popped);
        let want: Vec<_> = (1..=8u64)
            .map(|id| {
                let body = if id > 2 && id % 2 == 0 {
                    Vec::new() // evicted: the store has it
                } else {
                    format!("m{id}").into_bytes()
                };
                (id, 1_000 + id, id as u16 % 3, body)
            })
            .collect();
        assert_eq!(got, want);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn an_evicted_message_stays_evicted_and_clear_empties_everything() {
        let mut q = MessageQueue::default();
        let mut gone = msg(1, "x");
        gone.body = crate::message::evicted_body();
        assert!(q.put(gone, 0, false));
        assert!(q.put(msg(2, "y"), 0, false));
        assert_eq!(q.backend_in_store(), 1);
        assert!(q.pop().is_some_and(|m| m.is_evicted()));
        q.put(msg(3, "z"), 0, false);
        q.clear();
        assert_eq!((q.len(), q.backend_in_store()), (0, 0));
        // Nothing of the old bodies is left to be paired with a new entry.
        q.put(msg(4, "w"), 0, false);
        assert_eq!(drain(&mut q), vec![(4, 1_004, 1, b"w".to_vec())]);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn the_next_to_fetch_is_the_first_after_those_fetched() {
        let mut q = MessageQueue::default();
        for id in 1..=3 {
            q.put(msg(id, "b"), 0, true);
        }
        assert!(q.next_is_evicted() && q.unfetched_is_evicted());
        let mut first = q.pop_unfetched().expect("message 1");
        assert!(first.is_evicted());
        first.body = b"one"[..].into();
        q.put_fetched(first);
        // Message 1 goes next; message 2 is the next to fetch, and then message 3.
        assert!(!q.next_is_evicted() && q.unfetched_is_evicted());
        assert_eq!(q.pop_unfetched().map(|m| m.id), Some(MessageId(2)));
        assert_eq!(q.fetched_len(), 1);
        assert_eq!(
            q.pop().map(|m| (m.id, m.body.to_vec())),
            Some((MessageId(1), b"one".to_vec()))
        );
        assert_eq!(q.pop().map(|m| m.id), Some(MessageId(3)));
        assert!(q.is_empty() && !q.unfetched_is_evicted());
    }
}
