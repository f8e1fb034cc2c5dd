//! The algorithm beside each step: short pseudo-code, written for nsqlab, of what the core is
//! doing, with the line of the current step highlighted, and where nsqd does it differently, a
//! note on how and what it costs.
//!
//! A step is placed by its text's key ([`locate`]); a message joining the queue belongs to what
//! put it there (a publish, a pop, a timeout, a REQ), read from the steps before it.

use crate::lab::Step;

/// A block of pseudo-code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    Publish,
    Push,
    Pop,
    Deliver,
    Answer,
    Timeout,
    Scan,
}

impl Block {
    /// Its catalogue prefix: `algo.<name>.title`, `.nsqd`, and lines `.1`, `.2`, …
    pub fn name(self) -> &'static str {
        match self {
            Block::Publish => "publish",
            Block::Push => "push",
            Block::Pop => "pop",
            Block::Deliver => "deliver",
            Block::Answer => "answer",
            Block::Timeout => "timeout",
            Block::Scan => "scan",
        }
    }

    /// How many lines it has.
    pub fn lines(self) -> usize {
        match self {
            Block::Publish => 7,
            Block::Push => 5,
            Block::Pop => 8,
            Block::Deliver => 6,
            Block::Answer => 7,
            Block::Timeout => 4,
            Block::Scan => 4,
        }
    }

    /// The catalogue keys of its lines, in order.
    pub fn line_keys(self) -> Vec<&'static str> {
        (1..=self.lines()).map(|n| line_key(self, n)).collect()
    }
}

/// Every block, for the tests.
pub const BLOCKS: &[Block] = &[
    Block::Publish,
    Block::Push,
    Block::Pop,
    Block::Deliver,
    Block::Answer,
    Block::Timeout,
    Block::Scan,
];

fn line_key(b: Block, n: usize) -> &'static str {
    macro_rules! keys {
        ($($b:ident $name:literal $n:literal),* $(,)?) => {
            match (b, n) {
                $((Block::$b, $n) => concat!("algo.", $name, ".", $n),)*
                _ => "algo.none",
            }
        };
    }
    keys!(
        Publish "publish" 1, Publish "publish" 2, Publish "publish" 3, Publish "publish" 4,
        Publish "publish" 5, Publish "publish" 6, Publish "publish" 7,
        Push "push" 1, Push "push" 2, Push "push" 3, Push "push" 4, Push "push" 5,
        Pop "pop" 1, Pop "pop" 2, Pop "pop" 3, Pop "pop" 4, Pop "pop" 5, Pop "pop" 6, Pop "pop" 7,
        Pop "pop" 8,
        Deliver "deliver" 1, Deliver "deliver" 2, Deliver "deliver" 3, Deliver "deliver" 4,
        Deliver "deliver" 5, Deliver "deliver" 6,
        Answer "answer" 1, Answer "answer" 2, Answer "answer" 3, Answer "answer" 4,
        Answer "answer" 5, Answer "answer" 6, Answer "answer" 7,
        Timeout "timeout" 1, Timeout "timeout" 2, Timeout "timeout" 3, Timeout "timeout" 4,
        Scan "scan" 1, Scan "scan" 2, Scan "scan" 3, Scan "scan" 4,
    )
}

/// The block and line (from 1) of a step with this key, when it has one of its own.
fn direct(key: &str) -> Option<(Block, usize)> {
    Some(match key {
        "published"
        | "published.mpub"
        | "published.http"
        | "published.http.mpub"
        | "published.deferred" => (Block::Publish, 2),
        "held" => (Block::Publish, 3),
        "heap.push.root" | "heap.push.up" | "heap.push.stay" => (Block::Push, 2),
        "heap.swap.up" | "heap.swap.up.tie" => (Block::Push, 4),
        "due.exact" | "due.late" => (Block::Pop, 2),
        "heap.take.root" | "heap.take.only" | "heap.take.last" | "heap.take.at" => (Block::Pop, 3),
        "heap.move.leaf" | "heap.move.down" => (Block::Pop, 4),
        "heap.swap.down" | "heap.swap.down.tie" => (Block::Pop, 6),
        "subscribed" | "rdy.zero" | "rdy.one" | "rdy.many" => (Block::Deliver, 3),
        "sent" | "sent.again" | "sent.after-crash" => (Block::Deliver, 5),
        "fin" => (Block::Answer, 2),
        "req.now" | "req.later" => (Block::Answer, 5),
        "touch" => (Block::Answer, 7),
        "timeout" => (Block::Timeout, 2),
        "scan.none" | "scan.some" | "scan.some.more" => (Block::Scan, 1),
        "scan.again.none" | "scan.again.some" | "scan.again.more" => (Block::Scan, 4),
        "due.scan" => (Block::Scan, 3),
        _ => return None,
    })
}

/// Where step `i` of a log is in the pseudo-code, if anywhere.
pub fn locate(log: &[Step], i: usize) -> Option<(Block, usize)> {
    let key = log.get(i)?.text.key;
    if let Some(x) = direct(key) {
        return Some(x);
    }
    if key == "deferred" {
        // A message goes to the deferred heap from a DPUB or from a REQ with a delay (the
        // last of those before it says which).
        for s in log[..i].iter().rev().take(64) {
            match direct(s.text.key) {
                Some((Block::Answer, 5)) => return Some((Block::Answer, 5)),
                Some((Block::Publish, _)) => break,
                _ => {}
            }
        }
        return Some((Block::Publish, 4));
    }
    if !key.starts_with("queued.") {
        return None;
    }
    // A message joins the queue: from a publish, a pop, a timeout or a REQ (the last of those
    // before it says which).
    for s in log[..i].iter().rev().take(64) {
        match direct(s.text.key) {
            Some((Block::Pop, _)) | Some((Block::Scan, _)) => return Some((Block::Pop, 7)),
            Some((Block::Timeout, _)) => return Some((Block::Timeout, 4)),
            Some((Block::Answer, 5)) => return Some((Block::Answer, 5)),
            Some((Block::Publish, _)) => break,
            _ => {}
        }
    }
    let disk = key.starts_with("queued.disk");
    Some((Block::Publish, if disk { 6 } else { 5 }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::has;
    use crate::scenarios::SCENARIOS;

    #[test]
    fn every_block_is_in_the_catalogue() {
        for b in BLOCKS {
            for k in b.line_keys() {
                assert!(has(k), "{k}");
            }
            for part in ["title", "nsqd"] {
                let k = format!("algo.{}.{part}", b.name());
                assert!(crate::i18n::CATALOGUE.iter().any(|e| e.key == k), "{k}");
            }
        }
    }

    /// Every heap step, delivery, answer and timeout of every scenario has its line; a message
    /// that comes due joins the queue on the pop's line.
    #[test]
    fn steps_are_placed() {
        for s in SCENARIOS.iter().filter(|s| s.id != "big-heap") {
            for (_, mut lab) in (s.build)(1) {
                lab.run_until(60 * nsqlab_core::time::SECOND);
                for (i, step) in lab.log.iter().enumerate() {
                    let k = step.text.key;
                    let placed = locate(&lab.log, i);
                    if k.starts_with("heap.")
                        || k.starts_with("sent")
                        || k == "fin"
                        || k == "timeout"
                    {
                        assert!(placed.is_some(), "{}: {k} has no line", s.id);
                    }
                    let after_pop = i > 0
                        && ["heap.take", "heap.move", "heap.swap.down"]
                            .iter()
                            .any(|p| lab.log[i - 1].text.key.starts_with(p));
                    if k.starts_with("queued.") && after_pop {
                        assert_eq!(
                            placed.map(|p| p.0),
                            Some(Block::Pop),
                            "{}: {}",
                            s.id,
                            step.en()
                        );
                    }
                }
            }
        }
    }

    /// Issue 50 item 5: a message a REQ with a delay sends to the deferred heap is on the REQ's
    /// line, never on the publish's; one a DPUB defers is on the publish's.
    #[test]
    fn a_deferral_is_placed_on_the_command_that_made_it() {
        let (mut from_req, mut from_dpub) = (0, 0);
        for s in SCENARIOS.iter().filter(|s| s.id != "big-heap") {
            for (_, mut lab) in (s.build)(1) {
                lab.run_until(60 * nsqlab_core::time::SECOND);
                let mut cause = None;
                for (i, step) in lab.log.iter().enumerate() {
                    match step.text.key {
                        "req.later" => cause = Some("req"),
                        "published.deferred" => cause = Some("dpub"),
                        "deferred" => {
                            let placed = locate(&lab.log, i).map(|p| p.0);
                            match cause {
                                Some("req") => {
                                    from_req += 1;
                                    assert_eq!(
                                        placed,
                                        Some(Block::Answer),
                                        "{}: {}",
                                        s.id,
                                        step.en()
                                    );
                                }
                                _ => {
                                    from_dpub += 1;
                                    assert_eq!(
                                        placed,
                                        Some(Block::Publish),
                                        "{}: {}",
                                        s.id,
                                        step.en()
                                    );
                                }
                            }
                        }
                        k if k.starts_with("published") => cause = None,
                        _ => {}
                    }
                }
            }
        }
        assert!(from_req > 0 && from_dpub > 0, "{from_req} {from_dpub}");
    }
}
