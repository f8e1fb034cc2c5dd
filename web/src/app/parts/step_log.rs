//! The step log.

use super::*;

#[derive(Properties, PartialEq)]
pub struct LogProps {
    /// Steps so far.
    pub len: usize,
    /// Steps `from..to` as (time, text).
    pub rows: Callback<(usize, usize), Vec<(Time, String)>>,
    pub wall: bool,
    pub lang: Lang,
}

/// Rows of the step log drawn at a time (the log itself can hold hundreds of thousands).
const ROWS: usize = 9;
const ROW_PX: f64 = 38.0;

/// The whole step log, scrollable; it follows the newest step unless scrolled back. The
/// scroll box is `column-reverse`, so its natural place is the bottom and it stays there as
/// steps are added, with no script (reading `scrollHeight` every render would force a layout).
#[function_component(StepLog)]
pub fn step_log(p: &LogProps) -> Html {
    // `None`: follow the end. `Some(d)`: the reader scrolled to `d` pixels above the end.
    let from_end = use_state(|| None::<f64>);
    let len = p.len;
    let view = ROW_PX * ROWS as f64;
    let first = match *from_end {
        None => len.saturating_sub(ROWS),
        Some(d) => (((len as f64 * ROW_PX - view - d) / ROW_PX).max(0.0) as usize)
            .min(len.saturating_sub(ROWS)),
    };
    let onscroll = {
        let from_end = from_end.clone();
        Callback::from(move |e: Event| {
            let el: web_sys::Element = e.target_unchecked_into();
            // In a column-reverse box, 0 is the end and scrolling back goes negative.
            let d = -(el.scroll_top() as f64);
            from_end.set((d > ROW_PX / 2.0).then_some(d));
        })
    };
    let fmt = |t: Time| {
        if p.wall {
            crate::view::time_of_day(t)
        } else {
            secs(t)
        }
    };
    html! {
      <section class="steplog">
        <h3>{Text::new("ui.log.title").arg("n", len).render(p.lang)}</h3>
        <div class="log" data-testid="log" {onscroll} tabindex="0" role="log" aria-label={Text::new("ui.log.title").arg("n", len).render(p.lang)}
             style={format!("height: {view}px")}>
          <div class="log-inner" style={format!("height: {}px", ROW_PX * len as f64)}>
            { for p.rows.emit((first, (first + ROWS + 1).min(len))).into_iter().enumerate().map(|(k, (at, text))| {
                let i = first + k;
                html!{ <div class="log-row" data-n={(i + 1).to_string()} title={text.clone()} style={format!("top: {}px", ROW_PX * i as f64)}>
                  <span class="n">{i + 1}</span><span class="t">{fmt(at)}</span><span class="x">{text}</span>
                </div> }
            }) }
          </div>
        </div>
      </section>
    }
}
