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
    fn countdown() {
        assert_eq!(time_left(0, 100, 25), 0.75);
        assert_eq!(time_left(0, 100, 200), 0.0);
    }
}
