//! The flow view: producers → topics → channels (deferred heap, memory queue, disk) →
//! consumers, with each message a token where the core has it. A token keeps its key (message
//! and channel) as it moves, so the page lets it glide from place to place. Pure layout,
//! tested natively.

use crate::i18n::Text;
#[cfg(test)]
use crate::layout::PILL;
use crate::layout::{region_places, time_left, Region, REGION_MAX};
use crate::view::{Role, View};
use nsqlab_core::time::Time;
use nsqlab_core::{ClientId, MessageId};

/// What a box is.
#[derive(Debug, Clone, PartialEq)]
pub enum BoxKind {
    Producer,
    Topic,
    Channel,
    /// A channel's row (its deferred heap, memory queue or disk backlog).
    Row(Region),
    Consumer,
    /// A consumer that crashed: connected, holding what it was sent, answering nothing.
    CrashedConsumer,
}

/// A box, with its words.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowBox {
    pub key: String,
    pub kind: BoxKind,
    pub title: Text,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// A message token.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowToken {
    /// Stable while it moves: the message and its channel.
    pub key: String,
    pub id: MessageId,
    pub label: String,
    pub hue: u16,
    pub region: Region,
    pub x: f64,
    pub y: f64,
    pub dot: bool,
    /// In flight: the share of its time left to be answered.
    pub ring: Option<f64>,
}

/// The whole view.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub width: f64,
    pub height: f64,
    pub boxes: Vec<FlowBox>,
    /// Lines between boxes: (x1, y1, x2, y2).
    pub edges: Vec<(f64, f64, f64, f64)>,
    pub tokens: Vec<FlowToken>,
    /// Tokens not drawn in a crowded region: where to say so, and how many.
    pub more: Vec<(f64, f64, usize)>,
    /// The broker was killed and has not started again (drawn down).
    pub down: bool,
}

/// A consumer as the flow view needs it.
pub struct Consumer<'a> {
    pub id: ClientId,
    pub topic: &'a str,
    pub channel: &'a str,
    /// It crashed (it answers nothing until it recovers).
    pub crashed: bool,
}

/// A message to place, and (in flight) the share of its time left.
type Slot = (MessageId, Option<f64>);

const HEAD: f64 = 22.0;
const ROW_LABEL: f64 = 15.0;
const PAD: f64 = 6.0;
const GAP: f64 = 12.0;

/// Lay the view out `width` pixels wide at `now`.
pub fn layout(view: &View, consumers: &[Consumer<'_>], now: Time, width: f64) -> Flow {
    let width = width.max(320.0);
    let col = |from: f64, to: f64| (width * from, width * (to - from));
    let (px, pw) = col(0.0, 0.13);
    let (tx, tw) = col(0.17, 0.31);
    let (cx, cw) = col(0.35, 0.75);
    let (kx, kw) = col(0.79, 1.0);
    let mut f = Flow {
        width,
        height: 0.0,
        boxes: Vec::new(),
        edges: Vec::new(),
        tokens: Vec::new(),
        more: Vec::new(),
        down: view.down,
    };
    // `ids`: the messages to draw, in order (at least the first REGION_MAX of `total`).
    let place = |f: &mut Flow,
                 ids: &[Slot],
                 total: usize,
                 region: Region,
                 channel: &str,
                 x: f64,
                 y: f64,
                 w: f64|
     -> f64 {
        let (places, h) = region_places(total.min(ids.len()), x, y, w);
        for (p, (id, ring)) in places.iter().zip(ids) {
            f.tokens.push(FlowToken {
                key: format!("{id}@{channel}"),
                id: *id,
                label: view.label(*id),
                hue: view.hue(*id),
                region,
                x: p.x,
                y: p.y,
                dot: p.dot,
                ring: *ring,
            });
        }
        if total > REGION_MAX {
            f.more.push((x + w - 40.0, y + h, total - REGION_MAX));
        }
        h
    };

    // Producers.
    let mut y = GAP;
    let mut producers = Vec::new();
    for (id, a) in view.actors.iter().filter(|(_, a)| a.role == Role::Producer) {
        f.boxes.push(FlowBox {
            key: format!("p:{id}"),
            kind: BoxKind::Producer,
            title: a.name.clone(),
            x: px,
            y,
            w: pw,
            h: 34.0,
        });
        producers.push((px + pw, y + 17.0));
        y += 34.0 + GAP;
    }
    let mut bottom = y;

    // Topics, with what they hold.
    let mut topics = std::collections::BTreeMap::new();
    let mut y = GAP;
    for (t, held) in &view.topics {
        let ids: Vec<_> = held.iter().map(|c| (c.id, None)).collect();
        let h0 = y;
        let h = HEAD
            + if ids.is_empty() {
                0.0
            } else {
                place(
                    &mut f,
                    &ids,
                    ids.len(),
                    Region::Held,
                    t,
                    tx + PAD,
                    y + HEAD,
                    tw - 2.0 * PAD,
                ) + PAD
            };
        f.boxes.push(FlowBox {
            key: format!("t:{t}"),
            kind: BoxKind::Topic,
            title: Text::plain(t),
            x: tx,
            y: h0,
            w: tw,
            h: h.max(34.0),
        });
        topics.insert(t.clone(), (tx, h0 + 17.0));
        for &(x, py) in &producers {
            f.edges.push((x, py, tx, h0 + 17.0));
        }
        y += h.max(34.0) + GAP;
    }
    bottom = bottom.max(y);

    // Channels, each with its rows.
    let mut channels = std::collections::BTreeMap::new();
    let mut y = GAP;
    for ((t, c), ch) in &view.channels {
        let key = format!("{t}/{c}");
        let top = y;
        let mut yy = y + HEAD;
        // Each row: its region, its name, the messages to draw (at least the first
        // REGION_MAX) and how many it holds.
        let mut rows: Vec<(Region, &'static str, Vec<Slot>, usize)> = Vec::new();
        if !ch.stored.is_empty() {
            rows.push((
                Region::Store,
                "ui.store",
                ch.stored.iter().map(|s| (s.0, None)).collect(),
                ch.stored.len(),
            ));
        }
        if ch.ever_deferred {
            // Due first; ties in the heap's array order. Only the first REGION_MAX are drawn,
            // so only they are sorted (10 000 entries sorted every frame cost a 100x play its
            // frame rate); the rest are only counted.
            let mut heap: Vec<(Time, usize, MessageId)> = ch
                .heap
                .iter()
                .enumerate()
                .filter(|(i, _)| ch.hole != Some(*i))
                .map(|(i, e)| (e.1, i, e.0))
                .collect();
            if heap.len() > REGION_MAX {
                heap.select_nth_unstable(REGION_MAX);
                heap.truncate(REGION_MAX + 1);
            }
            let drawn = heap.len().min(REGION_MAX);
            heap[..drawn].sort_unstable();
            rows.push((
                Region::Deferred,
                "ui.flow.deferred",
                heap[..drawn].iter().map(|e| (e.2, None)).collect(),
                ch.deferred(),
            ));
        }
        rows.push((
            Region::Memory,
            "ui.memory",
            ch.queue
                .iter()
                .filter(|m| !m.on_disk)
                .take(REGION_MAX)
                .map(|m| (m.id, None))
                .collect(),
            ch.in_memory(),
        ));
        if ch.on_disk() > 0 {
            rows.push((
                Region::Disk,
                "ui.disk",
                ch.queue
                    .iter()
                    .filter(|m| m.on_disk)
                    .take(REGION_MAX)
                    .map(|m| (m.id, None))
                    .collect(),
                ch.on_disk(),
            ));
        }
        // The channel's box goes before its rows (it is drawn under them: its background
        // must not hide their names); its height is known once they are laid out.
        let channel_box = f.boxes.len();
        f.boxes.push(FlowBox {
            key: format!("c:{key}"),
            kind: BoxKind::Channel,
            title: Text::plain(&key),
            x: cx,
            y: top,
            w: cw,
            h: 0.0,
        });
        for (region, word, ids, total) in rows {
            let row_top = yy;
            let h = ROW_LABEL
                + place(
                    &mut f,
                    &ids,
                    total,
                    region,
                    &key,
                    cx + PAD,
                    yy + ROW_LABEL,
                    cw - 2.0 * PAD,
                );
            f.boxes.push(FlowBox {
                key: format!("r:{key}:{region:?}"),
                kind: BoxKind::Row(region),
                title: Text::new("ui.flow.row").word("name", word).arg("n", total),
                x: cx + PAD / 2.0,
                y: row_top,
                w: cw - PAD,
                h: h + 2.0,
            });
            yy += h + 4.0;
        }
        let h = yy - top + PAD;
        f.boxes[channel_box].h = h;
        if let Some(&(x, ty)) = topics.get(t) {
            f.edges.push((x + tw, ty, cx, top + 11.0));
        }
        channels.insert(key, (cx + cw, top + 11.0));
        y += h + GAP;
    }
    bottom = bottom.max(y);

    // Consumers, with what they have in flight.
    let mut y = GAP;
    for k in consumers {
        let key = format!("{}/{}", k.topic, k.channel);
        let mut flying: Vec<(MessageId, Time, f64)> = view
            .channels
            .get(&(k.topic.to_string(), k.channel.to_string()))
            .map(|c| {
                c.in_flight
                    .iter()
                    .filter(|m| m.client == k.id)
                    .map(|m| (m.id, m.deadline, time_left(m.sent, m.deadline, now)))
                    .collect()
            })
            .unwrap_or_default();
        flying.sort_by_key(|m| m.1);
        let ids: Vec<_> = flying.iter().map(|m| (m.0, Some(m.2))).collect();
        let h =
            HEAD + place(
                &mut f,
                &ids,
                ids.len(),
                Region::InFlight,
                &key,
                kx + PAD,
                y + HEAD,
                kw - 2.0 * PAD,
            ) + PAD;
        f.boxes.push(FlowBox {
            key: format!("k:{}", k.id),
            kind: if k.crashed {
                BoxKind::CrashedConsumer
            } else {
                BoxKind::Consumer
            },
            title: Text::new(if k.crashed {
                "ui.flow.consumer.crashed"
            } else {
                "ui.flow.consumer"
            })
            .nest("who", view.who(k.id))
            .arg("n", ids.len()),
            x: kx,
            y,
            w: kw,
            h,
        });
        if let Some(&(x, cy)) = channels.get(&key) {
            f.edges.push((x, cy, kx, y + 11.0));
        }
        y += h + GAP;
    }
    f.height = bottom.max(y) + GAP;
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::find;
    use nsqlab_core::time::SECOND;

    fn consumers(lab: &crate::lab::Lab) -> Vec<Consumer<'_>> {
        lab.consumers
            .iter()
            .map(|c| Consumer {
                id: c.id,
                topic: &c.topic,
                channel: &c.channel,
                crashed: c.crashed,
            })
            .collect()
    }

    /// Every message the core holds has exactly one token per channel, in the region the core
    /// has it in, inside its box; a fan-out copy is a token of its own.
    #[test]
    fn tokens_are_where_the_core_has_them() {
        for id in [
            "dpub-heap",
            "fan-out",
            "overflow-disk",
            "load-balance",
            "crash-timeout",
        ] {
            let mut lab = (find(id).unwrap().build)(1).remove(0).1;
            for t in [SECOND / 2, SECOND, 2 * SECOND, 4 * SECOND] {
                lab.run_until(t);
                let f = layout(&lab.view, &consumers(&lab), lab.now(), 1000.0);
                let keys: std::collections::HashSet<_> = f.tokens.iter().map(|x| &x.key).collect();
                assert_eq!(keys.len(), f.tokens.len(), "{id}: a token twice");
                for ((tp, c), ch) in &lab.view.channels {
                    let count = |r: Region| {
                        f.tokens
                            .iter()
                            .filter(|x| x.region == r && x.key.ends_with(&format!("@{tp}/{c}")))
                            .count()
                    };
                    assert_eq!(count(Region::Memory), ch.in_memory(), "{id} at {t}: memory");
                    assert_eq!(count(Region::Disk), ch.on_disk(), "{id} at {t}: disk");
                    assert_eq!(
                        count(Region::Deferred),
                        ch.deferred(),
                        "{id} at {t}: deferred"
                    );
                    assert_eq!(
                        count(Region::InFlight),
                        ch.in_flight.len(),
                        "{id} at {t}: in flight"
                    );
                }
                for x in &f.tokens {
                    assert!(
                        x.x >= 0.0 && x.x + PILL.0 <= f.width + 1.0 && x.y + PILL.1 <= f.height,
                        "{id}: {x:?}"
                    );
                    if x.region == Region::InFlight {
                        assert!(x.ring.is_some_and(|r| (0.0..=1.0).contains(&r)));
                    }
                }
            }
        }
    }

    /// Issue 50 item 7: large counts are summarised, not drawn as a swarm: a region draws at
    /// most [`REGION_MAX`] tokens and says how many more there are.
    #[test]
    fn a_crowd_is_a_stack_with_its_number() {
        let mut lab = (find("big-heap").unwrap().build)(1).remove(0).1;
        lab.run_until(2 * SECOND);
        let f = layout(&lab.view, &consumers(&lab), lab.now(), 1000.0);
        let held: usize = lab.view.channels.values().map(|c| c.deferred()).sum();
        assert!(held > 5 * REGION_MAX, "the scenario holds a crowd ({held})");
        let drawn = f
            .tokens
            .iter()
            .filter(|t| t.region == Region::Deferred)
            .count();
        assert_eq!(drawn, REGION_MAX);
        let more: usize = f.more.iter().map(|m| m.2).sum();
        assert_eq!(drawn + more, held, "every message drawn or counted");
        // A few rows, not a wall of dots.
        let ys = f
            .tokens
            .iter()
            .filter(|t| t.region == Region::Deferred)
            .map(|t| t.y);
        let (top, bottom) = ys.fold((f64::MAX, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
        assert!(
            bottom - top <= 120.0,
            "the crowd is drawn {} px tall",
            bottom - top
        );
    }

    /// Issue 50 item 7: a crashed consumer is marked in the flow view (its own kind of box,
    /// and words that say so), from the crash on; before it, it is an ordinary consumer.
    #[test]
    fn a_crashed_consumer_is_marked() {
        let mut lab = (find("crash-timeout").unwrap().build)(1).remove(0).1;
        let mut seen = (false, false);
        for ms in (0..8_000).step_by(100) {
            lab.run_until(ms * nsqlab_core::time::MILLISECOND);
            let f = layout(&lab.view, &consumers(&lab), lab.now(), 1000.0);
            for c in &lab.consumers {
                let b = f
                    .boxes
                    .iter()
                    .find(|b| b.key == format!("k:{}", c.id))
                    .expect("a box per consumer");
                let words = b.title.en();
                if c.crashed {
                    assert_eq!(b.kind, BoxKind::CrashedConsumer, "at {ms} ms");
                    assert!(words.contains("crashed"), "{words}");
                    seen.1 = true;
                } else {
                    assert_eq!(b.kind, BoxKind::Consumer, "at {ms} ms");
                    assert!(!words.contains("crashed"), "{words}");
                    seen.0 = true;
                }
            }
        }
        assert_eq!(seen, (true, true), "the scenario has a consumer crash");
    }

    /// Issue 50 item 7: each place its own lane with its name showing: a channel's box is
    /// drawn before (under) its rows, and no token covers a row's name.
    #[test]
    fn every_lane_shows_its_name() {
        for id in ["dpub-heap", "overflow-disk", "fan-out", "crash-restart"] {
            let mut lab = (find(id).unwrap().build)(1).remove(0).1;
            for t in [SECOND / 2, SECOND, 2 * SECOND] {
                lab.run_until(t);
                let f = layout(&lab.view, &consumers(&lab), lab.now(), 1000.0);
                let rows: Vec<(usize, &FlowBox)> = f
                    .boxes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| matches!(b.kind, BoxKind::Row(_)))
                    .collect();
                assert!(!rows.is_empty(), "{id}: no lanes");
                for (i, row) in rows {
                    let channel = f
                        .boxes
                        .iter()
                        .position(|b| {
                            b.kind == BoxKind::Channel
                                && row.key.starts_with(&format!("r:{}:", &b.key[2..]))
                        })
                        .expect("its channel");
                    assert!(
                        channel < i,
                        "{id}: {} is drawn over its lane {}",
                        f.boxes[channel].key,
                        row.key
                    );
                    let name = (row.x, row.y, row.x + row.w, row.y + ROW_LABEL);
                    for tk in &f.tokens {
                        let (x0, y0) = (tk.x, tk.y);
                        let covers = x0 < name.2
                            && x0 + PILL.0 > name.0
                            && y0 < name.3
                            && y0 + PILL.1 > name.1;
                        assert!(
                            !covers,
                            "{id} at {t}: {:?} covers the name of {}",
                            tk.label, row.key
                        );
                    }
                }
            }
        }
    }
}
