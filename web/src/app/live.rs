//! Live mode: the page mirrors this server's channels (see [`crate::live`]).

use super::flip::{animate_moves, Flip};
use super::heap::{HeapProps, HeapView};
use super::parts::*;
use crate::i18n::{t, Lang, Text};
use crate::live::{LiveModel, QueuesJson};
use crate::view::time_of_day;
use gloo_timers::callback::Interval;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use yew::prelude::*;

/// What changes the mirror.
pub enum LiveAction {
    /// Text messages from the event stream, in order.
    Messages(Vec<String>),
    Snapshot(Vec<QueuesJson>),
    /// A catalogue key for the connection's state.
    Status(&'static str),
    Explain(Option<&'static str>),
    SetLang(Lang),
    /// The words of the chosen language have loaded.
    WordsLoaded,
    /// No frame has come for a while (or one came again).
    Stale(bool),
}

/// The mirror as the reducer holds it (see [`super::Shared`]).
#[derive(Clone)]
struct Live {
    model: Rc<RefCell<LiveModel>>,
    status: &'static str,
    term: Option<&'static str>,
    lang: Lang,
    stale: bool,
}

impl Reducible for Live {
    type Action = LiveAction;

    fn reduce(self: Rc<Self>, action: LiveAction) -> Rc<Self> {
        let (mut term, mut lang, mut status, mut stale) =
            (self.term, self.lang, self.status, self.stale);
        match action {
            LiveAction::Messages(ms) => {
                let mut m = self.model.borrow_mut();
                let now = js_sys::Date::now();
                for t in ms {
                    m.handle_message(&t, now);
                }
                stale = false;
            }
            LiveAction::Stale(s) => stale = s,
            LiveAction::Snapshot(qs) => self.model.borrow_mut().load_snapshot(&qs),
            LiveAction::Status(s) => status = s,
            LiveAction::Explain(x) => term = x,
            LiveAction::SetLang(l) => lang = l,
            LiveAction::WordsLoaded => {}
        }
        Rc::new(Live {
            model: self.model.clone(),
            status,
            term,
            lang,
            stale,
        })
    }
}

/// Load `/api/queues` into the mirror.
fn load_snapshot(d: UseReducerDispatcher<Live>) {
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(text) = super::fetch_text("/api/queues").await {
            if let Ok(qs) = serde_json::from_str::<Vec<QueuesJson>>(&text) {
                d.dispatch(LiveAction::Snapshot(qs));
            }
        }
    });
}

#[function_component(LiveApp)]
pub fn live_app() -> Html {
    let state = use_reducer(|| Live {
        model: Rc::new(RefCell::new(LiveModel::new())),
        status: "ui.live.connecting",
        stale: true,
        term: None,
        lang: super::params()
            .and_then(|p| p.get("lang"))
            .map(|l| Lang::from_code(&l))
            .unwrap_or_default(),
    });
    let d = state.dispatcher();
    {
        let d = d.clone();
        let model = state.model.clone();
        use_effect_with((), move |_| {
            // Messages wait here and go to the mirror in batches, ten times a second at most,
            // however busy the server is.
            let inbox: Rc<RefCell<Vec<String>>> = Rc::default();
            let loc = web_sys::window().map(|w| w.location());
            let host = loc.as_ref().and_then(|l| l.host().ok()).unwrap_or_default();
            let proto = if loc.and_then(|l| l.protocol().ok()).as_deref() == Some("https:") {
                "wss"
            } else {
                "ws"
            };
            let ws = web_sys::WebSocket::new(&format!("{proto}://{host}/ws/events")).ok();
            let on_message = {
                let inbox = inbox.clone();
                wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                    move |e: web_sys::MessageEvent| {
                        if let Some(t) = e.data().as_string() {
                            inbox.borrow_mut().push(t);
                        }
                    },
                )
            };
            let on_open = {
                let d = d.clone();
                wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
                    // The story's snapshot is loaded once a frame says the server is calm
                    // enough to tell (the timer below); events before it wait in the model.
                    d.dispatch(LiveAction::Status("ui.live.connected"));
                })
            };
            let on_close = {
                let d = d.clone();
                wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
                    d.dispatch(LiveAction::Status("ui.live.closed"));
                })
            };
            if let Some(ws) = &ws {
                ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
                ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
                ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
            }
            let loading = Rc::new(std::cell::Cell::new(0u32));
            let was_stale = Rc::new(std::cell::Cell::new(true));
            let timer = Interval::new(100, move || {
                let batch = std::mem::take(&mut *inbox.borrow_mut());
                if !batch.is_empty() {
                    was_stale.set(false);
                    d.dispatch(LiveAction::Messages(batch));
                } else if !was_stale.get() && model.borrow().stale(js_sys::Date::now()) {
                    was_stale.set(true);
                    d.dispatch(LiveAction::Stale(true));
                }
                // Once the server is quiet enough to tell events one by one, the story starts
                // again from its state (loaded at most every 2 s).
                let n = loading.get();
                if n > 0 {
                    loading.set(n - 1);
                } else {
                    let m = model.borrow();
                    if m.wants_snapshot && !m.busy && m.frame_at.is_some() {
                        loading.set(20);
                        load_snapshot(d.clone());
                    }
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
    {
        let flip = use_mut_ref(Flip::default);
        use_effect(move || animate_moves(&mut flip.borrow_mut()));
    }
    let on_term = {
        let d = d.clone();
        Callback::from(move |k: &'static str| d.dispatch(LiveAction::Explain(Some(k))))
    };
    let on_glossary = {
        let d = d.clone();
        Callback::from(move |k: Option<&'static str>| d.dispatch(LiveAction::Explain(k)))
    };
    {
        let d = d.clone();
        super::use_words(
            state.lang,
            Callback::from(move |()| d.dispatch(LiveAction::WordsLoaded)),
        );
    }
    let l = crate::i18n::shown(state.lang);
    let m = state.model.borrow();
    let v = &m.view;
    let host = web_sys::window()
        .and_then(|w| w.location().host().ok())
        .unwrap_or_default();
    let last = m
        .log
        .last()
        .map(|s| s.text.render(l))
        .unwrap_or_else(|| Text::new("ui.live.waiting").arg("host", host).render(l));
    let heap_chan = v
        .heap_channel
        .as_ref()
        .and_then(|k| v.channels.get(k))
        .filter(|c| c.ever_deferred)
        .or_else(|| v.channels.values().find(|c| c.ever_deferred));
    let channels: Vec<ChannelCard> = v
        .channels
        .values()
        .map(|c| {
            let s = c.server.unwrap_or_default();
            let chips = |disk: bool| -> Vec<Token> {
                c.queue
                    .iter()
                    .filter(|x| x.on_disk == disk)
                    .take(CHIPS)
                    .map(|x| Token {
                        id: x.id.to_string(),
                        label: v.label(x.id),
                        hue: v.hue(x.id),
                    })
                    .collect()
            };
            ChannelCard {
                topic: c.topic.clone(),
                name: c.name.clone(),
                depth: s.depth,
                deferred: s.deferred as usize,
                in_flight: s.in_flight as usize,
                finished: c.finished,
                requeued: s.requeued,
                timed_out: s.timed_out,
                memory: chips(false),
                disk: chips(true),
                in_memory: s.depth.saturating_sub(s.on_disk) as usize,
                on_disk: s.on_disk as usize,
                stored: Vec::new(),
                stored_n: 0,
                mem_queue_size: v.mem_queue_size,
                core: None,
                server: Some(s),
            }
        })
        .collect();
    let rows = {
        let model = state.model.clone();
        Callback::from(move |(from, to): (usize, usize)| {
            model.borrow().log[from..to]
                .iter()
                .map(|s| (s.at, s.text.render(l)))
                .collect::<Vec<_>>()
        })
    };
    let switch = {
        let d = d.clone();
        Callback::from(move |_: MouseEvent| d.dispatch(LiveAction::SetLang(l.other())))
    };
    let highlight = v.highlight.map(|h| h.to_string());
    html! {
      <div class="app live">
        <header>
          <h1>{"nsqlab"}<span class="sub">{t(l, "ui.live.sub")}</span>
            <button type="button" class="lang" data-testid="lang" title={t(l, "ui.lang.title")} lang={l.other().html_lang()} onclick={switch}>{t(l, "sym.lang.other")}</button></h1>
          <nav class="scenarios">
            <a class="live-link" href={format!("?scenario=dpub-heap&lang={}", l.code())}>{t(l, "ui.live.back")}</a>
            <span class="status" data-testid="status">{Text::new("ui.live.status").word("status", state.status).arg("n", m.skipped).render(l)}</span>
          </nav>
        </header>
        <main>
        <h2 class="visually-hidden">{t(l, "ui.live.sub")}</h2>
        <section class="controls">
          <span class="clock" data-testid="clock">{Text::new("ui.live.clock").arg("t", time_of_day(v.now)).render(l)}</span>
          { if state.stale && m.frame_at.is_some() {
              html!{ <span class="hint stale" role="status" data-testid="stale">{Text::new("ui.live.stale").arg("t", time_of_day(v.now)).render(l)}</span> }
          } else {
              html!{ <span class="hint">{t(l, "ui.live.hint")}</span> }
          } }
        </section>
        <section class="lab">
          <div class="lab-grid">
            <div class="now">
              <div class="explain" data-testid="explain" aria-live="polite"><Words text={last} lang={l} on_term={on_term.clone()}/></div>
            </div>
            <div class="picture">
              <div class={classes!("live-channels", state.stale.then_some("stale"))} data-testid="topology">
                { for m.bare_topics.iter().map(|(name, n)| topic_box(l, name, *n, v.mem_queue_size, &on_term)) }
                { for channels.iter().map(|c| channel_box(l, c, highlight.as_deref(), &on_term)) }
              </div>
              { heap_chan.map(|c| {
                  let mut props = HeapProps::of(l, v, c, Some(v.now));
                  props.len = c.server.map_or(props.len, |s| s.deferred as usize);
                  html!{ <HeapView ..props/> }
              }).unwrap_or_default() }
            </div>
            <div class="side">
              { for v.channels.values().filter(|c| !c.in_flight.is_empty()).map(|c| {
                  let rows: Vec<FlightRow> = c.in_flight.iter().map(|f| FlightRow {
                      token: Token { id: f.id.to_string(), label: v.label(f.id), hue: v.hue(f.id) },
                      msg: f.id, client: f.client, who: v.who(f.client).render(l), attempts: f.attempts, sent: f.sent, deadline: f.deadline,
                  }).collect();
                  let more = c.server.map_or(0, |s| s.in_flight.saturating_sub(rows.len() as u64));
                  html!{ <InFlight lang={l} lab={0} channel={format!("{}/{}", c.topic, c.name)} {rows} {more} now={v.now} highlight={highlight.clone()}/> }
              }) }
              <StepLog len={m.log.len()} {rows} wall={true} lang={l}/>
            </div>
          </div>
        </section>
        <Glossary lang={l} open={state.term} on_term={on_glossary}/>
        </main>
      </div>
    }
}
