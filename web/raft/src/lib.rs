//! The visualiser's replication scenario: three nsqd replicating a topic with raft (the core's
//! [`nsqlab_core::replica`] nodes, TiKV's `raft` inside), a producer and a consumer, played in
//! virtual time by the core's own cluster simulation.
//!
//! raft and its protobuf code would more than fill what is left of the page's first load, so
//! the scenario is a second WebAssembly module, loaded when a learner opens it. Built with the
//! `play` feature, it exports `run` (the seed in, a [`LabRun`] out, as text:
//! [`LabRun::encode`]) and `picture` (one step's picture, as HTML, in English or Chinese).
//! The scenario is played once, whole, here; the page shows its steps one at a time (its time
//! travel is moving along them) and asks for each step's picture. The page's own module
//! depends on this crate without `play` and uses only [`LabRun`] (each step's kind, words in
//! both languages and [`Facts`] for the tour's questions): the steps' words ([`words`]) and
//! the picture ([`picture`]) are drawn here, so none of it weighs on the page's first load.
//!
//! Every step is one thing that happened, told in words ([`Say`], catalogue keys the page
//! translates) and drawn ([`Shot`], the whole picture after it): a node's role and term, each
//! node's log (which entries, whether on its disk yet, how far committed), the raft messages
//! on the wire, what the leader's broker holds, and the clients. Heartbeats between nodes are
//! neither drawn nor told (they are many and say nothing new); what one brings (a commit
//! index) is.

pub mod picture;
#[cfg(feature = "play")]
pub mod play;
pub mod words;

/// The topic and channel the scenario is about.
pub const TOPIC: &str = "orders";
pub const CHANNEL: &str = "archive";

/// A whole run of the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub seed: u64,
    /// What the run shows before its first step.
    pub start: Shot,
    pub steps: Vec<Step>,
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Virtual time, nanoseconds from the start.
    pub at: u64,
    /// Its words: one sentence or a few.
    pub says: Vec<Say>,
    pub what: What,
    /// The picture after it.
    pub shot: Shot,
}

/// Words: a catalogue key and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Say {
    pub key: String,
    pub args: Vec<(String, Arg)>,
}

/// An argument: plain (a name, a number) or words of their own (to translate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    Plain(String),
    Say(Say),
}

impl Say {
    pub fn new(key: &str) -> Say {
        Say {
            key: key.to_string(),
            args: Vec::new(),
        }
    }

    pub fn arg(mut self, name: &str, v: impl ToString) -> Say {
        self.args
            .push((name.to_string(), Arg::Plain(v.to_string())));
        self
    }

    pub fn nest(mut self, name: &str, s: Say) -> Say {
        self.args.push((name.to_string(), Arg::Say(s)));
        self
    }
}

/// What kind of step (for a tour's stops and the timeline's marks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// A follower's election timer ran out: it asks whether it could win (pre-vote), or stands.
    Campaign,
    /// A node wrote its vote, or answered a (pre-)vote request.
    Vote,
    /// A candidate won a majority.
    Elected,
    /// A leader's broker started serving clients.
    Serving,
    /// A leader put a change into its log and sent it on.
    Propose,
    /// A follower received entries and writes them.
    Append,
    /// A follower's entries are on its disk and it said so.
    Ack,
    /// A leader counted a majority: an entry is committed.
    Commit,
    /// A follower learned how far the log is committed.
    Learn,
    /// A producer sent a PUB.
    Publish,
    /// The producer got `OK`.
    Ok,
    /// A message went to the consumer (`again`: it had been delivered before).
    Deliver { again: bool },
    /// The consumer finished a message.
    Fin,
    /// A client connected (or connected again).
    Connect,
    /// A client's connection closed.
    Closed,
    /// A node was killed.
    Killed,
    /// A node started from its disk.
    Started,
    /// Anything else shown (a late answer, a rejected message).
    Other,
}

/// The picture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shot {
    pub nodes: Vec<NodeShot>,
    /// Raft messages on the wire (heartbeats left out), oldest first.
    pub wire: Vec<WireShot>,
    pub producer: ClientShot,
    pub consumer: ClientShot,
}

/// A node's role in raft (`Down`: not running).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    #[default]
    Follower,
    PreCandidate,
    Candidate,
    Leader,
    Down,
}

impl Role {
    /// The catalogue key of its name.
    pub fn key(self) -> &'static str {
        match self {
            Role::Follower => "rp.role.follower",
            Role::PreCandidate => "rp.role.precandidate",
            Role::Candidate => "rp.role.candidate",
            Role::Leader => "rp.role.leader",
            Role::Down => "rp.role.down",
        }
    }
}

/// One node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeShot {
    pub id: u64,
    pub name: String,
    pub role: Role,
    pub term: u64,
    /// The node it voted for in its term (0: none, or unknown while it is down).
    pub voted: u64,
    /// Its log, from index 1 (a down node's: what its disk kept).
    pub log: Vec<EntryShot>,
    /// The last index it knows committed.
    pub commit: u64,
    /// Its broker serves clients.
    pub serving: bool,
    /// The serving broker's channel: messages waiting and in flight (labels like `#2`).
    pub waiting: Vec<String>,
    pub in_flight: Vec<String>,
}

/// One log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryShot {
    pub index: u64,
    pub term: u64,
    pub what: EntryWhat,
    /// On this node's disk (not only being written).
    pub durable: bool,
}

/// What an entry holds, as its label says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryWhat {
    /// The group's first configuration (the bootstrap snapshot's place).
    Start,
    /// A new leader's empty entry.
    Empty,
    /// A topic and channel made (a SUB's).
    Channel,
    /// A publish: the message's label.
    Pub(String),
    /// Finished messages.
    Fin(Vec<String>),
    /// Anything else the broker keeps (messages handed to channels, a requeue).
    Other,
    /// A membership change.
    Conf,
}

impl EntryWhat {
    /// One of each kind (for tests of the words).
    pub fn all() -> Vec<EntryWhat> {
        vec![
            EntryWhat::Start,
            EntryWhat::Empty,
            EntryWhat::Channel,
            EntryWhat::Pub("#1".into()),
            EntryWhat::Fin(vec!["#1".into(), "#2".into()]),
            EntryWhat::Other,
            EntryWhat::Conf,
        ]
    }
}

/// A raft message on its way.
#[derive(Debug, Clone, PartialEq)]
pub struct WireShot {
    pub from: u64,
    pub to: u64,
    pub kind: WireKind,
}

/// The raft messages the picture draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireKind {
    /// "Would you vote for me in `term`?"
    PreVote {
        term: u64,
    },
    PreVoteAnswer {
        yes: bool,
    },
    /// "Vote for me in `term`."
    Vote {
        term: u64,
    },
    VoteAnswer {
        yes: bool,
    },
    /// Entries `first..=last` (none when `first > last`: only the commit index).
    Append {
        first: u64,
        last: u64,
        commit: u64,
    },
    /// "I have everything up to `index`" (or not: `rejected`).
    AppendAnswer {
        index: u64,
        rejected: bool,
    },
    /// Anything else (a snapshot, a timeout-now).
    Other,
}

/// A client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientShot {
    /// The node it is connected to.
    pub at: Option<u64>,
    /// PUBs sent and not answered yet (labels).
    pub waiting: Vec<String>,
    /// PUBs answered `OK`.
    pub acked: Vec<String>,
    /// Messages it holds and has not finished (the consumer).
    pub working: Vec<String>,
    /// Messages it finished.
    pub done: Vec<String>,
}

/// "entry 4" or "entries 4–6".
pub fn range(first: u64, last: u64) -> Say {
    if first >= last {
        Say::new("rp.entry").arg("index", first)
    } else {
        Say::new("rp.entries").arg("first", first).arg("last", last)
    }
}

/// The words for an entry's contents.
pub fn what_say(w: &EntryWhat) -> Say {
    match w {
        EntryWhat::Start => Say::new("rp.what.start"),
        EntryWhat::Empty => Say::new("rp.what.empty"),
        EntryWhat::Channel => Say::new("rp.what.channel"),
        EntryWhat::Pub(l) => Say::new("rp.what.pub").arg("label", l),
        EntryWhat::Fin(ls) => Say::new("rp.what.fin").arg("label", ls.join(", ")),
        EntryWhat::Other => Say::new("rp.what.other"),
        EntryWhat::Conf => Say::new("rp.what.conf"),
    }
}

/// An entry's contents in a word or two (for its box in the picture; [`what_say`] says it
/// whole).
pub fn short_say(w: &EntryWhat) -> Say {
    match w {
        EntryWhat::Start => Say::new("rp.short.start"),
        EntryWhat::Empty => Say::new("rp.short.empty"),
        EntryWhat::Channel => Say::new("rp.short.channel"),
        EntryWhat::Other => Say::new("rp.short.other"),
        EntryWhat::Conf => Say::new("rp.short.conf"),
        EntryWhat::Pub(_) | EntryWhat::Fin(_) => what_say(w),
    }
}

/// The words for a message on the wire.
pub fn kind_say(k: &WireKind) -> Say {
    match k {
        WireKind::PreVote { term } => Say::new("rp.wire.prevote").arg("term", term),
        WireKind::PreVoteAnswer { yes } | WireKind::VoteAnswer { yes } => {
            Say::new(if *yes { "rp.wire.yes" } else { "rp.wire.no" })
        }
        WireKind::Vote { term } => Say::new("rp.wire.vote").arg("term", term),
        WireKind::Append { first, last, .. } => {
            Say::new("rp.wire.append").nest("range", range(*first, *last))
        }
        WireKind::AppendAnswer { index, rejected } => Say::new(if *rejected {
            "rp.wire.nack"
        } else {
            "rp.wire.ack"
        })
        .arg("index", index),
        WireKind::Other => Say::new("rp.wire.other"),
    }
}

/// What the page's module keeps of a run. It travels between the two modules as text
/// ([`LabRun::encode`], [`LabRun::decode`]): a line a step, tab-separated fields (a JSON
/// parser for it would weigh 4 KB in the page's first load).
#[derive(Debug, Clone, PartialEq)]
pub struct LabRun {
    /// The facts before the first step.
    pub start: Facts,
    pub steps: Vec<LabStep>,
    /// Words the page shows around the run (its tour's, its summary's): key, English, Chinese.
    pub words: Vec<(String, String, String)>,
}

/// One step, for the page's module: when, what kind, its words in both languages, and facts.
#[derive(Debug, Clone, PartialEq)]
pub struct LabStep {
    pub at: u64,
    pub what: What,
    pub en: String,
    pub zh: String,
    pub facts: Facts,
}

/// What a tour's questions check in the picture after a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The producer's PUBs answered OK, and the messages the consumer works on and finished.
    pub acked: Vec<String>,
    pub working: Vec<String>,
    pub done: Vec<String>,
    /// Append answers on the wire (a follower's "I have up to …" not arrived yet).
    pub answers_on_wire: usize,
    /// Nodes down.
    pub down: usize,
    /// The node whose broker serves, if one does.
    pub leader: Option<String>,
    /// Every node but the leader follows it, its log the leader's, all of it on its disk.
    pub caught_up: bool,
}

impl Facts {
    pub fn of(s: &Shot) -> Facts {
        let leader = s.nodes.iter().find(|n| n.serving && n.role == Role::Leader);
        let log = |n: &NodeShot| {
            n.log
                .iter()
                .map(|e| (e.index, e.term, e.durable))
                .collect::<Vec<_>>()
        };
        Facts {
            acked: s.producer.acked.clone(),
            working: s.consumer.working.clone(),
            done: s.consumer.done.clone(),
            answers_on_wire: s
                .wire
                .iter()
                .filter(|w| matches!(w.kind, WireKind::AppendAnswer { .. }))
                .count(),
            down: s.nodes.iter().filter(|n| n.role == Role::Down).count(),
            leader: leader.map(|n| n.name.clone()),
            caught_up: leader.is_some_and(|l| {
                s.nodes
                    .iter()
                    .filter(|n| n.id != l.id)
                    .all(|n| n.role == Role::Follower && log(n) == log(l))
            }),
        }
    }
}

/// The first line of an encoded [`LabRun`]; an error is `error`, a tab and its text.
const MAGIC: &str = "nsqlab-raft-run 1";

impl LabRun {
    /// As text: [`MAGIC`], then a line for the start's facts and one per step (time, kind,
    /// English, Chinese, then the facts: acked, working, done (labels joined by commas),
    /// answers on the wire, nodes down, leader (empty: none), caught up (0 or 1)), then a
    /// line per word (`w`, key, English, Chinese). No field holds a tab or a line break (they
    /// are made spaces).
    pub fn encode(&self) -> String {
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        let facts = |f: &Facts| {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                f.acked.join(","),
                f.working.join(","),
                f.done.join(","),
                f.answers_on_wire,
                f.down,
                f.leader.as_deref().map(clean).unwrap_or_default(),
                u8::from(f.caught_up)
            )
        };
        let mut out = format!("{MAGIC}\n{}\n", facts(&self.start));
        for s in &self.steps {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\n",
                s.at,
                s.what.code(),
                clean(&s.en),
                clean(&s.zh),
                facts(&s.facts)
            ));
        }
        for (k, en, zh) in &self.words {
            out.push_str(&format!("w\t{}\t{}\t{}\n", clean(k), clean(en), clean(zh)));
        }
        out
    }

    /// Back from [`LabRun::encode`]'s text (or the module's error).
    pub fn decode(text: &str) -> Result<LabRun, String> {
        let mut lines = text.lines();
        match lines.next() {
            Some(MAGIC) => {}
            Some(l) if l.starts_with("error\t") => return Err(l[6..].to_string()),
            _ => return Err("not a run".into()),
        }
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        };
        let facts = |f: &[&str]| -> Result<Facts, String> {
            let [acked, working, done, answers, down, leader, caught] = f else {
                return Err(format!("facts: {f:?}"));
            };
            Ok(Facts {
                acked: list(acked),
                working: list(working),
                done: list(done),
                answers_on_wire: answers.parse().map_err(|_| "answers")?,
                down: down.parse().map_err(|_| "down")?,
                leader: (!leader.is_empty()).then(|| leader.to_string()),
                caught_up: *caught == "1",
            })
        };
        let start: Vec<&str> = lines.next().ok_or("no start")?.split('\t').collect();
        let start = facts(&start)?;
        let mut steps = Vec::new();
        let mut words = Vec::new();
        for l in lines {
            let f: Vec<&str> = l.split('\t').collect();
            if let ["w", k, en, zh] = f[..] {
                words.push((k.to_string(), en.to_string(), zh.to_string()));
                continue;
            }
            if f.len() != 11 {
                return Err(format!("a step of {} fields", f.len()));
            }
            steps.push(LabStep {
                at: f[0].parse().map_err(|_| "time")?,
                what: What::from_code(f[1]).ok_or("kind")?,
                en: f[2].to_string(),
                zh: f[3].to_string(),
                facts: facts(&f[4..])?,
            });
        }
        Ok(LabRun {
            start,
            steps,
            words,
        })
    }
}

impl What {
    const CODES: [(What, &'static str); 19] = [
        (What::Campaign, "campaign"),
        (What::Vote, "vote"),
        (What::Elected, "elected"),
        (What::Serving, "serving"),
        (What::Propose, "propose"),
        (What::Append, "append"),
        (What::Ack, "ack"),
        (What::Commit, "commit"),
        (What::Learn, "learn"),
        (What::Publish, "publish"),
        (What::Ok, "ok"),
        (What::Deliver { again: false }, "deliver"),
        (What::Deliver { again: true }, "deliver-again"),
        (What::Fin, "fin"),
        (What::Connect, "connect"),
        (What::Closed, "closed"),
        (What::Killed, "killed"),
        (What::Started, "started"),
        (What::Other, "other"),
    ];

    fn code(self) -> &'static str {
        Self::CODES
            .iter()
            .find(|c| c.0 == self)
            .map_or("other", |c| c.1)
    }

    fn from_code(s: &str) -> Option<What> {
        Self::CODES.iter().find(|c| c.1 == s).map(|c| c.0)
    }
}

impl Run {
    /// What the page's module keeps: words rendered in both languages, facts.
    pub fn for_lab(&self) -> LabRun {
        LabRun {
            start: Facts::of(&self.start),
            steps: self
                .steps
                .iter()
                .map(|s| LabStep {
                    at: s.at,
                    what: s.what,
                    en: words::render_all(&s.says, false),
                    zh: words::render_all(&s.says, true),
                    facts: Facts::of(&s.shot),
                })
                .collect(),
            words: words::WORDS
                .iter()
                .filter(|w| w.0.starts_with("tour.") || w.0.starts_with("rp.summary."))
                .map(|w| (w.0.to_string(), w.1.to_string(), w.2.to_string()))
                .collect(),
        }
    }

    /// The picture after `step` steps (0: before the first).
    pub fn shot(&self, step: usize) -> &Shot {
        match step.checked_sub(1) {
            None => &self.start,
            Some(i) => &self.steps[i.min(self.steps.len().saturating_sub(1))].shot,
        }
    }
}

/// Play the scenario: in, `{"seed": n}`; out, its [`LabRun`] ([`LabRun::encode`]).
/// The run is kept for [`picture`].
#[cfg(all(feature = "play", target_arch = "wasm32"))]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn run(input: &str) -> String {
    play::run_json(input)
}

/// The picture's styles ([`picture::CSS`]).
#[cfg(all(feature = "play", target_arch = "wasm32"))]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn style() -> String {
    picture::CSS.to_string()
}

/// The picture after `step` steps of the run of `seed` (a decimal string), as HTML, in
/// Chinese when `zh` (empty if that run was not played here).
#[cfg(all(feature = "play", target_arch = "wasm32"))]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn picture(seed: &str, step: u32, zh: bool) -> String {
    play::picture_of(seed.parse().unwrap_or(0), step as usize, zh)
}
