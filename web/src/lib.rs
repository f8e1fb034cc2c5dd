//! # nsqlab-web: the visualiser
//!
//! The broker core, compiled to WebAssembly, runs in the page in virtual time ([`lab`]); a
//! learner steps through each event — a DPUB's push and every sift swap in the deferred heap,
//! deliveries, timeouts, requeues — with an explanation of each. [`scenarios`] is the library,
//! [`layout`] the pure drawing maths. The Yew components (`app`) exist only on wasm32; the
//! logic is tested natively and the components in headless Chromium (`web/tests/components.rs`,
//! wasm-bindgen-test).

pub mod lab;
pub mod layout;
pub mod live;
pub mod scenarios;

#[cfg(target_arch = "wasm32")]
pub mod app;

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    yew::Renderer::<app::App>::new().render();
}
