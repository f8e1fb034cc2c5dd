//! The page's parts: text with glossary links, the topology (producers → topics → channels →
//! consumers), the in-flight window, the step log, the lateness chart, the forms and the
//! glossary. Each takes plain data as props.

use super::Dispatch;
use crate::forms::Field;
use crate::glossary::{pieces, term, Piece, TERMS};
use crate::i18n::{t, Lang, Text};
use crate::lab::{Admin, Answer};
use crate::model::{Action, Knob};
use crate::view::{secs, ServerCounts};
use nsqlab_core::time::{Time, MILLISECOND};
use nsqlab_core::{ClientId, MessageId};
use web_sys::HtmlInputElement;
use yew::prelude::*;

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

/// A producer box.
#[derive(Debug, Clone, PartialEq)]
pub struct ProducerCard {
    pub id: ClientId,
    pub name: String,
    pub published: u64,
    pub connected: bool,
}

/// A topic box, with the messages it holds for lack of a channel.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicCard {
    pub name: String,
    pub held: Vec<Token>,
}

/// A channel box.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelCard {
    pub topic: String,
    pub name: String,
    pub depth: u64,
    pub deferred: usize,
    pub in_flight: usize,
    pub finished: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub memory: Vec<Token>,
    pub disk: Vec<Token>,
    pub in_memory: usize,
    pub on_disk: usize,
    pub mem_queue_size: usize,
    /// The broker's own depth, deferred and in-flight counts, when the drawing is between
    /// instants (for tests: they must equal the drawn ones).
    pub core: Option<[u64; 3]>,
    /// Live mode: the server's counters.
    pub server: Option<ServerCounts>,
}

/// A consumer box.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerCard {
    pub id: ClientId,
    pub name: String,
    pub channel: String,
    pub rdy: i64,
    pub in_flight: usize,
    pub received: u64,
    pub finished: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub work_ms: u64,
    pub fail: u64,
    pub crashed: bool,
    pub refusals: Vec<(Knob, String)>,
}

/// Chips drawn per queue (the rest are counted).
pub const CHIPS: usize = 24;

#[derive(Properties, PartialEq)]
pub struct TopologyProps {
    pub lang: Lang,
    pub lab: usize,
    pub producers: Vec<ProducerCard>,
    pub topics: Vec<TopicCard>,
    pub channels: Vec<ChannelCard>,
    pub consumers: Vec<ConsumerCard>,
    pub highlight: Option<String>,
    pub dispatch: Dispatch,
    pub on_term: Callback<&'static str>,
}

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

/// Producers → topics → channels → consumers.
#[function_component(Topology)]
pub fn topology(p: &TopologyProps) -> Html {
    let hot = |x: &Token| p.highlight.as_deref() == Some(x.id.as_str());
    let l = p.lang;
    html! {
      <div class="topology" data-testid="topology">
        <div class="col producers"><h3>{t(l, "ui.producers")}</h3>
          { for p.producers.iter().map(|pr| html!{
              <div class={classes!("node", "producer", (!pr.connected).then_some("gone"))} data-client={pr.id.to_string()}>
                <b>{pr.name.clone()}</b>
                <div class="meta">{Text::new("ui.published").arg("n", pr.published).render(l)}
                  { if pr.connected { html!{} } else { html!{ <>{" · "}{t(l, "ui.disconnected")}</> } } }</div>
              </div> }) }
          { if p.producers.is_empty() { html!{ <p class="hint">{t(l, "ui.producers.none")}</p> } } else { html!{} } }
        </div>
        <div class="arrow" aria-hidden="true">{"→"}</div>
        <div class="col topics"><h3>{term_button(l, &p.on_term, t(l, "ui.topics"), "topic")}</h3>
          { for p.topics.iter().map(|tc| html!{
              <div class="node topic" data-topic={tc.name.clone()}>
                <b>{tc.name.clone()}</b>
                { if tc.held.is_empty() { html!{} } else { html!{
                    <div class="chips" aria-label={t(l, "ui.held.aria")}>
                      <span class="label">{t(l, "ui.held")}</span>{ for tc.held.iter().map(|c| token(c, hot(c), true)) }
                    </div> } } }
              </div> }) }
        </div>
        <div class="arrow" aria-hidden="true">{"→"}</div>
        <div class="col channels"><h3>{term_button(l, &p.on_term, t(l, "ui.channels"), "channel")}</h3>
          { for p.channels.iter().map(|c| channel_box(l, c, p.highlight.as_deref(), &p.on_term)) }
        </div>
        <div class="arrow" aria-hidden="true">{"→"}</div>
        <div class="col consumers"><h3>{t(l, "ui.consumers")}</h3>
          { for p.consumers.iter().map(|c| consumer_box(l, c, p.lab, &p.dispatch, &p.on_term)) }
          { if p.consumers.is_empty() { html!{ <p class="hint">{t(l, "ui.consumers.none")}</p> } } else { html!{} } }
        </div>
      </div>
    }
}

/// A channel's box: its counters, its memory queue and disk backlog as tokens.
pub fn channel_box(
    l: Lang,
    c: &ChannelCard,
    highlight: Option<&str>,
    on_term: &Callback<&'static str>,
) -> Html {
    let hot = |x: &Token| highlight == Some(x.id.as_str());
    let core = c.core.map(|[d, f, i]| format!("{d},{f},{i}"));
    html! {
      <div class="node channel" data-channel={c.name.clone()} data-key={format!("{}/{}", c.topic, c.name)} data-core={core}>
        <b>{format!("{}/{}", c.topic, c.name)}</b>
        <div class="counters">
          { counter(l, on_term, "depth", "ui.c.depth", Some("depth"), c.depth) }
          { counter(l, on_term, "deferred", "ui.c.deferred", Some("deferred"), c.deferred as u64) }
          { counter(l, on_term, "in-flight", "ui.c.inflight", Some("in-flight"), c.in_flight as u64) }
          { match c.server {
              Some(s) => html!{ <>
                { counter(l, on_term, "messages", "ui.c.messages", None, s.messages) }
                { counter(l, on_term, "requeued", "ui.c.requeued", Some("req"), s.requeued) }
                { counter(l, on_term, "timed-out", "ui.c.timedout", Some("msg-timeout"), s.timed_out) }
                { counter(l, on_term, "clients", "ui.c.clients", None, s.clients) }
              </> },
              None => html!{ <>
                { counter(l, on_term, "finished", "ui.c.finished", Some("fin"), c.finished) }
                { counter(l, on_term, "requeued", "ui.c.requeued", Some("req"), c.requeued) }
                { counter(l, on_term, "timed-out", "ui.c.timedout", Some("msg-timeout"), c.timed_out) }
              </> },
          } }
        </div>
        <div class="queue memory" data-testid="memory">
          <span class="label">{term_button(l, on_term, t(l, "ui.memory"), "memory-queue")}{" "}{Text::new("ui.of").arg("n", c.in_memory).arg("size", c.mem_queue_size).render(l)}</span>
          { for c.memory.iter().map(|t| token(t, hot(t), true)) }
          { if c.in_memory > c.memory.len() { html!{ <span class="more">{format!("+{}", c.in_memory - c.memory.len())}</span> } } else { html!{} } }
        </div>
        { if c.on_disk > 0 { html!{
          <div class="queue disk" data-testid="disk" data-count={c.on_disk.to_string()}>
            <span class="label">{term_button(l, on_term, t(l, "ui.disk"), "disk-backlog")}{format!(" {}", c.on_disk)}</span>
            { for c.disk.iter().map(|t| token(t, hot(t), true)) }
            { if c.on_disk > c.disk.len() { html!{ <span class="more">{format!("+{}", c.on_disk - c.disk.len())}</span> } } else { html!{} } }
          </div> } } else { html!{} } }
      </div>
    }
}

fn consumer_box(
    l: Lang,
    c: &ConsumerCard,
    lab: usize,
    d: &Dispatch,
    on_term: &Callback<&'static str>,
) -> Html {
    let client = c.id;
    let tune = |knob: Knob| {
        let d = d.clone();
        Callback::from(move |e: Event| {
            let value = e.target_unchecked_into::<HtmlInputElement>().value();
            d.dispatch(Action::Tune {
                lab,
                client,
                knob,
                value,
            });
        })
    };
    let crash = {
        let d = d.clone();
        Callback::from(move |_: MouseEvent| d.dispatch(Action::ToggleCrash { lab, client }))
    };
    let remove = {
        let d = d.clone();
        Callback::from(move |_: MouseEvent| d.dispatch(Action::RemoveConsumer { lab, client }))
    };
    let refusal = |k: Knob| {
        c.refusals
            .iter()
            .find(|(x, _)| *x == k)
            .map(|(_, t)| t.clone())
    };
    let field = |k: Knob, label: &'static str, value: String, testid: &'static str| {
        let err = refusal(k);
        let id = format!("c{}-{lab}-{testid}", client.0);
        html! {
          <label class="knob">{t(l, label)}{" "}
            <input type="text" inputmode="numeric" size="5" {id} value={value} data-testid={testid}
                   aria-invalid={err.is_some().then_some("true")} onchange={tune(k)}/>
            { for err.map(|e| html!{ <span class="refusal" role="alert" data-testid={format!("{testid}-refusal")}>{e}</span> }) }
          </label>
        }
    };
    html! {
      <div class={classes!("node", "consumer", c.crashed.then_some("crashed"))} data-client={c.id.to_string()}>
        <b>{c.name.clone()}</b>{ if c.crashed { html!{ <span class="tag">{" "}{t(l, "ui.crashed")}</span> } } else { html!{} } }
        <div class="meta" data-testid="consumer-meta">
          <Words lang={l} on_term={Some(on_term.clone())}
                 text={Text::new("ui.consumer.meta").arg("channel", &c.channel).arg("rdy", c.rdy).arg("work", c.work_ms).arg("fail", c.fail).render(l)}/>
        </div>
        <div class="counters" data-testid="consumer-counts">
          <span data-testid="c-in-flight">{Text::new("ui.cc.inflight").arg("n", c.in_flight).render(l)}</span>
          <span data-testid="c-received">{Text::new("ui.cc.received").arg("n", c.received).render(l)}</span>
          <span data-testid="c-finished">{Text::new("ui.cc.finished").arg("n", c.finished).render(l)}</span>
          <span data-testid="c-requeued">{Text::new("ui.cc.req").arg("n", c.requeued).render(l)}</span>
          <span data-testid="c-timed-out">{Text::new("ui.cc.timedout").arg("n", c.timed_out).render(l)}</span>
        </div>
        <div class="ctl" data-testid="consumer-controls">
          { field(Knob::Rdy, "ui.f.rdy", c.rdy.to_string(), "rdy") }
          { field(Knob::Work, "knob.work", c.work_ms.to_string(), "work") }
          { field(Knob::Fail, "knob.fail", c.fail.to_string(), "fail") }
          <button type="button" data-testid="crash" onclick={crash} aria-pressed={c.crashed.to_string()}
                  title={t(l, "ui.crash.title")}>{ if c.crashed { t(l, "ui.recover") } else { t(l, "ui.crash") } }</button>
          <button type="button" data-testid="remove-consumer" onclick={remove} aria-label={Text::new("ui.disconnect").arg("who", &c.name).render(l)} title={t(l, "ui.disconnect.title")}>{"✕"}</button>
        </div>
      </div>
    }
}

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
    /// Without it the rows have no buttons (live mode).
    #[prop_or_default]
    pub dispatch: Option<Dispatch>,
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
                let Some(d) = p.dispatch.clone() else { return html!{} };
                let (lab, client, id) = (p.lab, r.client, r.msg);
                html!{ <button type="button" aria-label={Text::new("ui.answer").arg("cmd", name).arg("label", &r.token.label).render(p.lang)}
                    onclick={Callback::from(move |_: MouseEvent| d.dispatch(Action::Answer { lab, client, id, what }))}>{name.to_string()}</button> }
            };
            html!{ <div class={classes!("row", p.dispatch.is_none().then_some("ro"))} data-id={r.token.id.clone()} data-client={r.client.to_string()} data-flip={r.token.id.clone()}>
              { token(&r.token, p.highlight.as_deref() == Some(r.token.id.as_str()), false) }
              <span class="who">{Text::new("ui.inflight.row").arg("who", &r.who).arg("n", r.attempts).render(p.lang)}</span>
              <span class="bar" role="meter" aria-label={t(p.lang, "ui.timeleft")} aria-valuemin="0" aria-valuemax="100" aria-valuenow={format!("{:.0}", left * 100.0)}>
                <span class="fill" style={format!("width:{:.0}%", left * 100.0)}></span></span>
              <span class="left">{format!("{:.1} s", r.deadline.saturating_sub(p.now) as f64 / 1e9)}</span>
              { if p.dispatch.is_some() { html!{ <span class="answers">{ answer(Answer::Fin, "FIN") }{ answer(Answer::Req, "REQ") }{ answer(Answer::Touch, "TOUCH") }</span> } } else { html!{} } }
            </div> }
        }) }
      </section>
    }
}

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

/// One lab's lateness figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub title: String,
    /// Bars in the order messages came due: a message's token and how late it was (ns), or,
    /// past [`BARS`] messages, the latest of each run of them.
    pub points: Vec<(Token, Time)>,
    /// Messages the bars stand for, how late they were at most and on average (ns).
    pub count: usize,
    pub max: Time,
    pub mean: f64,
}

/// Bars drawn per chart at most.
pub const BARS: usize = 120;

impl Series {
    /// Bars for every (token, lateness) in order, at most [`BARS`] of them.
    pub fn new(title: String, all: Vec<(Token, Time)>) -> Series {
        let count = all.len();
        let max = all.iter().map(|x| x.1).max().unwrap_or(0);
        let mean = all.iter().map(|x| x.1 as f64).sum::<f64>() / count.max(1) as f64;
        let per = count.div_ceil(BARS).max(1);
        let points = all
            .chunks(per)
            .filter_map(|run| run.iter().max_by_key(|x| x.1).cloned())
            .collect();
        Series {
            title,
            points,
            count,
            max,
            mean,
        }
    }
}

#[derive(Properties, PartialEq)]
pub struct ChartProps {
    pub series: Vec<Series>,
    pub lang: Lang,
}

/// A round top for an axis: 10, 20, 50, 100, 200, 500… ms.
fn nice_ms(max_ms: f64) -> f64 {
    let mut step = 10.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if step * m >= max_ms {
                return step * m;
            }
        }
        step *= 10.0;
    }
}

/// How late each deferred message was delivered, per lab, with axes in milliseconds.
#[function_component(LatenessChart)]
pub fn lateness_chart(p: &ChartProps) -> Html {
    let max = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|x| x.1))
        .max()
        .unwrap_or(0);
    let top = nice_ms(max as f64 / MILLISECOND as f64);
    let (w, h, left, bottom) = (460.0, 160.0, 52.0, 34.0);
    let plot_h = h - bottom - 10.0;
    let y = |ms: f64| 10.0 + plot_h * (1.0 - ms / top);
    html! {
      <section class="lateness" data-testid="lateness">
        <h3>{t(p.lang, "ui.chart.title")}</h3>
        <div class="charts">
        { for p.series.iter().map(|s| {
            let n = s.points.len().max(1);
            let bw = ((w - left - 8.0) / n as f64).min(24.0);
            let ms = |t: f64| t / MILLISECOND as f64;
            let summary = if s.count == 0 {
                t(p.lang, "ui.chart.none").to_string()
            } else {
                let mut x = Text::new("ui.chart.summary")
                    .arg("n", s.count)
                    .arg("max", format!("{:.0}", ms(s.max as f64)))
                    .arg("mean", format!("{:.1}", ms(s.mean)))
                    .render(p.lang);
                if s.count > s.points.len() {
                    x.push_str(&Text::new("ui.chart.binned").arg("k", s.count.div_ceil(BARS)).render(p.lang));
                }
                x
            };
            html!{
            <figure class="series">
              <figcaption><b>{s.title.clone()}</b><span class="summary" data-testid="lateness-summary">{summary}</span></figcaption>
              <svg viewBox={format!("0 0 {w} {h}")} class="bars" role="img" aria-label={Text::new("ui.chart.aria").arg("title", &s.title).render(p.lang)}>
                <line class="axis" x1={left.to_string()} y1="10" x2={left.to_string()} y2={(h - bottom).to_string()}/>
                <line class="axis" x1={left.to_string()} y1={(h - bottom).to_string()} x2={(w - 4.0).to_string()} y2={(h - bottom).to_string()}/>
                { for [0.0, top / 2.0, top].iter().map(|&v| html!{ <>
                    <line class="tick" x1={(left - 4.0).to_string()} x2={(w - 4.0).to_string()} y1={y(v).to_string()} y2={y(v).to_string()}/>
                    <text class="ylab" x={(left - 6.0).to_string()} y={(y(v) + 4.0).to_string()}>{format!("{v:.0} ms")}</text>
                </> }) }
                <text class="xlab" x={((w + left) / 2.0).to_string()} y={(h - 6.0).to_string()}>{t(p.lang, "ui.chart.x")}</text>
                { for s.points.iter().enumerate().map(|(i, (tok, late))| {
                    let ms = *late as f64 / MILLISECOND as f64;
                    let bh = (plot_h * ms / top).max(1.5);
                    html!{ <rect x={(left + 2.0 + i as f64 * bw).to_string()} y={(h - bottom - bh).to_string()} width={(bw * 0.8).max(1.0).to_string()} height={bh.to_string()}
                                 data-late-ms={format!("{ms:.0}")} style={format!("--h: {}", tok.hue)}>
                      <title>{Text::new("ui.chart.bar").arg("label", &tok.label).arg("ms", format!("{ms:.0}")).render(p.lang)}</title></rect> }
                }) }
              </svg>
            </figure> }
        }) }
        </div>
      </section>
    }
}

#[derive(Properties, PartialEq)]
pub struct FieldProps {
    pub field: Field,
    /// The words of its label (already in the page's language).
    pub label: AttrValue,
    pub value: AttrValue,
    pub refusal: Option<AttrValue>,
    pub size: u32,
    pub dispatch: Dispatch,
    #[prop_or_default]
    pub hint: Option<AttrValue>,
}

/// A form field whose value lives in the model, with its refusal beside it.
#[function_component(FormField)]
pub fn form_field(p: &FieldProps) -> Html {
    let f = p.field;
    let d = p.dispatch.clone();
    let oninput = Callback::from(move |e: InputEvent| {
        let v = e.target_unchecked_into::<HtmlInputElement>().value();
        d.dispatch(Action::Edit(f, v));
    });
    let err_id = format!("{}-refusal", f.id());
    html! {
      <label class="field">
        <span class="name">{p.label.clone()}</span>
        <input id={f.id()} value={p.value.clone()} {oninput} size={p.size.to_string()}
               aria-invalid={p.refusal.is_some().then_some("true")}
               aria-describedby={p.refusal.is_some().then(|| err_id.clone())} title={p.hint.clone()}/>
        { for p.refusal.clone().map(|r| html!{ <span class="refusal" id={err_id} role="alert" data-testid={format!("{}-refusal", f.id())}>{r}</span> }) }
      </label>
    }
}

#[derive(Properties, PartialEq)]
pub struct FormsProps {
    pub fields: Vec<(Field, String, Option<String>)>,
    pub dispatch: Dispatch,
    pub lang: Lang,
}

impl FormsProps {
    fn get(&self, f: Field) -> (AttrValue, Option<AttrValue>) {
        self.fields
            .iter()
            .find(|x| x.0 == f)
            .map(|x| (x.1.clone().into(), x.2.clone().map(Into::into)))
            .unwrap_or_default()
    }

    fn field(&self, f: Field, label: &'static str, size: u32, hint: &'static str) -> Html {
        let (value, refusal) = self.get(f);
        html! { <FormField field={f} label={t(self.lang, label)} {value} {refusal} {size} dispatch={self.dispatch.clone()} hint={Some(AttrValue::from(t(self.lang, hint)))}/> }
    }
}

/// Publish: PUB, DPUB (with a delay), MPUB (with a count), or several DPUBs.
#[function_component(PublishForm)]
pub fn publish_form(p: &FormsProps) -> Html {
    let d = p.dispatch.clone();
    let onsubmit = Callback::from(move |e: SubmitEvent| {
        e.prevent_default();
        d.dispatch(Action::Publish);
    });
    html! {
      <form class="publish" {onsubmit} aria-label={t(p.lang, "ui.publish")} novalidate=true>
        <b>{t(p.lang, "ui.publish")}</b>
        { p.field(Field::PubTopic, "ui.f.topic", 10, "ui.h.topic") }
        { p.field(Field::PubBody, "ui.f.body", 10, "ui.h.body") }
        { p.field(Field::PubDelay, "ui.f.delay", 7, "ui.h.delay") }
        { p.field(Field::PubCount, "ui.f.count", 4, "ui.h.count") }
        <button type="submit" data-testid="publish">{t(p.lang, "ui.publish")}</button>
      </form>
    }
}

/// Add a consumer; create or delete a topic or channel (nsqd's HTTP admin calls).
#[function_component(ManageForm)]
pub fn manage_form(p: &FormsProps) -> Html {
    let act = |a: Action| {
        let d = p.dispatch.clone();
        Callback::from(move |_: MouseEvent| d.dispatch(a.clone()))
    };
    html! {
      <form class="manage" aria-label={t(p.lang, "ui.manage")} onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())} novalidate=true>
        <b>{t(p.lang, "ui.manage")}</b>
        { p.field(Field::ManageTopic, "ui.f.topic", 10, "ui.h.mtopic") }
        { p.field(Field::ManageChannel, "ui.f.channel", 10, "ui.h.mchannel") }
        { p.field(Field::ManageRdy, "ui.f.rdy", 4, "ui.h.rdy") }
        <span class="buttons">
          <button type="button" data-testid="add-consumer" onclick={act(Action::AddConsumer)}>{t(p.lang, "ui.add-consumer")}</button>
          <button type="button" data-testid="create-topic" onclick={act(Action::Admin(Admin::CreateTopic))}>{t(p.lang, "ui.create-topic")}</button>
          <button type="button" data-testid="create-channel" onclick={act(Action::Admin(Admin::CreateChannel))}>{t(p.lang, "ui.create-channel")}</button>
          <button type="button" data-testid="delete-channel" onclick={act(Action::Admin(Admin::DeleteChannel))}>{t(p.lang, "ui.delete-channel")}</button>
          <button type="button" data-testid="delete-topic" onclick={act(Action::Admin(Admin::DeleteTopic))}>{t(p.lang, "ui.delete-topic")}</button>
        </span>
      </form>
    }
}

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

#[derive(Properties, PartialEq)]
pub struct ScrubberProps {
    pub lang: Lang,
    pub pos: usize,
    pub horizon: usize,
    /// Key moments: (position, kind), at most a few hundred (binned by the caller).
    pub marks: Vec<(usize, crate::model::Mark)>,
    pub dispatch: Dispatch,
}

/// The run so far as a line: drag to any point of it; its key moments are marked.
#[function_component(Scrubber)]
pub fn scrubber(p: &ScrubberProps) -> Html {
    use crate::model::Mark;
    let l = p.lang;
    let oninput = {
        let d = p.dispatch.clone();
        Callback::from(move |e: InputEvent| {
            let v = e.target_unchecked_into::<HtmlInputElement>().value();
            if let Ok(pos) = v.parse() {
                d.dispatch(Action::Seek(pos));
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
    pub dispatch: Dispatch,
    pub on_term: Callback<&'static str>,
}

/// A guided tour's chapter: what it is about, a prediction to make, the answer the run shows.
#[function_component(TourPanel)]
pub fn tour_panel(p: &TourProps) -> Html {
    let l = p.lang;
    let key = |part: &str| format!("tour.{}.{}.{part}", p.scenario, p.chapter + 1);
    let d = &p.dispatch;
    let send = |a: Action| {
        let d = d.clone();
        Callback::from(move |_: MouseEvent| d.dispatch(a.clone()))
    };
    let last = p.chapter + 1 == p.chapters;
    let can_go_on = p.question.is_none() || p.predicted.is_some();
    html! {
      <section class="tour" data-testid="tour" data-chapter={(p.chapter + 1).to_string()} aria-live="polite">
        <div class="tour-head">
          <span class="tour-n">{Text::new("ui.tour.chapter").arg("n", p.chapter + 1).arg("of", p.chapters).render(l)}</span>
          <button type="button" class="link" data-testid="tour-end" onclick={send(Action::EndTour)}>{t(l, "ui.tour.end")}</button>
        </div>
        <h2>{t(l, &key("title"))}</h2>
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
                                   aria-pressed={chosen.to_string()} onclick={send(Action::Predict(i))}>{t(l, &key(&format!("a{i}")))}</button> }
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
        <button type="button" class="next" data-testid="tour-next" disabled={!can_go_on} onclick={send(Action::NextChapter)}>
          { if last { t(l, "ui.tour.finish") } else { t(l, "ui.tour.next") } }</button>
      </section>
    }
}

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
