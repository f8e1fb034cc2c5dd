//! The replication scenario's picture. The module that plays the scenario draws it (its HTML,
//! words and all: `nsqlab_web_raft::picture`), so none of it is in the page's first load; the
//! page asks for the picture after the steps shown (`window.nsqlabRaftPicture`, in index.html)
//! and puts it in place. Until the module is here, a line says it is loading (or why not).

use crate::i18n::{t, Lang, Text};
use crate::replication::{Loaded, Replication};
use yew::prelude::*;

/// The picture, or why it is not here yet.
pub fn replication_view(r: &Replication, l: Lang) -> Html {
    match &r.run {
        Loaded::Ready(_) => Html::from_html_unchecked(picture(r.seed, r.shown, l).into()),
        Loaded::Loading => {
            html! { <p class="rp-loading" data-testid="replication-loading" role="status">{t(l, "rp.loading")}</p> }
        }
        Loaded::Failed(e) => {
            html! { <p class="rp-loading error" data-testid="replication-failed" role="alert">{Text::new("rp.failed").arg("error", e).render(l)}</p> }
        }
    }
}

/// The module's picture after `step` steps of `seed`'s run.
fn picture(seed: u64, step: usize, l: Lang) -> String {
    super::nsqlab_raft_picture(&seed.to_string(), step as u32, l == Lang::Zh).unwrap_or_default()
}
