//! The Yew app: a scenario's labs, controls, and the views. State lives in the labs (owned in
//! a `use_mut_ref`); a generation counter re-renders after every change; the play timer is an
//! owned `Interval`, dropped to stop.

use crate::lab::{secs, short, time_of_day, ChannelView, Lab};
use crate::layout::{
    flip_keys, flip_moves, heap_node_xy, nodes_in_levels, time_left, visible_levels,
};
use crate::live::{LiveModel, QueuesJson};
use crate::scenarios::{find, Scenario, SCENARIOS};
use gloo_timers::callback::Interval;
use nsqlab_core::time::{ms, MILLISECOND};
use std::cell::Cell;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use web_sys::{HtmlInputElement, HtmlSelectElement, KeyboardEvent};
use yew::prelude::*;

const SPEEDS: &[f64] = &[0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0];
const TICK_MS: u32 = 50;

struct Run {
    scenario: &'static Scenario,
    seed: u64,
    labs: Vec<(&'static str, Lab)>,
    /// What the manage form last refused, if anything.
    status: String,
    /// The forms' fields by input id, kept here so a re-render never resets what the reader
    /// typed.
    fields: std::collections::BTreeMap<&'static str, String>,
}

/// The forms' inputs and their first values.
const FIELDS: &[(&str, &str)] = &[
    ("pub-topic", "orders"),
    ("pub-body", "hello"),
    ("pub-defer", "2000"),
    ("pub-count", "1"),
    ("m-topic", "orders"),
    ("m-channel", "billing"),
    ("m-rdy", "1"),
];

impl Run {
    fn new(scenario: &'static Scenario, seed: u64) -> Run {
        Run {
            scenario,
            seed,
            labs: (scenario.build)(seed),
            status: String::new(),
            fields: FIELDS.iter().map(|&(k, v)| (k, v.to_string())).collect(),
        }
    }

    fn now(&self) -> u64 {
        self.labs.iter().map(|(_, l)| l.now()).max().unwrap_or(0)
    }
}

fn mode() -> String {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    web_sys::UrlSearchParams::new_with_str(&search)
        .ok()
        .and_then(|p| p.get("mode"))
        .unwrap_or_default()
}

fn query() -> (String, u64, f64) {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
    let get = |k: &str| params.as_ref().and_then(|p| p.get(k));
    (
        get("scenario").unwrap_or_else(|| SCENARIOS[0].id.to_string()),
        get("seed").and_then(|s| s.parse().ok()).unwrap_or(1),
        get("speed").and_then(|s| s.parse().ok()).unwrap_or(1.0),
    )
}

fn write_query(scenario: &str, seed: u64, speed: f64) {
    if let Some(w) = web_sys::window() {
        let url = format!("?scenario={scenario}&seed={seed}&speed={speed}");
        if let Ok(h) = w.history() {
            let _ = h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
        }
    }
}

#[function_component(App)]
pub fn app() -> Html {
    if mode() == "live" {
        html! { <LiveApp/> }
    } else {
        html! { <SimApp/> }
    }
}

#[function_component(SimApp)]
fn sim_app() -> Html {
    let (sid, seed0, speed0) = query();
    let run = use_mut_ref(|| Run::new(find(&sid).unwrap_or(&SCENARIOS[0]), seed0));
    let generation = use_state(|| 0u64);
    let playing = use_state(|| false);
    let speed = use_state(|| speed0);
    let refresh = {
        let generation = generation.clone();
        Callback::from(move |_: ()| generation.set(*generation + 1))
    };

    // The play timer: owned by the effect, dropped (cancelled) when play stops.
    {
        let run = run.clone();
        let refresh = refresh.clone();
        let speed = *speed;
        use_effect_with((*playing, speed), move |(on, speed): &(bool, f64)| {
            let timer = on.then(|| {
                let speed = *speed;
                Interval::new(TICK_MS, move || {
                    let mut r = run.borrow_mut();
                    let target = r.now() + (TICK_MS as f64 * speed * MILLISECOND as f64) as u64;
                    for (_, lab) in r.labs.iter_mut() {
                        lab.run_until(target);
                    }
                    drop(r);
                    refresh.emit(());
                })
            });
            move || drop(timer)
        });
    }

    let act = |f: Rc<dyn Fn(&mut Run)>| {
        let run = run.clone();
        let refresh = refresh.clone();
        Callback::from(move |_: MouseEvent| {
            f(&mut run.borrow_mut());
            refresh.emit(());
        })
    };
    let on_step = act(Rc::new(|r: &mut Run| {
        for (_, l) in r.labs.iter_mut() {
            l.step();
        }
    }));
    let on_next = act(Rc::new(|r: &mut Run| {
        for (_, l) in r.labs.iter_mut() {
            l.next_timer();
        }
    }));
    let on_reset = act(Rc::new(|r: &mut Run| *r = Run::new(r.scenario, r.seed)));
    let on_play = {
        let playing = playing.clone();
        Callback::from(move |_: MouseEvent| playing.set(!*playing))
    };
    let on_speed = {
        let speed = speed.clone();
        let run = run.clone();
        Callback::from(move |e: Event| {
            let v: f64 = e
                .target_unchecked_into::<HtmlSelectElement>()
                .value()
                .parse()
                .unwrap_or(1.0);
            speed.set(v);
            let r = run.borrow();
            write_query(r.scenario.id, r.seed, v);
        })
    };
    let pick = |s: &'static Scenario| {
        let run = run.clone();
        let refresh = refresh.clone();
        let playing = playing.clone();
        let speed = *speed;
        Callback::from(move |_: MouseEvent| {
            let seed = run.borrow().seed;
            *run.borrow_mut() = Run::new(s, seed);
            playing.set(false);
            write_query(s.id, seed, speed);
            refresh.emit(());
        })
    };
    // Keyboard: space plays/pauses, → or s steps, n jumps to the next timer, r resets.
    {
        let (on_step, on_next, on_play, on_reset) = (
            on_step.clone(),
            on_next.clone(),
            on_play.clone(),
            on_reset.clone(),
        );
        use_effect_with((), move |_| {
            let doc = web_sys::window().and_then(|w| w.document());
            let handler = wasm_bindgen::closure::Closure::<dyn Fn(KeyboardEvent)>::new(
                move |e: KeyboardEvent| {
                    let tag = e
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .map(|el| el.tag_name())
                        .unwrap_or_default();
                    if tag == "INPUT" || tag == "SELECT" {
                        return;
                    }
                    let click = MouseEvent::new("click").expect("event");
                    match e.key().as_str() {
                        " " => {
                            e.prevent_default();
                            on_play.emit(click)
                        }
                        "ArrowRight" | "s" => on_step.emit(click),
                        "n" => on_next.emit(click),
                        "r" => on_reset.emit(click),
                        _ => {}
                    }
                },
            );
            if let Some(d) = &doc {
                let _ =
                    d.add_event_listener_with_callback("keydown", handler.as_ref().unchecked_ref());
            }
            move || {
                if let Some(d) = doc {
                    let _ = d.remove_event_listener_with_callback(
                        "keydown",
                        handler.as_ref().unchecked_ref(),
                    );
                }
            }
        });
    }

    // Messages glide from where they were to where they are now (FLIP, after each render).
    {
        let places = use_mut_ref(std::collections::HashMap::new);
        use_effect(move || {
            animate_moves(&mut places.borrow_mut());
        });
    }

    let r = run.borrow();
    let now = r.now();
    html! {
      <div class="app">
        <header>
          <h1>{"nsqlab"}<span class="sub">{" — watch a message queue work from the inside"}</span></h1>
          <nav class="scenarios" aria-label="scenarios">
            { for SCENARIOS.iter().map(|s| html! {
                <button class={classes!("scenario", (s.id == r.scenario.id).then_some("active"))}
                        data-scenario={s.id} onclick={pick(s)}>{s.title}</button>
            }) }
            <a class="live-link" href="?mode=live" data-testid="live">{"● live server"}</a>
          </nav>
          <p class="scenario-text" data-testid="scenario-text">{r.scenario.text}</p>
        </header>
        <section class="controls" aria-label="controls">
          <button data-testid="play" onclick={on_play}>{ if *playing { "‖ Pause" } else { "▶ Play" } }</button>
          <button data-testid="step" onclick={on_step} title="one event (→ or s)">{"Step"}</button>
          <button data-testid="next" onclick={on_next} title="jump to the next timer (n)">{"Next timer"}</button>
          <button data-testid="reset" onclick={on_reset} title="start over (r)">{"Reset"}</button>
          <label>{"speed "}
            <select data-testid="speed" onchange={on_speed}>
              { for SPEEDS.iter().map(|s| html! { <option value={s.to_string()} selected={(*s - *speed).abs() < 1e-9}>{format!("{s}×")}</option> }) }
            </select>
          </label>
          <span class="clock" data-testid="clock">{format!("t = {}", secs(now))}</span>
        </section>
        <div class="labs">
          { for r.labs.iter().map(|(label, lab)| lab_view(label, lab, run.clone(), refresh.clone())) }
        </div>
        { lateness_chart(&r.labs) }
        { publish_form(run.clone(), refresh.clone()) }
        { manage_form(run.clone(), refresh.clone()) }
      </div>
    }
}

fn lab_view(label: &str, lab: &Lab, run: Rc<RefCell<Run>>, refresh: Callback<()>) -> Html {
    let last = lab
        .log
        .last()
        .map(|s| s.text.clone())
        .unwrap_or_else(|| "Press Step (→) or Play (space) to begin.".into());
    let heap_chan = lab
        .view
        .heap_channel
        .as_ref()
        .and_then(|k| lab.view.channels.get(k))
        .or_else(|| lab.view.channels.values().next());
    html! {
      <section class="lab" data-label={label.to_string()}>
        { if label.is_empty() { html!{} } else { html!{ <h2>{label}</h2> } } }
        <div class="explain" data-testid="explain" aria-live="polite">{last}</div>
        <ol class="log">{ for lab.log.iter().rev().skip(1).take(5).map(|s| html!{ <li>{format!("{}  {}", secs(s.at), s.text)}</li> }) }</ol>
        { topology(lab, label, run.clone(), refresh.clone()) }
        { heap_chan.map(|c| heap_view(c, &lab.view.heap_marks, lab.view.highlight, None)).unwrap_or_default() }
        { for lab.view.channels.values().filter(|c| !c.in_flight.is_empty()).map(|c| in_flight_view(c, lab.now(), run.clone(), refresh.clone(), label.to_string())) }
      </section>
    }
}

/// At most this many elements are animated (a 10 000-message heap shows far fewer).
const MAX_FLIP: u32 = 600;

/// Measure every `[data-flip]` element; each one whose key was elsewhere in the previous
/// render is drawn at its old place and let glide to its new one (a CSS transition).
/// Places are measured without transforms (a glide still running when the next render comes
/// restarts from where the element was going, never from a half-transformed place).
/// Skipped when the reader asked for reduced motion.
fn animate_moves(places: &mut std::collections::HashMap<String, (f64, f64)>) {
    let Some(w) = web_sys::window() else { return };
    if w.match_media("(prefers-reduced-motion: reduce)")
        .ok()
        .flatten()
        .is_some_and(|m| m.matches())
    {
        return;
    }
    let Some(doc) = w.document() else { return };
    let Ok(list) = doc.query_selector_all("[data-flip]") else {
        return;
    };
    let (sx, sy) = (w.scroll_x().unwrap_or(0.0), w.scroll_y().unwrap_or(0.0));
    let mut els = Vec::new();
    let mut ids = Vec::new();
    for i in 0..list.length().min(MAX_FLIP) {
        if let Some(el) = list
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        {
            ids.push(el.get_attribute("data-flip").unwrap_or_default());
            els.push(el);
        }
    }
    let keys = flip_keys(&ids);
    for e in &els {
        let st = e.style();
        let _ = st.set_property("transition", "none");
        let _ = st.set_property("transform", "");
    }
    let pos: Vec<(f64, f64)> = els
        .iter()
        .map(|e| {
            let r = e.get_bounding_client_rect();
            (r.left() + sx, r.top() + sy)
        })
        .collect();
    let moves = flip_moves(places, &keys, &pos, 1.0);
    for &(i, dx, dy) in &moves {
        let st = els[i].style();
        let _ = st.set_property("transform", &format!("translate({dx:.1}px, {dy:.1}px)"));
    }
    if !moves.is_empty() {
        // Apply the offsets before the transition starts.
        let _ = doc.body().map(|b| b.offset_height());
        for &(i, _, _) in &moves {
            let st = els[i].style();
            let _ = st.set_property("transition", "transform .35s ease-out");
            let _ = st.set_property("transform", "");
        }
    }
    *places = keys.into_iter().zip(pos).collect();
}

/// A callback that changes the lab named `label`, then re-renders.
fn on_lab<E: 'static>(
    run: &Rc<RefCell<Run>>,
    refresh: &Callback<()>,
    label: &str,
    f: impl Fn(&mut Lab, E) + 'static,
) -> Callback<E> {
    let (run, refresh, label) = (run.clone(), refresh.clone(), label.to_string());
    Callback::from(move |e: E| {
        if let Some((_, lab)) = run.borrow_mut().labs.iter_mut().find(|(l, _)| *l == label) {
            f(lab, e);
        }
        refresh.emit(());
    })
}

fn input_u64(e: &Event) -> Option<u64> {
    e.target_unchecked_into::<HtmlInputElement>()
        .value()
        .trim()
        .parse()
        .ok()
}

/// A consumer's behaviour, changeable while it runs: RDY, time per message, failure rate
/// (answered with REQ and a growing delay), crash and recover, disconnect.
fn consumer_controls(
    c: &crate::lab::Consumer,
    label: &str,
    run: &Rc<RefCell<Run>>,
    refresh: &Callback<()>,
) -> Html {
    let id = c.id;
    let on_rdy = on_lab(run, refresh, label, move |lab, e: Event| {
        if let Some(n) = input_u64(&e) {
            lab.set_rdy_by_hand(id, n.min(2500) as i64);
        }
    });
    // Work time or failure rate: the typed one changes, the other stays as it is.
    let behaviour = |apply: fn(&mut (u64, u64), u64)| {
        on_lab(run, refresh, label, move |lab, e: Event| {
            let now = lab.consumers.iter().find(|c| c.id == id);
            if let (Some(n), Some(c)) = (input_u64(&e), now) {
                let mut b = (c.processing_ms, c.fail_rate);
                apply(&mut b, n);
                lab.set_behaviour(id, b.0, b.1);
            }
        })
    };
    let on_work = behaviour(|b, n| b.0 = n);
    let on_fail = behaviour(|b, n| b.1 = n);
    let on_crash = on_lab(run, refresh, label, move |lab, _: MouseEvent| {
        lab.toggle_crash(id)
    });
    let on_remove = on_lab(run, refresh, label, move |lab, _: MouseEvent| {
        lab.remove_consumer_by_hand(id)
    });
    html! {
      <div class="ctl" data-testid="consumer-controls">
        <label>{"RDY "}<input type="number" min="0" max="2500" value={c.rdy.to_string()} data-testid="rdy" onchange={on_rdy}/></label>
        <label>{"work ms "}<input type="number" min="0" value={c.processing_ms.to_string()} data-testid="work" onchange={on_work}/></label>
        <label>{"fail % "}<input type="number" min="0" max="100" value={c.fail_rate.to_string()} data-testid="fail" onchange={on_fail}/></label>
        <button data-testid="crash" onclick={on_crash} title="a crashed consumer never answers: its messages time out">{ if c.crashed { "recover" } else { "crash" } }</button>
        <button data-testid="remove-consumer" onclick={on_remove} title="disconnect">{"✕"}</button>
      </div>
    }
}

fn field_value(run: &Rc<RefCell<Run>>, id: &str) -> String {
    run.borrow().fields.get(id).cloned().unwrap_or_default()
}

/// A form input whose value lives in the run (see [`Run::fields`]).
fn text_input(run: &Rc<RefCell<Run>>, id: &'static str, size: u32) -> Html {
    let value = field_value(run, id);
    let oninput = {
        let run = run.clone();
        Callback::from(move |e: InputEvent| {
            let v = e.target_unchecked_into::<HtmlInputElement>().value();
            run.borrow_mut().fields.insert(id, v);
        })
    };
    html! { <input {id} {value} {oninput} size={size.to_string()}/> }
}

/// Add a consumer, create or delete a topic or channel, in every lab of the run.
fn manage_form(run: Rc<RefCell<Run>>, refresh: Callback<()>) -> Html {
    let status = run.borrow().status.clone();
    let act = |what: &'static str| {
        let (run, refresh) = (run.clone(), refresh.clone());
        Callback::from(move |_: MouseEvent| {
            let (topic, channel, rdy) = (
                field_value(&run, "m-topic"),
                field_value(&run, "m-channel"),
                field_value(&run, "m-rdy"),
            );
            let rdy: i64 = rdy.trim().parse().unwrap_or(1).clamp(0, 2500);
            let valid = nsqlab_core::protocol::is_valid_name;
            let mut msg = String::new();
            if !valid(&topic) || (!what.starts_with("topic/") && !valid(&channel)) {
                msg = "topic and channel names: 1–64 of a-z A-Z 0-9 . _ - (optionally #ephemeral)"
                    .into();
            } else {
                let mut r = run.borrow_mut();
                for (_, lab) in r.labs.iter_mut() {
                    let res = match what {
                        "consumer" => {
                            lab.add_consumer_by_hand(&topic, &channel, rdy);
                            Ok(())
                        }
                        admin => lab.admin_by_hand(admin, &topic, &channel),
                    };
                    if let Err(e) = res {
                        msg = e;
                    }
                }
            }
            run.borrow_mut().status = msg;
            refresh.emit(());
        })
    };
    html! {
      <form class="manage" aria-label="manage" onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())}>
        <b>{"manage "}</b>
        <label>{"topic "}{ text_input(&run, "m-topic", 10) }</label>
        <label>{"channel "}{ text_input(&run, "m-channel", 10) }</label>
        <label>{"RDY "}{ text_input(&run, "m-rdy", 3) }</label>
        <button type="button" data-testid="add-consumer" onclick={act("consumer")}>{"add consumer"}</button>
        <button type="button" data-testid="create-topic" onclick={act("topic/create")}>{"create topic"}</button>
        <button type="button" data-testid="create-channel" onclick={act("channel/create")}>{"create channel"}</button>
        <button type="button" data-testid="delete-channel" onclick={act("channel/delete")}>{"delete channel"}</button>
        <button type="button" data-testid="delete-topic" onclick={act("topic/delete")}>{"delete topic"}</button>
        <span class="status" data-testid="manage-status">{status}</span>
      </form>
    }
}

fn topology(lab: &Lab, label: &str, run: Rc<RefCell<Run>>, refresh: Callback<()>) -> Html {
    let v = &lab.view;
    html! {
      <div class="topology" data-testid="topology">
        <div class="col producers"><h3>{"producers"}</h3>{ for lab.producers.iter().map(|p| html!{ <div class="node producer">{format!("producer {p}")}</div> }) }</div>
        <div class="arrow">{"→"}</div>
        <div class="col topics"><h3>{"topics"}</h3>
          { for v.topics.iter().map(|(t, held)| html!{
              <div class="node topic" data-topic={t.clone()}>
                <b>{t}</b>
                { if held.is_empty() { html!{} } else { html!{ <div class="chips">{ for held.iter().map(|c| chip(c.id, v.highlight)) }</div> } } }
              </div>
          }) }
        </div>
        <div class="arrow">{"→"}</div>
        <div class="col channels"><h3>{"channels"}</h3>
          { for v.channels.values().map(|c| channel_box(c, v.highlight)) }
        </div>
        <div class="arrow">{"→"}</div>
        <div class="col consumers"><h3>{"consumers"}</h3>
          { for lab.consumers.iter().map(|c| {
              let inflight: usize = v.channels.values().map(|ch| ch.in_flight.iter().filter(|m| m.client == c.id).count()).sum();
              html!{ <div class={classes!("node", "consumer", c.crashed.then_some("crashed"))}>
                <b>{format!("{} ({})", c.name, c.id)}</b>
                <div class="meta" data-testid="consumer-meta">{format!("{} · RDY {} · in flight {inflight} · {} ms per message, {} % fail", c.channel, c.rdy, c.processing_ms, c.fail_rate)}</div>
                { consumer_controls(c, label, &run, &refresh) }
              </div> }
          }) }
        </div>
      </div>
    }
}

fn chip(id: nsqlab_core::MessageId, highlight: Option<nsqlab_core::MessageId>) -> Html {
    html! { <span class={classes!("chip", (highlight == Some(id)).then_some("hot"))} data-id={id.to_string()} data-flip={id.to_string()} title={id.to_string()}>{short(id)}</span> }
}

fn channel_box(c: &ChannelView, highlight: Option<nsqlab_core::MessageId>) -> Html {
    let mem: Vec<_> = c.queue.iter().filter(|m| !m.on_disk).collect();
    let disk = c.queue.len() - mem.len();
    html! {
      <div class="node channel" data-channel={c.name.clone()}>
        <b>{format!("{}/{}", c.topic, c.name)}</b>
        <div class="counters">
          <span data-testid="depth">{format!("depth {}", c.queue.len())}</span>
          <span data-testid="deferred">{format!("deferred {}", c.heap.len())}</span>
          <span data-testid="in-flight">{format!("in flight {}", c.in_flight.len())}</span>
          <span data-testid="finished">{format!("finished {}", c.finished)}</span>
          <span data-testid="requeued">{format!("requeued {}", c.requeued)}</span>
          <span data-testid="timed-out">{format!("timed out {}", c.timed_out)}</span>
        </div>
        <div class="queue"><span class="label">{"memory "}</span>{ for mem.iter().take(24).map(|m| chip(m.id, highlight)) }
          { if mem.len() > 24 { html!{ <span class="more">{format!("+{}", mem.len() - 24)}</span> } } else { html!{} } }</div>
        { if disk > 0 { html!{ <div class="disk" data-testid="disk">{format!("💾 disk backlog: {disk}")}</div> } } else { html!{} } }
      </div>
    }
}

/// A due time as drawn: virtual seconds, or (live, `now` given) seconds from now.
fn due_label(due: u64, now: Option<u64>, digits: usize) -> String {
    match now {
        Some(now) => format!("+{:.*}", digits, due.saturating_sub(now) as f64 / 1e9),
        None => format!("{:.*}", digits, due as f64 / 1e9),
    }
}

fn heap_view(
    c: &ChannelView,
    marks: &[usize],
    highlight: Option<nsqlab_core::MessageId>,
    now: Option<u64>,
) -> Html {
    let (w, lh) = (760.0, 58.0);
    let levels = visible_levels(c.heap.len(), 63);
    let shown = c.heap.len().min(nodes_in_levels(levels));
    let hidden = c.heap.len() - shown;
    let height = levels as f64 * lh + 10.0;
    html! {
      <div class="heap" data-testid="heap">
        <h3>{format!("deferred min-heap of {}/{} — {} pending", c.topic, c.name, c.heap.len())}</h3>
        <svg viewBox={format!("0 0 {w} {height}")} class="tree" role="img" aria-label="deferred heap as a tree">
          { for (1..shown).map(|i| {
              let (x1, y1) = heap_node_xy((i - 1) / 2, w, lh);
              let (x2, y2) = heap_node_xy(i, w, lh);
              html!{ <line x1={x1.to_string()} y1={y1.to_string()} x2={x2.to_string()} y2={y2.to_string()} class="edge"/> }
          }) }
          { for c.heap.iter().take(shown).enumerate().map(|(i, (id, due))| {
              let (x, y) = heap_node_xy(i, w, lh);
              let cls = classes!("hnode", marks.contains(&i).then_some("mark"), (highlight == Some(*id)).then_some("hot"));
              // Keyed by message: a swap moves the same node, and CSS lets it glide there.
              html!{ <g key={id.to_string()} class={cls} data-index={i.to_string()} data-id={id.to_string()}
                        style={format!("transform: translate({x:.1}px, {y:.1}px)")}>
                <circle cx="0" cy="0" r="19"/>
                <text x="0" y="-2" class="due">{due_label(*due, now, 2)}</text>
                <text x="0" y="10" class="idx">{format!("#{i}")}</text>
              </g> }
          }) }
        </svg>
        { if hidden > 0 { html!{ <p class="more">{format!("… {hidden} more in deeper levels")}</p> } } else { html!{} } }
        <div class="array" data-testid="heap-array" aria-label="deferred heap as an array">
          { for c.heap.iter().take(64).enumerate().map(|(i, (id, due))| html!{
              <div class={classes!("cell", marks.contains(&i).then_some("mark"))} data-index={i.to_string()} data-id={id.to_string()} data-flip={id.to_string()} data-due={due.to_string()}>
                <span class="i">{i}</span><span class="d">{due_label(*due, now, 3)}</span>
              </div>
          }) }
          { if c.heap.len() > 64 { html!{ <div class="cell more">{format!("+{}", c.heap.len() - 64)}</div> } } else { html!{} } }
        </div>
      </div>
    }
}

fn in_flight_view(
    c: &ChannelView,
    now: u64,
    run: Rc<RefCell<Run>>,
    refresh: Callback<()>,
    label: String,
) -> Html {
    html! {
      <div class="inflight" data-testid="in-flight-window">
        <h3>{format!("in flight on {}/{}", c.topic, c.name)}</h3>
        { for c.in_flight.iter().map(|m| {
            let left = time_left(m.sent, m.deadline, now);
            let answer = |what: &'static str| {
                let (run, refresh, label, client, id) = (run.clone(), refresh.clone(), label.clone(), m.client, m.id);
                Callback::from(move |_: MouseEvent| {
                    if let Some((_, lab)) = run.borrow_mut().labs.iter_mut().find(|(l, _)| *l == label) {
                        lab.answer_by_hand(client, id, what);
                    }
                    refresh.emit(());
                })
            };
            html!{ <div class="row" data-id={m.id.to_string()} data-flip={m.id.to_string()}>
              <span class="id">{short(m.id)}</span>
              <span>{format!("consumer {} · attempt {}", m.client, m.attempts)}</span>
              <span class="bar"><span class="fill" style={format!("width:{:.0}%", left * 100.0)}></span></span>
              <span class="left">{format!("{:.1} s", m.deadline.saturating_sub(now) as f64 / 1e9)}</span>
              <button onclick={answer("FIN")}>{"FIN"}</button>
              <button onclick={answer("REQ")}>{"REQ"}</button>
              <button onclick={answer("TOUCH")}>{"TOUCH"}</button>
            </div> }
        }) }
      </div>
    }
}

fn lateness_chart(labs: &[(&'static str, Lab)]) -> Html {
    if labs.len() < 2 {
        return html! {};
    }
    let max = labs
        .iter()
        .flat_map(|(_, l)| l.view.lateness.iter().map(|(_, d, s)| s - d))
        .max()
        .unwrap_or(0)
        .max(ms(10));
    html! {
      <section class="lateness" data-testid="lateness">
        <h3>{"lateness of each DPUB (delivery − due)"}</h3>
        { for labs.iter().map(|(label, l)| html!{
            <div class="series">
              <div class="name">{*label}</div>
              <svg viewBox="0 0 400 80" class="bars">
                { for l.view.lateness.iter().enumerate().map(|(i, (_, due, sent))| {
                    let late = sent - due;
                    let h = (late as f64 / max as f64 * 70.0).max(1.0);
                    html!{ <rect x={(i * 19 + 2).to_string()} y={(78.0 - h).to_string()} width="15" height={h.to_string()} data-late-ms={(late / MILLISECOND).to_string()}/> }
                }) }
              </svg>
              <div class="summary">{ lateness_summary(l) }</div>
            </div>
        }) }
      </section>
    }
}

fn lateness_summary(l: &Lab) -> String {
    let v: Vec<u64> = l.view.lateness.iter().map(|(_, d, s)| s - d).collect();
    match v.iter().max() {
        None => "—".to_string(),
        Some(max) => format!(
            "{} delivered · max {} ms late · avg {:.1} ms",
            v.len(),
            max / MILLISECOND,
            v.iter().sum::<u64>() as f64 / v.len() as f64 / 1e6
        ),
    }
}

fn publish_form(run: Rc<RefCell<Run>>, refresh: Callback<()>) -> Html {
    let submit_run = run.clone();
    let onsubmit = Callback::from(move |e: SubmitEvent| {
        e.prevent_default();
        let run = &submit_run;
        let val = |id: &str| field_value(run, id);
        let (topic, body) = (val("pub-topic"), val("pub-body"));
        let defer: u64 = val("pub-defer").parse().unwrap_or(0);
        let count: usize = val("pub-count").parse().unwrap_or(1).clamp(1, 100);
        if nsqlab_core::protocol::is_valid_name(&topic) && !body.is_empty() {
            for (_, lab) in run.borrow_mut().labs.iter_mut() {
                lab.publish_by_hand(&topic, &body, defer, count);
            }
        }
        refresh.emit(());
    });
    html! {
      <form class="publish" {onsubmit} aria-label="publish">
        <b>{"publish "}</b>
        <label>{"topic "}{ text_input(&run, "pub-topic", 10) }</label>
        <label>{"body "}{ text_input(&run, "pub-body", 10) }</label>
        <label>{"delay ms "}{ text_input(&run, "pub-defer", 6) }</label>
        <label>{"count "}{ text_input(&run, "pub-count", 3) }</label>
        <button type="submit" data-testid="publish">{"PUB / DPUB / MPUB"}</button>
      </form>
    }
}

async fn fetch_text(url: &str) -> Option<String> {
    let w = web_sys::window()?;
    let resp = wasm_bindgen_futures::JsFuture::from(w.fetch_with_str(url))
        .await
        .ok()?;
    let resp: web_sys::Response = resp.dyn_into().ok()?;
    let text = wasm_bindgen_futures::JsFuture::from(resp.text().ok()?)
        .await
        .ok()?;
    text.as_string()
}

/// Live mode: the page mirrors this server's channels from its event stream.
#[function_component(LiveApp)]
fn live_app() -> Html {
    let model = use_mut_ref(LiveModel::new);
    let update = use_force_update();
    let status = use_mut_ref(|| "connecting…".to_string());
    {
        let (model, update, status) = (model.clone(), update.clone(), status.clone());
        use_effect_with((), move |_| {
            let dirty = Rc::new(Cell::new(false));
            let loc = web_sys::window().map(|w| w.location());
            let host = loc.as_ref().and_then(|l| l.host().ok()).unwrap_or_default();
            let proto = if loc.and_then(|l| l.protocol().ok()).as_deref() == Some("https:") {
                "wss"
            } else {
                "ws"
            };
            let ws = web_sys::WebSocket::new(&format!("{proto}://{host}/ws/events")).ok();
            let on_message = {
                let (model, dirty) = (model.clone(), dirty.clone());
                wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                    move |e: web_sys::MessageEvent| {
                        if let Some(t) = e.data().as_string() {
                            model.borrow_mut().handle_message(&t);
                            dirty.set(true);
                        }
                    },
                )
            };
            let on_open = {
                let (model, status, dirty) = (model.clone(), status.clone(), dirty.clone());
                wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
                    *status.borrow_mut() = "connected".into();
                    // Listening first, then the snapshot: nothing falls in between.
                    let (model, later) = (model.clone(), dirty.clone());
                    wasm_bindgen_futures::spawn_local(async move {
                        if let Some(text) = fetch_text("/api/queues").await {
                            if let Ok(qs) = serde_json::from_str::<Vec<QueuesJson>>(&text) {
                                model.borrow_mut().load_snapshot(&qs);
                            }
                        }
                        later.set(true);
                    });
                    dirty.set(true);
                })
            };
            let on_close = {
                let (status, dirty) = (status.clone(), dirty.clone());
                wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
                    *status.borrow_mut() = "disconnected (reload to reconnect)".into();
                    dirty.set(true);
                })
            };
            if let Some(ws) = &ws {
                ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
                ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
                ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
            }
            // Redraw at most ten times a second, however busy the server is.
            let timer = Interval::new(100, move || {
                if dirty.replace(false) {
                    update.force_update();
                }
            });
            move || {
                if let Some(ws) = ws {
                    ws.set_onmessage(None);
                    ws.set_onclose(None);
                    let _ = ws.close();
                }
                drop((on_message, on_open, on_close, timer));
            }
        });
    }
    let m = model.borrow();
    let v = &m.view;
    let heap_chan = v
        .heap_channel
        .as_ref()
        .and_then(|k| v.channels.get(k))
        .or_else(|| v.channels.values().next());
    let host = web_sys::window()
        .and_then(|w| w.location().host().ok())
        .unwrap_or_default();
    let last = m.log.last().map(|s| s.text.clone()).unwrap_or_else(|| {
        format!("Waiting for traffic… try: curl -d hi 'http://{host}/pub?topic=t&defer=5000'")
    });
    html! {
      <div class="app live">
        <header>
          <h1>{"nsqlab"}<span class="sub">{" — live: this server's channels, as they change"}</span></h1>
          <nav class="scenarios">
            <a class="live-link" href="?scenario=dpub-heap">{"← simulation"}</a>
            <span class="status" data-testid="status">{format!("{} · events dropped: {}", status.borrow(), m.dropped)}</span>
          </nav>
        </header>
        <section class="controls"><span class="clock" data-testid="clock">{format!("server time {} UTC", time_of_day(v.now))}</span></section>
        <section class="lab">
          <div class="explain" data-testid="explain" aria-live="polite">{last}</div>
          <ol class="log">{ for m.log.iter().rev().skip(1).take(5).map(|s| html!{ <li>{s.text.clone()}</li> }) }</ol>
          <div class="live-channels">{ for v.channels.values().map(|c| channel_box(c, v.highlight)) }</div>
          { heap_chan.map(|c| heap_view(c, &v.heap_marks, v.highlight, Some(v.now))).unwrap_or_default() }
          { for v.channels.values().filter(|c| !c.in_flight.is_empty()).map(|c| in_flight_readonly(c, v.now)) }
        </section>
      </div>
    }
}

fn in_flight_readonly(c: &ChannelView, now: u64) -> Html {
    html! {
      <div class="inflight" data-testid="in-flight-window">
        <h3>{format!("in flight on {}/{}", c.topic, c.name)}</h3>
        { for c.in_flight.iter().map(|m| html!{ <div class="row ro" data-id={m.id.to_string()}>
            <span class="id">{short(m.id)}</span>
            <span>{format!("client {} · attempt {}", m.client, m.attempts)}</span>
            <span class="bar"><span class="fill" style={format!("width:{:.0}%", time_left(m.sent, m.deadline, now) * 100.0)}></span></span>
            <span class="left">{format!("{:.1} s", m.deadline.saturating_sub(now) as f64 / 1e9)}</span>
          </div> }) }
      </div>
    }
}
