//! A channel's in-flight window.

use super::*;

/// One in-flight message.
#[derive(Debug, Clone, PartialEq)]
pub struct FlightRow {
    pub token: Token,
    pub msg: MessageId,
    pub client: ClientId,
    pub who: String,
    pub attempts: u16,
    pub sent: Time,
    pub deadline: Time,
}

#[derive(Properties, PartialEq)]
pub struct InFlightProps {
    pub lang: Lang,
    pub lab: usize,
    pub channel: AttrValue,
    pub rows: Vec<FlightRow>,
    pub now: Time,
    pub highlight: Option<String>,
    /// FIN, REQ or TOUCH by hand: (lab, client, message, which). Without it the rows have no
    /// buttons (live mode).
    #[prop_or_default]
    pub on_answer: Option<Callback<(usize, ClientId, MessageId, Answer)>>,
    /// In flight besides the rows (live mode draws the earliest deadlines only).
    #[prop_or_default]
    pub more: u64,
}

/// A channel's in-flight window: each message, whose it is, and the time left.
#[function_component(InFlight)]
pub fn in_flight(p: &InFlightProps) -> Html {
    html! {
      <section class="inflight" data-testid="in-flight-window" data-channel={p.channel.clone()}>
        <h3>{Text::new("ui.inflight.title").arg("channel", &p.channel).render(p.lang)}</h3>
        { for p.rows.iter().map(|r| {
            let left = crate::layout::time_left(r.sent, r.deadline, p.now);
            let answer = |what: Answer, name: &str| -> Html {
                let Some(on) = &p.on_answer else { return html!{} };
                let (lab, client, id) = (p.lab, r.client, r.msg);
                html!{ <button type="button" aria-label={Text::new("ui.answer").arg("cmd", name).arg("label", &r.token.label).render(p.lang)}
                    onclick={on.reform(move |_: MouseEvent| (lab, client, id, what))}>{name.to_string()}</button> }
            };
            html!{ <div class={classes!("row", p.on_answer.is_none().then_some("ro"))} data-id={r.token.id.clone()} data-client={r.client.to_string()} data-flip={r.token.id.clone()}>
              { token(&r.token, p.highlight.as_deref() == Some(r.token.id.as_str()), false) }
              <span class="who">{Text::new("ui.inflight.row").arg("who", &r.who).arg("n", r.attempts).render(p.lang)}</span>
              <span class="bar" role="meter" aria-label={t(p.lang, "ui.timeleft")} aria-valuemin="0" aria-valuemax="100" aria-valuenow={format!("{:.0}", left * 100.0)}>
                <span class="fill" style={format!("width:{:.0}%", left * 100.0)}></span></span>
              <span class="left">{format!("{:.1} s", r.deadline.saturating_sub(p.now) as f64 / 1e9)}</span>
              { if p.on_answer.is_some() { html!{ <span class="answers">{ answer(Answer::Fin, "FIN") }{ answer(Answer::Req, "REQ") }{ answer(Answer::Touch, "TOUCH") }</span> } } else { html!{} } }
            </div> }
        }) }
        { if p.more > 0 { html!{ <div class="row more" data-testid="in-flight-more">{Text::new("ui.inflight.more").arg("n", p.more).render(p.lang)}</div> } } else { html!{} } }
      </section>
    }
}
