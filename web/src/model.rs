//! The page's state and everything that changes it: [`Model::update`] takes one [`Action`]
//! (a click, a key, a tick of the play timer) and applies it. Plain Rust, tested natively; the
//! Yew components only render a model and send actions.
//!
//! A run shows one or more labs side by side (the scan-loop comparison has two). They share one
//! virtual clock: a Step moves every lab to the earliest next instant among them, and the labs
//! with something at that instant show one step each.

use crate::forms::{self, Field, MAX_WORK_MS};
use crate::i18n::{Lang, Text};
use crate::lab::{Admin, Answer, Lab};
use crate::scenarios::{find, Scenario, SCENARIOS};
use nsqlab_core::time::Time;
use nsqlab_core::{ClientId, MessageId};
use table::Table;
use timeline::FIRST_INTERVAL;
pub use timeline::{Change, Entry, Mark, Run, Timeline};

/// Playback speeds offered (virtual seconds per real second).
pub const SPEEDS: &[f64] = &[0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0];

/// Virtual time played in one slice of a tick.
const SLICE: Time = 50 * nsqlab_core::time::MILLISECOND;

/// Steps shown per tick of the play timer at most (a frame's worth of work).
pub const TICK_STEPS: usize = 2000;

/// Playing at this speed or faster, the page is drawn every [`FAST_DRAW_MS`] rather than on
/// every tick (the run is played on in between), and nothing glides in the panes. Redrawing
/// a page of a thousand elements twenty times a second is more than a frame's worth of work
/// each time, and at this speed it would change faster than anyone can read.
pub const FAST_PLAY: f64 = 10.0;
/// How often the page is drawn while playing fast, in ms of real time.
pub const FAST_DRAW_MS: f64 = 250.0;

/// A consumer setting changed by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Knob {
    Rdy,
    Work,
    Fail,
}

/// Everything the page can ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Step,
    /// One step back in time.
    Back,
    /// Go to this point of the run (the scrubber).
    Seek(usize),
    NextTimer,
    TogglePlay,
    Pause,
    Reset,
    /// Open a scenario by its id.
    Pick(String),
    /// A speed from the menu (or the URL).
    SetSpeed(String),
    /// Start over with the seed typed in the seed field.
    ApplySeed,
    /// The play timer: this many real milliseconds passed.
    Tick(f64),
    /// A form field was edited.
    Edit(Field, String),
    Publish,
    AddConsumer,
    Admin(Admin),
    /// FIN, REQ or TOUCH by hand, in lab `lab`.
    Answer {
        lab: usize,
        client: ClientId,
        id: MessageId,
        what: Answer,
    },
    /// A consumer's RDY, work time or failure rate, as typed.
    Tune {
        lab: usize,
        client: ClientId,
        knob: Knob,
        value: String,
    },
    ToggleCrash {
        lab: usize,
        client: ClientId,
    },
    RemoveConsumer {
        lab: usize,
        client: ClientId,
    },
    /// Switch a cluster's node or lookupd off or on, publish, add a consumer.
    Cluster(crate::cluster::Hand),
    /// Open a glossary entry (or close it, with `None`).
    Explain(Option<&'static str>),
    /// Speak this language.
    SetLang(Lang),
    /// The words of the chosen language have loaded (the page can now draw in it).
    WordsLoaded,
    /// The replication scenario's run has come from its module (or could not).
    RaftLoaded,
    /// Show the flow view (messages as tokens) or the structures.
    ToggleFlow,
    /// Start the scenario's guided tour (from the beginning of the run).
    StartTour,
    /// Answer the chapter's question with option `n` (from 1): the run then shows the answer.
    Predict(usize),
    /// On to the tour's next chapter (the last one ends the tour).
    NextChapter,
    /// Leave the tour for free play.
    EndTour,
    /// Open a shared run (or say why it cannot be).
    LoadRun(Box<Result<Run, ()>>),
    /// Show the link that shares this run.
    Share,
}

/// Where a learner is in a guided tour.
pub struct TourState {
    pub tour: &'static crate::tours::Tour,
    pub chapter: usize,
    /// The option the learner picked, once they have.
    pub predicted: Option<usize>,
    /// The run reached the chapter's stop (or, after a prediction, the answer's).
    pub reached: bool,
}

/// One lab on the page, with its heading ("" when it is the only one).
pub struct Pane {
    pub title: &'static str,
    pub lab: Lab,
}

/// The page's state.
pub struct Model {
    pub scenario: &'static Scenario,
    pub seed: u64,
    pub panes: Vec<Pane>,
    pub playing: bool,
    pub speed: f64,
    /// The forms' fields, as typed.
    pub fields: Table<Field, String>,
    /// Why a field's value was refused, next to it.
    pub refusals: Table<Field, Text>,
    /// Why a consumer's setting was refused, next to it.
    pub knob_refusals: Table<(usize, ClientId, Knob), Text>,
    /// The language the page speaks.
    pub lang: Lang,
    /// The flow view is on.
    pub flow: bool,
    /// The guided tour, when one is on.
    pub tour: Option<TourState>,
    /// Something to tell the learner about the run (a shared run that cannot be replayed).
    pub notice: Option<Text>,
    /// This run as a shared link carries it (its JSON), and the point it was shared at.
    pub share: Option<(String, usize)>,
    /// The glossary entry open, if any.
    pub term: Option<&'static str>,
    /// Bumped by every update (the components compare it to know what changed).
    pub version: u64,
    /// The run as a line to travel along.
    pub timeline: Timeline,
    /// Real time played since the page was last drawn (see [`FAST_PLAY`]).
    undrawn_ms: f64,
    /// The page is to be drawn after this update ([`Model::draw_now`]).
    draw: bool,
    /// Real time a drawing tick left for the next tick to play.
    owed_ms: f64,
    /// In the past: each lab's steps after the current point, as they were shown.
    future: Vec<std::collections::VecDeque<crate::lab::Step>>,
}

impl Model {
    /// Whether the page should be drawn after the last update: always, except while playing
    /// at [`FAST_PLAY`] or faster, when it is drawn once every [`FAST_DRAW_MS`] of real time
    /// (and when playing stops).
    pub fn draw_now(&self) -> bool {
        self.draw
    }

    /// Playing at [`FAST_PLAY`] or faster: drawn every [`FAST_DRAW_MS`], nothing glides in
    /// the panes, and tokens glide over the time between drawings.
    pub fn playing_fast(&self) -> bool {
        self.playing && self.speed >= FAST_PLAY
    }

    /// The page for a scenario (an unknown id opens the first), a seed and a speed (a speed
    /// not on the menu plays at 1×), in English.
    pub fn new(scenario: &str, seed: u64, speed: f64) -> Model {
        Model::with_lang(scenario, seed, speed, Lang::En)
    }

    /// The same, in a language.
    pub fn with_lang(scenario: &str, seed: u64, speed: f64, lang: Lang) -> Model {
        let scenario = find(scenario).unwrap_or(&SCENARIOS[0]);
        let mut m = Model {
            scenario,
            seed,
            panes: Vec::new(),
            playing: false,
            speed: valid_speed(speed).unwrap_or(1.0),
            fields: Table::new(),
            refusals: Table::new(),
            knob_refusals: Table::new(),
            term: None,
            lang,
            flow: false,
            tour: None,
            notice: None,
            share: None,
            version: 0,
            timeline: Timeline::new(&mut []),
            undrawn_ms: 0.0,
            draw: true,
            owed_ms: 0.0,
            future: Vec::new(),
        };
        m.restart();
        m
    }

    fn restart(&mut self) {
        self.panes = (self.scenario.build)(self.seed)
            .into_iter()
            .map(|(title, lab)| Pane { title, lab })
            .collect();
        self.timeline = Timeline::new(&mut self.panes);
        self.future = vec![Default::default(); self.panes.len()];
        self.playing = false;
        // A link to the run before is no longer this run's.
        self.share = None;
        self.refusals.clear();
        self.knob_refusals.clear();
        let s = self.scenario;
        self.fields = [
            (Field::PubTopic, s.topic.to_string()),
            (Field::PubBody, "hello".to_string()),
            (Field::PubDelay, "2000".to_string()),
            (Field::PubCount, "1".to_string()),
            (Field::ManageTopic, s.topic.to_string()),
            (Field::ManageChannel, s.channel.to_string()),
            (Field::ManageRdy, "1".to_string()),
            (Field::Seed, self.seed.to_string()),
        ]
        .into();
    }

    /// The position on the run's line: steps shown so far, all labs together.
    pub fn pos(&self) -> usize {
        self.panes.iter().map(|p| p.lab.log.len()).sum()
    }

    /// The shared clock.
    pub fn now(&self) -> Time {
        self.panes.iter().map(|p| p.lab.now()).max().unwrap_or(0)
    }

    /// Every lab has played out.
    pub fn finished(&self) -> bool {
        self.panes.iter().all(|p| p.lab.is_finished())
    }

    pub fn field(&self, f: Field) -> &str {
        self.fields.get(&f).map(String::as_str).unwrap_or("")
    }

    /// The URL query that reopens this page as it is.
    pub fn query(&self) -> String {
        format!(
            "?scenario={}&seed={}&speed={}&lang={}{}",
            self.scenario.id,
            self.seed,
            self.speed,
            self.lang.code(),
            if self.flow { "&view=flow" } else { "" }
        )
    }

    /// Apply one action.
    pub fn update(&mut self, action: Action) {
        self.version += 1;
        // Drawn, unless a fast tick says otherwise.
        self.draw = true;
        if !matches!(action, Action::Tick(_)) {
            self.undrawn_ms = 0.0;
            self.owed_ms = 0.0;
        }
        let at_head = self.pos() == self.timeline.horizon();
        match action {
            Action::Step if at_head => self.grow(|m| {
                m.step();
            }),
            // In the past, a Step shows what it showed the first time (one step of each lab at
            // one instant), as Back takes it away.
            Action::Step => self.seek(self.step_end(self.pos())),
            Action::Back => self.back(),
            Action::Seek(pos) => self.seek(pos),
            Action::NextTimer if at_head => self.grow(|m| {
                for p in &mut m.panes {
                    p.lab.flush_instant();
                }
                m.step();
            }),
            Action::NextTimer => {
                let now = self.now();
                while self.pos() < self.timeline.horizon() && self.now() <= now {
                    self.seek(self.pos() + 1);
                }
            }
            Action::TogglePlay => self.playing = !self.playing,
            Action::Pause => self.playing = false,
            Action::Reset => {
                self.restart();
                self.tour = None;
            }
            Action::Pick(id) => {
                if let Some(s) = find(&id) {
                    self.scenario = s;
                    self.restart();
                    self.tour = None;
                }
            }
            Action::SetSpeed(s) => {
                if let Some(v) = s.trim().parse().ok().and_then(valid_speed) {
                    self.speed = v;
                }
            }
            Action::ApplySeed => match self.field(Field::Seed).trim().parse::<u64>() {
                Ok(seed) => {
                    self.seed = seed;
                    self.restart();
                }
                Err(_) => {
                    self.refusals
                        .insert(Field::Seed, Text::new("refuse.seed").arg("max", u64::MAX));
                }
            },
            Action::Tick(real_ms) => {
                if self.playing {
                    let real_ms = real_ms.max(0.0);
                    self.undrawn_ms += real_ms;
                    if self.speed < FAST_PLAY {
                        self.play(real_ms);
                    } else if self.undrawn_ms >= FAST_DRAW_MS {
                        // A tick that draws the page plays nothing (drawing is a frame's
                        // work already): its time is played by the next tick.
                        self.owed_ms += real_ms;
                        self.undrawn_ms = 0.0;
                    } else {
                        let owed = std::mem::take(&mut self.owed_ms);
                        self.play(real_ms + owed);
                        self.draw = !self.playing;
                    }
                }
            }
            Action::Edit(f, v) => {
                self.fields.insert(f, v);
                self.refusals.remove(&f);
            }
            Action::Publish => self.publish(),
            Action::AddConsumer => self.add_consumer(),
            Action::Admin(op) => self.admin(op),
            Action::Answer {
                lab,
                client,
                id,
                what,
            } => self.change(Change::Answer {
                lab,
                client: client.0,
                id,
                what,
            }),
            Action::Tune {
                lab,
                client,
                knob,
                value,
            } => self.tune(lab, client, knob, &value),
            Action::Cluster(hand) => self.change(Change::Cluster { hand }),
            Action::ToggleCrash { lab, client } => self.change(Change::Crash {
                lab,
                client: client.0,
            }),
            Action::RemoveConsumer { lab, client } => self.change(Change::Remove {
                lab,
                client: client.0,
            }),
            Action::Explain(term) => self.term = term,
            Action::SetLang(lang) => self.lang = lang,
            Action::WordsLoaded => {}
            Action::ToggleFlow => self.flow = !self.flow,
            Action::RaftLoaded => {
                let waiting = self.panes.iter().any(|p| {
                    p.lab
                        .replication
                        .as_ref()
                        .is_some_and(|r| r.run == crate::replication::Loaded::Loading)
                });
                if waiting {
                    // The scenario opened before its run came: open it again, now whole (a
                    // tour begun meanwhile begins again with it).
                    let tour = self.tour.is_some();
                    self.restart();
                    self.tour = None;
                    if tour {
                        self.update(Action::StartTour);
                    }
                }
            }
            Action::StartTour => {
                if let Some(tour) = crate::tours::tour(self.scenario.id) {
                    self.restart();
                    self.playing = false;
                    self.tour = Some(TourState {
                        tour,
                        chapter: 0,
                        predicted: None,
                        reached: false,
                    });
                    self.open_chapter();
                }
            }
            Action::Predict(n) => {
                let reveal = self.tour.as_ref().and_then(|t| {
                    let q = t.tour.chapters[t.chapter].question.as_ref()?;
                    (t.predicted.is_none() && (1..=q.options).contains(&n)).then_some(q.reveal)
                });
                if let Some(stop) = reveal {
                    let reached = self.run_to(stop);
                    if let Some(t) = &mut self.tour {
                        t.predicted = Some(n);
                        t.reached = reached;
                    }
                }
            }
            Action::NextChapter => {
                if let Some(t) = &mut self.tour {
                    if t.chapter + 1 >= t.tour.chapters.len() {
                        self.tour = None;
                    } else {
                        t.chapter += 1;
                        t.predicted = None;
                        self.open_chapter();
                    }
                }
            }
            Action::EndTour => self.tour = None,
            Action::LoadRun(run) => match (*run)
                .map_err(|_| Text::new("share.bad"))
                .and_then(|r| Model::from_run(&r, self.lang))
            {
                Ok(mut m) => {
                    m.flow = self.flow;
                    m.version = self.version;
                    *self = m;
                }
                Err(e) => self.notice = Some(e),
            },
            Action::Share => {
                let json = serde_json::to_string(&self.run()).unwrap_or_default();
                self.share = Some((json, self.pos()));
            }
        }
    }

    /// Open the tour's current chapter: do what it does, then run to its stop.
    fn open_chapter(&mut self) {
        let Some(t) = &self.tour else { return };
        let chapter = &t.tour.chapters[t.chapter];
        if let Some(crate::tours::Act::CrashFirstConsumer) = chapter.act {
            if let Some(c) = self.panes[0].lab.consumers.first() {
                let client = c.id.0;
                self.change(Change::Crash { lab: 0, client });
            }
        }
        let reached = self.run_to(chapter.stop);
        if let Some(t) = &mut self.tour {
            t.reached = reached;
        }
    }

    /// One step forward, at the head of the run or along its trail. Whether anything moved.
    fn forward(&mut self) -> bool {
        let pos = self.pos();
        if pos == self.timeline.horizon() {
            if self.finished() {
                return false;
            }
            self.grow(|m| {
                m.step();
            });
            true
        } else {
            self.seek(pos + 1);
            self.pos() > pos
        }
    }

    /// Step until a tour's stop; whether it was reached.
    fn run_to(&mut self, stop: crate::tours::Stop) -> bool {
        use crate::tours::Stop;
        if let Stop::Before { on, nth, lab } = stop {
            let reached = self.run_to(Stop::Key { on, nth, lab });
            if reached {
                self.back();
            }
            return reached;
        }
        for _ in 0..1_000_000 {
            let done = match stop {
                Stop::Here => true,
                Stop::Key { on, nth, lab } => crate::tours::count(self, on, lab) >= nth,
                // Every step up to `t` and none after (a Step would run on past silent
                // instants, such as a heartbeat, to the next thing shown, however late).
                Stop::Time(t) => match self.pos() < self.timeline.horizon() {
                    true => self.trail_step(self.pos()).is_none_or(|(_, at)| at > t),
                    false => {
                        self.grow(|m| {
                            for p in &mut m.panes {
                                p.lab.run_until(t);
                            }
                        });
                        true
                    }
                },
                Stop::End => self.finished(),
                Stop::Before { .. } => unreachable!("handled above"),
            };
            if done {
                return true;
            }
            if !self.forward() {
                return false;
            }
        }
        false
    }

    /// Run `f` at the head of the run and put the steps it showed on the trail.
    fn grow(&mut self, f: impl FnOnce(&mut Model)) {
        let before: Vec<usize> = self.panes.iter().map(|p| p.lab.log.len()).collect();
        f(self);
        self.timeline.extend(&mut self.panes, &before);
    }

    /// Make a change by hand now, and note it on the run's line (in the past, the run takes
    /// another way from here).
    fn change(&mut self, change: Change) {
        let cluster = self.panes.iter().any(|p| p.lab.cluster.is_some());
        if cluster != matches!(change, Change::Cluster { .. }) {
            // The cluster takes only its own changes, and only the cluster takes those.
            return;
        }
        let pos = self.pos();
        if pos < self.timeline.horizon() || self.timeline.applied < self.timeline.journal.len() {
            self.timeline.branch(pos);
            for f in &mut self.future {
                f.clear();
            }
        }
        let at = self.panes.iter().map(|p| p.lab.now()).collect();
        let logs = self.panes.iter().map(|p| p.lab.log.len()).collect();
        self.grow(|m| m.apply(&change));
        self.timeline.record(pos, at, logs, change);
    }

    /// Make a change (now, or again on the way to a past point).
    fn apply(&mut self, change: &Change) {
        fn one(panes: &mut [Pane], lab: usize) -> Option<&mut Lab> {
            panes.get_mut(lab).map(|p| &mut p.lab)
        }
        match change {
            Change::Publish {
                topic,
                body,
                defer_ms,
                count,
            } => {
                for p in &mut self.panes {
                    p.lab.publish_by_hand(topic, body, *defer_ms, *count);
                }
            }
            Change::AddConsumer {
                topic,
                channel,
                rdy,
            } => {
                for p in &mut self.panes {
                    p.lab.add_consumer_by_hand(topic, channel, *rdy);
                }
            }
            Change::Admin { op, topic, channel } => {
                let mut failed = None;
                for p in &mut self.panes {
                    if let Err(e) = p.lab.admin_by_hand(*op, topic, channel) {
                        failed = Some(e);
                    }
                }
                if let Some(e) = failed {
                    let field = if e.contains("CHANNEL") {
                        Field::ManageChannel
                    } else {
                        Field::ManageTopic
                    };
                    let code = if e.ends_with("NOT_FOUND") { 404 } else { 400 };
                    self.refusals.insert(
                        field,
                        Text::new("refuse.admin")
                            .arg("code", code)
                            .arg("error", e)
                            .arg("path", op.path()),
                    );
                }
            }
            Change::Answer {
                lab,
                client,
                id,
                what,
            } => {
                if let Some(l) = one(&mut self.panes, *lab) {
                    l.answer_by_hand(ClientId(*client), *id, *what);
                }
            }
            Change::Rdy { lab, client, rdy } => {
                if let Some(l) = one(&mut self.panes, *lab) {
                    l.set_rdy_by_hand(ClientId(*client), *rdy);
                }
            }
            Change::Behaviour {
                lab,
                client,
                work,
                fail,
            } => {
                if let Some(l) = one(&mut self.panes, *lab) {
                    l.set_behaviour(ClientId(*client), *work, *fail);
                }
            }
            Change::Crash { lab, client } => {
                if let Some(l) = one(&mut self.panes, *lab) {
                    l.toggle_crash(ClientId(*client));
                }
            }
            Change::Cluster { hand } => {
                for p in &mut self.panes {
                    if let Some(c) = &mut p.lab.cluster {
                        c.by_hand(*hand);
                    }
                }
            }
            Change::Remove { lab, client } => {
                if let Some(l) = one(&mut self.panes, *lab) {
                    l.remove_consumer_by_hand(ClientId(*client));
                }
            }
        }
    }

    /// Make again the journal's changes due at this point (on the way to a past point), each
    /// at the clocks it was made at.
    fn replay_due(&mut self) {
        while let Some(e) = self.timeline.due(self.pos()).cloned() {
            for (p, at) in self.panes.iter_mut().zip(&e.at) {
                p.lab.idle_to(*at);
            }
            self.apply(&e.change);
            self.timeline.applied += 1;
        }
    }

    /// This run, to share: it replays to exactly this point.
    pub fn run(&self) -> Run {
        Run {
            v: 1,
            scenario: self.scenario.id.to_string(),
            seed: self.seed,
            journal: self.timeline.journal[..self.timeline.applied].to_vec(),
            end: self.panes.iter().map(|p| p.lab.log.len()).collect(),
        }
    }

    /// Replay a shared run: the scenario from its seed, each change where it was made (every
    /// lab stepped to where it was then), to where the run was left.
    pub fn from_run(run: &Run, lang: Lang) -> Result<Model, Text> {
        let refused = || Text::new("share.bad");
        if run.v != 1 || find(&run.scenario).is_none() {
            return Err(refused());
        }
        let mut m = Model::with_lang(&run.scenario, run.seed, 1.0, lang);
        for e in &run.journal {
            if e.logs.len() != m.panes.len() || e.at.len() != m.panes.len() {
                return Err(refused());
            }
            m.catch_up(&e.logs).map_err(|_| refused())?;
            for (p, at) in m.panes.iter_mut().zip(&e.at) {
                p.lab.idle_to(*at);
            }
            m.change(e.change.clone());
        }
        if run.end.len() != m.panes.len() {
            return Err(refused());
        }
        m.catch_up(&run.end).map_err(|_| refused())?;
        Ok(m)
    }

    /// Step each lab on its own until it has shown `logs[i]` steps.
    fn catch_up(&mut self, logs: &[usize]) -> Result<(), ()> {
        for (i, &want) in logs.iter().enumerate() {
            while self.panes[i].lab.log.len() < want {
                let mut shown = false;
                self.grow(|m| shown = m.panes[i].lab.step().is_some());
                if !shown {
                    return Err(());
                }
            }
        }
        Ok(())
    }

    /// One step back: undo what one Step shows (one step of each lab that had something at the
    /// last instant), to the nearest point before it that a run stands on (a change by hand
    /// shows its first steps at once: the points inside them are not).
    fn back(&mut self) {
        let here = self.pos();
        if here == 0 {
            return;
        }
        let mut target = self.step_start(here);
        loop {
            self.seek(target);
            if self.pos() < here || target == 0 {
                return;
            }
            target -= 1;
        }
    }

    /// The step at position `k` of the trail: its lab and instant (`None` past the horizon).
    fn trail_step(&self, k: usize) -> Option<(usize, Time)> {
        let lab = *self.timeline.trail.get(k)? as usize;
        let n = self.timeline.trail[..k]
            .iter()
            .filter(|&&x| x as usize == lab)
            .count();
        let log = &self.panes.get(lab)?.lab.log;
        let step = match log.get(n) {
            Some(s) => s,
            None => self.future.get(lab)?.get(n - log.len())?,
        };
        Some((lab, step.at))
    }

    /// Where the Step that showed the step before `here` began: the trail's steps at one
    /// instant, labs in rising order, as [`Model::step`] shows them.
    fn step_start(&self, here: usize) -> usize {
        let mut start = here - 1;
        let Some((mut lab, t)) = self.trail_step(start) else {
            return start;
        };
        while start > 0 {
            match self.trail_step(start - 1) {
                Some((l, u)) if u == t && l < lab => {
                    start -= 1;
                    lab = l;
                }
                _ => break,
            }
        }
        start
    }

    /// Where the Step from `here` ends (at most the horizon).
    fn step_end(&self, here: usize) -> usize {
        let Some((mut lab, t)) = self.trail_step(here) else {
            return here + 1;
        };
        let mut end = here + 1;
        while let Some((l, u)) = self.trail_step(end) {
            if u != t || l <= lab {
                break;
            }
            end += 1;
            lab = l;
        }
        end
    }

    /// Go to a point of the run, back or forward (no further than the furthest reached), by
    /// the trail: from the last snapshot before it, each step by the lab that showed it.
    fn seek(&mut self, target: usize) {
        let target = target.min(self.timeline.horizon());
        let here = self.pos();
        if target < here || self.timeline.restore_point(target).pos > here {
            let snap = self.timeline.restore_point(target).clone();
            for (i, p) in self.panes.iter_mut().enumerate() {
                let mut log = std::mem::take(&mut p.lab.log);
                let future = &mut self.future[i];
                if snap.logs[i] <= log.len() {
                    // Back: the steps after the snapshot wait in the future.
                    for s in log.split_off(snap.logs[i]).into_iter().rev() {
                        future.push_front(s);
                    }
                } else {
                    // Forward: the steps up to the snapshot come back from the future.
                    let need = snap.logs[i] - log.len();
                    log.extend(future.drain(..need.min(future.len())));
                }
                p.lab = snap.labs[i].clone();
                p.lab.log = log;
            }
            self.timeline.applied = snap.applied;
        }
        let start: Vec<usize> = self.panes.iter().map(|p| p.lab.log.len()).collect();
        // Going back a long way to replay: a waypoint near the end of it, for the next Back.
        let waypoint = (target < here && target >= self.pos() + 2 * FIRST_INTERVAL)
            .then(|| target - FIRST_INTERVAL / 2);
        while self.pos() < target {
            let pos = self.pos();
            if Some(pos) == waypoint {
                self.timeline.waypoint(&mut self.panes, pos);
            }
            self.replay_due();
            if self.pos() != pos {
                continue;
            }
            let i = self.timeline.trail[pos] as usize;
            if self.panes[i].lab.step().is_none() {
                debug_assert!(false, "the trail says lab {i} shows a step at {pos}");
                break;
            }
        }
        // The steps shown again are the future's first ones.
        for (i, p) in self.panes.iter().enumerate() {
            let future = &mut self.future[i];
            let shown = (p.lab.log.len() - start[i]).min(future.len());
            future.drain(..shown);
        }
    }

    /// Play `real_ms` of real time at the chosen speed, all labs together. In the past it
    /// follows the run's trail; at its head, the labs play on. A tick shows at most
    /// [`TICK_STEPS`] steps: when a burst has more, the clock falls behind real time for a
    /// moment rather than the page freezing.
    fn play(&mut self, real_ms: f64) {
        let target = self.now() + (real_ms.max(0.0) * self.speed * 1e6) as Time;
        let mut shown = 0;
        while self.pos() < self.timeline.horizon() && shown < TICK_STEPS {
            if self.now() >= target {
                return;
            }
            self.seek(self.pos() + 1);
            shown += 1;
        }
        if shown >= TICK_STEPS {
            return;
        }
        self.grow(|m| {
            let mut t = m.now();
            // Nothing more happens by itself once every lab is finished: the clock stops
            // there (within a slice of the last event), not at wherever playing would take it.
            while t < target && shown < TICK_STEPS && !m.finished() {
                t = (t + SLICE).min(target);
                for p in &mut m.panes {
                    shown += p.lab.run_until(t);
                }
            }
        });
        if self.finished() && self.pos() >= self.timeline.horizon() {
            // A finished scenario stops playing (Pause turns back into Play).
            self.playing = false;
        }
    }

    /// One step on the shared clock: every lab with something at the earliest next instant
    /// shows one step. How many were shown.
    fn step(&mut self) -> usize {
        for _ in 0..100_000 {
            let Some(t) = self.panes.iter().filter_map(|p| p.lab.next_time()).min() else {
                return 0;
            };
            let mut shown = 0;
            for p in &mut self.panes {
                if p.lab.next_time() == Some(t) {
                    shown += usize::from(p.lab.step_at(t).is_some());
                } else {
                    p.lab.idle_to(t);
                }
            }
            if shown > 0 {
                return shown;
            }
        }
        0
    }

    fn refuse(&mut self, no: forms::Refusals) -> bool {
        let refused = !no.is_empty();
        for (f, why) in no {
            self.refusals.insert(f, why);
        }
        refused
    }

    fn publish(&mut self) {
        for f in [
            Field::PubTopic,
            Field::PubBody,
            Field::PubDelay,
            Field::PubCount,
        ] {
            self.refusals.remove(&f);
        }
        let opts = self.panes[0].lab.sim.broker.options().clone();
        match forms::check_publish(
            &opts,
            self.field(Field::PubTopic),
            self.field(Field::PubBody),
            self.field(Field::PubDelay),
            self.field(Field::PubCount),
        ) {
            Ok(p) => self.change(Change::Publish {
                topic: p.topic,
                body: p.body,
                defer_ms: p.defer_ms,
                count: p.count,
            }),
            Err(no) => {
                self.refuse(no);
            }
        }
    }

    fn clear_manage(&mut self) {
        for f in [Field::ManageTopic, Field::ManageChannel, Field::ManageRdy] {
            self.refusals.remove(&f);
        }
    }

    fn add_consumer(&mut self) {
        self.clear_manage();
        let opts = self.panes[0].lab.sim.broker.options().clone();
        let (topic, channel) = (
            self.field(Field::ManageTopic).to_string(),
            self.field(Field::ManageChannel).to_string(),
        );
        let mut no = forms::check_sub(&opts, &topic, &channel);
        let rdy = forms::check_rdy(&opts, self.field(Field::ManageRdy));
        if let Err(e) = &rdy {
            no.push((Field::ManageRdy, e.clone()));
        }
        if self.refuse(no) {
            return;
        }
        let rdy = rdy.expect("checked");
        self.change(Change::AddConsumer {
            topic,
            channel,
            rdy,
        });
    }

    fn admin(&mut self, op: Admin) {
        self.clear_manage();
        let topic = self.field(Field::ManageTopic).to_string();
        let channel = self.field(Field::ManageChannel).to_string();
        let no = forms::check_admin(&topic, op.needs_channel().then_some(channel.as_str()));
        if self.refuse(no) {
            return;
        }
        self.change(Change::Admin { op, topic, channel });
    }

    fn tune(&mut self, lab: usize, client: ClientId, knob: Knob, value: &str) {
        let Some(p) = self.panes.get(lab) else {
            return;
        };
        let key = (lab, client, knob);
        self.knob_refusals.remove(&key);
        let Some(c) = p.lab.consumers.iter().find(|c| c.id == client).cloned() else {
            return;
        };
        let opts = p.lab.sim.broker.options().clone();
        let change = match knob {
            Knob::Rdy => forms::check_rdy(&opts, value).map(|rdy| Change::Rdy {
                lab,
                client: client.0,
                rdy,
            }),
            Knob::Work => forms::check_number("knob.work", value, 0, MAX_WORK_MS).map(|work| {
                Change::Behaviour {
                    lab,
                    client: client.0,
                    work,
                    fail: c.fail_rate,
                }
            }),
            Knob::Fail => {
                forms::check_number("knob.fail", value, 0, 100).map(|fail| Change::Behaviour {
                    lab,
                    client: client.0,
                    work: c.processing_ms,
                    fail,
                })
            }
        };
        match change {
            Ok(c) => self.change(c),
            Err(e) => {
                self.knob_refusals.insert(key, e);
            }
        }
    }
}

/// A speed on the menu, or `None`.
pub fn valid_speed(s: f64) -> Option<f64> {
    SPEEDS.iter().copied().find(|x| (x - s).abs() < 1e-9)
}

mod table;
mod timeline;

#[cfg(test)]
mod tests;
