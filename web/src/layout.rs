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

/// How many levels to draw so at most `max_nodes` nodes are on screen; deeper levels are
/// summarised as a count (a 10 000-entry heap stays fast).
pub fn visible_levels(len: usize, max_nodes: usize) -> usize {
    let mut levels = 0;
    while levels < 20 && (1usize << (levels + 1)) - 1 <= max_nodes && (1usize << levels) <= len {
        levels += 1;
    }
    levels.max(1)
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

    #[test]
    fn big_heaps_are_collapsed() {
        assert_eq!(visible_levels(10_000, 63), 6);
        assert_eq!(nodes_in_levels(6), 63);
        assert_eq!(visible_levels(3, 63), 2);
        assert_eq!(visible_levels(0, 63), 1);
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
