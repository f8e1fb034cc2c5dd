//! A guided tour's chapter.

use super::*;

#[derive(Properties, PartialEq)]
pub struct TourProps {
    pub lang: Lang,
    pub scenario: &'static str,
    pub chapter: usize,
    pub chapters: usize,
    /// The question: how many options and the right one.
    pub question: Option<(usize, usize)>,
    pub predicted: Option<usize>,
    pub reached: bool,
    pub on_term: Callback<&'static str>,
    /// The tour's buttons.
    pub hands: TourHands,
}

/// What a tour's buttons ask for.
#[derive(Clone, PartialEq)]
pub struct TourHands {
    /// Option `n` (from 1) as the prediction.
    pub predict: Callback<usize>,
    pub next_chapter: Callback<()>,
    pub end: Callback<()>,
}

/// A guided tour's chapter: what it is about, a prediction to make, the answer the run shows.
#[function_component(TourPanel)]
pub fn tour_panel(p: &TourProps) -> Html {
    let l = p.lang;
    let key = |part: &str| format!("tour.{}.{}.{part}", p.scenario, p.chapter + 1);
    let h = &p.hands;
    let click = |c: &Callback<()>| c.reform(|_: MouseEvent| ());
    // Keyboard: a new chapter (and the tour's start) takes the focus, so its question and
    // answers are the next Tabs, not the top of the page.
    let heading = use_node_ref();
    {
        let heading = heading.clone();
        use_effect_with((p.scenario, p.chapter), move |_| {
            if let Some(h) = heading.cast::<web_sys::HtmlElement>() {
                let _ = h.focus();
            }
        });
    }
    let last = p.chapter + 1 == p.chapters;
    let can_go_on = p.question.is_none() || p.predicted.is_some();
    html! {
      <section class="tour" data-testid="tour" data-chapter={(p.chapter + 1).to_string()} aria-live="polite">
        <div class="tour-head">
          <span class="tour-n">{Text::new("ui.tour.chapter").arg("n", p.chapter + 1).arg("of", p.chapters).render(l)}</span>
          <button type="button" class="link" data-testid="tour-end" onclick={click(&h.end)}>{t(l, "ui.tour.end")}</button>
        </div>
        <h2 ref={heading} tabindex="-1" data-testid="tour-title">{t(l, &key("title"))}</h2>
        <p><Words lang={l} on_term={Some(p.on_term.clone())} text={t(l, &key("text"))}/></p>
        { if !p.reached && p.predicted.is_none() { html!{ <p class="refusal">{t(l, "ui.tour.unreached")}</p> } } else { html!{} } }
        { for p.question.map(|(options, answer)| html!{
            <div class="question" role="group" aria-label={t(l, &key("q"))}>
              <p class="hint">{t(l, "ui.tour.predict")}</p>
              <b>{t(l, &key("q"))}</b>
              <div class="options">
                { for (1..=options).map(|i| {
                    let chosen = p.predicted == Some(i);
                    let cls = classes!(
                        "option",
                        chosen.then_some("chosen"),
                        (p.predicted.is_some() && i == answer).then_some("right"),
                        (chosen && i != answer).then_some("wrong"),
                    );
                    html!{ <button type="button" class={cls} data-testid={format!("option-{i}")} disabled={p.predicted.is_some()}
                                   aria-pressed={chosen.to_string()} onclick={h.predict.reform(move |_: MouseEvent| i)}>{t(l, &key(&format!("a{i}")))}</button> }
                }) }
              </div>
              { for p.predicted.map(|k| {
                  let verdict = if k == answer {
                      t(l, "ui.tour.right").to_string()
                  } else {
                      Text::new("ui.tour.wrong").arg("answer", t(l, &key(&format!("a{answer}")))).render(l)
                  };
                  html!{ <p class={classes!("verdict", if k == answer { "right" } else { "wrong" })} data-testid="verdict">
                    <b>{verdict}</b>{" "}{t(l, &key("why"))}</p> }
              }) }
            </div>
        }) }
        <button type="button" class="next" data-testid="tour-next" disabled={!can_go_on} onclick={click(&h.next_chapter)}>
          { if last { t(l, "ui.tour.finish") } else { t(l, "ui.tour.next") } }</button>
      </section>
    }
}
