//! The page's parts: text with glossary links, the topology (producers → topics → channels →
//! consumers), the in-flight window, the step log, the lateness chart, the forms and the
//! glossary. Each takes plain data as props.

use crate::forms::Field;
use crate::glossary::{glued_punctuation, pieces, term, Piece, TERMS};
use crate::i18n::{t, Lang, Text};
use crate::lab::{Admin, Answer};
use crate::model::Knob;
use crate::view::{secs, ServerCounts};
use nsqlab_core::time::{Time, MILLISECOND};
use nsqlab_core::{ClientId, MessageId};
use web_sys::HtmlInputElement;
use yew::prelude::*;

mod algo;
mod crash;
mod forms;
mod glossary;
mod in_flight;
mod lateness;
mod scrubber;
mod step_log;
mod topology;
mod tour;
mod words;

pub use algo::*;
pub use crash::*;
pub use forms::*;
pub use glossary::*;
pub use in_flight::*;
pub use lateness::*;
pub use scrubber::*;
pub use step_log::*;
pub use topology::*;
pub use tour::*;
pub use words::*;

/// A message as a token: its label, in its colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub id: String,
    pub label: String,
    pub hue: u16,
}

/// Draw a token (`hot` when the last step was about it).
pub fn token(t: &Token, hot: bool, flip: bool) -> Html {
    html! {
      <span class={classes!("chip", hot.then_some("hot"))} data-id={t.id.clone()}
            data-flip={flip.then(|| t.id.clone())} title={format!("{} (ID {})", t.label, t.id)}
            style={format!("--h: {}", t.hue)}>{t.label.clone()}</span>
    }
}

/// Chips drawn per queue (the rest are counted).
pub const CHIPS: usize = 24;

fn term_button(
    lang: Lang,
    on_term: &Callback<&'static str>,
    text: &str,
    key: &'static str,
) -> Html {
    let on = on_term.clone();
    let tip = term(key).map(|e| e.text(lang)).unwrap_or_default();
    html! { <button type="button" class="term" title={tip} onclick={Callback::from(move |_: MouseEvent| on.emit(key))}>{text.to_string()}</button> }
}

/// One counter: its name (a glossary link when it has an entry) and value.
fn counter(
    lang: Lang,
    on_term: &Callback<&'static str>,
    testid: &'static str,
    name: &'static str,
    key: Option<&'static str>,
    value: u64,
) -> Html {
    let name = t(lang, name);
    html! {
      <span class="counter" data-testid={testid} data-value={value.to_string()}>
        { match key { Some(k) => term_button(lang, on_term, name, k), None => html!{ {name} } } }
        {" "}<b>{value}</b>
      </span>
    }
}
