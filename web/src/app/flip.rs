//! Messages glide from where they were drawn to where they are now (FLIP: first, last, invert,
//! play), after each render. The maths is [`crate::layout::flip_moves`]; the glides are Web
//! Animations, so nothing but the moved elements is touched and the browser lays the page out
//! once per render.

use crate::layout::{flip_keys, flip_moves};
use std::collections::HashMap;
use wasm_bindgen::{JsCast, JsValue};

/// At most this many elements are animated (a 10 000-message heap shows far fewer).
const MAX_FLIP: u32 = 600;
/// How long a glide takes, in ms.
const GLIDE_MS: f64 = 350.0;

/// Where each message was drawn, and the glides still running (Web Animations, stopped with
/// their `cancel()`).
#[derive(Default)]
pub struct Flip {
    places: HashMap<String, (f64, f64)>,
    running: Vec<JsValue>,
}

/// Call a JavaScript method by name (`Element.animate` and `Animation.cancel`, which web-sys
/// has only among its unstable APIs).
fn call(on: &JsValue, method: &str, args: &[&JsValue]) -> Option<JsValue> {
    let f: js_sys::Function = js_sys::Reflect::get(on, &JsValue::from_str(method))
        .ok()?
        .dyn_into()
        .ok()?;
    let args: js_sys::Array = args.iter().copied().collect();
    f.apply(on, &args).ok()
}

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

fn keyframes(dx: f64, dy: f64) -> js_sys::Array {
    let frame = |t: &str| {
        let o = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&o, &JsValue::from_str("transform"), &JsValue::from_str(t));
        o
    };
    let frames = js_sys::Array::new();
    frames.push(&frame(&format!("translate({dx:.1}px, {dy:.1}px)")));
    frames.push(&frame("none"));
    frames
}

/// Stop every glide and forget where things were (nothing glides until the next measure).
pub fn forget(flip: &mut Flip) {
    for a in flip.running.drain(..) {
        call(&a, "cancel", &[]);
    }
    flip.places.clear();
}

/// Measure every `[data-flip]` element; each one whose key was elsewhere in the previous
/// render glides from its old place to its new one. Glides still running are stopped first,
/// so places are measured without them (a message moving again starts from where it was going).
pub fn animate_moves(flip: &mut Flip) {
    for a in flip.running.drain(..) {
        call(&a, "cancel", &[]);
    }
    let Some(w) = web_sys::window() else { return };
    if reduced_motion() {
        flip.places.clear();
        return;
    }
    let Some(doc) = w.document() else { return };
    let Ok(list) = doc.query_selector_all("[data-flip]") else {
        return;
    };
    let mut els = Vec::new();
    let mut ids = Vec::new();
    for i in 0..list.length().min(MAX_FLIP) {
        if let Some(el) = list
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
        {
            ids.push(el.get_attribute("data-flip").unwrap_or_default());
            els.push(el);
        }
    }
    let keys = flip_keys(&ids);
    // Places are measured within the lab's pane: when something above it comes or goes (a
    // tour's chapter, a notice) the page shifts, and nothing should glide for that.
    let pos: Vec<(f64, f64)> = els
        .iter()
        .map(|e| {
            let r = e.get_bounding_client_rect();
            let origin = e
                .closest("[data-testid=pane]")
                .ok()
                .flatten()
                .map(|p| {
                    let q = p.get_bounding_client_rect();
                    (q.left(), q.top())
                })
                .unwrap_or((0.0, 0.0));
            (r.left() - origin.0, r.top() - origin.1)
        })
        .collect();
    let opts = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&opts, &"duration".into(), &GLIDE_MS.into());
    let _ = js_sys::Reflect::set(&opts, &"easing".into(), &"ease-out".into());
    for (i, dx, dy) in flip_moves(&flip.places, &keys, &pos, 1.0) {
        if let Some(a) = call(&els[i], "animate", &[&keyframes(dx, dy), &opts]) {
            flip.running.push(a);
        }
    }
    flip.places = keys.into_iter().zip(pos).collect();
}
