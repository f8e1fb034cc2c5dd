//! The replication scenario in the lab: three nsqd replicating a topic with raft.
//!
//! The scenario is played by a second WebAssembly module (`web/raft`, built to
//! `www/pkg/raft.js`), which runs the core's replicated nodes, raft included: raft is too big
//! for the page's first load, so the page loads that module when a learner opens the scenario
//! ([`request`]), and keeps each seed's run here ([`provide`]). The run comes whole: each
//! step's time, kind, words in both languages and the facts a tour's question checks. The lab
//! shows the steps one at a time, on its own clock, like any other ([`Replication`] is what
//! [`crate::lab::Lab`] delegates to); the picture after a step is drawn by the module when the
//! page asks for it (`app::replication`).

use crate::i18n::Text;
use crate::lab::Step;
use crate::view::What;
use nsqlab_core::time::Time;
use nsqlab_web_raft::{Facts, LabRun};
use std::cell::RefCell;
use std::rc::Rc;

/// Where a seed's run is.
#[derive(Debug, Clone, PartialEq)]
pub enum Loaded {
    /// Asked for, not here yet.
    Loading,
    Ready(Rc<LabRun>),
    /// The module could not be loaded or played (the reason).
    Failed(String),
}

thread_local! {
    /// Each seed's run (a learner opens a few at most).
    static RUNS: RefCell<Vec<(u64, Loaded)>> = const { RefCell::new(Vec::new()) };
}

fn find(seed: u64) -> Option<Loaded> {
    RUNS.with(|r| r.borrow().iter().find(|x| x.0 == seed).map(|x| x.1.clone()))
}

fn keep(seed: u64, l: Loaded) {
    RUNS.with(|r| {
        let mut r = r.borrow_mut();
        r.retain(|x| x.0 != seed);
        r.push((seed, l));
    });
}

/// The run of `seed`, as far as it is here. Natively (the tests) it is played at once.
pub fn loaded(seed: u64) -> Loaded {
    #[cfg(all(test, not(target_arch = "wasm32")))]
    if find(seed).is_none() {
        provide(seed, Ok(nsqlab_web_raft::play::run(seed).for_lab()));
    }
    find(seed).unwrap_or(Loaded::Loading)
}

/// Whether the page should ask the module for `seed`'s run (nobody has yet).
pub fn request(seed: u64) -> bool {
    if find(seed).is_some() {
        return false;
    }
    keep(seed, Loaded::Loading);
    true
}

/// Keep what the module answered for `seed` (and the words it brought).
pub fn provide(seed: u64, run: Result<LabRun, String>) {
    let l = match run {
        Ok(mut r) => {
            crate::i18n::load_later(std::mem::take(&mut r.words));
            Loaded::Ready(Rc::new(r))
        }
        Err(e) => Loaded::Failed(e),
    };
    keep(seed, l);
}

/// The scenario in a lab: a run, and how far it has been shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Replication {
    pub seed: u64,
    pub run: Loaded,
    /// Steps shown so far.
    pub shown: usize,
    pub now: Time,
}

impl Replication {
    pub fn new(seed: u64) -> Replication {
        Replication {
            seed,
            run: loaded(seed),
            shown: 0,
            now: 0,
        }
    }

    fn steps(&self) -> &[nsqlab_web_raft::LabStep] {
        match &self.run {
            Loaded::Ready(r) => &r.steps,
            _ => &[],
        }
    }

    /// The facts of the picture as the last step shown left it (`None` while the run is not
    /// here).
    pub fn facts(&self) -> Option<&Facts> {
        let Loaded::Ready(r) = &self.run else {
            return None;
        };
        Some(match self.shown {
            0 => &r.start,
            n => &r.steps[n - 1].facts,
        })
    }

    pub fn next_time(&self) -> Option<Time> {
        self.steps().get(self.shown).map(|s| s.at.max(self.now))
    }

    pub fn nothing_pending(&self) -> bool {
        self.steps().get(self.shown).is_none_or(|s| s.at > self.now)
    }

    pub fn advance_to(&mut self, t: Time) {
        self.now = self.now.max(t);
    }

    /// Time passes with nothing shown (only up to the next step).
    pub fn idle_to(&mut self, t: Time) {
        if self.next_time().is_none_or(|n| n > t) {
            self.now = self.now.max(t);
        }
    }

    pub fn show_next(&mut self, log: &mut Vec<Step>) -> Option<Step> {
        let s = self.steps().get(self.shown)?;
        if s.at > self.now {
            return None;
        }
        let step = Step {
            at: s.at,
            text: Text::both(s.en.clone(), s.zh.clone()),
            claims: Vec::new(),
            what: What::Raft(s.what),
        };
        self.shown += 1;
        log.push(step.clone());
        Some(step)
    }

    /// What happened, for the end of the run.
    pub fn summary(&self) -> Vec<Text> {
        let Some(f) = self.facts() else {
            return Vec::new();
        };
        vec![
            Text::new("rp.summary.published").arg("n", f.acked.len()),
            Text::new("rp.summary.done").arg("n", f.done.len()),
            Text::new("rp.summary.leader").arg("node", f.leader.clone().unwrap_or_default()),
        ]
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn the_lab_shows_the_run_step_by_step() {
        let mut r = Replication::new(3);
        let Loaded::Ready(run) = r.run.clone() else {
            panic!("played natively")
        };
        let mut log = Vec::new();
        assert_eq!(r.facts(), Some(&run.start));
        while let Some(t) = r.next_time() {
            r.advance_to(t);
            while r.show_next(&mut log).is_some() {}
        }
        assert_eq!(log.len(), run.steps.len());
        assert_eq!(r.facts(), Some(&run.steps.last().unwrap().facts));
        assert_eq!(log[0].text.render(crate::i18n::Lang::En), run.steps[0].en);
        assert_eq!(log[0].text.render(crate::i18n::Lang::Zh), run.steps[0].zh);
        let summary: Vec<String> = r.summary().iter().map(|t| t.en()).collect();
        assert_eq!(summary[0], "PUBs answered OK: 2.");
        assert_eq!(summary[1], "Messages the consumer finished: 2.");
    }
}
