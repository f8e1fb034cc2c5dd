//! The Yew app. The page's state is a [`Model`] behind Yew's `use_reducer`: components render
//! plain data from it (their `Properties`), and every click, key or timer tick is an
//! [`Action`] sent to [`Model::update`]. Components whose props did not change are not
//! re-rendered (an unchanged 10 000-entry heap costs nothing). Timer handles are owned by
//! effects and dropped to cancel.

mod cluster;
mod flip;
mod flow;
mod heap;
mod live;
mod parts;
mod replication;
mod sim;

use crate::i18n::Lang;
use crate::model::{Action, Model};
use std::cell::RefCell;
use std::rc::Rc;
use yew::prelude::*;

/// The model as the reducer holds it: one mutable model. Each action makes a new `Shared`
/// (so Yew renders again); what changed is told by the model's own [`Model::version`], the
/// one counter.
#[derive(Clone)]
pub struct Shared {
    model: Rc<RefCell<Model>>,
    /// Counts the drawings asked for: states with the same count draw the same page.
    drawing: u64,
}

/// The page is drawn again when the drawing changed (Yew's `use_reducer_eq`).
impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.drawing == other.drawing
    }
}

impl Shared {
    fn new(model: Model) -> Shared {
        Shared {
            model: Rc::new(RefCell::new(model)),
            drawing: 0,
        }
    }

    /// Read the model.
    pub fn get(&self) -> std::cell::Ref<'_, Model> {
        self.model.borrow()
    }
}

impl Reducible for Shared {
    type Action = Action;

    /// A new state (the page is drawn again), or the same one when the model says the page
    /// is not to be drawn yet ([`Model::draw_now`]: playing fast).
    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let draw = {
            let mut m = self.model.borrow_mut();
            m.update(action);
            m.draw_now()
        };
        if !draw {
            return self;
        }
        Rc::new(Shared {
            model: self.model.clone(),
            drawing: self.drawing + 1,
        })
    }
}

/// Sends actions to the model.
pub type Dispatch = UseReducerDispatcher<Shared>;

/// A URL's text (`None` when it cannot be fetched).
async fn fetch_text(url: &str) -> Option<String> {
    use wasm_bindgen::JsCast;
    let w = web_sys::window()?;
    let resp = wasm_bindgen_futures::JsFuture::from(w.fetch_with_str(url))
        .await
        .ok()?;
    let resp: web_sys::Response = resp.dyn_into().ok()?;
    if !resp.ok() {
        return None;
    }
    let text = wasm_bindgen_futures::JsFuture::from(resp.text().ok()?)
        .await
        .ok()?;
    text.as_string()
}

/// The words of a language load when it is first asked for (Chinese is not in the first
/// download): while `lang` is not [`ready`](crate::i18n::ready), fetch `pkg/zh.json`, take it
/// in and call `loaded`. Until then the page speaks English ([`i18n::shown`](crate::i18n::shown)).
#[hook]
fn use_words(lang: Lang, loaded: Callback<()>) {
    use_effect_with(lang, move |&lang| {
        if !crate::i18n::ready(lang) {
            wasm_bindgen_futures::spawn_local(async move {
                let Some(json) = fetch_text("pkg/zh.json").await else {
                    web_sys::console::warn_1(&"pkg/zh.json could not be fetched".into());
                    return;
                };
                match crate::i18n::load_zh(&json) {
                    Ok(()) => loaded.emit(()),
                    Err(e) => web_sys::console::warn_1(&e.into()),
                }
            });
        }
    });
}

/// The replication scenario's module (raft: too big for the first load) loads when the
/// scenario is first opened: while `wanted` names a seed whose run is not here, ask the page's
/// loader (`window.nsqlabRaft`, in index.html, which imports `pkg/raft.js` once) to play it,
/// keep the answer ([`crate::replication::provide`]) and call `loaded`.
#[hook]
fn use_raft(wanted: Option<u64>, loaded: Callback<()>) {
    use_effect_with(wanted, move |&wanted| {
        if let Some(seed) = wanted.filter(|s| crate::replication::request(*s)) {
            wasm_bindgen_futures::spawn_local(async move {
                let run = play_raft(seed).await;
                if let Err(e) = &run {
                    web_sys::console::warn_1(&e.clone().into());
                }
                crate::replication::provide(seed, run);
                loaded.emit(());
            });
        }
    });
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// index.html's loader: plays a run in the replication module (see [`use_raft`]).
    #[wasm_bindgen(js_namespace = window, js_name = nsqlabRaft, catch)]
    async fn nsqlab_raft(input: &str) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>;
    /// The module's picture after `step` steps of `seed`'s run (`app::replication`).
    #[wasm_bindgen(js_namespace = window, js_name = nsqlabRaftPicture, catch)]
    pub(crate) fn nsqlab_raft_picture(
        seed: &str,
        step: u32,
        zh: bool,
    ) -> Result<String, wasm_bindgen::JsValue>;
}

async fn play_raft(seed: u64) -> Result<nsqlab_web_raft::LabRun, String> {
    let input = format!("{{\"seed\": {seed}}}");
    let out = nsqlab_raft(&input).await.map_err(|e| {
        use wasm_bindgen::JsCast;
        e.dyn_ref::<js_sys::Error>()
            .map_or_else(|| "?".into(), |x| String::from(x.message()))
    })?;
    nsqlab_web_raft::LabRun::decode(&out.as_string().unwrap_or_default())
}

fn params() -> Option<web_sys::UrlSearchParams> {
    let search = web_sys::window()?.location().search().ok()?;
    web_sys::UrlSearchParams::new_with_str(&search).ok()
}

/// The page: the simulation, or with `?mode=live` the live server's mirror.
#[function_component(App)]
pub fn app() -> Html {
    let live = params().and_then(|p| p.get("mode")).as_deref() == Some("live");
    if live {
        html! { <live::LiveApp/> }
    } else {
        html! { <sim::SimApp/> }
    }
}
