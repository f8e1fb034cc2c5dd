//! The topology: producers → topics → channels → consumers, each a box with its counters.

use super::*;

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
    /// After a `kill -9`: what the store on disk holds and the restart has not given back.
    pub stored: Vec<Token>,
    pub stored_n: usize,
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
    /// Its connection is up (the broker's kill takes it down until it connects again).
    pub connected: bool,
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

#[derive(Properties, PartialEq)]
pub struct TopologyProps {
    pub lang: Lang,
    pub lab: usize,
    pub producers: Vec<ProducerCard>,
    pub topics: Vec<TopicCard>,
    pub channels: Vec<ChannelCard>,
    pub consumers: Vec<ConsumerCard>,
    pub highlight: Option<String>,
    /// The broker was killed and has not started again.
    #[prop_or_default]
    pub down: bool,
    pub on_term: Callback<&'static str>,
    /// The consumers' controls.
    pub hands: ConsumerHands,
}

/// What a consumer's controls ask for; each names its lab and client.
#[derive(Clone, PartialEq)]
pub struct ConsumerHands {
    /// A setting as typed.
    pub tune: Callback<(usize, ClientId, Knob, String)>,
    /// Crash it, or bring it back.
    pub crash: Callback<(usize, ClientId)>,
    /// Disconnect it.
    pub remove: Callback<(usize, ClientId)>,
}

/// Producers → topics → channels → consumers.
#[function_component(Topology)]
pub fn topology(p: &TopologyProps) -> Html {
    let hot = |x: &Token| p.highlight.as_deref() == Some(x.id.as_str());
    let l = p.lang;
    html! {
      <div class={classes!("topology", p.down.then_some("down"))} data-testid="topology" data-down={p.down.then_some("true")}>
        { if p.down { html!{ <p class="down-banner" role="status" data-testid="down">{t(l, "ui.down")}</p> } } else { html!{} } }
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
          { for p.consumers.iter().map(|c| consumer_box(l, c, p.lab, &p.hands, &p.on_term)) }
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
        <div class="queue memory" data-testid="memory" data-count={c.in_memory.to_string()} data-size={c.mem_queue_size.to_string()}>
          <span class="label">{term_button(l, on_term, t(l, "ui.memory"), "memory-queue")}{" "}{Text::new("ui.of").arg("n", c.in_memory).arg("size", c.mem_queue_size).render(l)}</span>
          { for c.memory.iter().map(|t| token(t, hot(t), true)) }
          { if c.in_memory > c.memory.len() { html!{ <span class="more">{format!("+{}", c.in_memory - c.memory.len())}</span> } } else { html!{} } }
        </div>
        { if c.stored_n > 0 { html!{
          <div class="queue store" data-testid="store" data-count={c.stored_n.to_string()}>
            <span class="label">{term_button(l, on_term, t(l, "ui.store"), "store")}{format!(" {}", c.stored_n)}</span>
            { for c.stored.iter().map(|t| token(t, hot(t), true)) }
            { if c.stored_n > c.stored.len() { html!{ <span class="more">{format!("+{}", c.stored_n - c.stored.len())}</span> } } else { html!{} } }
          </div> } } else { html!{} } }
        { if c.on_disk > 0 { html!{
          <div class="queue disk" data-testid="disk" data-count={c.on_disk.to_string()}>
            <span class="label">{term_button(l, on_term, t(l, "ui.disk"), "disk-backlog")}{format!(" {}", c.on_disk)}</span>
            { for c.disk.iter().map(|t| token(t, hot(t), true)) }
            { if !c.disk.is_empty() && c.on_disk > c.disk.len() { html!{ <span class="more">{format!("+{}", c.on_disk - c.disk.len())}</span> } } else { html!{} } }
          </div> } } else { html!{} } }
      </div>
    }
}

/// A topic without channels: what it holds, in memory and on disk.
pub fn topic_box(
    l: Lang,
    name: &str,
    n: crate::live::TopicCounts,
    size: usize,
    on_term: &Callback<&'static str>,
) -> Html {
    let in_memory = n.depth.saturating_sub(n.on_disk);
    html! {
      <div class="node topic" data-topic={name.to_string()} data-testid="bare-topic">
        <b>{name.to_string()}</b>
        <div class="note">{t(l, "ui.live.bare")}</div>
        <div class="counters">
          { counter(l, on_term, "depth", "ui.c.depth", Some("depth"), n.depth) }
          { counter(l, on_term, "messages", "ui.c.messages", None, n.messages) }
        </div>
        <div class="queue memory" data-testid="memory" data-count={in_memory.to_string()} data-size={size.to_string()}>
          <span class="label">{term_button(l, on_term, t(l, "ui.memory"), "memory-queue")}{" "}{Text::new("ui.of").arg("n", in_memory).arg("size", size).render(l)}</span>
        </div>
        { if n.on_disk > 0 { html!{
          <div class="queue disk" data-testid="disk" data-count={n.on_disk.to_string()}>
            <span class="label">{term_button(l, on_term, t(l, "ui.disk"), "disk-backlog")}{format!(" {}", n.on_disk)}</span>
          </div> } } else { html!{} } }
      </div>
    }
}

fn consumer_box(
    l: Lang,
    c: &ConsumerCard,
    lab: usize,
    h: &ConsumerHands,
    on_term: &Callback<&'static str>,
) -> Html {
    let client = c.id;
    let tune = |knob: Knob| {
        h.tune.reform(move |e: Event| {
            let value = e.target_unchecked_into::<HtmlInputElement>().value();
            (lab, client, knob, value)
        })
    };
    let crash = h.crash.reform(move |_: MouseEvent| (lab, client));
    let remove = h.remove.reform(move |_: MouseEvent| (lab, client));
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
      <div class={classes!("node", "consumer", c.crashed.then_some("crashed"), (!c.connected).then_some("gone"))} data-client={c.id.to_string()}>
        <b>{c.name.clone()}</b>{ if c.crashed { html!{ <span class="tag">{" "}{t(l, "ui.crashed")}</span> } } else { html!{} } }
        { if c.connected { html!{} } else { html!{ <span class="tag gone" data-testid="consumer-disconnected">{" "}{t(l, "ui.disconnected")}</span> } } }
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
