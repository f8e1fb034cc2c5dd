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
mod sim;

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
}

impl Shared {
    fn new(model: Model) -> Shared {
        Shared {
            model: Rc::new(RefCell::new(model)),
        }
    }

    /// Read the model.
    pub fn get(&self) -> std::cell::Ref<'_, Model> {
        self.model.borrow()
    }
}

impl Reducible for Shared {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        self.model.borrow_mut().update(action);
        Rc::new(Shared {
            model: self.model.clone(),
        })
    }
}

/// Sends actions to the model.
pub type Dispatch = UseReducerDispatcher<Shared>;

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
