//! What survived the crash, next to what nsqd v1.3 would have kept.

use super::*;

#[derive(Properties, PartialEq)]
pub struct CrashProps {
    pub lang: Lang,
    /// How many were ready in memory, ready on disk, in flight, deferred at the crash.
    pub counts: [usize; 4],
}

/// What survived the crash here, next to what nsqd v1.3 would have kept.
#[function_component(CrashPanel)]
pub fn crash_panel(p: &CrashProps) -> Html {
    let l = p.lang;
    let rows = [
        (
            "crash.row.memory",
            ["crash.back", "crash.lost", "crash.back"],
        ),
        (
            "crash.row.disk",
            ["crash.back", "crash.synced", "crash.back"],
        ),
        (
            "crash.row.flight",
            ["crash.again", "crash.lost", "crash.again"],
        ),
        (
            "crash.row.deferred",
            ["crash.on-time", "crash.lost", "crash.early"],
        ),
    ];
    html! {
      <section class="crash" data-testid="crash">
        <h3>{t(l, "crash.title")}</h3>
        <table>
          <thead><tr>
            <th>{t(l, "crash.kind")}</th><th>{t(l, "crash.nsqlab")}</th><th>{t(l, "crash.nsqd.kill")}</th><th>{t(l, "crash.nsqd.clean")}</th>
          </tr></thead>
          <tbody>{ for rows.iter().zip(p.counts).map(|((row, outcomes), n)| html!{
            <tr data-row={row.to_string()} data-count={n.to_string()}>
              <th>{Text::new(row).arg("n", n).render(l)}</th>
              { for outcomes.iter().map(|o| html!{
                  <td class={o.replace("crash.", "o-")}>{t(l, o)}</td> }) }
            </tr>
          }) }</tbody>
        </table>
        <p class="hint">{t(l, "crash.note")}</p>
      </section>
    }
}
