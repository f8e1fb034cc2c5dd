//! Guided tours: each scenario as a few short chapters, one idea each. A chapter runs the
//! simulation to the moment it is about and pauses there; it may ask the learner to predict
//! what happens next, and the simulation itself then shows the answer. Every question says
//! what must hold in the run for its answer to be right ([`Question::holds`]), and a test plays
//! every tour to check it does.
//!
//! Words are catalogue keys: `tour.<scenario>.<n>.title`, `.text`, and for a question `.q`,
//! `.a1`…`.a3` and `.why`.

use crate::lab::Lab;
use crate::model::Model;
use crate::view::{Role, What};
use nsqlab_core::time::{ms, Time};
use nsqlab_web_raft::What as RaftWhat;

/// A kind of step a tour stops at (by the step's typed kind, never its words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    ChannelCreated,
    Subscribed,
    /// RDY set above 1.
    RdyMany,
    Published,
    QueuedMemory,
    QueuedDisk,
    /// Any delivery (a first one or again).
    Sent,
    SentAgain,
    Fin,
    ReqLater,
    DueExact,
    HeapPush,
    HeapPushUp,
    HeapSwapUp,
    HeapSwapDown,
    /// The root taken, leaving a hole.
    HeapTakeRoot,
    HeapMove,
    ClusterConnect,
    ClusterPublished,
    ClusterDropped,
    /// A step of the replication scenario of this kind.
    Raft(nsqlab_web_raft::What),
}

impl On {
    /// Whether a step of kind `w` is one of these.
    pub fn matches(self, w: What) -> bool {
        match (self, w) {
            (On::ChannelCreated, What::ChannelCreated)
            | (On::Subscribed, What::Subscribed)
            | (On::Published, What::Published { .. })
            | (On::Sent, What::Sent { .. })
            | (On::Fin, What::Fin)
            | (On::HeapPush, What::HeapPush { .. })
            | (On::HeapMove, What::HeapMove)
            | (On::ClusterConnect, What::ClusterConnect)
            | (On::ClusterPublished, What::ClusterPublished)
            | (On::ClusterDropped, What::ClusterDropped) => true,
            (On::Raft(a), What::Raft(b)) => a == b,
            (On::RdyMany, What::Ready { count }) => count > 1,
            (On::QueuedMemory, What::Queued { disk }) => !disk,
            (On::QueuedDisk, What::Queued { disk }) => disk,
            (On::SentAgain, What::Sent { again }) => again,
            (On::ReqLater, What::Requeued { later }) => later,
            (On::DueExact, What::Due { exact }) => exact,
            (On::HeapPushUp, What::HeapPush { up }) => up,
            (On::HeapSwapUp, What::HeapSwap { up }) => up,
            (On::HeapSwapDown, What::HeapSwap { up }) => !up,
            (On::HeapTakeRoot, What::HeapTake { at, last }) => at == 0 && !last,
            _ => false,
        }
    }
}

/// How many steps of lab `lab` so far are `on`.
pub fn count(m: &Model, on: On, lab: usize) -> usize {
    m.panes.get(lab).map_or(0, |p| {
        p.lab.log.iter().filter(|s| on.matches(s.what)).count()
    })
}

/// Where a chapter (or a question's answer) pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Where the chapter starts (no stepping).
    Here,
    /// After the `nth` step (from 1, counted from the start of the run) that is `on`, in lab
    /// `lab`.
    Key { on: On, nth: usize, lab: usize },
    /// Just before the `nth` step that is `on` (the run goes there, then one step back): the
    /// moment before something happens, whose step would tell the answer.
    Before { on: On, nth: usize, lab: usize },
    /// When the clock reaches this instant.
    Time(Time),
    /// When the run has played out.
    End,
}

/// Something a chapter does when it opens (a change a learner could make by hand).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// The first consumer crashes.
    CrashFirstConsumer,
}

/// A prediction to make before stepping on.
pub struct Question {
    /// How many options (`.a1`…).
    pub options: usize,
    /// The right one (from 1).
    pub answer: usize,
    /// Where the simulation shows the answer.
    pub reveal: Stop,
    /// What holds in the run at `reveal` when the right answer is right.
    pub holds: fn(&Model) -> bool,
}

/// One chapter.
pub struct Chapter {
    pub stop: Stop,
    pub act: Option<Act>,
    pub question: Option<Question>,
}

/// A scenario's tour.
pub struct Tour {
    pub scenario: &'static str,
    pub chapters: &'static [Chapter],
}

impl Tour {
    /// The catalogue key of chapter `n`'s part (`title`, `text`, `q`, `a1`, `why`…).
    pub fn key(&self, n: usize, part: &str) -> String {
        format!("tour.{}.{}.{part}", self.scenario, n + 1)
    }
}

/// The tour of a scenario.
pub fn tour(scenario: &str) -> Option<&'static Tour> {
    TOURS.iter().find(|t| t.scenario == scenario)
}

const fn key(on: On, nth: usize) -> Stop {
    Stop::Key { on, nth, lab: 0 }
}

fn lab(m: &Model, i: usize) -> &Lab {
    &m.panes[i].lab
}

/// The facts of the replication scenario's picture as lab 0 shows it.
fn raft_facts(m: &Model) -> Option<&nsqlab_web_raft::Facts> {
    lab(m, 0).replication.as_ref()?.facts()
}

/// The nodes a cluster consumer is connected to, as the picture shows.
fn reads_from(m: &Model, reader: usize) -> Vec<bool> {
    lab(m, 0)
        .cluster
        .as_ref()
        .map(|c| c.shown.readers[reader].conns.clone())
        .unwrap_or_default()
}

/// Whether the consumer that works fastest (the shortest time per message) has finished
/// more messages than each of the others, as the picture counts them.
fn fastest_finished_most(m: &Model) -> bool {
    let l = lab(m, 0);
    let done = |id| {
        l.view
            .actors
            .get(&id)
            .filter(|a| a.role == Role::Consumer)
            .map_or(0, |a| a.finished)
    };
    let Some(fast) = l.consumers.iter().min_by_key(|c| c.processing_ms) else {
        return false;
    };
    l.consumers
        .iter()
        .all(|c| c.id == fast.id || done(c.id) < done(fast.id))
}

/// The deferred heap of a channel of lab 0 whose root is the earliest entry (as the heap
/// property wants it), with no hole.
fn root_is_earliest(c: &crate::view::ChannelView) -> bool {
    c.hole.is_none()
        && c.heap
            .first()
            .is_some_and(|r| c.heap.iter().all(|e| e.1 >= r.1))
}

/// Every tour.
pub const TOURS: &[Tour] = &[
    Tour {
        scenario: "dpub-heap",
        chapters: &[
            Chapter {
                stop: key(On::HeapPush, 1),
                act: None,
                question: None,
            },
            Chapter {
                stop: key(On::HeapPushUp, 1),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::HeapSwapUp, 1),
                    // The sooner-due message rose to the root.
                    holds: |m| lab(m, 0).view.channels.values().any(root_is_earliest),
                }),
            },
            Chapter {
                stop: Stop::Time(ms(1200)),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::HeapTakeRoot, 1),
                    // The root was taken (its slot is the hole; the view keeps the taken
                    // entry there), and it was the earliest of them all.
                    holds: |m| {
                        lab(m, 0)
                            .view
                            .channels
                            .values()
                            .any(|c| c.hole == Some(0) && c.heap.iter().all(|e| e.1 >= c.heap[0].1))
                    },
                }),
            },
            Chapter {
                stop: Stop::Here,
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 1,
                    reveal: key(On::HeapMove, 1),
                    // The last entry (at index 6) is in the root now, later than a child of it:
                    // out of place until it sifts down.
                    holds: |m| {
                        lab(m, 0).view.channels.values().any(|c| {
                            c.hole.is_none()
                                && c.heap.len() == 6
                                && c.heap[1..].iter().any(|e| e.1 < c.heap[0].1)
                        })
                    },
                }),
            },
            Chapter {
                stop: key(On::HeapSwapDown, 1),
                act: None,
                question: None,
            },
            Chapter {
                stop: key(On::Sent, 2),
                act: Some(Act::CrashFirstConsumer),
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::SentAgain, 1),
                    // It timed out, came back, and was sent again: attempt 2.
                    holds: |m| {
                        lab(m, 0).view.channels.values().any(|c| {
                            c.timed_out >= 1 && c.in_flight.iter().any(|f| f.attempts == 2)
                        })
                    },
                }),
            },
        ],
    },
    Tour {
        scenario: "fan-out",
        chapters: &[
            Chapter {
                stop: key(On::ChannelCreated, 2),
                act: None,
                question: None,
            },
            Chapter {
                stop: key(On::Published, 1),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 1,
                    reveal: key(On::QueuedMemory, 2),
                    // One message is in both channels: each has its own copy.
                    holds: |m| {
                        let v = &lab(m, 0).view;
                        v.labels.keys().any(|&id| {
                            v.channels
                                .values()
                                .filter(|c| c.spot_of(id).is_some())
                                .count()
                                == 2
                        })
                    },
                }),
            },
            Chapter {
                stop: key(On::Fin, 2),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "load-balance",
        chapters: &[
            Chapter {
                stop: key(On::RdyMany, 2),
                act: None,
                question: None,
            },
            Chapter {
                stop: key(On::Sent, 6),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::Here,
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 3,
                    reveal: Stop::End,
                    holds: fastest_finished_most,
                }),
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "crash-timeout",
        chapters: &[
            Chapter {
                stop: key(On::Sent, 1),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::Time(ms(1000)),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 1,
                    reveal: key(On::QueuedMemory, 2),
                    // The message that timed out is back in the memory queue.
                    holds: |m| {
                        lab(m, 0)
                            .view
                            .channels
                            .values()
                            .any(|c| c.timed_out >= 1 && c.in_memory() == 1)
                    },
                }),
            },
            Chapter {
                stop: key(On::SentAgain, 1),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "req-backoff",
        chapters: &[
            Chapter {
                stop: Stop::Before {
                    on: On::ReqLater,
                    nth: 1,
                    lab: 0,
                },
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::HeapPush, 1),
                    holds: |m| lab(m, 0).view.channels.values().any(|c| c.deferred() >= 1),
                }),
            },
            Chapter {
                stop: key(On::SentAgain, 2),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "overflow-disk",
        chapters: &[
            Chapter {
                stop: key(On::QueuedMemory, 4),
                act: None,
                question: None,
            },
            Chapter {
                stop: key(On::Published, 5),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 3,
                    reveal: key(On::QueuedDisk, 1),
                    holds: |m| lab(m, 0).view.channels.values().any(|c| c.on_disk() == 1),
                }),
            },
            Chapter {
                stop: key(On::Subscribed, 1),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 1,
                    reveal: Stop::End,
                    // All ten delivered, in the order they were published (a topic's message
                    // IDs rise in publish order), memory and disk alike.
                    holds: |m| {
                        let sent: Vec<_> = lab(m, 0)
                            .log
                            .iter()
                            .filter(|s| s.what == What::Sent { again: false })
                            .filter_map(|s| s.claims.iter().find_map(|c| c.id))
                            .collect();
                        sent.len() == 10 && sent.windows(2).all(|w| w[0] < w[1])
                    },
                }),
            },
        ],
    },
    Tour {
        scenario: "big-heap",
        chapters: &[
            Chapter {
                stop: Stop::Time(ms(1200)),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 3,
                    // The first pop, to its delivery: its sift-down is one swap a level.
                    reveal: key(On::Sent, 1),
                    holds: |m| {
                        let l = lab(m, 0);
                        let swaps = count(m, On::HeapSwapDown, 0);
                        (1..=13).contains(&swaps)
                            && l.view
                                .channels
                                .values()
                                .any(|c| crate::layout::heap_depth(c.deferred()) == 14)
                    },
                }),
            },
            Chapter {
                stop: key(On::DueExact, 1),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "crash-restart",
        chapters: &[
            Chapter {
                stop: Stop::Time(ms(1250)),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::Here,
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::HeapPush, 6),
                    holds: |m| {
                        let l = lab(m, 0);
                        let due: Vec<Time> = l
                            .view
                            .channels
                            .values()
                            .flat_map(|c| c.heap.iter().map(|e| e.1))
                            .collect();
                        l.view.crash.is_some()
                            && due.len() == 3
                            && [2700, 3300, 3900].iter().all(|d| due.contains(&ms(*d)))
                    },
                }),
            },
            Chapter {
                // The first delivery after the restart: one of those that were in flight.
                stop: key(On::Sent, 5),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "cluster",
        chapters: &[
            Chapter {
                stop: key(On::ClusterConnect, 1),
                act: None,
                question: None,
            },
            Chapter {
                // order 2 is published to nsqd-3: all three nodes have the topic now.
                stop: key(On::ClusterPublished, 3),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 3,
                    reveal: key(On::ClusterConnect, 3),
                    holds: |m| reads_from(m, 0) == [true, true, true],
                }),
            },
            Chapter {
                stop: Stop::Here,
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 1,
                    reveal: key(On::ClusterDropped, 1),
                    holds: |m| {
                        let Some(c) = &lab(m, 0).cluster else {
                            return false;
                        };
                        !c.shown.nodes[2].up && reads_from(m, 0) == [true, true, false]
                    },
                }),
            },
            Chapter {
                stop: Stop::Here,
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::ClusterConnect, 4),
                    holds: |m| {
                        reads_from(m, 1) == [true, false, false]
                            && reads_from(m, 0) == [true, true, false]
                    },
                }),
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "replication",
        chapters: &[
            Chapter {
                stop: key(On::Raft(RaftWhat::Elected), 1),
                act: None,
                question: None,
            },
            Chapter {
                // The leader has proposed PUB #1 (the first proposal is the channel's).
                stop: key(On::Raft(RaftWhat::Propose), 2),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::Raft(RaftWhat::Ok), 1),
                    holds: |m| {
                        // OK'd, and the third node's answer is still on the wire.
                        raft_facts(m).is_some_and(|f| f.acked == ["#1"] && f.answers_on_wire > 0)
                    },
                }),
            },
            Chapter {
                stop: key(On::Raft(RaftWhat::Killed), 1),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: key(On::Raft(RaftWhat::Deliver { again: true }), 1),
                    holds: |m| {
                        raft_facts(m).is_some_and(|f| {
                            f.working == ["#2"] && f.down == 1 && f.leader.is_some()
                        })
                    },
                }),
            },
            Chapter {
                // The moment before the killed node starts again.
                stop: Stop::Before {
                    on: On::Raft(RaftWhat::Started),
                    nth: 1,
                    lab: 0,
                },
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: Stop::End,
                    holds: |m| raft_facts(m).is_some_and(|f| f.caught_up && f.down == 0),
                }),
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
    Tour {
        scenario: "scan-vs-exact",
        chapters: &[
            Chapter {
                stop: Stop::Time(ms(150)),
                act: None,
                question: None,
            },
            Chapter {
                stop: Stop::Time(ms(200)),
                act: None,
                question: Some(Question {
                    options: 3,
                    answer: 2,
                    reveal: Stop::Key {
                        on: On::Sent,
                        nth: 1,
                        lab: 1,
                    },
                    holds: |m| {
                        let late =
                            |i: usize| lab(m, i).view.lateness.first().map(|l| l.found - l.due);
                        late(0) == Some(0) && late(1).is_some_and(|x| x > 0)
                    },
                }),
            },
            Chapter {
                stop: Stop::End,
                act: None,
                question: None,
            },
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::has;

    /// Issue 50 item 6: options that do not give the answer away: in every question they are
    /// of like length (the longest at most twice the shortest, in English and in Chinese), the
    /// right one is not where it always is (each place holds it at least three times), and it
    /// is the longest in at most a third of the questions.
    #[test]
    fn options_do_not_give_the_answer_away() {
        let (mut at, mut longest, mut questions) = ([0usize; 4], 0, 0);
        for t in TOURS {
            for (i, c) in t.chapters.iter().enumerate() {
                let Some(q) = &c.question else { continue };
                questions += 1;
                at[q.answer] += 1;
                for lang in [crate::i18n::Lang::En, crate::i18n::Lang::Zh] {
                    let opts: Vec<usize> = (1..=q.options)
                        .map(|n| {
                            let k = format!("tour.{}.{}.a{n}", t.scenario, i + 1);
                            crate::i18n::t(lang, &k).chars().count()
                        })
                        .collect();
                    let (min, max) = (*opts.iter().min().unwrap(), *opts.iter().max().unwrap());
                    assert!(
                        max <= 2 * min,
                        "{} chapter {}: options {opts:?} ({lang:?})",
                        t.scenario,
                        i + 1
                    );
                    if lang == crate::i18n::Lang::En
                        && opts[q.answer - 1] == max
                        && opts.iter().filter(|&&l| l == max).count() == 1
                    {
                        longest += 1;
                    }
                }
            }
        }
        assert!(questions >= 12, "{questions}");
        assert!(
            at[1..].iter().all(|&n| n >= 3),
            "the right option's places: {at:?}"
        );
        assert!(
            3 * longest <= questions,
            "the right option is the longest in {longest} of {questions}"
        );
    }

    /// Every tour has 3 to 8 chapters, every word in the catalogue, and every question's right
    /// answer is what the run shows: played chapter by chapter, each stop is reached and each
    /// answer holds.
    #[test]
    fn every_tour_plays_and_its_answers_hold() {
        for t in TOURS {
            assert!((3..=8).contains(&t.chapters.len()), "{}", t.scenario);
            assert!(
                crate::scenarios::find(t.scenario).is_some(),
                "{}",
                t.scenario
            );
            let mut m = Model::new(t.scenario, 1, 1.0);
            m.update(crate::model::Action::StartTour);
            for (n, c) in t.chapters.iter().enumerate() {
                for part in ["title", "text"] {
                    assert!(has(&t.key(n, part)), "{}", t.key(n, part));
                }
                let tour = m.tour.as_ref().expect("the tour is on");
                assert_eq!(tour.chapter, n);
                assert!(
                    tour.reached,
                    "{} chapter {}: its stop was not reached",
                    t.scenario,
                    n + 1
                );
                // A chapter opens at its own moment, not past it.
                if let Stop::Key { on, nth, lab } | Stop::Before { on, nth, lab } = c.stop {
                    let want = if matches!(c.stop, Stop::Before { .. }) {
                        nth - 1
                    } else {
                        nth
                    };
                    assert_eq!(
                        count(&m, on, lab),
                        want,
                        "{} chapter {}: opened past its moment",
                        t.scenario,
                        n + 1
                    );
                }
                if let Some(q) = &c.question {
                    // The answer is not on the page before the question is answered: its stop
                    // is ahead, and the question does not hold yet.
                    let ahead = match q.reveal {
                        Stop::Here => false,
                        Stop::Key { on, nth, lab } | Stop::Before { on, nth, lab } => {
                            count(&m, on, lab) < nth
                        }
                        Stop::Time(t) => m.now() < t,
                        Stop::End => !m.finished(),
                    };
                    assert!(
                        ahead,
                        "{} chapter {}: the answer is shown before the question",
                        t.scenario,
                        n + 1
                    );
                    assert!(
                        !(q.holds)(&m),
                        "{} chapter {}: what the answer says already holds before it",
                        t.scenario,
                        n + 1
                    );
                    for part in (1..=q.options)
                        .map(|i| format!("a{i}"))
                        .chain(["q".into(), "why".into()])
                    {
                        assert!(has(&t.key(n, &part)), "{}", t.key(n, &part));
                    }
                    m.update(crate::model::Action::Predict(q.answer));
                    let tour = m.tour.as_ref().unwrap();
                    assert!(
                        tour.reached,
                        "{} chapter {}: the answer's stop was not reached",
                        t.scenario,
                        n + 1
                    );
                    assert!(
                        (q.holds)(&m),
                        "{} chapter {}: the right answer does not hold in the run",
                        t.scenario,
                        n + 1
                    );
                }
                m.update(crate::model::Action::NextChapter);
            }
            assert!(
                m.tour.is_none(),
                "{}: the tour ends after its last chapter",
                t.scenario
            );
        }
    }
}
