//! A cluster in the lab: three nsqd (the core's broker in three simulated networks) and two
//! nsqlookupd (the core's [`Lookupd`]), spoken to with nsqd's real V1 bytes.
//!
//! The nsqd register their topics and channels with both lookupds as they come and go (from
//! the broker's registry changes) and PING them; a producer publishes to the nodes in turn;
//! consumers ask a lookupd where the topic is (alternating between the two, as NSQ's client
//! libraries do) and connect to what it lists. A node goes down: its connections close, the
//! lookupds forget it, its consumers keep reading elsewhere. An operator tombstones the topic
//! on a node: new consumers no longer find it there.
//!
//! The cluster plays as one lab ([`crate::lab::Lab`] delegates to it): an instant at a time,
//! one step shown at a time, nothing but its own clock.
//!
//! A learner can also take it in hand ([`Cluster::by_hand`], [`Hand`]): switch a node or a
//! lookupd off and on, publish, add a consumer. A node switched on starts empty (its memory
//! went with it) and connects to the lookupds; a lookupd switched on starts empty and the
//! nodes register everything they have with it again, as nsqd does when it reconnects.

pub mod picture;

use crate::i18n::Text;
use crate::lab::Step;
use crate::view::What;
use nsqlab_core::event::EventKind;
use nsqlab_core::lookup::register::{self, NodeIdentity};
use nsqlab_core::lookup::{Lookupd, LookupdOptions, PeerId};
use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, Time, SECOND};
use nsqlab_core::{ClientId, MessageId, Options, RegistryChange};
use picture::{Delta, FinderShown, NodeShown, ReaderShown, Shown};
use std::collections::{BTreeMap, VecDeque};

/// The topic everything is about.
pub const TOPIC: &str = "orders";
const HTTP_PORT: u16 = 4151;
/// How often an nsqd PINGs its lookupds.
const PING: Time = 2 * SECOND;
/// How often a consumer asks a lookupd.
const POLL: Time = 3 * SECOND;

/// One nsqd.
#[derive(Clone)]
pub struct Node {
    pub name: &'static str,
    pub sim: Sim,
    pub up: bool,
    /// The topic is tombstoned on it: the producer no longer publishes to it.
    pub tombstoned: bool,
    /// Its connection to each lookupd.
    peers: Vec<PeerId>,
    /// How often it was started (answers meant for an earlier start are dropped).
    starts: u64,
}

/// One nsqlookupd.
#[derive(Clone)]
pub struct Finder {
    pub name: &'static str,
    pub lookupd: Lookupd,
    /// Running (switched off: it answers nobody, and starts empty when switched on).
    pub up: bool,
}

/// A change a learner makes by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Hand {
    /// Switch node `i` off (kill) or on (an empty start).
    Node(usize),
    /// Switch lookupd `f` off or on.
    Finder(usize),
    /// The producer publishes one message (to the next node, in turn).
    Publish,
    /// Another consumer of channel `ledger` joins.
    AddReader,
}

/// Consumers at most (the picture's bottom row).
pub const MAX_READERS: usize = 3;

/// A consumer that finds the topic through the lookupds.
#[derive(Clone)]
pub struct Reader {
    pub name: Text,
    pub channel: &'static str,
    pub rdy: i64,
    pub work_ms: u64,
    /// Its connection to each node, if it has one.
    pub conns: Vec<Option<ClientId>>,
    pub polls: usize,
    pub finished: u64,
    pub joined: bool,
}

#[derive(Clone, Debug)]
enum Cue {
    Publish(String),
    Poll(usize),
    Ping,
    Down(usize),
    Up(usize),
    FinderOff(usize),
    FinderOn(usize),
    Tombstone(usize),
    Join(usize),
    Answer {
        reader: usize,
        node: usize,
        id: MessageId,
        /// The node's start the message came from.
        start: u64,
    },
}

/// The cluster.
#[derive(Clone)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub finders: Vec<Finder>,
    pub readers: Vec<Reader>,
    /// The producer's connection to each node.
    producer: Vec<Option<ClientId>>,
    next_node: usize,
    agenda: BTreeMap<(Time, u64), Cue>,
    seq: u64,
    pending: VecDeque<(Time, Text, Delta)>,
    /// The picture: the state as of the step shown.
    pub shown: Shown,
    pub now: Time,
    pub labels: BTreeMap<MessageId, String>,
    pub published: u64,
    /// Messages that were in a node's memory when it went down.
    pub lost: u64,
    seed: u64,
    /// Nodes started again (each start is seeded apart).
    starts: u64,
    finder_opts: LookupdOptions,
    /// Messages published by hand.
    by_hand: u64,
    /// After a change by hand the cluster keeps going (pings, polls) until then, so what the
    /// change leads to happens.
    awake_until: Time,
}

/// nsqd's V1 registration bytes: the magic and IDENTIFY.
fn identify(name: &str) -> Vec<u8> {
    register::hello(&NodeIdentity {
        broadcast_address: name.into(),
        hostname: name.into(),
        http_port: HTTP_PORT,
        tcp_port: 4150,
        version: nsqlab_core::VERSION.into(),
    })
}

impl Cluster {
    /// The scenario: three nodes, two lookupds, a producer publishing to the nodes in turn, a
    /// consumer from the start and another later; nsqd-3 goes down at 4 s, holding a message; the topic is
    /// tombstoned on nsqd-2 at 9 s; the auditor joins at 10 s.
    pub fn scenario(seed: u64) -> Cluster {
        let opts = LookupdOptions {
            broadcast_address: String::new(),
            hostname: String::new(),
            tcp_port: 4160,
            http_port: 4161,
            inactive_producer_timeout: 6 * SECOND,
            // (nsqd's default is 45 s; longer here, so no tombstone runs out while a learner
            // plays on by hand.)
            tombstone_lifetime: 600 * SECOND,
        };
        let mut c = Cluster {
            nodes: Vec::new(),
            finders: ["lookupd-1", "lookupd-2"]
                .into_iter()
                .map(|name| Finder {
                    name,
                    lookupd: Lookupd::new(opts.clone()),
                    up: true,
                })
                .collect(),
            readers: vec![
                Reader {
                    name: Text::new("name.ledger"),
                    channel: "ledger",
                    rdy: 2,
                    work_ms: 300,
                    conns: vec![None; 3],
                    polls: 0,
                    finished: 0,
                    joined: false,
                },
                Reader {
                    name: Text::new("name.auditor"),
                    channel: "audit",
                    rdy: 2,
                    work_ms: 200,
                    conns: vec![None; 3],
                    polls: 0,
                    finished: 0,
                    joined: false,
                },
            ],
            producer: vec![None; 3],
            next_node: 0,
            agenda: BTreeMap::new(),
            seq: 0,
            pending: VecDeque::new(),
            shown: Shown::default(),
            now: 0,
            labels: BTreeMap::new(),
            published: 0,
            lost: 0,
            seed,
            starts: 0,
            finder_opts: opts.clone(),
            by_hand: 0,
            awake_until: 0,
        };
        for (i, name) in ["nsqd-1", "nsqd-2", "nsqd-3"].into_iter().enumerate() {
            let o = Options {
                registry: true,
                events: true,
                ..Options::default()
            };
            let mut node = Node {
                name,
                sim: Sim::new(o, seed.wrapping_add(i as u64)),
                up: true,
                tombstoned: false,
                peers: Vec::new(),
                starts: 0,
            };
            for f in &mut c.finders {
                let peer = f.lookupd.connect(format!("{name}:40{i}0"));
                f.lookupd.handle_bytes(0, peer, &identify(name));
                let _ = f.lookupd.take_output(peer);
                node.peers.push(peer);
            }
            c.nodes.push(node);
            c.say(
                0,
                Text::new("cl.identify").arg("node", name),
                Delta::Identify(i),
            );
        }
        c.shown = Shown {
            finders: vec![
                FinderShown {
                    up: true,
                    tombs: Vec::new()
                };
                c.finders.len()
            ],
            nodes: vec![NodeShown::default(); c.nodes.len()],
            readers: vec![
                ReaderShown {
                    conns: vec![false; c.nodes.len()],
                    ..ReaderShown::default()
                };
                c.readers.len()
            ],
            ..Shown::default()
        };
        for i in 0..28u64 {
            c.at(ms(300 + i * 450), Cue::Publish(format!("order {i}")));
        }
        c.at(ms(600), Cue::Join(0));
        c.at(PING, Cue::Ping);
        // (Just after a publish to it, so it goes down holding a message: the one lost.)
        c.at(ms(4000), Cue::Down(2));
        c.at(ms(9000), Cue::Tombstone(1));
        c.at(ms(10_000), Cue::Join(1));
        c
    }

    /// Node `i` connects to lookupd `f` and identifies itself.
    fn hello(&mut self, i: usize, f: usize) -> PeerId {
        let name = self.nodes[i].name;
        let l = &mut self.finders[f].lookupd;
        let peer = l.connect(format!("{name}:40{i}0"));
        l.handle_bytes(self.now, peer, &identify(name));
        let _ = l.take_output(peer);
        peer
    }

    /// A change by hand, now (see [`Hand`]).
    pub fn by_hand(&mut self, h: Hand) {
        let cue = match h {
            Hand::Node(i) if i < self.nodes.len() => {
                if self.nodes[i].up {
                    Cue::Down(i)
                } else {
                    Cue::Up(i)
                }
            }
            Hand::Finder(f) if f < self.finders.len() => {
                if self.finders[f].up {
                    Cue::FinderOff(f)
                } else {
                    Cue::FinderOn(f)
                }
            }
            Hand::Publish => {
                self.by_hand += 1;
                Cue::Publish(format!("extra order {}", self.by_hand))
            }
            Hand::AddReader if self.readers.len() < MAX_READERS => {
                let n = self.readers.len();
                self.readers.push(Reader {
                    name: Text::new("name.ledger.n").arg("n", n),
                    channel: "ledger",
                    rdy: 2,
                    work_ms: 300,
                    conns: vec![None; self.nodes.len()],
                    polls: 0,
                    finished: 0,
                    joined: false,
                });
                self.shown.readers.push(ReaderShown {
                    conns: vec![false; self.nodes.len()],
                    ..ReaderShown::default()
                });
                Cue::Join(n)
            }
            _ => return,
        };
        let now = self.now;
        if !self.agenda.values().any(|c| matches!(c, Cue::Ping)) {
            self.at(now + PING, Cue::Ping);
        }
        self.awake_until = now + 12 * SECOND;
        self.cue(cue);
    }

    fn say(&mut self, at: Time, text: Text, d: Delta) {
        self.pending.push_back((at, text, d));
    }

    fn at(&mut self, t: Time, cue: Cue) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), cue);
    }

    /// Something left to happen by itself: a cue (other than the endless pings), or a message
    /// somewhere with a timer.
    fn has_future(&self) -> bool {
        !self.pending.is_empty()
            || self
                .agenda
                .iter()
                .any(|(k, c)| !matches!(c, Cue::Ping | Cue::Poll(_)) || k.0 <= self.awake_until)
            || self.nodes.iter().any(|n| {
                n.up && n.sim.broker.topics().any(|t| {
                    // Waiting for a channel: a consumer's next lookup finds the node (while a
                    // lookupd is there to answer).
                    (t.channels.is_empty() && t.depth() > 0 && self.finders.iter().any(|f| f.up))
                        || t.channels.values().any(|id| {
                            n.sim.broker.channel_by_id(*id).is_some_and(|c| {
                                !c.deferred.is_empty() || !c.in_flight.is_empty() || c.depth() > 0
                            })
                        })
                })
            })
    }

    /// No step of this instant is left to show.
    pub fn nothing_pending(&self) -> bool {
        self.pending.is_empty()
    }

    /// What happened, for the end of the scenario.
    pub fn summary(&self) -> Vec<Text> {
        let mut out = vec![Text::new("cl.summary")
            .arg("n", self.published)
            .arg("lost", self.lost)];
        for r in self.readers.iter().filter(|r| r.joined) {
            let nodes: Vec<&str> = self
                .nodes
                .iter()
                .enumerate()
                .filter(|(i, _)| r.conns[*i].is_some())
                .map(|(_, n)| n.name)
                .collect();
            out.push(
                Text::new("cl.summary.reader")
                    .nest("who", r.name.clone())
                    .arg("channel", r.channel)
                    .arg("fin", r.finished)
                    .arg("nodes", nodes.join(", ")),
            );
        }
        out
    }

    /// When the next step happens, if anything is left to happen by itself.
    pub fn next_time(&self) -> Option<Time> {
        if !self.pending.is_empty() {
            return Some(self.now);
        }
        if !self.has_future() {
            return None;
        }
        self.next_instant()
    }

    fn next_instant(&self) -> Option<Time> {
        let a = self.agenda.keys().next().map(|k| k.0);
        let t = self
            .nodes
            .iter()
            .filter(|n| n.up)
            .filter_map(|n| n.sim.next_timer())
            .min();
        match (a, t) {
            (Some(a), Some(t)) => Some(a.min(t)),
            (a, t) => a.or(t),
        }
    }

    /// Show the next step of this instant, if one is left.
    pub fn show_next(&mut self, log: &mut Vec<Step>) -> Option<Step> {
        let (at, text, d) = self.pending.pop_front()?;
        self.shown.apply(&d);
        let what = match d {
            Delta::Connect { .. } => What::ClusterConnect,
            Delta::Published(_) => What::ClusterPublished,
            Delta::Dropped { .. } => What::ClusterDropped,
            _ => What::Other,
        };
        let s = Step {
            at,
            text,
            claims: Vec::new(),
            what,
        };
        log.push(s.clone());
        Some(s)
    }

    /// Do everything due at `t`: the nodes' timers, then the cues.
    pub fn advance_to(&mut self, t: Time) {
        self.now = self.now.max(t);
        for i in 0..self.nodes.len() {
            if self.nodes[i].up {
                self.nodes[i].sim.advance(t);
                self.after(i);
            }
        }
        while let Some(e) = self.agenda.first_entry() {
            if e.key().0 > t {
                break;
            }
            let cue = e.remove();
            self.cue(cue);
        }
    }

    /// Let the clock run to `t` with nothing to show on the way: only the nodes' own timers
    /// (heartbeats) fire, answered silently.
    pub fn idle_to(&mut self, t: Time) {
        if t <= self.now || !self.pending.is_empty() {
            return;
        }
        if self.next_time().is_some_and(|x| x <= t) {
            return;
        }
        for i in 0..self.nodes.len() {
            if !self.nodes[i].up {
                continue;
            }
            for _ in 0..100_000 {
                match self.nodes[i].sim.next_timer() {
                    Some(x) if x <= t => {
                        self.nodes[i].sim.advance(x);
                        self.after(i);
                    }
                    _ => break,
                }
            }
            self.nodes[i].sim.advance(t);
            self.after(i);
        }
        while let Some((_, _, d)) = self.pending.pop_front() {
            self.shown.apply(&d);
        }
        self.shown.focus = None;
        self.now = t;
    }

    fn cue(&mut self, cue: Cue) {
        let now = self.now;
        match cue {
            Cue::Publish(body) => self.publish(&body),
            Cue::Poll(r) => self.poll(r),
            Cue::Ping => {
                for n in self.nodes.iter().filter(|n| n.up) {
                    for (f, &peer) in self.finders.iter_mut().zip(&n.peers).filter(|(f, _)| f.up) {
                        f.lookupd.handle_bytes(
                            now,
                            peer,
                            format!("{}\n", register::PING).as_bytes(),
                        );
                        let _ = f.lookupd.take_output(peer);
                    }
                }
                if now < self.awake_until
                    || self
                        .agenda
                        .values()
                        .any(|c| !matches!(c, Cue::Ping | Cue::Poll(_)))
                {
                    self.at(now + PING, Cue::Ping);
                }
            }
            Cue::Down(i) if !self.nodes[i].up => {}
            Cue::Up(i) if self.nodes[i].up => {}
            Cue::Down(i) => {
                let name = self.nodes[i].name;
                // Queued or in flight in its channels, or waiting in the topic for one.
                let waiting = self.nodes[i]
                    .sim
                    .broker
                    .topic(TOPIC)
                    .map_or(0, |t| t.depth() as u64);
                let lost: u64 = waiting + self.channels(i).iter().map(|c| c.1 + c.2).sum::<u64>();
                self.lost += lost;
                self.nodes[i].up = false;
                for (f, &peer) in self.finders.iter_mut().zip(&self.nodes[i].peers) {
                    if f.up {
                        f.lookupd.disconnect(peer);
                    }
                }
                self.producer[i] = None;
                self.say(
                    now,
                    Text::new("cl.down").arg("node", name).arg("n", lost),
                    Delta::Down(i),
                );
                for r in 0..self.readers.len() {
                    if self.readers[r].conns[i].take().is_some() {
                        let left: Vec<&str> = self
                            .nodes
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| self.readers[r].conns[*j].is_some())
                            .map(|(_, n)| n.name)
                            .collect();
                        let text = Text::new("cl.dropped")
                            .nest("who", self.readers[r].name.clone())
                            .arg("node", name)
                            .arg("left", left.join(", "));
                        self.say(now, text, Delta::Dropped { reader: r, node: i });
                    }
                }
            }
            Cue::Up(i) => {
                self.starts += 1;
                let o = Options {
                    registry: true,
                    events: true,
                    ..Options::default()
                };
                let seed = self.seed.wrapping_add(100 * self.starts + i as u64);
                let mut sim = Sim::new(o, seed);
                sim.advance(now);
                self.nodes[i].sim = sim;
                self.nodes[i].up = true;
                self.nodes[i].starts += 1;
                // What the lookupds knew of it, the operator's tombstone too, went with it.
                self.nodes[i].tombstoned = false;
                for f in 0..self.finders.len() {
                    if self.finders[f].up {
                        self.nodes[i].peers[f] = self.hello(i, f);
                    }
                }
                let text = Text::new("cl.up").arg("node", self.nodes[i].name);
                self.say(now, text, Delta::Up(i));
            }
            Cue::FinderOff(f) => {
                self.finders[f].up = false;
                self.finders[f].lookupd = Lookupd::new(self.finder_opts.clone());
                let text = Text::new("cl.finder.off").arg("finder", self.finders[f].name);
                self.say(now, text, Delta::FinderOff(f));
            }
            Cue::FinderOn(f) => {
                self.finders[f].up = true;
                let mut told = Vec::new();
                for i in 0..self.nodes.len() {
                    if !self.nodes[i].up {
                        continue;
                    }
                    self.nodes[i].peers[f] = self.hello(i, f);
                    // What the node has, registered again (as nsqd does on reconnecting).
                    let peer = self.nodes[i].peers[f];
                    let b = &self.nodes[i].sim.broker;
                    let mut cmds = Vec::new();
                    for t in b.topics() {
                        cmds.push(RegistryChange::Register {
                            topic: t.name.clone(),
                            channel: None,
                        });
                        for c in t.channels.keys() {
                            cmds.push(RegistryChange::Register {
                                topic: t.name.clone(),
                                channel: Some(c.clone()),
                            });
                        }
                    }
                    for cmd in cmds {
                        let line = format!("{}\n", cmd.command());
                        self.finders[f]
                            .lookupd
                            .handle_bytes(now, peer, line.as_bytes());
                        let _ = self.finders[f].lookupd.take_output(peer);
                    }
                    told.push(self.nodes[i].name);
                }
                let text = Text::new("cl.finder.on")
                    .arg("finder", self.finders[f].name)
                    .arg("nodes", told.join(", "));
                self.say(now, text, Delta::FinderOn(f));
            }
            Cue::Tombstone(i) if !self.nodes[i].up => {
                // Switched off by hand: no nsqlookupd lists it, there is nothing to tombstone.
                let text = Text::new("cl.tombstone.down").arg("node", self.nodes[i].name);
                self.say(now, text, Delta::Down(i));
            }
            Cue::Tombstone(i) => {
                self.nodes[i].tombstoned = true;
                let node = format!("{}:{HTTP_PORT}", self.nodes[i].name);
                for f in self.finders.iter_mut().filter(|f| f.up) {
                    f.lookupd.tombstone(now, TOPIC, &node);
                }
                let text = Text::new("cl.tombstone").arg("node", self.nodes[i].name);
                self.say(now, text, Delta::Tombstone(i));
            }
            Cue::Join(r) => {
                self.readers[r].joined = true;
                self.poll(r);
            }
            Cue::Answer {
                reader,
                node,
                id,
                start,
            } => {
                let Some(c) = self.readers[reader].conns[node] else {
                    return;
                };
                if !self.nodes[node].up || self.nodes[node].starts != start {
                    return;
                }
                self.nodes[node].sim.send(c, &Command::Fin(id.to_hex()));
                self.readers[reader].finished += 1;
                self.after(node);
            }
        }
    }

    /// The producer publishes to the next node that is up and not tombstoned (connecting first
    /// if it must).
    fn publish(&mut self, body: &str) {
        let up: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].up && !self.nodes[i].tombstoned)
            .collect();
        if up.is_empty() {
            let text = Text::new("cl.publish.none").arg("label", body);
            self.say(self.now, text, Delta::Note);
            return;
        }
        let i = up[self.next_node % up.len()];
        self.next_node += 1;
        let c = match self.producer[i] {
            Some(c) => c,
            None => {
                let c = self.nodes[i].sim.connect();
                self.producer[i] = Some(c);
                c
            }
        };
        let start = self.nodes[i].sim.events.len();
        self.nodes[i].sim.send(
            c,
            &Command::Pub {
                topic: TOPIC.into(),
                body: body.as_bytes().into(),
            },
        );
        for e in &self.nodes[i].sim.events[start..] {
            if let EventKind::Published { id, .. } = e.kind {
                self.labels.insert(id, body.to_string());
            }
        }
        self.published += 1;
        self.after(i);
    }

    /// A consumer asks a lookupd where the topic is, and connects to what it lists.
    fn poll(&mut self, r: usize) {
        let now = self.now;
        let f = self.readers[r].polls % self.finders.len();
        self.readers[r].polls += 1;
        // A lookupd that is off gives no answer: the consumer keeps what it has and asks the
        // other one next time.
        let answer = if self.finders[f].up {
            self.finders[f].lookupd.lookup(now, TOPIC)
        } else {
            None
        };
        let listed: Vec<usize> = answer
            .map(|a| {
                a.producers
                    .iter()
                    .filter_map(|p| {
                        self.nodes
                            .iter()
                            .position(|n| n.name == p.broadcast_address)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let names: Vec<&str> = listed.iter().map(|&i| self.nodes[i].name).collect();
        let key = match (self.finders[f].up, names.is_empty()) {
            (false, _) => "cl.lookup.off",
            (true, true) => "cl.lookup.none",
            (true, false) => "cl.lookup",
        };
        let text = Text::new(key)
            .nest("who", self.readers[r].name.clone())
            .arg("finder", self.finders[f].name)
            .arg("nodes", names.join(", "));
        self.say(
            now,
            text,
            Delta::Lookup {
                reader: r,
                finder: f,
            },
        );
        for i in listed {
            if self.readers[r].conns[i].is_some() || !self.nodes[i].up {
                continue;
            }
            let reader = self.readers[r].clone();
            let sim = &mut self.nodes[i].sim;
            let c = sim.connect();
            sim.send(
                c,
                &Command::Sub {
                    topic: TOPIC.into(),
                    channel: reader.channel.into(),
                },
            );
            sim.send(c, &Command::Rdy(reader.rdy));
            self.readers[r].conns[i] = Some(c);
            let text = Text::new("cl.connect")
                .nest("who", reader.name.clone())
                .arg("node", self.nodes[i].name)
                .arg("channel", reader.channel);
            self.say(now, text, Delta::Connect { reader: r, node: i });
            self.after(i);
        }
        self.at(now + POLL, Cue::Poll(r));
    }

    /// After node `i` did something: register what came or went with the lookupds, tell what
    /// happened to messages, answer heartbeats, and schedule consumers' answers.
    fn after(&mut self, i: usize) {
        let now = self.now;
        let name = self.nodes[i].name;
        let changes: Vec<RegistryChange> = self.nodes[i].sim.registry.drain(..).collect();
        for change in changes {
            let cmd = format!("{}\n", change.command());
            let (register, topic, channel) = match change {
                RegistryChange::Register { topic, channel } => (true, topic, channel),
                RegistryChange::Unregister { topic, channel } => (false, topic, channel),
            };
            let (topic, channel) = (topic.to_string(), channel.map(|c| c.to_string()));
            for (f, &peer) in self.finders.iter_mut().zip(&self.nodes[i].peers) {
                if f.up {
                    f.lookupd.handle_bytes(now, peer, cmd.as_bytes());
                    let _ = f.lookupd.take_output(peer);
                }
            }
            let what = match &channel {
                Some(c) => format!("{topic}/{c}"),
                None => topic,
            };
            let (key, d) = match register {
                true => ("cl.register", Delta::Register(i, channel)),
                false => ("cl.unregister", Delta::Unregister(i, channel)),
            };
            self.say(now, Text::new(key).arg("node", name).arg("what", what), d);
        }
        let events: Vec<_> = self.nodes[i].sim.events.drain(..).collect();
        let reader = |c: ClientId| self.readers.iter().position(|r| r.conns[i] == Some(c));
        let mut told = Vec::new();
        for e in events {
            let label = |id: &MessageId| self.labels.get(id).cloned().unwrap_or_default();
            let said = match &e.kind {
                EventKind::Published { id, .. } => Some((
                    Text::new("cl.published")
                        .arg("label", label(id))
                        .arg("node", name),
                    Delta::Published(i),
                )),
                EventKind::Sent {
                    id,
                    client,
                    channel,
                    ..
                } => reader(*client).map(|r| {
                    (
                        Text::new("cl.sent")
                            .arg("label", label(id))
                            .arg("node", name)
                            .arg("channel", channel)
                            .nest("who", self.readers[r].name.clone()),
                        Delta::Sent {
                            node: i,
                            reader: r,
                            channel: channel.to_string(),
                        },
                    )
                }),
                EventKind::Finished {
                    id,
                    client,
                    channel,
                    ..
                } => reader(*client).map(|r| {
                    (
                        Text::new("cl.fin")
                            .arg("label", label(id))
                            .arg("node", name)
                            .nest("who", self.readers[r].name.clone()),
                        Delta::Fin {
                            node: i,
                            reader: r,
                            channel: channel.to_string(),
                        },
                    )
                }),
                _ => None,
            };
            if let Some((text, d)) = said {
                told.push((e.at.max(now), text, d));
            }
        }
        self.pending.extend(told);
        // Clients' frames: heartbeats are answered; messages are worked on, then finished.
        for c in self.producer[i].into_iter() {
            for f in self.nodes[i].sim.frames(c) {
                if let Frame::Response(r) = f {
                    if r == b"_heartbeat_" {
                        self.nodes[i].sim.send(c, &Command::Nop);
                    }
                }
            }
        }
        for r in 0..self.readers.len() {
            let Some(c) = self.readers[r].conns[i] else {
                continue;
            };
            for f in self.nodes[i].sim.frames(c) {
                match f {
                    Frame::Response(b) if b == b"_heartbeat_" => {
                        self.nodes[i].sim.send(c, &Command::Nop)
                    }
                    Frame::Message(m) => {
                        let at = now + ms(self.readers[r].work_ms);
                        self.at(
                            at,
                            Cue::Answer {
                                reader: r,
                                node: i,
                                id: m.id,
                                start: self.nodes[i].starts,
                            },
                        );
                    }
                    _ => {}
                }
            }
        }
    }

    /// The real state, in the picture's terms (the picture equals it between instants).
    pub fn actual(&self) -> Shown {
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if !n.up {
                    return NodeShown {
                        identified: true,
                        ..NodeShown::default()
                    };
                }
                let topic = n.sim.broker.topic(TOPIC);
                NodeShown {
                    up: true,
                    identified: true,
                    topic: topic.is_some(),
                    tombstoned: n.tombstoned,
                    waiting: topic
                        .filter(|t| t.channels.is_empty())
                        .map_or(0, |t| t.depth() as u64),
                    channels: self
                        .channels(i)
                        .into_iter()
                        .map(|(c, d, f)| (c, (d, f)))
                        .collect(),
                }
            })
            .collect();
        let readers = self
            .readers
            .iter()
            .map(|r| ReaderShown {
                joined: r.joined,
                conns: r.conns.iter().map(Option::is_some).collect(),
                finished: r.finished,
            })
            .collect();
        let finders = (0..self.finders.len())
            .map(|f| {
                let mut tombs: Vec<usize> = if self.finders[f].up {
                    self.listing(f)
                        .into_iter()
                        .filter(|x| x.1)
                        .filter_map(|x| self.nodes.iter().position(|n| n.name == x.0))
                        .collect()
                } else {
                    Vec::new()
                };
                tombs.sort_unstable();
                FinderShown {
                    up: self.finders[f].up,
                    tombs,
                }
            })
            .collect();
        Shown {
            finders,
            nodes,
            readers,
            published: self.published,
            focus: None,
        }
    }

    /// Which nodes a lookupd lists for the topic now, and whether each is tombstoned.
    pub fn listing(&self, f: usize) -> Vec<(&'static str, bool)> {
        let l = &self.finders[f].lookupd;
        l.nodes(self.now)
            .into_iter()
            .filter_map(|n| {
                let node = self
                    .nodes
                    .iter()
                    .find(|x| x.name == n.peer.broadcast_address)?;
                let k = n.topics.iter().position(|t| t == TOPIC)?;
                Some((node.name, n.tombstones.get(k).copied().unwrap_or(false)))
            })
            .collect()
    }

    /// A node's channels: (name, depth, in flight).
    pub fn channels(&self, i: usize) -> Vec<(String, u64, u64)> {
        let b = &self.nodes[i].sim.broker;
        let Some(t) = b.topic(TOPIC) else {
            return Vec::new();
        };
        t.channels
            .iter()
            .filter_map(|(name, id)| {
                let c = b.channel_by_id(*id)?;
                Some((name.to_string(), c.depth() as u64, c.in_flight.len() as u64))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Play the cluster to its end, making `hands` changes by hand on the way (each at the
    /// first instant at or after its time), and check at every step and instant that the
    /// picture is the state the words describe.
    fn check_picture(c: &mut Cluster, hands: &[(Time, Hand)]) -> Vec<Step> {
        let mut hands: VecDeque<(Time, Hand)> = hands.iter().copied().collect();
        let mut log = Vec::new();
        let mut instants = 0;
        for _ in 0..100_000 {
            if c.show_next(&mut log).is_some() {
                let s = log.last().unwrap();
                assert!(c.shown.focus.is_some());
                if s.text.key == "cl.lookup" {
                    let Some(Delta::Lookup { finder, .. }) = c.shown.focus else {
                        panic!("a lookup step without its lookup");
                    };
                    let listed: Vec<&str> = c
                        .shown
                        .listing(finder)
                        .into_iter()
                        .filter(|(_, t)| !t)
                        .map(|(i, _)| c.nodes[i].name)
                        .collect();
                    assert!(
                        s.en().contains(&format!(": {}.", listed.join(", "))),
                        "{} vs {listed:?}",
                        s.en()
                    );
                }
                continue;
            }
            let mut want = c.actual();
            want.focus = c.shown.focus.clone();
            assert_eq!(c.shown, want, "after {:?}", log.last().map(|s| s.en()));
            for f in 0..2 {
                let real: Vec<(&str, bool)> = c.listing(f);
                let drawn: Vec<(&str, bool)> = c
                    .shown
                    .listing(f)
                    .into_iter()
                    .map(|(i, t)| (c.nodes[i].name, t))
                    .collect();
                assert_eq!(real, drawn, "lookupd {f} at {}", c.now);
            }
            instants += 1;
            if hands.front().is_some_and(|h| h.0 <= c.now) {
                let (_, h) = hands.pop_front().unwrap();
                c.by_hand(h);
                continue;
            }
            match c.next_time() {
                Some(t) => c.advance_to(t),
                None if hands.is_empty() => break,
                None => c.idle_to(hands[0].0),
            }
        }
        assert!(instants > 30);
        assert!(hands.is_empty(), "every change was made");
        log
    }

    /// The picture is the state the words describe: between instants it equals the real
    /// state, and what the lookupds list is what the picture lists.
    #[test]
    fn the_picture_follows_the_steps() {
        check_picture(&mut Cluster::scenario(3), &[]);
    }

    /// Issue 50 item 8: the cluster in hand. A node and a lookupd switched off and on, orders
    /// published by hand, a consumer added: each is told, the picture follows, and what
    /// follows from it happens (the node comes back empty and, once it has the topic, is found
    /// and read from; the lookupd answers again with what the nodes registered anew).
    #[test]
    fn the_cluster_in_hand() {
        let mut c = Cluster::scenario(3);
        let log = check_picture(
            &mut c,
            &[
                (ms(1_500), Hand::Finder(0)),
                (ms(2_000), Hand::Node(0)),
                (ms(2_600), Hand::AddReader),
                // Before the script's own kill of nsqd-3 at 4 s, which then finds it down.
                (ms(3_000), Hand::Node(2)),
                (ms(5_000), Hand::Node(0)),
                (ms(6_000), Hand::Finder(0)),
                // Down across the script's tombstone of nsqd-2 at 9 s.
                (ms(8_500), Hand::Node(1)),
                (ms(9_500), Hand::Node(1)),
                (ms(15_000), Hand::Publish),
                (ms(15_100), Hand::Publish),
                (ms(15_200), Hand::Publish),
            ],
        );
        let told = |k: &str| log.iter().filter(|s| s.text.key == k).count();
        assert_eq!((told("cl.finder.off"), told("cl.finder.on")), (1, 1));
        assert_eq!(told("cl.up"), 2);
        assert_eq!(told("cl.down"), 3, "nsqd-1, nsqd-3 and nsqd-2, each once");
        assert!(
            told("cl.lookup.off") >= 1,
            "a lookup at the lookupd that was off"
        );
        assert!(c.finders.iter().all(|f| f.up) && c.nodes[0].up);
        // The node started again has the topic again (a publish by hand reached it) and the
        // lookupd switched on lists it.
        assert!(
            c.nodes[0].sim.broker.topic(TOPIC).is_some(),
            "nsqd-1 has orders again"
        );
        assert!(
            c.listing(0).iter().any(|n| n.0 == "nsqd-1"),
            "{:?}",
            c.listing(0)
        );
        // The consumer added by hand joined and read.
        let added = &c.readers[2];
        assert!(
            added.joined && added.finished > 0,
            "the added consumer read"
        );
        // Nothing is left behind: every node that is up has delivered and had finished all it
        // was given (what a node held when it went down is counted lost).
        for (i, n) in c.nodes.iter().enumerate().filter(|(_, n)| n.up) {
            let held = n.sim.broker.topic(TOPIC).map_or(0, |t| t.depth());
            assert_eq!(held, 0, "{} still holds {held} in the topic", n.name);
            for (ch, depth, flight) in c.channels(i) {
                assert_eq!((depth, flight), (0, 0), "{} {ch}", n.name);
            }
        }
        // The ledger channel finished what it got: at most every order not lost. (Orders that
        // waited in a topic when a node's first channel was audit went to audit only, as in
        // nsqd.)
        let ledger: u64 = c
            .readers
            .iter()
            .filter(|r| r.channel == "ledger")
            .map(|r| r.finished)
            .sum();
        assert_eq!(c.published, 28 + 3);
        assert!(
            ledger + c.lost <= c.published && ledger >= 20,
            "ledger {ledger}, lost {}",
            c.lost
        );
    }

    fn play(c: &mut Cluster) -> Vec<Step> {
        let mut log = Vec::new();
        for _ in 0..100_000 {
            if c.show_next(&mut log).is_some() {
                continue;
            }
            match c.next_time() {
                Some(t) => c.advance_to(t),
                None => break,
            }
        }
        log
    }

    /// The documented end: the ledger read from all three nodes until nsqd-3 went down, then
    /// from nsqd-1 and nsqd-2; the lookupds forgot nsqd-3; the auditor, joining after the
    /// tombstone, connected to nsqd-1 only; every message published was finished by the
    /// ledger (the auditor's channel exists on nsqd-1 only).
    #[test]
    fn the_cluster_reaches_its_documented_end() {
        let mut c = Cluster::scenario(1);
        let log = play(&mut c);
        let said = |k: &str| log.iter().filter(|s| s.text.key == k).count();
        assert_eq!(said("cl.identify"), 3);
        assert!(said("cl.register") >= 3, "each node registered the topic");
        assert!(said("cl.connect") >= 3);
        assert_eq!(said("cl.down"), 1);
        assert_eq!(said("cl.tombstone"), 1);
        let conns = |r: usize| -> Vec<&str> {
            c.nodes
                .iter()
                .enumerate()
                .filter(|(i, _)| c.readers[r].conns[*i].is_some())
                .map(|(_, n)| n.name)
                .collect()
        };
        assert_eq!(
            conns(0),
            vec!["nsqd-1", "nsqd-2"],
            "the ledger after nsqd-3 went down"
        );
        assert_eq!(
            conns(1),
            vec!["nsqd-1"],
            "the auditor does not find the tombstoned nsqd-2"
        );
        for f in 0..2 {
            let l = c.listing(f);
            assert!(l.iter().all(|(n, _)| *n != "nsqd-3"), "{l:?}");
            assert!(l.contains(&("nsqd-2", true)), "nsqd-2 is tombstoned: {l:?}");
        }
        // nsqd-3 went down holding a message (issue 50 item 5: "what was in memory is gone"
        // must show something): it is lost, and the ledger finished every other one.
        let down = log.iter().find(|s| s.text.key == "cl.down").unwrap();
        assert!(down.en().contains("in flight): 1, gone"), "{}", down.en());
        assert_eq!(c.lost, 1);
        assert_eq!(c.readers[0].finished, c.published - 1);
        // The auditor's channel began when it subscribed: it sees the messages published to
        // nsqd-1 from then on, and the producer publishes nowhere else after the tombstone.
        let joined = log
            .iter()
            .find(|s| s.text.key == "cl.connect" && s.en().starts_with("auditor"))
            .expect("the auditor connected")
            .at;
        let after: u64 = log
            .iter()
            .filter(|s| s.at >= joined && s.text.key == "cl.published")
            .inspect(|s| assert!(s.en().contains("nsqd-1"), "{}", s.en()))
            .count() as u64;
        assert!(after >= 3);
        assert_eq!(c.readers[1].finished, after);
        // Both lookupds list the same.
        assert_eq!(c.listing(0), c.listing(1));
        // The same seed, the same story.
        let again = play(&mut Cluster::scenario(1));
        assert_eq!(
            again.iter().map(|s| s.en()).collect::<Vec<_>>(),
            log.iter().map(|s| s.en()).collect::<Vec<_>>()
        );
    }
}
