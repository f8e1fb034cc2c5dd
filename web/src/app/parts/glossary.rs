//! The glossary.

use super::*;

#[derive(Properties, PartialEq)]
pub struct GlossaryProps {
    pub lang: Lang,
    pub open: Option<&'static str>,
    pub on_term: Callback<Option<&'static str>>,
}

/// The glossary: every entry at the foot of the page, and the one asked for in a panel.
#[function_component(Glossary)]
pub fn glossary(p: &GlossaryProps) -> Html {
    let close = {
        let on = p.on_term.clone();
        Callback::from(move |_: MouseEvent| on.emit(None))
    };
    html! {
      <>
        { for p.open.and_then(term).map(|e| html!{
            <aside class="term-pop" role="dialog" aria-label={Text::new("ui.glossary.entry").arg("title", e.title(p.lang)).render(p.lang)} data-testid="term-pop">
              <b>{e.title(p.lang)}</b><p>{e.text(p.lang)}</p>
              <button type="button" onclick={close} data-testid="term-close">{t(p.lang, "ui.close")}</button>
              <a href={format!("#g-{}", e.key)}>{t(p.lang, "ui.in-glossary")}</a>
            </aside> }) }
        <details class="glossary" id="glossary">
          <summary>{t(p.lang, "ui.glossary")}</summary>
          <dl>{ for TERMS.iter().map(|e| html!{ <><dt id={format!("g-{}", e.key)}>{e.title(p.lang)}</dt><dd>{e.text(p.lang)}</dd></> }) }</dl>
        </details>
      </>
    }
}
