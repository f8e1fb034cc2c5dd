//! Partitions: clients moving to the partition that owns their topic, and publishes forwarded
//! there.

use super::command::dpub_defer;
use super::storage::store_failed;
use super::Broker;
use crate::client::Client;
use crate::event::Name;
use crate::message::Body;
use crate::protocol::decode::ClientState;
use crate::protocol::Command;
use crate::store::StoreFailure;
use crate::time::Nanos;
use crate::time::Time;
use crate::ClientId;

/// The partition (of `partitions`) that owns `topic`: FNV-1a of the name, so it is the same
/// in every process and after a restart with the same count.
pub fn partition_of(topic: &str, partitions: u32) -> u32 {
    if partitions <= 1 {
        return 0;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in topic.as_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % partitions as u64) as u32
}

/// A client leaving this partition for partition `to`, with its state and the input it sent
/// that this partition did not run (starting with the command that made it move).
#[derive(Debug, Clone)]
pub struct Migration {
    pub client: ClientId,
    pub to: u32,
    pub(crate) state: Box<Client>,
}

/// A publish to run on partition `to` on behalf of `client` (with no bodies it only makes the
/// topic: an MPUB the client's partition refused for its messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub client: ClientId,
    pub to: u32,
    pub topic: String,
    pub bodies: Vec<Body>,
    pub defer: Option<Nanos>,
    /// `PUB`, `MPUB` or `DPUB` (the error code if it fails).
    pub cmd: &'static str,
}

impl Broker {
    /// The next client leaving for another partition (see [`crate::partition`]). Hand it over
    /// after draining its transmits ([`Broker::poll_output`]): what that gives for this client goes out
    /// before anything the new partition sends. Input for it that arrives meanwhile goes to
    /// the new partition too (this one no longer knows it).
    #[must_use]
    pub(crate) fn take_migration(&mut self) -> Option<Migration> {
        self.migrations.pop_front()
    }

    /// The next publish to run on another partition; answer with
    /// [`Broker::handle_forwarded`].
    #[must_use]
    pub(crate) fn take_forward(&mut self) -> Option<Forward> {
        self.forwards.pop_front()
    }

    /// Take in a client from another partition and run the input it brought.
    pub(crate) fn adopt(&mut self, now: Time, m: Migration) {
        let now = self.clock.advance(now);
        let mut c = *m.state;
        let id = c.id;
        let input = std::mem::take(&mut c.inbuf);
        c.settling = true;
        self.clients.insert(id, c);
        self.arm_client_timers(id, now, true);
        self.handle_bytes(now, id, &input);
    }

    /// Everything the client sent to the partition it left has arrived here: it may move again.
    pub(crate) fn settled(&mut self, now: Time, client: ClientId) {
        let now = self.clock.advance(now);
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        c.settling = false;
        if c.migrate_wait && c.hold.is_none() {
            self.resume_migration(now, client);
        }
    }

    /// The other partition's answer to a forwarded publish: `Err` says why storing it failed
    /// (the client gets nsqd's fatal `E_PUB_FAILED`, as for a local store failure).
    pub(crate) fn handle_forwarded(
        &mut self,
        now: Time,
        client: ClientId,
        result: Result<(), StoreFailure>,
    ) {
        let now = self.clock.advance(now);
        let Some(cmd) = self
            .clients
            .get_mut(&client)
            .and_then(|c| c.forward_wait.take())
        else {
            return;
        };
        match result {
            Ok(()) => self.respond_stored(client, None, cmd),
            Err(reason) => {
                self.fail(now, client, store_failed(cmd, &reason));
                return;
            }
        }
        self.handle_bytes(now, client, &[]);
    }

    pub(super) fn resume_migration(&mut self, now: Time, id: ClientId) {
        if let Some(c) = self.clients.get_mut(&id) {
            c.migrate_wait = false;
            self.handle_bytes(now, id, &[]);
        }
    }

    /// The partition that owns the topic `cmd` names, when it is not this one.
    #[inline]
    pub(super) fn elsewhere(&self, cmd: &Command) -> Option<u32> {
        if self.opts.partitions <= 1 {
            return None;
        }
        let topic: &str = match cmd {
            Command::Pub { topic, .. }
            | Command::Mpub { topic, .. }
            | Command::Dpub { topic, .. } => topic,
            Command::Sub { topic, .. } => topic,
            _ => return None,
        };
        self.owner_elsewhere(topic)
    }

    /// The partition that owns `topic`, when it is not this one.
    #[inline]
    pub(super) fn owner_elsewhere(&self, topic: &str) -> Option<u32> {
        if self.opts.partitions <= 1 {
            return None;
        }
        let p = partition_of(topic, self.opts.partitions);
        (p != self.opts.partition).then_some(p)
    }

    /// Run `cmd` (for a topic partition `to` owns) by moving the client there, or by
    /// forwarding the publish; `rest` is the client's input from `cmd` on.
    pub(super) fn route_elsewhere(
        &mut self,
        id: ClientId,
        cmd: Command,
        to: u32,
        rest: &[u8],
    ) -> Routed {
        let c = self.clients.get_mut(&id).expect("client exists");
        let sub = matches!(cmd, Command::Sub { .. });
        if sub || (c.state == ClientState::Init && !c.moved_to_publish) {
            return self.move_client(id, to, rest, !sub);
        }
        let c = self.clients.get_mut(&id).expect("client exists");
        let (topic, bodies, defer, name) = match cmd {
            Command::Pub { topic, body } => (topic, vec![body], None, "PUB"),
            Command::Mpub { topic, bodies } => (topic, bodies, None, "MPUB"),
            Command::Dpub {
                topic,
                defer_ms,
                body,
            } => (topic, vec![body], Some(dpub_defer(defer_ms)), "DPUB"),
            _ => unreachable!("only publishes are forwarded"),
        };
        c.forward_wait = Some(name);
        let n = bodies.len() as u64;
        match c.pub_counts.iter_mut().find(|(t, _)| **t == *topic) {
            Some((_, count)) => *count += n,
            None => c.pub_counts.push((Name::from(topic.as_str()), n)),
        }
        self.forwards.push_back(Forward {
            client: id,
            to,
            topic: topic.to_string(),
            bodies,
            defer,
            cmd: name,
        });
        Routed::Forwarded
    }

    /// Move client `id` to partition `to`, which runs `rest`, its input from the command on
    /// (`to_publish`: a publisher's first move, after which it forwards instead).
    pub(super) fn move_client(
        &mut self,
        id: ClientId,
        to: u32,
        rest: &[u8],
        to_publish: bool,
    ) -> Routed {
        let c = self.clients.get_mut(&id).expect("client exists");
        // Its held output must go out from here first, and its last move must be over.
        if c.hold.is_some() || c.settling {
            c.migrate_wait = true;
            return Routed::Wait;
        }
        c.moved_to_publish |= to_publish;
        self.flush_ordered(id);
        let mut state = self.clients.remove(&id).expect("client exists");
        self.timers.cancel_client(id);
        state.inbuf = rest.to_vec();
        state.last_pub = None;
        state.read_armed = None;
        state.out_queued = false;
        self.migrations.push_back(Migration {
            client: id,
            to,
            state: Box::new(state),
        });
        Routed::Moved
    }
}

/// What became of a command for a topic another partition owns.
pub(super) enum Routed {
    /// The client (and the rest of its input) left for that partition.
    Moved,
    /// The client waits here until it can move; the command runs then.
    Wait,
    /// The publish went to that partition; the client's input waits for the answer.
    Forwarded,
}
