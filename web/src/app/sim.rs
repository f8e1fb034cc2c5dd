//! The simulation page: a scenario's labs, the controls, the forms.

use super::flip::{animate_moves, forget, Flip};
use super::heap::{HeapProps, HeapView};
use super::parts::*;
use super::{params, Dispatch, Shared};
use crate::forms::Field;
use crate::i18n::{t, Lang, Text};
use crate::lab::Lab;
use crate::model::{Action, Knob, Model, Pane, SPEEDS};
use crate::scenarios::SCENARIOS;
use crate::view::{secs, Role};
use gloo_timers::callback::Interval;
use nsqlab_core::time::Time;
use nsqlab_core::{ClientId, MessageId};
use std::cell::Cell;
use wasm_bindgen::JsCast;
use web_sys::{HtmlSelectElement, KeyboardEvent};
use yew::prelude::*;

/// How often the play timer ticks (real milliseconds).
const TICK_MS: u32 = 50;

/// The callbacks the page's parts are given, each turning what a part asks for into an
/// [`Action`]: made once from the dispatcher, so a part's props compare equal from one render to
/// the next (and it is not drawn again for nothing), and no part holds the dispatcher.
#[derive(PartialEq)]
struct Hands {
    term: Callback<&'static str>,
    glossary: Callback<Option<&'static str>>,
    edit: Callback<(Field, String)>,
    seek: Callback<usize>,
    answer: Callback<(usize, ClientId, MessageId, crate::lab::Answer)>,
    forms: FormHands,
    tour: TourHands,
    consumers: ConsumerHands,
    cluster: Callback<crate::cluster::Hand>,
}

impl Hands {
    fn new(d: &Dispatch) -> Hands {
        fn to<T: 'static>(d: &Dispatch, action: impl Fn(T) -> Action + 'static) -> Callback<T> {
            let d = d.clone();
            Callback::from(move |x| d.dispatch(action(x)))
        }
        Hands {
            term: to(d, |k| Action::Explain(Some(k))),
            glossary: to(d, Action::Explain),
            edit: to(d, |(f, v)| Action::Edit(f, v)),
            seek: to(d, Action::Seek),
            answer: to(d, |(lab, client, id, what)| Action::Answer {
                lab,
                client,
                id,
                what,
            }),
            forms: FormHands {
                publish: to(d, |()| Action::Publish),
                add_consumer: to(d, |()| Action::AddConsumer),
                admin: to(d, Action::Admin),
            },
            tour: TourHands {
                predict: to(d, Action::Predict),
                next_chapter: to(d, |()| Action::NextChapter),
                end: to(d, |()| Action::EndTour),
            },
            consumers: ConsumerHands {
                tune: to(d, |(lab, client, knob, value)| Action::Tune {
                    lab,
                    client,
                    knob,
                    value,
                }),
                crash: to(d, |(lab, client)| Action::ToggleCrash { lab, client }),
                remove: to(d, |(lab, client)| Action::RemoveConsumer { lab, client }),
            },
            cluster: to(d, Action::Cluster),
        }
    }
}

fn query() -> (String, u64, f64, Lang, bool) {
    let p = params();
    let get = |k: &str| p.as_ref().and_then(|p| p.get(k));
    (
        get("scenario").unwrap_or_else(|| SCENARIOS[0].id.to_string()),
        get("seed").and_then(|s| s.parse().ok()).unwrap_or(1),
        get("speed").and_then(|s| s.parse().ok()).unwrap_or(1.0),
        get("lang").map(|l| Lang::from_code(&l)).unwrap_or_default(),
        get("view").as_deref() == Some("flow"),
    )
}

/// A run shared in the URL's hash (`#run=<JSON, URI-encoded>`), if there is one.
fn hash_run() -> Option<Result<crate::model::Run, ()>> {
    let hash = web_sys::window()?.location().hash().ok()?;
    let encoded = hash.strip_prefix("#run=")?;
    let json = js_sys::decode_uri_component(encoded).ok()?.as_string()?;
    Some(serde_json::from_str(&json).map_err(|_| ()))
}

/// The address of this page with a run in its hash.
fn run_url(query: &str, json: &str) -> String {
    let loc = web_sys::window().map(|w| w.location());
    let origin = loc
        .as_ref()
        .and_then(|l| l.origin().ok())
        .unwrap_or_default();
    let path = loc.and_then(|l| l.pathname().ok()).unwrap_or_default();
    let hash = js_sys::encode_uri_component(json)
        .as_string()
        .unwrap_or_default();
    format!("{origin}{path}{query}#run={hash}")
}

/// Copy text to the clipboard, if the browser lets the page (`navigator.clipboard`).
fn copy(text: &str) {
    use wasm_bindgen::JsValue;
    let Some(w) = web_sys::window() else { return };
    let nav = js_sys::Reflect::get(&w, &"navigator".into()).unwrap_or(JsValue::UNDEFINED);
    let clip = js_sys::Reflect::get(&nav, &"clipboard".into()).unwrap_or(JsValue::UNDEFINED);
    if let Ok(f) = js_sys::Reflect::get(&clip, &"writeText".into()) {
        if let Ok(f) = f.dyn_into::<js_sys::Function>() {
            let _ = f.call1(&clip, &text.into());
        }
    }
}

/// Save text as a file (a link with `download`, clicked).
fn download(name: &str, text: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Ok(a) = doc.create_element("a") {
        let href = format!(
            "data:application/json;charset=utf-8,{}",
            js_sys::encode_uri_component(text)
                .as_string()
                .unwrap_or_default()
        );
        let _ = a.set_attribute("href", &href);
        let _ = a.set_attribute("download", name);
        if let Ok(a) = a.dyn_into::<web_sys::HtmlElement>() {
            a.click();
        }
    }
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

fn tokens(lab: &Lab, ids: impl Iterator<Item = nsqlab_core::MessageId>) -> Vec<Token> {
    ids.take(CHIPS)
        .map(|id| Token {
            id: id.to_string(),
            label: lab.view.label(id),
            hue: lab.view.hue(id),
        })
        .collect()
}

/// The topology's props for one lab.
fn topology(i: usize, lab: &Lab, hands: &Hands, m: &Model) -> Html {
    let v = &lab.view;
    let l = crate::i18n::shown(m.lang);
    let between = lab.next_time() != Some(lab.now());
    let producers: Vec<ProducerCard> = v
        .actors
        .iter()
        .filter(|(_, a)| a.role == Role::Producer)
        .map(|(id, a)| ProducerCard {
            id: *id,
            name: a.name.render(l),
            published: a.published,
            connected: a.connected,
        })
        .collect();
    let topics: Vec<TopicCard> = v
        .topics
        .iter()
        .map(|(t, held)| TopicCard {
            name: t.clone(),
            held: tokens(lab, held.iter().map(|c| c.id)),
        })
        .collect();
    let channels: Vec<ChannelCard> = v
        .channels
        .values()
        .map(|c| {
            let core = between
                .then(|| lab.sim.broker.channel(&c.topic, &c.name))
                .flatten()
                .map(|ch| {
                    [
                        ch.queue.len() as u64,
                        ch.deferred.len() as u64,
                        ch.in_flight.len() as u64,
                    ]
                });
            ChannelCard {
                topic: c.topic.clone(),
                name: c.name.clone(),
                depth: c.depth(),
                deferred: c.deferred(),
                in_flight: c.in_flight.len(),
                finished: c.finished,
                requeued: c.requeued,
                timed_out: c.timed_out,
                memory: tokens(lab, c.queue.iter().filter(|x| !x.on_disk).map(|x| x.id)),
                disk: tokens(lab, c.queue.iter().filter(|x| x.on_disk).map(|x| x.id)),
                in_memory: c.in_memory(),
                on_disk: c.on_disk(),
                stored: tokens(lab, c.stored.iter().map(|s| s.0)),
                stored_n: c.stored.len(),
                mem_queue_size: v.mem_queue_size,
                core,
                server: None,
            }
        })
        .collect();
    let consumers: Vec<ConsumerCard> = lab
        .consumers
        .iter()
        .map(|c| {
            let a = v.actors.get(&c.id);
            ConsumerCard {
                id: c.id,
                name: c.name.render(l),
                connected: a.is_none_or(|a| a.connected),
                channel: format!("{}/{}", c.topic, c.channel),
                rdy: c.rdy,
                in_flight: v
                    .channels
                    .values()
                    .map(|ch| ch.in_flight.iter().filter(|m| m.client == c.id).count())
                    .sum(),
                received: a.map_or(0, |a| a.received),
                finished: a.map_or(0, |a| a.finished),
                requeued: a.map_or(0, |a| a.requeued),
                timed_out: a.map_or(0, |a| a.timed_out),
                work_ms: c.processing_ms,
                fail: c.fail_rate,
                crashed: c.crashed,
                refusals: [Knob::Rdy, Knob::Work, Knob::Fail]
                    .into_iter()
                    .filter_map(|k| m.knob_refusals.get(&(i, c.id, k)).map(|e| (k, e.render(l))))
                    .collect(),
            }
        })
        .collect();
    html! {
      <Topology lang={l} lab={i} {producers} {topics} {channels} {consumers}
                highlight={v.highlight.map(|h| h.to_string())} down={v.down} on_term={hands.term.clone()} hands={hands.consumers.clone()}/>
    }
}

/// One lab's flow view.
fn flow(i: usize, m: &Model, state: &Shared) -> Html {
    let lab = &m.panes[i].lab;
    let layout = {
        let state = state.clone();
        Callback::from(move |width: f64| {
            let m = state.get();
            let lab = &m.panes[i].lab;
            let consumers: Vec<crate::flow::Consumer<'_>> = lab
                .consumers
                .iter()
                .map(|c| crate::flow::Consumer {
                    id: c.id,
                    topic: &c.topic,
                    channel: &c.channel,
                    crashed: c.crashed,
                })
                .collect();
            crate::flow::layout(&lab.view, &consumers, lab.now(), width)
        })
    };
    // Playing fast, the page is drawn every FAST_DRAW_MS: a token glides all that while.
    let glide_ms = if m.playing_fast() {
        crate::model::FAST_DRAW_MS as u32
    } else {
        (450.0 / m.speed.max(0.1).sqrt()).clamp(80.0, 900.0) as u32
    };
    // A timed-out message is out of the picture for the timeout's step and comes back to the
    // queue on the next: it is marked for both.
    let timed_out = lab
        .log
        .iter()
        .rev()
        .take(2)
        .any(|s| s.what == crate::view::What::TimedOut);
    html! {
      <super::flow::FlowView lang={crate::i18n::shown(m.lang)} {layout} version={m.version} {glide_ms}
          highlight={lab.view.highlight.map(|h| h.to_string())} {timed_out}
          pane={(!m.panes[i].title.is_empty()).then(|| AttrValue::from(crate::i18n::t(crate::i18n::shown(m.lang), m.panes[i].title)))}/>
    }
}

/// One lab: the current step, the picture, the in-flight window, the log.
fn pane(i: usize, p: &Pane, m: &Model, state: &Shared, hands: &Hands) -> Html {
    let on_term = &hands.term;
    let lab = &p.lab;
    let v = &lab.view;
    let l = crate::i18n::shown(m.lang);
    let last = lab.log.last();
    let text = last
        .map(|s| s.text.render(l))
        .unwrap_or_else(|| t(l, "ui.begin").to_string());
    let claims = last
        .map(|s| serde_json::to_string(&s.claims).unwrap_or_default())
        .unwrap_or_else(|| "[]".into());
    let heap_chan = v
        .heap_channel
        .as_ref()
        .and_then(|k| v.channels.get(k))
        .filter(|c| c.ever_deferred)
        .or_else(|| v.channels.values().find(|c| c.ever_deferred));
    let heap = heap_chan.map(|c| {
        let props = HeapProps::of(l, v, c, None);
        html! { <HeapView ..props/> }
    });
    let finished = lab.is_finished() && !lab.log.is_empty();
    let rows = {
        let state = state.clone();
        Callback::from(move |(from, to): (usize, usize)| {
            let m = state.get();
            m.panes[i].lab.log[from..to]
                .iter()
                .map(|s| (s.at, s.text.render(l)))
                .collect::<Vec<_>>()
        })
    };
    html! {
      <section class="lab" data-label={p.title} data-testid="pane">
        { if p.title.is_empty() { html!{} } else { html!{ <h2>{t(l, p.title)}</h2> } } }
        <div class="lab-grid">
          <div class="now">
            <div class="explain" data-testid="explain" aria-live="polite" data-claims={claims}
                 data-at={last.map(|s| s.at.to_string())}>
              <span class="when">{last.map(|s| secs(s.at)).unwrap_or_default()}</span>
              <Words text={text} lang={l} on_term={on_term.clone()}/>
            </div>
            { for v.crash.as_ref().map(|c| html!{ <CrashPanel lang={l} counts={[c.memory.len(), c.disk.len(), c.in_flight.len(), c.deferred.len()]}/> }) }
            { if finished { html!{
              <div class="finished" data-testid="scenario-finished" role="status">
                <b>{t(l, "ui.finished.title")}</b>
                <ul>{ for lab.summary().into_iter().map(|x| html!{ <li>{x.render(l)}</li> }) }</ul>
                <p class="hint">{t(l, if lab.cluster.is_some() { "ui.finished.hint.cluster" } else if lab.replication.is_some() { "ui.finished.hint.replication" } else { "ui.finished.hint" })}</p>
              </div> } } else { html!{} } }
          </div>
          <div class="picture">
            { match &lab.cluster {
                _ if lab.replication.is_some() => super::replication::replication_view(lab.replication.as_deref().expect("checked"), l),
                Some(c) => super::cluster::cluster_view(c, lab.next_time() != Some(lab.now()), l, &hands.cluster),
                None if m.flow => flow(i, m, state),
                None => topology(i, lab, hands, m),
            } }
            { heap.unwrap_or_default() }
          </div>
          <div class="side">
            // While a tour's question waits for its answer, the algorithm (which shows the next
            // line) steps aside.
            { for lab.log.len().checked_sub(1).and_then(|i| crate::algo::locate(&lab.log, i))
                .filter(|_| !m.tour.as_ref().is_some_and(|t| t.predicted.is_none() && t.tour.chapters[t.chapter].question.is_some()))
                .map(|at| html!{ <AlgoPanel lang={l} {at}/> }) }
            { for v.channels.values().filter(|c| !c.in_flight.is_empty()).map(|c| {
                let rows: Vec<FlightRow> = c.in_flight.iter().map(|f| FlightRow {
                    token: Token { id: f.id.to_string(), label: v.label(f.id), hue: v.hue(f.id) },
                    msg: f.id,
                    client: f.client,
                    who: v.who(f.client).render(l),
                    attempts: f.attempts,
                    sent: f.sent,
                    deadline: f.deadline,
                }).collect();
                html!{ <InFlight lang={l} lab={i} channel={format!("{}/{}", c.topic, c.name)} {rows} now={lab.now()}
                                 highlight={v.highlight.map(|h| h.to_string())} on_answer={Some(hands.answer.clone())}/> }
            }) }
            <StepLog len={lab.log.len()} {rows} wall={false} lang={l}/>
          </div>
        </div>
      </section>
    }
}

#[function_component(SimApp)]
pub fn sim_app() -> Html {
    let state = use_reducer_eq(|| {
        let (scenario, seed, speed, lang, flow) = query();
        let mut m = Model::with_lang(&scenario, seed, speed, lang);
        if let Some(run) = hash_run() {
            m.update(Action::LoadRun(Box::new(run)));
            m.speed = crate::model::valid_speed(speed).unwrap_or(1.0);
        }
        m.flow = flow;
        Shared::new(m)
    });
    let d = state.dispatcher();
    let (playing, url, lang, fast, raft) = {
        let m = state.get();
        let raft = (m.scenario.id == "replication").then_some(m.seed);
        (m.playing, m.query(), m.lang, m.playing_fast(), raft)
    };
    {
        let d = d.clone();
        super::use_raft(
            raft,
            Callback::from(move |()| d.dispatch(Action::RaftLoaded)),
        );
    }
    {
        let d = d.clone();
        super::use_words(
            lang,
            Callback::from(move |()| d.dispatch(Action::WordsLoaded)),
        );
    }
    let lang = crate::i18n::shown(lang);

    // The play timer: owned by the effect, dropped (cancelled) when play stops. Virtual time
    // follows real time (× speed), however late a tick comes.
    {
        let d = d.clone();
        use_effect_with(playing, move |&on| {
            let timer = on.then(|| {
                let last = Cell::new(now_ms());
                Interval::new(TICK_MS, move || {
                    let t = now_ms();
                    let dt = (t - last.replace(t)).clamp(0.0, 250.0);
                    d.dispatch(Action::Tick(dt));
                })
            });
            move || drop(timer)
        });
    }
    // The document says which language it is in.
    use_effect_with(lang, |lang| {
        if let Some(el) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element())
        {
            let _ = el.set_attribute("lang", lang.html_lang());
        }
    });
    // The URL reopens this page as it is.
    use_effect_with(url, |url| {
        if let Some(h) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(url));
        }
    });
    // Keyboard: space plays and pauses, → or s steps, n jumps to the next timer, r resets,
    // Escape closes the glossary panel. Actions, not state: the handler never goes stale.
    {
        let d = d.clone();
        use_effect_with((), move |_| {
            let doc = web_sys::window().and_then(|w| w.document());
            let handler = wasm_bindgen::closure::Closure::<dyn Fn(KeyboardEvent)>::new(
                move |e: KeyboardEvent| {
                    let tag = e
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .map(|el| el.tag_name())
                        .unwrap_or_default();
                    // Typing goes to fields; a focused button takes space and Enter itself.
                    let key = e.key();
                    let typing = matches!(tag.as_str(), "INPUT" | "SELECT" | "TEXTAREA");
                    let activates = tag == "BUTTON" && matches!(key.as_str(), " " | "Enter");
                    if (typing && key != "Escape") || activates {
                        return;
                    }
                    if e.ctrl_key() || e.meta_key() || e.alt_key() {
                        return;
                    }
                    let action = match key.as_str() {
                        " " => Action::TogglePlay,
                        "ArrowRight" | "s" => Action::Step,
                        "ArrowLeft" | "b" => Action::Back,
                        "n" => Action::NextTimer,
                        "r" => Action::Reset,
                        "Escape" => Action::Explain(None),
                        _ => return,
                    };
                    e.prevent_default();
                    d.dispatch(action);
                },
            );
            if let Some(doc) = &doc {
                let _ = doc
                    .add_event_listener_with_callback("keydown", handler.as_ref().unchecked_ref());
            }
            move || {
                if let Some(doc) = doc {
                    let _ = doc.remove_event_listener_with_callback(
                        "keydown",
                        handler.as_ref().unchecked_ref(),
                    );
                }
            }
        });
    }
    // Messages glide from where they were to where they are now. Not while playing at 10×
    // or faster: the page is drawn again before a glide could show anything, and measuring
    // where everything is makes the browser lay the page out on every tick.
    {
        let flip = use_mut_ref(Flip::default);
        use_effect(move || match fast {
            true => forget(&mut flip.borrow_mut()),
            false => animate_moves(&mut flip.borrow_mut()),
        });
    }

    let hands = {
        let d = d.clone();
        use_memo((), move |_| Hands::new(&d))
    };
    let on_term = hands.term.clone();
    let click = |a: Action| {
        let d = d.clone();
        Callback::from(move |_: MouseEvent| d.dispatch(a.clone()))
    };
    let on_speed = {
        let d = d.clone();
        Callback::from(move |e: Event| {
            d.dispatch(Action::SetSpeed(
                e.target_unchecked_into::<HtmlSelectElement>().value(),
            ))
        })
    };
    // Share: the model records the run; this click copies its link, once (a render never
    // touches the clipboard).
    let on_share = {
        let (d, state) = (d.clone(), state.clone());
        Callback::from(move |_: MouseEvent| {
            d.dispatch(Action::Share);
            let m = state.get();
            if let Some((json, _)) = &m.share {
                copy(&run_url(&m.query(), json));
            }
        })
    };
    let on_export = {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| {
            let json = serde_json::to_string(&state.get().run()).unwrap_or_default();
            download("nsqlab-run.json", &json);
        })
    };
    let on_import = {
        let d = d.clone();
        Callback::from(move |e: Event| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            let Some(file) = input.files().and_then(|f| f.get(0)) else {
                return;
            };
            let d = d.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let text = wasm_bindgen_futures::JsFuture::from(file.text())
                    .await
                    .ok()
                    .and_then(|t| t.as_string())
                    .unwrap_or_default();
                let run = serde_json::from_str::<crate::model::Run>(&text).map_err(|_| ());
                d.dispatch(Action::LoadRun(Box::new(run)));
            });
        })
    };
    let on_seed = {
        let d = d.clone();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            d.dispatch(Action::ApplySeed);
        })
    };

    let m = state.get();
    let now: Time = m.now();
    let (pos, horizon) = (m.pos(), m.timeline.horizon());
    let finished = m.finished() && pos == horizon;
    // Marks binned to a few hundred places on the line (a long run has thousands of pops).
    let marks: Vec<(usize, crate::model::Mark)> = {
        let bin = (horizon / 400).max(1);
        let mut out: Vec<(usize, crate::model::Mark)> = Vec::new();
        for &(p, k) in &m.timeline.marks {
            if out
                .last()
                .is_none_or(|&(q, j)| p / bin != q / bin || j != k)
            {
                out.push((p, k));
            }
        }
        out
    };
    let series: Vec<Series> = m
        .panes
        .iter()
        .filter(|p| !p.lab.view.lateness.is_empty())
        .map(|p| {
            let v = &p.lab.view;
            let all = v
                .lateness
                .iter()
                .filter_map(|l| Some((l.id, l.sent?.saturating_sub(l.due))))
                .map(|(id, late)| {
                    let token = Token {
                        id: id.to_string(),
                        label: v.label(id),
                        hue: v.hue(id),
                    };
                    (token, late)
                })
                .collect();
            let key = if p.title.is_empty() {
                "ui.chart.delivered"
            } else {
                p.title
            };
            let title = t(lang, key).to_string();
            Series::new(title, all)
        })
        .collect();
    let seed_refusal = m.refusals.get(&Field::Seed).map(|x| x.render(lang));
    let forms: Vec<(Field, String, Option<String>)> = m
        .fields
        .iter()
        .map(|(f, v)| (*f, v.clone(), m.refusals.get(f).map(|x| x.render(lang))))
        .collect();
    let l = lang;
    html! {
      <div class={classes!("app", (m.panes.len() > 1).then_some("two"))}>
        // Keyboard: the first Tabs jump past the scenario list, to the controls or the forms.
        <nav class="skip" aria-label={t(l, "ui.skip")}>
          <a href="#controls" data-testid="skip-controls">{t(l, "ui.skip.controls")}</a>
          { if m.panes.iter().any(|p| p.lab.cluster.is_some() || p.lab.replication.is_some()) { html!{} } else { html!{
          <a href="#forms" data-testid="skip-forms">{t(l, "ui.skip.forms")}</a> } } }
        </nav>
        <header>
          <h1>{"nsqlab"}<span class="sub">{t(l, "ui.sub")}</span>
            <button type="button" class="lang" data-testid="lang"
                    title={t(l, "ui.lang.title")} lang={l.other().html_lang()} onclick={click(Action::SetLang(l.other()))}>{t(l, "sym.lang.other")}</button></h1>
          <nav class="scenarios" aria-label={t(l, "ui.scenarios")}>
            { for SCENARIOS.iter().map(|s| html! {
                <button type="button" class={classes!("scenario", (s.id == m.scenario.id).then_some("active"))}
                        aria-pressed={(s.id == m.scenario.id).to_string()}
                        data-scenario={s.id} onclick={click(Action::Pick(s.id.to_string()))}>{t(l, s.title)}</button>
            }) }
          </nav>
          <div class="header-actions">
            { if crate::tours::tour(m.scenario.id).is_some() && m.tour.is_none() { html!{
                <button type="button" class="tour-start" data-testid="tour-start" title={t(l, "ui.tour.start.title")}
                        onclick={click(Action::StartTour)}>{t(l, "ui.tour.start")}</button> } } else { html!{} } }
            <a class="live-link" href={format!("?mode=live&lang={}", l.code())} data-testid="live">{t(l, "ui.live")}</a>
          </div>
          // In a tour the chapters tell the story; the scenario's summary steps aside.
          { if m.tour.is_some() { html!{} } else { html!{
          <p class="scenario-text" data-testid="scenario-text"><Words text={t(l, m.scenario.text)} lang={l} on_term={on_term.clone()}/></p> } } }
        </header>
        <main>
        <h2 class="visually-hidden">{t(l, m.scenario.title)}</h2>
        <section class="controls" id="controls" tabindex="-1" aria-label={t(l, "ui.controls")}>
          <button type="button" data-testid="play" onclick={click(Action::TogglePlay)} aria-pressed={m.playing.to_string()} title={t(l, "ui.play.title")}>
            { if m.playing { t(l, "ui.pause") } else { t(l, "ui.play") } }</button>
          <button type="button" data-testid="back" onclick={click(Action::Back)} disabled={pos == 0} title={t(l, "ui.back.title")}>{t(l, "ui.back")}</button>
          <button type="button" data-testid="step" onclick={click(Action::Step)} disabled={finished} title={t(l, "ui.step.title")}>{t(l, "ui.step")}</button>
          <button type="button" data-testid="next" onclick={click(Action::NextTimer)} disabled={finished} title={t(l, "ui.next.title")}>{t(l, "ui.next")}</button>
          { if m.panes.iter().any(|p| p.lab.cluster.is_some() || p.lab.replication.is_some()) { html!{} } else { html!{
          <button type="button" data-testid="flow" onclick={click(Action::ToggleFlow)} aria-pressed={m.flow.to_string()} title={t(l, "ui.flow.title")}>{t(l, "ui.flow.on")}</button> } } }
          <button type="button" data-testid="reset" onclick={click(Action::Reset)} title={t(l, "ui.reset.title")}>{t(l, "ui.reset")}</button>
          <label>{t(l, "ui.speed")}{" "}
            <select data-testid="speed" onchange={on_speed}>
              { for SPEEDS.iter().map(|s| html! { <option value={s.to_string()} selected={(*s - m.speed).abs() < 1e-9}>{format!("{s}×")}</option> }) }
            </select>
          </label>
          <form class="seed" onsubmit={on_seed} novalidate=true>
            <FormField field={Field::Seed} label={t(l, "ui.seed")} value={m.field(Field::Seed).to_string()} refusal={seed_refusal.map(AttrValue::from)} size={6} on_edit={hands.edit.clone()}
                       hint={Some(AttrValue::from(t(l, "ui.seed.hint")))}/>
            <button type="submit" data-testid="apply-seed">{t(l, "ui.seed.apply")}</button>
          </form>
          <button type="button" data-testid="share" onclick={on_share} title={t(l, "ui.share.title")}>{t(l, "ui.share")}</button>
          <button type="button" data-testid="export" onclick={on_export} title={t(l, "ui.export.title")}>{t(l, "ui.export")}</button>
          <label class="import" title={t(l, "ui.import.title")}>{t(l, "ui.import")}
            <input type="file" accept=".json,application/json" data-testid="import" onchange={on_import}/></label>
          <span class="clock" data-testid="clock">{format!("t = {}", secs(now))}</span>
          { if finished { html!{ <span class="done" data-testid="done">{t(l, "ui.done")}</span> } } else { html!{} } }
        </section>
        { for m.notice.as_ref().map(|n| html!{ <p class="refusal" role="alert" data-testid="notice">{n.render(l)}</p> }) }
        { for m.share.as_ref().map(|(json, at)| {
            let url = run_url(&m.query(), json);
            html!{ <p class="share"><span>{Text::new("ui.share.copied").arg("pos", at).render(l)}</span>
              <input type="text" readonly=true value={url} data-testid="share-url" size="60"/></p> }
        }) }
        <Scrubber lang={l} {pos} {horizon} {marks} on_seek={hands.seek.clone()}/>
        { for m.tour.as_ref().map(|ts| {
            let q = ts.tour.chapters[ts.chapter].question.as_ref().map(|q| (q.options, q.answer));
            html!{ <TourPanel lang={l} scenario={ts.tour.scenario} chapter={ts.chapter} chapters={ts.tour.chapters.len()}
                              question={q} predicted={ts.predicted} reached={ts.reached} on_term={on_term.clone()} hands={hands.tour.clone()}/> }
        }) }
        <div class="panes">
          { for m.panes.iter().enumerate().map(|(i, p)| pane(i, p, &m, &state, &hands)) }
        </div>
        { if series.is_empty() { html!{} } else { html!{ <LatenessChart {series} lang={l}/> } } }
        { if m.panes.iter().any(|p| p.lab.cluster.is_some() || p.lab.replication.is_some()) { html!{} } else { html!{
        <div class="forms" id="forms" tabindex="-1">
          <PublishForm fields={forms.clone()} lang={l} on_edit={hands.edit.clone()} hands={hands.forms.clone()}/>
          <ManageForm fields={forms} lang={l} on_edit={hands.edit.clone()} hands={hands.forms.clone()}/>
        </div> } } }
        <Glossary lang={l} open={m.term} on_term={hands.glossary.clone()}/>
        </main>
      </div>
    }
}
