//! Tokens in motion: where each token of the flow view is drawn at a moment, as it glides from
//! where it was to where the core has it now. The page draws the tokens on a canvas every
//! animation frame from [`Glides::frame`]; a thousand tokens gliding at once is a thousand
//! positions computed and drawn, not a thousand DOM elements restyled. Pure, tested natively.

use crate::flow::FlowToken;
use std::collections::HashMap;

/// How long a new token (or, with reduced motion, a moved one) takes to fade in, in ms.
pub const FADE_MS: f64 = 300.0;

/// One token: what to draw, and its glide.
#[derive(Debug, Clone, PartialEq)]
pub struct Glide {
    pub token: FlowToken,
    /// The step was about this message.
    pub hot: bool,
    /// It timed out and is going back.
    pub back: bool,
    from: (f64, f64),
    start: f64,
    dur: f64,
    /// When it (re)appeared, to fade in from.
    born: f64,
}

/// Where a token is drawn now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drawn<'a> {
    pub x: f64,
    pub y: f64,
    /// 0 (invisible) to 1.
    pub alpha: f64,
    pub glide: &'a Glide,
}

/// Every token of a flow view, keyed by message and channel.
#[derive(Debug, Default)]
pub struct Glides {
    map: HashMap<String, Glide>,
    /// Draw order (by key: stable, so overlapping tokens do not flicker).
    order: Vec<String>,
    /// Tokens that left the picture (a message the heap just gave up, between two places):
    /// where they were last drawn, so they glide from there when they come back.
    gone: HashMap<String, (f64, f64)>,
}

/// Tokens remembered after they leave the picture, at most.
const GONE_MAX: usize = 4096;

fn ease(t: f64) -> f64 {
    // Cubic ease-in-out.
    if t < 0.5 {
        4.0 * t * t * t
    } else {
        1.0 - (-2.0 * t + 2.0).powi(3) / 2.0
    }
}

impl Glide {
    fn at(&self, now: f64) -> (f64, f64) {
        let t = if self.dur <= 0.0 {
            1.0
        } else {
            ((now - self.start) / self.dur).clamp(0.0, 1.0)
        };
        let k = ease(t);
        let (x, y) = (self.token.x, self.token.y);
        (
            self.from.0 + (x - self.from.0) * k,
            self.from.1 + (y - self.from.1) * k,
        )
    }

    fn moving(&self, now: f64) -> bool {
        now < self.start + self.dur && self.from != (self.token.x, self.token.y)
    }
}

impl Glides {
    /// The tokens as the core has them now (`hot`: the message the step is about; `back`: it
    /// timed out). A token that was elsewhere glides from where it is drawn at `now` (even
    /// mid-glide) to its new place over `dur` ms; a new token fades in where it is; one no
    /// longer there is gone. With `reduced` motion nothing glides: a moved token fades in at
    /// its new place.
    pub fn update(
        &mut self,
        tokens: &[FlowToken],
        hot: Option<&str>,
        back: bool,
        now: f64,
        dur: f64,
        reduced: bool,
    ) {
        let mut next = HashMap::with_capacity(tokens.len());
        for t in tokens {
            let is_hot = hot.is_some_and(|h| t.key.split('@').next() == Some(h));
            let target = (t.x, t.y);
            let g = match self.map.remove(&t.key) {
                Some(old) => {
                    let was = old.at(now);
                    let moved = (old.token.x, old.token.y) != target;
                    let (from, start, dur, born) = match (moved, reduced) {
                        (false, _) => (old.from, old.start, old.dur, old.born),
                        (true, false) => (was, now, dur, old.born),
                        (true, true) => (target, now, 0.0, now),
                    };
                    Glide {
                        token: t.clone(),
                        hot: is_hot,
                        back: is_hot && back,
                        from,
                        start,
                        dur,
                        born,
                    }
                }
                // Back after a moment out of the picture: it glides from where it was.
                None => match self.gone.remove(&t.key) {
                    Some(was) if !reduced => Glide {
                        token: t.clone(),
                        hot: is_hot,
                        back: is_hot && back,
                        from: was,
                        start: now,
                        dur,
                        born: now - FADE_MS,
                    },
                    _ => Glide {
                        token: t.clone(),
                        hot: is_hot,
                        back: is_hot && back,
                        from: target,
                        start: now,
                        dur: 0.0,
                        born: now,
                    },
                },
            };
            next.insert(t.key.clone(), g);
        }
        if self.gone.len() > GONE_MAX {
            self.gone.clear();
        }
        for (k, g) in self.map.drain() {
            let at = g.at(now);
            self.gone.insert(k, at);
        }
        self.map = next;
        self.order = self.map.keys().cloned().collect();
        self.order.sort();
    }

    /// Every token where it is drawn at `now`, hot ones last (on top).
    pub fn frame(&self, now: f64) -> Vec<Drawn<'_>> {
        let mut out: Vec<Drawn<'_>> = self
            .order
            .iter()
            .filter_map(|k| self.map.get(k))
            .map(|g| {
                let (x, y) = g.at(now);
                Drawn {
                    x,
                    y,
                    alpha: ((now - g.born) / FADE_MS).clamp(0.0, 1.0),
                    glide: g,
                }
            })
            .collect();
        out.sort_by_key(|d| d.glide.hot);
        out
    }

    /// Something is still moving or fading in at `now` (the page keeps drawing frames).
    pub fn busy(&self, now: f64) -> bool {
        self.map
            .values()
            .any(|g| g.moving(now) || now < g.born + FADE_MS)
    }

    /// How many tokens are mid-glide at `now`.
    pub fn moving(&self, now: f64) -> usize {
        self.map.values().filter(|g| g.moving(now)).count()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The token drawn at (x, y) at `now`, if any (the topmost).
    pub fn hit(&self, x: f64, y: f64, now: f64) -> Option<&Glide> {
        self.frame(now)
            .into_iter()
            .rev()
            .find(|d| {
                let (w, h) = size(&d.glide.token);
                x >= d.x && x <= d.x + w && y >= d.y && y <= d.y + h
            })
            .map(|d| d.glide)
    }
}

/// A token's size on the page: a dot, or a pill with its label.
pub fn size(t: &FlowToken) -> (f64, f64) {
    if t.dot {
        (crate::layout::DOT, crate::layout::DOT)
    } else {
        crate::layout::PILL
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Region;
    use nsqlab_core::MessageId;

    fn tok(n: u8, x: f64, y: f64) -> FlowToken {
        FlowToken {
            key: format!("{}@c", MessageId(n as u64)),
            id: MessageId(n as u64),
            label: format!("m{n}"),
            hue: 10,
            region: Region::Memory,
            x,
            y,
            dot: false,
            ring: None,
        }
    }

    #[test]
    fn a_moved_token_glides_from_where_it_was_to_where_it_is() {
        let mut g = Glides::default();
        g.update(&[tok(1, 0.0, 0.0)], None, false, 0.0, 400.0, false);
        // New: at its place, fading in.
        let f = g.frame(0.0);
        assert_eq!((f[0].x, f[0].y, f[0].alpha), (0.0, 0.0, 0.0));
        assert_eq!(g.frame(FADE_MS)[0].alpha, 1.0);
        g.update(&[tok(1, 100.0, 50.0)], None, false, 1000.0, 400.0, false);
        assert_eq!(g.moving(1000.0), 1);
        let start = g.frame(1000.0)[0];
        assert_eq!((start.x, start.y), (0.0, 0.0), "it starts where it was");
        let mid = g.frame(1200.0)[0];
        assert!(
            (mid.x - 50.0).abs() < 1e-9 && (mid.y - 25.0).abs() < 1e-9,
            "{mid:?}"
        );
        let end = g.frame(1400.0)[0];
        assert_eq!((end.x, end.y), (100.0, 50.0));
        assert!(!g.busy(1400.0));
        assert_eq!(g.moving(1400.0), 0);
        // Moved again mid-glide: from where it is drawn then.
        g.update(&[tok(1, 0.0, 0.0)], None, false, 1600.0, 400.0, false);
        g.update(&[tok(1, 100.0, 0.0)], None, false, 1800.0, 400.0, false);
        let again = g.frame(1800.0)[0];
        assert!(
            (again.x - 50.0).abs() < 1e-9 && (again.y - 25.0).abs() < 1e-9,
            "{again:?}"
        );
    }

    #[test]
    fn an_unmoved_token_keeps_its_glide_and_gone_ones_go() {
        let mut g = Glides::default();
        g.update(
            &[tok(1, 0.0, 0.0), tok(2, 0.0, 30.0)],
            None,
            false,
            0.0,
            400.0,
            false,
        );
        g.update(
            &[tok(1, 90.0, 0.0), tok(2, 0.0, 30.0)],
            None,
            false,
            1000.0,
            400.0,
            false,
        );
        // A render in the middle of the glide with nothing new must not restart it.
        g.update(
            &[tok(1, 90.0, 0.0), tok(2, 0.0, 30.0)],
            None,
            false,
            1200.0,
            400.0,
            false,
        );
        assert!((g.frame(1200.0)[0].x - 45.0).abs() < 1e-9);
        g.update(&[tok(2, 0.0, 30.0)], None, false, 1300.0, 400.0, false);
        assert_eq!(g.len(), 1);
        // Back in the picture elsewhere: it glides from where it was last drawn (it left
        // three quarters into its glide to x = 90, eased: 90 × 0.9375).
        g.update(
            &[tok(1, 0.0, 90.0), tok(2, 0.0, 30.0)],
            None,
            false,
            2000.0,
            400.0,
            false,
        );
        let back = g
            .frame(2000.0)
            .into_iter()
            .find(|d| d.glide.token.label == "m1")
            .unwrap();
        assert_eq!((back.x, back.y, back.alpha), (84.375, 0.0, 1.0));
        assert_eq!(g.moving(2000.0), 1);
    }

    #[test]
    fn with_reduced_motion_a_moved_token_fades_in_at_its_new_place() {
        let mut g = Glides::default();
        g.update(&[tok(1, 0.0, 0.0)], None, false, 0.0, 400.0, true);
        g.update(&[tok(1, 100.0, 0.0)], None, false, 1000.0, 400.0, true);
        let f = g.frame(1000.0)[0];
        assert_eq!((f.x, f.alpha), (100.0, 0.0));
        assert_eq!(g.moving(1000.0), 0);
        assert_eq!(g.frame(1000.0 + FADE_MS)[0].alpha, 1.0);
    }

    #[test]
    fn the_hot_token_is_drawn_on_top_and_found_under_the_pointer() {
        let mut g = Glides::default();
        let hot = MessageId(1).to_string();
        g.update(
            &[tok(1, 0.0, 0.0), tok(2, 10.0, 0.0)],
            Some(&hot),
            true,
            0.0,
            400.0,
            false,
        );
        let f = g.frame(500.0);
        assert!(f.last().unwrap().glide.hot && f.last().unwrap().glide.back);
        assert_eq!(g.hit(12.0, 5.0, 500.0).unwrap().token.label, "m1");
        assert!(g.hit(200.0, 5.0, 500.0).is_none());
    }
}
