//! The algorithm beside each step.

use super::*;

#[derive(Properties, PartialEq)]
pub struct AlgoProps {
    pub lang: Lang,
    /// The block and the line (from 1) of the current step.
    pub at: (crate::algo::Block, usize),
}

/// The algorithm at this step: pseudo-code with the current line marked, and how nsqd does it.
#[function_component(AlgoPanel)]
pub fn algo_panel(p: &AlgoProps) -> Html {
    let (block, line) = p.at;
    let l = p.lang;
    let title = format!("algo.{}.title", block.name());
    let nsqd = format!("algo.{}.nsqd", block.name());
    html! {
      <section class="algo" data-testid="algo" data-block={block.name()} data-line={line.to_string()}>
        <h3>{t(l, "ui.algo")}{" · "}{t(l, &title)}</h3>
        <pre>{ for block.line_keys().into_iter().enumerate().map(|(i, k)| {
            let hot = i + 1 == line;
            html!{ <span class={classes!("line", hot.then_some("hot"))} aria-current={hot.then_some("step")}>{t(l, k)}{"\n"}</span> }
        }) }</pre>
        <details class="nsqd"><summary>{t(l, "ui.algo.nsqd")}</summary><p>{t(l, &nsqd)}</p></details>
      </section>
    }
}
