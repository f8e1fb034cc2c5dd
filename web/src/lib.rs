//! # nsqlab-web: the visualiser
//!
//! The broker core, compiled to WebAssembly, runs in the page in virtual time ([`lab`]); a
//! learner steps through each event — a DPUB's push and every sift swap in the deferred heap,
//! deliveries, timeouts, requeues — with an explanation of each. [`view`] turns events into
//! the drawing and the words, [`model`] holds the page's state and applies each action
//! ([`model::Model::update`]), [`scenarios`] is the library, [`forms`] checks what the learner
//! types as nsqd would, [`glossary`] explains the words, [`layout`] is the drawing maths, and
//! [`live`] mirrors a real server. The Yew components (`app`) exist only on wasm32; everything
//! else is tested natively, and the components in headless Chromium.

pub mod algo;
pub mod cluster;
pub mod flow;
pub mod forms;
pub mod glide;
pub mod glossary;
pub mod i18n;
pub mod lab;
pub mod layout;
pub mod live;
pub mod model;
pub mod replication;
pub mod scenarios;
pub mod tours;
pub mod view;

#[cfg(target_arch = "wasm32")]
pub mod app;

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    yew::Renderer::<app::App>::new().render();
}
