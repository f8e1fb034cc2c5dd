//! Time travel: a run is a line of steps the learner can go back along and forward again.
//!
//! The core is deterministic, so a past point is rebuilt rather than stored. The line is
//! the run's *trail*: which lab showed each step, in the order they were shown (labs are
//! independent, so stepping each lab the same number of times in the same order gives the
//! same state). The labs are cloned every so often ([`Snapshot`]); going back restores the last
//! snapshot before the point, then follows the trail to it. Changes made by hand are kept in the
//! [`Journal`] with the point they were made at, and made again on the way. A position is the
//! number of steps shown, all labs together.

use super::Pane;
use crate::lab::{Admin, Answer, Lab};
use nsqlab_core::time::Time;
use nsqlab_core::MessageId;
use serde::{Deserialize, Serialize};

/// A change by hand, with everything needed to make it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "c", rename_all = "snake_case")]
pub enum Change {
    Publish {
        topic: String,
        body: String,
        defer_ms: u64,
        count: usize,
    },
    AddConsumer {
        topic: String,
        channel: String,
        rdy: i64,
    },
    Admin {
        op: Admin,
        topic: String,
        channel: String,
    },
    Answer {
        lab: usize,
        client: u64,
        id: MessageId,
        what: Answer,
    },
    Rdy {
        lab: usize,
        client: u64,
        rdy: i64,
    },
    Behaviour {
        lab: usize,
        client: u64,
        work: u64,
        fail: u64,
    },
    Crash {
        lab: usize,
        client: u64,
    },
    /// A change to the cluster (the cluster scenario).
    Cluster {
        hand: crate::cluster::Hand,
    },
    Remove {
        lab: usize,
        client: u64,
    },
}

/// A change at a point of the run: the position, and each lab's clock and number of steps,
/// when it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub pos: usize,
    pub at: Vec<Time>,
    pub logs: Vec<usize>,
    pub change: Change,
}

/// A run to share: a scenario, its seed, the changes made by hand, and where it was left
/// (each lab's number of steps). It replays exactly ([`super::Model::from_run`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub v: u32,
    pub scenario: String,
    pub seed: u64,
    pub journal: Journal,
    pub end: Vec<usize>,
}

/// Every change made by hand, in order.
pub type Journal = Vec<Entry>;

/// The labs at a point of the run, without their logs (a log only grows: its length is kept).
#[derive(Clone)]
pub struct Snapshot {
    pub pos: usize,
    pub labs: Vec<Lab>,
    pub logs: Vec<usize>,
    /// Journal entries already made at this point.
    pub applied: usize,
}

/// A key moment, marked on the scrubber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// A deferred message's pop from the heap.
    Pop,
    /// An in-flight timeout.
    Timeout,
    /// A REQ.
    Requeue,
    /// A change by hand.
    ByHand,
}

impl Mark {
    /// The kind of moment a step is, by what it was.
    pub fn of(what: crate::view::What) -> Option<Mark> {
        use crate::view::What;
        match what {
            What::HeapTake { at: 0, .. } => Some(Mark::Pop),
            What::TimedOut => Some(Mark::Timeout),
            What::Requeued { .. } => Some(Mark::Requeue),
            _ => None,
        }
    }
}

/// Snapshots kept at most: past it, every other one is dropped and they are taken half as
/// often (memory stays bounded however long the run; a point is rebuilt from at most
/// `horizon / (MAX_SNAPSHOTS / 2)` steps).
const MAX_SNAPSHOTS: usize = 48;
/// Steps between snapshots at first.
pub(crate) const FIRST_INTERVAL: usize = 256;

/// The run's line.
pub struct Timeline {
    /// Which lab showed each step, in order: its length is the furthest point reached.
    pub trail: Vec<u8>,
    pub journal: Journal,
    /// Journal entries made on the way to the current point.
    pub applied: usize,
    snapshots: Vec<Snapshot>,
    /// One more, taken on the way by a long rebuild ([`Timeline::waypoint`]).
    waypoint: Option<Snapshot>,
    interval: usize,
    /// Key moments up to the furthest point, by position.
    pub marks: Vec<(usize, Mark)>,
}

/// Take a lab's snapshot without its log.
fn clone_without_log(lab: &mut Lab) -> Lab {
    let log = std::mem::take(&mut lab.log);
    let copy = lab.clone();
    lab.log = log;
    copy
}

impl Timeline {
    /// A new line starting at the labs as they are (position 0).
    pub fn new(panes: &mut [Pane]) -> Timeline {
        let mut t = Timeline {
            trail: Vec::new(),
            journal: Vec::new(),
            applied: 0,
            snapshots: Vec::new(),
            waypoint: None,
            interval: FIRST_INTERVAL,
            marks: Vec::new(),
        };
        t.snapshot(panes, 0);
        t
    }

    /// The furthest point reached.
    pub fn horizon(&self) -> usize {
        self.trail.len()
    }

    fn take(&self, panes: &mut [Pane], pos: usize) -> Snapshot {
        let logs = panes.iter().map(|p| p.lab.log.len()).collect();
        let labs = panes
            .iter_mut()
            .map(|p| clone_without_log(&mut p.lab))
            .collect();
        Snapshot {
            pos,
            labs,
            logs,
            applied: self.applied,
        }
    }

    fn snapshot(&mut self, panes: &mut [Pane], pos: usize) {
        let s = self.take(panes, pos);
        self.snapshots.push(s);
        if self.snapshots.len() > MAX_SNAPSHOTS {
            let mut i = 0;
            self.snapshots.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.interval *= 2;
        }
    }

    /// Steps were shown at the head of the run: `before` is each lab's log length before them.
    /// They go on the trail in time order, labs in order at one instant (as a Step shows them),
    /// however they were shown: a played slice runs each lab in turn, but its steps are put on
    /// the line as they happened, so going back never puts one pane ahead of the other.
    /// Collect marks and take a snapshot when it is time.
    pub fn extend(&mut self, panes: &mut [Pane], before: &[usize]) {
        let mut next: Vec<usize> = panes
            .iter()
            .zip(before)
            .map(|(p, &b)| b.min(p.lab.log.len()))
            .collect();
        while let Some(i) = (0..panes.len())
            .filter(|&i| next[i] < panes[i].lab.log.len())
            .min_by_key(|&i| (panes[i].lab.log[next[i]].at, i))
        {
            let s = &panes[i].lab.log[next[i]];
            next[i] += 1;
            self.trail.push(i as u8);
            if let Some(m) = Mark::of(s.what) {
                self.marks.push((self.trail.len(), m));
            }
        }
        let pos = self.trail.len();
        let last = self.snapshots.last().map_or(0, |s| s.pos);
        if pos >= last + self.interval {
            self.snapshot(panes, pos);
        }
    }

    /// A rebuild that replays a long way (going Back from late in a long run, where
    /// snapshots are thousands of steps apart) leaves one snapshot near where it went, at
    /// `pos`: the next Backs start from it. Only the last is kept.
    pub fn waypoint(&mut self, panes: &mut [Pane], pos: usize) {
        self.waypoint = Some(self.take(panes, pos));
    }

    /// The run takes another way from `pos` (a change by hand in the past): its future goes.
    pub fn branch(&mut self, pos: usize) {
        self.trail.truncate(pos);
        self.journal.truncate(self.applied);
        let applied = self.applied;
        self.snapshots
            .retain(|s| s.pos <= pos && s.applied <= applied);
        self.waypoint = self
            .waypoint
            .take()
            .filter(|s| s.pos <= pos && s.applied <= applied);
        self.marks.retain(|m| m.0 <= pos);
    }

    /// A change by hand made at the head of the run.
    pub fn record(&mut self, pos: usize, at: Vec<Time>, logs: Vec<usize>, change: Change) {
        self.journal.push(Entry {
            pos,
            at,
            logs,
            change,
        });
        self.applied = self.journal.len();
        self.marks.push((pos, Mark::ByHand));
    }

    /// The snapshot to rebuild `pos` from (the last one at or before it).
    pub fn restore_point(&self, pos: usize) -> &Snapshot {
        let s = self
            .snapshots
            .iter()
            .rev()
            .find(|s| s.pos <= pos)
            .unwrap_or(&self.snapshots[0]);
        match &self.waypoint {
            Some(w) if w.pos <= pos && w.pos > s.pos => w,
            _ => s,
        }
    }

    /// The next journal entry to make again, if it is due at `pos`.
    pub fn due(&self, pos: usize) -> Option<&Entry> {
        self.journal.get(self.applied).filter(|e| e.pos <= pos)
    }
}
