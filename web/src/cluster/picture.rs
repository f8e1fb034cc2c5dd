//! What the cluster's picture shows, step by step, and where it is drawn.
//!
//! The cluster does everything of an instant at once; the learner sees it one step at a time.
//! Each step carries a [`Delta`], applied to [`Shown`] when the step is shown, so the picture
//! is always the state the words describe — not the end of the instant. Between instants
//! `Shown` equals the cluster's real state (a test checks it at every instant).
//!
//! [`layout`] places the boxes and wires in a fixed 960×375 drawing: the two nsqlookupd on
//! top, the three nsqd in the middle, the producer and consumers at the bottom.

use std::collections::BTreeMap;

/// What one step changed (and what the picture highlights while it is shown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delta {
    /// Node `i` connected to the lookupds (IDENTIFY).
    Identify(usize),
    /// Node `i` registered the topic (`None`) or a channel.
    Register(usize, Option<String>),
    Unregister(usize, Option<String>),
    /// The producer published to node `i`.
    Published(usize),
    /// Node `node` sent a message of `channel` to reader `reader`.
    Sent {
        node: usize,
        reader: usize,
        channel: String,
    },
    /// Reader `reader` finished a message of `channel` on node `node`.
    Fin {
        node: usize,
        reader: usize,
        channel: String,
    },
    /// Node `i` went down.
    Down(usize),
    /// Node `i` was started again (empty) and connected to the lookupds that are up.
    Up(usize),
    /// Lookupd `f` was switched off (what it knew is gone).
    FinderOff(usize),
    /// Lookupd `f` was switched on; the nodes that are up registered with it again.
    FinderOn(usize),
    /// Nothing changed (a publish with no node to take it).
    Note,
    /// Reader `reader` lost its connection to node `node`.
    Dropped {
        reader: usize,
        node: usize,
    },
    /// The topic was tombstoned on node `i`.
    Tombstone(usize),
    /// Reader `reader` asked finder `finder`.
    Lookup {
        reader: usize,
        finder: usize,
    },
    /// Reader `reader` connected to node `node`.
    Connect {
        reader: usize,
        node: usize,
    },
}

/// One nsqd as shown.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodeShown {
    pub up: bool,
    /// Connected to the lookupds.
    pub identified: bool,
    /// The topic exists here (and is registered).
    pub topic: bool,
    /// Tombstoned in the lookupds.
    pub tombstoned: bool,
    /// Messages in the topic while it has no channel.
    pub waiting: u64,
    /// Each channel: (depth, in flight).
    pub channels: BTreeMap<String, (u64, u64)>,
}

/// One nsqlookupd as shown.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FinderShown {
    pub up: bool,
    /// The nodes it has tombstoned for the topic.
    pub tombs: Vec<usize>,
}

/// One consumer as shown.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReaderShown {
    pub joined: bool,
    /// Connected to each node.
    pub conns: Vec<bool>,
    pub finished: u64,
}

/// The cluster as the learner sees it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Shown {
    pub finders: Vec<FinderShown>,
    pub nodes: Vec<NodeShown>,
    pub readers: Vec<ReaderShown>,
    pub published: u64,
    /// What the step being shown did.
    pub focus: Option<Delta>,
}

impl Shown {
    /// Apply a step's change.
    pub fn apply(&mut self, d: &Delta) {
        match d {
            Delta::Identify(i) => {
                self.nodes[*i].identified = true;
                self.nodes[*i].up = true;
            }
            Delta::Register(i, None) => self.nodes[*i].topic = true,
            Delta::Register(i, Some(c)) => {
                let n = &mut self.nodes[*i];
                // A topic's first channel takes what waited in the topic.
                let waiting = std::mem::take(&mut n.waiting);
                n.channels.insert(c.clone(), (waiting, 0));
            }
            Delta::Unregister(i, None) => {
                let n = &mut self.nodes[*i];
                n.topic = false;
                n.channels.clear();
                n.waiting = 0;
            }
            Delta::Unregister(i, Some(c)) => {
                self.nodes[*i].channels.remove(c);
            }
            Delta::Published(i) => {
                let n = &mut self.nodes[*i];
                if n.channels.is_empty() {
                    n.waiting += 1;
                }
                for v in n.channels.values_mut() {
                    v.0 += 1;
                }
                self.published += 1;
            }
            Delta::Sent { node, channel, .. } => {
                if let Some(v) = self.nodes[*node].channels.get_mut(channel) {
                    v.0 = v.0.saturating_sub(1);
                    v.1 += 1;
                }
            }
            Delta::Fin {
                node,
                reader,
                channel,
            } => {
                if let Some(v) = self.nodes[*node].channels.get_mut(channel) {
                    v.1 = v.1.saturating_sub(1);
                }
                self.readers[*reader].finished += 1;
            }
            Delta::Down(i) => {
                self.nodes[*i] = NodeShown {
                    identified: true,
                    ..NodeShown::default()
                };
                // The lookupds forget it, its tombstones with it.
                for f in &mut self.finders {
                    f.tombs.retain(|x| x != i);
                }
            }
            Delta::Up(i) => {
                self.nodes[*i] = NodeShown {
                    up: true,
                    identified: true,
                    ..NodeShown::default()
                };
            }
            Delta::FinderOff(f) => self.finders[*f] = FinderShown::default(),
            Delta::FinderOn(f) => self.finders[*f].up = true,
            Delta::Note => {}
            Delta::Dropped { reader, node } => self.readers[*reader].conns[*node] = false,
            Delta::Tombstone(i) => {
                self.nodes[*i].tombstoned = true;
                // Only a lookupd that lists the node for the topic keeps a tombstone for it.
                let listed = self.nodes[*i].up && self.nodes[*i].topic;
                for f in self.finders.iter_mut().filter(|f| f.up && listed) {
                    if !f.tombs.contains(i) {
                        f.tombs.push(*i);
                        f.tombs.sort_unstable();
                    }
                }
            }
            Delta::Lookup { reader, .. } => self.readers[*reader].joined = true,
            Delta::Connect { reader, node } => self.readers[*reader].conns[*node] = true,
        }
        self.focus = Some(d.clone());
    }

    /// What lookupd `f` lists for the topic: each node, and whether it tombstoned it there
    /// (nothing while it is off).
    pub fn listing(&self, f: usize) -> Vec<(usize, bool)> {
        let Some(finder) = self.finders.get(f).filter(|x| x.up) else {
            return Vec::new();
        };
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.up && n.identified && n.topic)
            .map(|(i, _)| (i, finder.tombs.contains(&i)))
            .collect()
    }
}

/// What a box stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    Finder(usize),
    Node(usize),
    Producer,
    Reader(usize),
}

/// A box in the drawing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Place {
    pub who: Who,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// What a wire carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// nsqd → nsqlookupd (IDENTIFY, REGISTER, PING).
    Registry,
    /// producer → nsqd (PUB).
    Publish,
    /// consumer → nsqd (SUB; messages come back on it).
    Subscribe,
    /// consumer → nsqlookupd (GET /lookup), drawn only while a step is about it.
    Lookup,
}

/// A line between two boxes.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub kind: Wire,
    pub from: Who,
    pub to: Who,
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    /// The step being shown is about this wire.
    pub lit: bool,
}

/// The drawing's size.
pub const WIDTH: f64 = 960.0;
pub const HEIGHT: f64 = 375.0;

/// Where everything goes, and which wires are drawn (and lit) for what is shown.
pub fn layout(s: &Shown, finders: usize, readers: usize) -> (Vec<Place>, Vec<Line>) {
    let row = |n: usize, w: f64, y: f64, h: f64, who: &dyn Fn(usize) -> Who| -> Vec<Place> {
        let gap = (WIDTH - n as f64 * w) / (n as f64 + 1.0);
        (0..n)
            .map(|i| Place {
                who: who(i),
                x: gap + i as f64 * (w + gap),
                y,
                w,
                h,
            })
            .collect()
    };
    let mut places = row(finders, 280.0, 8.0, 86.0, &Who::Finder);
    places.extend(row(s.nodes.len(), 260.0, 140.0, 96.0, &Who::Node));
    let w = (WIDTH / (readers + 1) as f64 - 16.0).min(220.0);
    places.extend(row(readers + 1, w, 295.0, 72.0, &|i| {
        if i == 0 {
            Who::Producer
        } else {
            Who::Reader(i - 1)
        }
    }));
    let at = |w: Who| places.iter().find(|p| p.who == w).copied();
    let focus = s.focus.as_ref();
    let mut lines = Vec::new();
    let mut line = |kind, from: Who, to: Who, lit: bool| {
        let (Some(a), Some(b)) = (at(from), at(to)) else {
            return;
        };
        // From the top of the lower box to the bottom of the upper one.
        let (x1, y1) = (a.x + a.w / 2.0, a.y);
        let (x2, y2) = (b.x + b.w / 2.0, b.y + b.h);
        lines.push(Line {
            kind,
            from,
            to,
            x1,
            y1,
            x2,
            y2,
            lit,
        });
    };
    for (i, n) in s.nodes.iter().enumerate() {
        if !(n.up && n.identified) {
            continue;
        }
        let lit = matches!(focus, Some(Delta::Identify(j) | Delta::Up(j) | Delta::Register(j, _) | Delta::Unregister(j, _)) if *j == i);
        for f in 0..finders {
            if s.finders.get(f).is_none_or(|x| x.up) {
                let lit = lit || matches!(focus, Some(Delta::FinderOn(g)) if *g == f);
                line(Wire::Registry, Who::Node(i), Who::Finder(f), lit);
            }
        }
    }
    for (i, n) in s.nodes.iter().enumerate() {
        if n.up && n.topic {
            let lit = matches!(focus, Some(Delta::Published(j)) if *j == i);
            line(Wire::Publish, Who::Producer, Who::Node(i), lit);
        }
    }
    for (r, rd) in s.readers.iter().enumerate() {
        for (i, &c) in rd.conns.iter().enumerate() {
            if c {
                let lit = matches!(focus,
                    Some(Delta::Connect { reader, node } | Delta::Sent { reader, node, .. } | Delta::Fin { reader, node, .. })
                    if *reader == r && *node == i);
                line(Wire::Subscribe, Who::Reader(r), Who::Node(i), lit);
            }
        }
    }
    if let Some(Delta::Lookup { reader, finder }) = focus {
        line(
            Wire::Lookup,
            Who::Reader(*reader),
            Who::Finder(*finder),
            true,
        );
    }
    (places, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown() -> Shown {
        Shown {
            nodes: vec![NodeShown::default(); 3],
            readers: vec![
                ReaderShown {
                    conns: vec![false; 3],
                    ..ReaderShown::default()
                };
                2
            ],
            ..Shown::default()
        }
    }

    #[test]
    fn boxes_fit_and_do_not_overlap() {
        let (places, _) = layout(&shown(), 2, 2);
        assert_eq!(places.len(), 2 + 3 + 3);
        for (i, a) in places.iter().enumerate() {
            assert!(a.x >= 0.0 && a.y >= 0.0 && a.x + a.w <= WIDTH && a.y + a.h <= HEIGHT);
            for b in &places[i + 1..] {
                let apart =
                    a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn wires_follow_what_is_shown() {
        let mut s = shown();
        s.apply(&Delta::Identify(0));
        s.apply(&Delta::Register(0, None));
        let (_, lines) = layout(&s, 2, 2);
        let registry = lines.iter().filter(|l| l.kind == Wire::Registry).count();
        assert_eq!(registry, 2, "node 0 to both lookupds");
        assert!(lines
            .iter()
            .filter(|l| l.kind == Wire::Registry)
            .all(|l| l.lit));
        s.apply(&Delta::Published(0));
        assert_eq!(
            s.nodes[0].waiting, 1,
            "no channel yet: it waits in the topic"
        );
        s.apply(&Delta::Connect { reader: 0, node: 0 });
        s.apply(&Delta::Register(0, Some("c".into())));
        assert_eq!(
            s.nodes[0].channels["c"],
            (1, 0),
            "the first channel takes it"
        );
        s.apply(&Delta::Sent {
            node: 0,
            reader: 0,
            channel: "c".into(),
        });
        let (_, lines) = layout(&s, 2, 2);
        let sub: Vec<_> = lines.iter().filter(|l| l.kind == Wire::Subscribe).collect();
        assert_eq!(sub.len(), 1);
        assert!(sub[0].lit && sub[0].from == Who::Reader(0) && sub[0].to == Who::Node(0));
        assert!(lines
            .iter()
            .filter(|l| l.kind != Wire::Subscribe)
            .all(|l| !l.lit));
        s.apply(&Delta::Down(0));
        let (_, lines) = layout(&s, 2, 2);
        assert!(lines
            .iter()
            .all(|l| l.to != Who::Node(0) && l.from != Who::Node(0) || l.kind == Wire::Subscribe));
        s.apply(&Delta::Dropped { reader: 0, node: 0 });
        let (_, lines) = layout(&s, 2, 2);
        assert!(lines.is_empty(), "{lines:?}");
        s.apply(&Delta::Lookup {
            reader: 1,
            finder: 1,
        });
        let (_, lines) = layout(&s, 2, 2);
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].kind, lines[0].to), (Wire::Lookup, Who::Finder(1)));
    }
}
