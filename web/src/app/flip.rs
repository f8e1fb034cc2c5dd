//! Messages glide from where they were drawn to where they are now (FLIP: first, last, invert,
//! play), after each render. The maths is [`crate::layout::flip_moves`].

use crate::layout::{flip_keys, flip_moves};
use std::collections::HashMap;
use wasm_bindgen::JsCast;

/// At most this many elements are animated (a 10 000-message heap shows far fewer).
const MAX_FLIP: u32 = 600;

/// The reader asked for less motion.
pub fn reduced_motion() -> bool {
    web_sys::window()
        .and_then(|w| {
            w.match_media("(prefers-reduced-motion: reduce)")
                .ok()
                .flatten()
        })
        .is_some_and(|m| m.matches())
}

/// Measure every `[data-flip]` element; each one whose key was elsewhere in the previous
/// render is drawn at its old place and let glide to its new one (a CSS transition).
/// Places are measured without transforms (a glide still running when the next render comes
/// restarts from where the element was going, never from a half-transformed place).
pub fn animate_moves(places: &mut HashMap<String, (f64, f64)>) {
    let Some(w) = web_sys::window() else { return };
    if reduced_motion() {
        return;
    }
    let Some(doc) = w.document() else { return };
    let Ok(list) = doc.query_selector_all("[data-flip]") else {
        return;
    };
    let (sx, sy) = (w.scroll_x().unwrap_or(0.0), w.scroll_y().unwrap_or(0.0));
    let mut els = Vec::new();
    let mut ids = Vec::new();
    for i in 0..list.length().min(MAX_FLIP) {
        if let Some(el) = list
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        {
            ids.push(el.get_attribute("data-flip").unwrap_or_default());
            els.push(el);
        }
    }
    let keys = flip_keys(&ids);
    for e in &els {
        let st = e.style();
        let _ = st.set_property("transition", "none");
        let _ = st.set_property("transform", "");
    }
    let pos: Vec<(f64, f64)> = els
        .iter()
        .map(|e| {
            let r = e.get_bounding_client_rect();
            (r.left() + sx, r.top() + sy)
        })
        .collect();
    let moves = flip_moves(places, &keys, &pos, 1.0);
    for &(i, dx, dy) in &moves {
        let st = els[i].style();
        let _ = st.set_property("transform", &format!("translate({dx:.1}px, {dy:.1}px)"));
    }
    if !moves.is_empty() {
        // Apply the offsets before the transition starts.
        let _ = doc.body().map(|b| b.offset_height());
        for &(i, _, _) in &moves {
            let st = els[i].style();
            let _ = st.set_property("transition", "transform .35s ease-out");
            let _ = st.set_property("transform", "");
        }
    }
    *places = keys.into_iter().zip(pos).collect();
}
