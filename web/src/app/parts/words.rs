//! Text whose glossary terms are buttons.

use super::*;

#[derive(Properties, PartialEq)]
pub struct WordsProps {
    pub text: AttrValue,
    pub lang: Lang,
    /// Opens a glossary entry; without it terms are not links.
    #[prop_or_default]
    pub on_term: Option<Callback<&'static str>>,
}

/// Text whose glossary terms are buttons that open their entry.
#[function_component(Words)]
pub fn words(p: &WordsProps) -> Html {
    let Some(on_term) = &p.on_term else {
        return html! { <>{p.text.clone()}</> };
    };
    html! {
      <>{ for pieces(p.lang, &p.text).into_iter().map(|piece| match piece {
          Piece::Text(x) => html!{ <>{x}</> },
          Piece::Term(x, key) => {
              let on = on_term.clone();
              let tip = term(key).map(|e| e.text(p.lang)).unwrap_or_default();
              let aria = Text::new("ui.term").arg("term", &x).render(p.lang);
              html!{ <button type="button" class="term" title={tip} aria-label={aria}
                             onclick={Callback::from(move |_: MouseEvent| on.emit(key))}>{x}</button> }
          }
      }) }</>
    }
}
