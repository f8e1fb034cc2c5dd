//! The run as a line to scrub, with its key moments marked.

use super::*;

#[derive(Properties, PartialEq)]
pub struct ScrubberProps {
    pub lang: Lang,
    pub pos: usize,
    pub horizon: usize,
    /// Key moments: (position, kind), at most a few hundred (binned by the caller).
    pub marks: Vec<(usize, crate::model::Mark)>,
    /// Go to a point of the run.
    pub on_seek: Callback<usize>,
}

/// The run so far as a line: drag to any point of it; its key moments are marked.
#[function_component(Scrubber)]
pub fn scrubber(p: &ScrubberProps) -> Html {
    use crate::model::Mark;
    let l = p.lang;
    let oninput = {
        let on = p.on_seek.clone();
        Callback::from(move |e: InputEvent| {
            let v = e.target_unchecked_into::<HtmlInputElement>().value();
            if let Ok(pos) = v.parse() {
                on.emit(pos);
            }
        })
    };
    let max = p.horizon.max(1) as f64;
    let sym = |m: Mark| match m {
        Mark::Pop => ("▲", "ui.mark.pop"),
        Mark::Timeout => ("✕", "ui.mark.timeout"),
        Mark::Requeue => ("↺", "ui.mark.requeue"),
        Mark::ByHand => ("✎", "ui.mark.by-hand"),
    };
    html! {
      <div class="scrubber" data-testid="scrubber">
        <div class="marks" aria-hidden="true">
          { for p.marks.iter().map(|&(pos, m)| {
              let (s, k) = sym(m);
              html!{ <span class={classes!("mark", k.replace("ui.mark.", "m-"))} data-pos={pos.to_string()}
                           style={format!("left: {:.2}%", pos as f64 / max * 100.0)} title={t(l, k)}>{s}</span> }
          }) }
        </div>
        <input type="range" min="0" max={p.horizon.to_string()} value={p.pos.to_string()} step="1"
               data-testid="timeline" aria-label={t(l, "ui.timeline")} {oninput}
               aria-valuetext={Text::new("ui.timeline.at").arg("pos", p.pos).arg("horizon", p.horizon).render(l)}/>
        <span class="at" data-testid="timeline-at">{Text::new("ui.timeline.at").arg("pos", p.pos).arg("horizon", p.horizon).render(l)}</span>
        <span class="legend">{t(l, "ui.marks")}</span>
      </div>
    }
}
