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
use std::collections::BTreeMap;

/// Playback speeds offered (virtual seconds per real second).
pub const SPEEDS: &[f64] = &[0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0];

/// Virtual time played in one slice of a tick.
const SLICE: Time = 50 * nsqlab_core::time::MILLISECOND;

/// Steps shown per tick of the play timer at most (a frame's worth of work).
pub const TICK_STEPS: usize = 5000;

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
    /// Open a glossary entry (or close it, with `None`).
    Explain(Option<&'static str>),
    /// Speak this language.
    SetLang(Lang),
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
    pub fields: BTreeMap<Field, String>,
    /// Why a field's value was refused, next to it.
    pub refusals: BTreeMap<Field, Text>,
    /// Why a consumer's setting was refused, next to it.
    pub knob_refusals: BTreeMap<(usize, ClientId, Knob), Text>,
    /// The language the page speaks.
    pub lang: Lang,
    /// The glossary entry open, if any.
    pub term: Option<&'static str>,
    /// Bumped by every update (the components compare it to know what changed).
    pub version: u64,
}

impl Model {
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
            fields: BTreeMap::new(),
            refusals: BTreeMap::new(),
            knob_refusals: BTreeMap::new(),
            term: None,
            lang,
            version: 0,
        };
        m.restart();
        m
    }

    fn restart(&mut self) {
        self.panes = (self.scenario.build)(self.seed)
            .into_iter()
            .map(|(title, lab)| Pane { title, lab })
            .collect();
        self.playing = false;
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
            "?scenario={}&seed={}&speed={}&lang={}",
            self.scenario.id,
            self.seed,
            self.speed,
            self.lang.code()
        )
    }

    /// Apply one action.
    pub fn update(&mut self, action: Action) {
        self.version += 1;
        match action {
            Action::Step => self.step(),
            Action::NextTimer => {
                for p in &mut self.panes {
                    p.lab.flush_instant();
                }
                self.step();
            }
            Action::TogglePlay => self.playing = !self.playing,
            Action::Pause => self.playing = false,
            Action::Reset => self.restart(),
            Action::Pick(id) => {
                if let Some(s) = find(&id) {
                    self.scenario = s;
                    self.restart();
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
                    self.play(real_ms);
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
            } => {
                if let Some(p) = self.panes.get_mut(lab) {
                    p.lab.answer_by_hand(client, id, what);
                }
            }
            Action::Tune {
                lab,
                client,
                knob,
                value,
            } => self.tune(lab, client, knob, &value),
            Action::ToggleCrash { lab, client } => {
                if let Some(p) = self.panes.get_mut(lab) {
                    p.lab.toggle_crash(client);
                }
            }
            Action::RemoveConsumer { lab, client } => {
                if let Some(p) = self.panes.get_mut(lab) {
                    p.lab.remove_consumer_by_hand(client);
                }
            }
            Action::Explain(term) => self.term = term,
            Action::SetLang(lang) => self.lang = lang,
        }
    }

    /// Play `real_ms` of real time at the chosen speed, in slices of virtual time, all labs
    /// together. A tick shows at most [`TICK_STEPS`] steps: when a burst has more, the clock
    /// falls behind real time for a moment rather than the page freezing.
    fn play(&mut self, real_ms: f64) {
        let target = self.now() + (real_ms.max(0.0) * self.speed * 1e6) as Time;
        let mut t = self.now();
        let mut shown = 0;
        while t < target && shown < TICK_STEPS {
            t = (t + SLICE).min(target);
            for p in &mut self.panes {
                shown += p.lab.run_until(t);
            }
        }
    }

    /// One step on the shared clock.
    fn step(&mut self) {
        for _ in 0..100_000 {
            let Some(t) = self.panes.iter().filter_map(|p| p.lab.next_time()).min() else {
                return;
            };
            let mut shown = false;
            for p in &mut self.panes {
                if p.lab.next_time() == Some(t) {
                    shown |= p.lab.step_at(t).is_some();
                } else {
                    p.lab.idle_to(t);
                }
            }
            if shown {
                return;
            }
        }
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
            Ok(p) => {
                for pane in &mut self.panes {
                    pane.lab
                        .publish_by_hand(&p.topic, &p.body, p.defer_ms, p.count);
                }
            }
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
        for p in &mut self.panes {
            p.lab.add_consumer_by_hand(&topic, &channel, rdy);
        }
    }

    fn admin(&mut self, op: Admin) {
        self.clear_manage();
        let topic = self.field(Field::ManageTopic).to_string();
        let channel = self.field(Field::ManageChannel).to_string();
        let no = forms::check_admin(&topic, op.needs_channel().then_some(channel.as_str()));
        if self.refuse(no) {
            return;
        }
        let mut failed = None;
        for p in &mut self.panes {
            if let Err(e) = p.lab.admin_by_hand(op, &topic, &channel) {
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

    fn tune(&mut self, lab: usize, client: ClientId, knob: Knob, value: &str) {
        let Some(p) = self.panes.get_mut(lab) else {
            return;
        };
        let key = (lab, client, knob);
        self.knob_refusals.remove(&key);
        let Some(c) = p.lab.consumers.iter().find(|c| c.id == client).cloned() else {
            return;
        };
        let opts = p.lab.sim.broker.options().clone();
        let res = match knob {
            Knob::Rdy => forms::check_rdy(&opts, value).map(|n| p.lab.set_rdy_by_hand(client, n)),
            Knob::Work => forms::check_number("knob.work", value, 0, MAX_WORK_MS)
                .map(|n| p.lab.set_behaviour(client, n, c.fail_rate)),
            Knob::Fail => forms::check_number("knob.fail", value, 0, 100)
                .map(|n| p.lab.set_behaviour(client, c.processing_ms, n)),
        };
        if let Err(e) = res {
            self.knob_refusals.insert(key, e);
        }
    }
}

/// A speed on the menu, or `None`.
pub fn valid_speed(s: f64) -> Option<f64> {
    SPEEDS.iter().copied().find(|x| (x - s).abs() < 1e-9)
}

#[cfg(test)]
mod tests;
