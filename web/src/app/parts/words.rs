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
    let all = pieces(p.lang, &p.text);
    let mut out: Vec<Html> = Vec::new();
    // Bytes at the start of the next text already drawn with the term before it.
    let mut drawn = 0;
    for (i, piece) in all.iter().enumerate() {
        match piece {
            Piece::Text(x) => {
                out.push(html! { <>{x[drawn..].to_string()}</> });
                drawn = 0;
            }
            Piece::Term(x, key) => {
                // Closing punctuation right after the term, drawn with it (no line may begin
                // with it: `glued_punctuation`).
                let after = match all.get(i + 1) {
                    Some(Piece::Text(t)) => &t[..glued_punctuation(t)],
                    _ => "",
                };
                drawn = after.len();
                let on = on_term.clone();
                let key = *key;
                let tip = term(key).map(|e| e.text(p.lang)).unwrap_or_default();
                let aria = Text::new("ui.term").arg("term", x).render(p.lang);
                let button = html! { <button type="button" class="term" title={tip} aria-label={aria}
                onclick={Callback::from(move |_: MouseEvent| on.emit(key))}>{x.clone()}</button> };
                out.push(if after.is_empty() {
                    button
                } else {
                    html! { <span class="glued">{button}{after.to_string()}</span> }
                });
            }
        }
    }
    html! { <>{ for out }</> }
}
