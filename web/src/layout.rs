//! Pure layout maths for the views (testable natively).

/// Where heap index `i` sits in a binary tree drawn `width` wide with `level_h` between levels:
/// level `⌊log2(i+1)⌋`, spread evenly across its level.
pub fn heap_node_xy(i: usize, width: f64, level_h: f64) -> (f64, f64) {
    let level = (usize::BITS - (i + 1).leading_zeros() - 1) as usize;
    let first = (1usize << level) - 1;
    let slots = 1usize << level;
    let pos = i - first;
    let x = (pos as f64 + 0.5) * width / slots as f64;
    let y = level as f64 * level_h + level_h / 2.0;
    (x, y)
}

/// How many levels of a heap of `len` entries to draw in `width` pixels when each node needs
/// `slot` pixels: as many as the heap has, while the bottom level's nodes fit side by side.
/// Deeper levels are summarised as a count (a 10 000-entry heap stays readable and fast).
pub fn tree_levels(len: usize, width: f64, slot: f64) -> usize {
    let depth = heap_depth(len);
    let mut levels = 1;
    while levels < depth && (1usize << levels) as f64 * slot <= width {
        levels += 1;
    }
    levels
}

/// Levels of a heap of `len` entries (0 for an empty heap).
pub fn heap_depth(len: usize) -> usize {
    (usize::BITS - len.leading_zeros()) as usize
}

/// Entries in the drawn levels.
pub fn nodes_in_levels(levels: usize) -> usize {
    (1usize << levels) - 1
}

/// Fraction (0..=1) of a message's in-flight time left at `now`.
pub fn time_left(sent: u64, deadline: u64, now: u64) -> f64 {
    if deadline <= sent {
        return 0.0;
    }
    (deadline.saturating_sub(now)) as f64 / (deadline - sent) as f64
}

/// Keys for the elements that may move between renders (message chips, heap cells,
/// in-flight rows), from their message IDs in document order. A message drawn in several
/// places at once (one copy per channel) gets `id`, `id#1`, `id#2`…, so each copy keeps its
/// own key from one render to the next.
pub fn flip_keys(ids: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    ids.iter()
        .map(|id| {
            let n = seen.entry(id.as_str()).or_insert(0);
            let key = if *n == 0 {
                id.clone()
            } else {
                format!("{id}#{n}")
            };
            *n += 1;
            key
        })
        .collect()
}

/// FLIP animation ("first, last, invert, play"): for each element now at `pos[i]` whose key was
/// at another place in the previous render, the offset to draw it at first (its old place
/// minus its new one), so it can glide to where it is now. New keys and moves under
/// `min_px` are left alone.
pub fn flip_moves(
    prev: &std::collections::HashMap<String, (f64, f64)>,
    keys: &[String],
    pos: &[(f64, f64)],
    min_px: f64,
) -> Vec<(usize, f64, f64)> {
    keys.iter()
        .zip(pos)
        .enumerate()
        .filter_map(|(i, (k, &(x, y)))| {
            let &(px, py) = prev.get(k)?;
            let (dx, dy) = (px - x, py - y);
            (dx.abs() >= min_px || dy.abs() >= min_px).then_some((i, dx, dy))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_positions() {
        assert_eq!(heap_node_xy(0, 800.0, 60.0), (400.0, 30.0));
        assert_eq!(heap_node_xy(1, 800.0, 60.0), (200.0, 90.0));
        assert_eq!(heap_node_xy(2, 800.0, 60.0), (600.0, 90.0));
        assert_eq!(heap_node_xy(6, 800.0, 60.0), (700.0, 150.0));
        // A child is always below its parent, on its side.
        for i in 1..200 {
            let (px, py) = heap_node_xy((i - 1) / 2, 1000.0, 50.0);
            let (x, y) = heap_node_xy(i, 1000.0, 50.0);
            assert!(y > py);
            assert_eq!(x < px, i % 2 == 1);
        }
    }

    /// Drawn nodes never overlap: on the deepest drawn level, neighbours are a slot apart, at
    /// a phone's width and at a wide screen's, for every heap size up to 10 000.
    #[test]
    fn drawn_levels_never_overlap() {
        assert_eq!(heap_depth(0), 0);
        assert_eq!(heap_depth(1), 1);
        assert_eq!(heap_depth(7), 3);
        assert_eq!(heap_depth(10_000), 14);
        assert_eq!(tree_levels(10_000, 1200.0, 72.0), 5);
        assert_eq!(tree_levels(7, 1200.0, 72.0), 3);
        assert_eq!(tree_levels(7, 360.0, 72.0), 3);
        assert_eq!(tree_levels(10_000, 360.0, 72.0), 3);
        assert_eq!(nodes_in_levels(5), 31);
        for width in [300.0, 360.0, 760.0, 1200.0, 1800.0] {
            for len in 1..10_000 {
                let levels = tree_levels(len, width, 72.0);
                assert!(levels >= 1 && levels <= heap_depth(len));
                let last = nodes_in_levels(levels).min(len);
                let first = nodes_in_levels(levels - 1);
                for i in first + 1..last {
                    let (a, _) = heap_node_xy(i - 1, width, 60.0);
                    let (b, _) = heap_node_xy(i, width, 60.0);
                    assert!(b - a >= 72.0 || levels == 1, "{len} in {width}px: {a} {b}");
                }
            }
        }
    }

    #[test]
    fn flip() {
        let ids: Vec<String> = ["a", "b", "a", "a"].iter().map(|s| s.to_string()).collect();
        assert_eq!(flip_keys(&ids), vec!["a", "b", "a#1", "a#2"]);
        let prev: std::collections::HashMap<String, (f64, f64)> = [
            ("a".to_string(), (10.0, 20.0)),
            ("b".to_string(), (5.0, 5.0)),
        ]
        .into();
        let keys = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        // "a" moved right and down by (30, 40): drawn first at (-30, -40) from its new place;
        // "b" barely moved; "c" is new.
        let moves = flip_moves(&prev, &keys, &[(40.0, 60.0), (5.5, 5.0), (0.0, 0.0)], 1.0);
        assert_eq!(moves, vec![(0, -30.0, -40.0)]);
    }

    #[test]
    fn countdown() {
        assert_eq!(time_left(0, 100, 25), 0.75);
        assert_eq!(time_left(0, 100, 200), 0.0);
    }
}

/// Where a message token is, on the flow view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    /// Held by a topic without channels.
    Held,
    Deferred,
    Memory,
    Disk,
    /// In flight to a consumer.
    InFlight,
    /// After a `kill -9`: in the store on disk, not given back by the restart yet.
    Store,
}

/// A box on the flow view: a producer, a topic, a channel's row, a consumer.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowBox {
    /// A stable key (`p:<id>`, `t:<topic>`, `c:<topic>/<channel>`, `k:<id>`).
    pub key: String,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// A token's place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    pub x: f64,
    pub y: f64,
    /// Drawn as a dot (its region is crowded), not a labelled pill.
    pub dot: bool,
}

/// Sizes of the flow view.
pub const PILL: (f64, f64) = (64.0, 20.0);
pub const DOT: f64 = 11.0;
/// Tokens drawn per region at most: more would be a swarm nobody can read; the rest are a
/// stack with their number ([`crate::flow::Flow::more`]).
pub const REGION_MAX: usize = 120;

/// Lay out `n` tokens in a row region `w` wide starting at (x, y): pills while they fit in two
/// lines, dots otherwise. Returns the places and the height used.
pub fn region_places(n: usize, x: f64, y: f64, w: f64) -> (Vec<Place>, f64) {
    let n = n.min(REGION_MAX);
    let pill_cols = ((w / (PILL.0 + 4.0)).floor() as usize).max(1);
    if n <= pill_cols * 2 {
        let places = (0..n)
            .map(|i| Place {
                x: x + (i % pill_cols) as f64 * (PILL.0 + 4.0),
                y: y + (i / pill_cols) as f64 * (PILL.1 + 4.0),
                dot: false,
            })
            .collect();
        let lines = n.div_ceil(pill_cols).max(1);
        return (places, lines as f64 * (PILL.1 + 4.0));
    }
    let cols = ((w / (DOT + 3.0)).floor() as usize).max(1);
    let places = (0..n)
        .map(|i| Place {
            x: x + (i % cols) as f64 * (DOT + 3.0),
            y: y + (i / cols) as f64 * (DOT + 3.0),
            dot: true,
        })
        .collect();
    (places, n.div_ceil(cols) as f64 * (DOT + 3.0))
}

#[cfg(test)]
mod flow_tests {
    use super::*;

    /// Tokens in a region never overlap and stay inside its width; crowded regions use dots.
    #[test]
    fn region_tokens_do_not_overlap() {
        for w in [120.0, 300.0, 700.0] {
            for n in [0, 1, 3, 9, 40, 599, 5000] {
                let (p, h) = region_places(n, 10.0, 20.0, w);
                assert_eq!(p.len(), n.min(REGION_MAX));
                for a in &p {
                    let (aw, ah) = if a.dot { (DOT, DOT) } else { PILL };
                    assert!(a.x >= 10.0 && a.x + aw <= 10.0 + w.max(aw) + 0.5, "{w} {n}");
                    assert!(a.y + ah <= 20.0 + h + 0.5);
                }
                for i in 0..p.len().min(200) {
                    for j in i + 1..p.len().min(200) {
                        let (a, b) = (p[i], p[j]);
                        assert!(
                            a.x != b.x || a.y != b.y,
                            "{w} {n}: {i} and {j} share a place"
                        );
                    }
                }
                if n > 30 {
                    assert!(p.iter().all(|x| x.dot));
                }
            }
        }
    }
}
