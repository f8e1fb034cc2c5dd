//! A channel's deferred min-heap, drawn twice: as a tree (the levels that fit the width, then a
//! count of the rest) and as the array it really is. Tree nodes are drawn in a fixed order and
//! move by CSS transform, so a swap glides; array cells glide by FLIP.

use crate::i18n::{t, Lang, Text};
use crate::layout::{heap_depth, heap_node_xy, nodes_in_levels, tree_levels};
use crate::view::{secs, ChannelView, View};
use nsqlab_core::time::Time;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

/// The widest a node is, plus room between neighbours.
const SLOT: f64 = 76.0;
const LEVEL_H: f64 = 62.0;
/// Array cells drawn (the rest are counted).
const CELLS: usize = 64;

/// One heap entry as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub id: String,
    pub label: String,
    pub hue: u16,
    pub due: Time,
}

#[derive(Properties, PartialEq)]
pub struct HeapProps {
    pub lang: Lang,
    pub topic: AttrValue,
    pub channel: AttrValue,
    /// Entries (a hole is not one).
    pub len: usize,
    /// The first slots in array order; `None` is the hole.
    pub cells: Vec<Option<Cell>>,
    pub marks: Vec<usize>,
    pub highlight: Option<String>,
    /// Live mode: due times are shown as time left from `now`.
    #[prop_or_default]
    pub now: Option<Time>,
    /// Why the heap is empty, when it is ([`ChannelView::empty_heap_note`]).
    #[prop_or_default]
    pub empty_note: Option<Text>,
    /// The broker was killed and has not started again.
    #[prop_or_default]
    pub down: bool,
}

impl HeapProps {
    /// The props for a channel's heap as the view has it.
    pub fn of(lang: Lang, view: &View, c: &ChannelView, now: Option<Time>) -> HeapProps {
        let on_this = view.heap_channel.as_ref() == Some(&(c.topic.clone(), c.name.clone()));
        HeapProps {
            lang,
            topic: c.topic.clone().into(),
            channel: c.name.clone().into(),
            len: c.deferred(),
            cells: c
                .heap
                .iter()
                .take(CELLS)
                .enumerate()
                .map(|(i, &(id, due))| {
                    (c.hole != Some(i)).then(|| Cell {
                        id: id.to_string(),
                        label: view.label(id),
                        hue: view.hue(id),
                        due,
                    })
                })
                .collect(),
            marks: if on_this {
                view.heap_marks.clone()
            } else {
                Vec::new()
            },
            highlight: view.highlight.map(|h| h.to_string()),
            now,
            empty_note: Some(c.empty_heap_note(view.down)),
            down: view.down,
        }
    }
}

fn due_text(lang: Lang, due: Time, now: Option<Time>) -> String {
    match now {
        Some(now) if due > now => Text::new("ui.due.in")
            .arg("s", format!("{:.1}", (due - now) as f64 / 1e9))
            .render(lang),
        Some(_) => t(lang, "ui.due.now").to_string(),
        None => secs(due),
    }
}

/// Follows an element's width (a `ResizeObserver`, owned by the effect and disconnected with
/// it: the width changes with the window and with the layout, such as two labs side by side).
#[hook]
pub(super) fn use_width(node: NodeRef, drawn: bool, fallback: f64) -> f64 {
    let width = use_state(|| fallback);
    {
        let width = width.clone();
        // Again when the element appears (an empty heap draws none).
        use_effect_with((node, drawn), move |(node, _)| {
            let measure = {
                let node = node.clone();
                move || {
                    if let Some(el) = node.cast::<web_sys::Element>() {
                        let w = el.client_width() as f64;
                        if w > 0.0 {
                            width.set(w);
                        }
                    }
                }
            };
            measure();
            let on_resize = Closure::<dyn Fn()>::new(measure);
            let observer = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()).ok();
            if let (Some(o), Some(el)) = (&observer, node.cast::<web_sys::Element>()) {
                o.observe(&el);
            }
            move || {
                if let Some(o) = observer {
                    o.disconnect();
                }
                drop(on_resize);
            }
        });
    }
    *width
}

#[function_component(HeapView)]
pub fn heap_view(p: &HeapProps) -> Html {
    let node = use_node_ref();
    let width = use_width(node.clone(), !p.cells.is_empty(), 760.0).max(SLOT);
    let slots = p.cells.len().max(p.len);
    let levels = tree_levels(slots, width, SLOT).max(1);
    let shown = slots.min(nodes_in_levels(levels)).min(p.cells.len());
    let hidden = p.len.saturating_sub(shown);
    let height = levels as f64 * LEVEL_H + 8.0;
    let xy = |i: usize| heap_node_xy(i, width, LEVEL_H);
    // Nodes in a fixed order (by message), whatever their index: a swap only changes two
    // transforms, and CSS lets both glide.
    let mut nodes: Vec<(usize, &Cell)> = p
        .cells
        .iter()
        .take(shown)
        .enumerate()
        .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
        .collect();
    nodes.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    let hole = p.cells.iter().take(shown).position(Option::is_none);
    let root = p.cells.first().and_then(|c| c.as_ref());
    let l = p.lang;
    let channel = format!("{}/{}", p.topic, p.channel);
    let summary = match root {
        Some(r) => Text::new("ui.heap.root")
            .arg("channel", &channel)
            .arg("n", p.len)
            .arg("label", &r.label)
            .arg("due", due_text(l, r.due, p.now))
            .render(l),
        None => Text::new("ui.heap.hole").arg("channel", &channel).render(l),
    };
    let deeper = heap_depth(p.len);
    if p.cells.is_empty() {
        // Empty because the broker was killed (or its restart has not pushed the deferred
        // messages back yet) is not empty because every one came due.
        let why = match &p.empty_note {
            Some(n) => n.render(l),
            None => t(l, "ui.heap.empty").to_string(),
        };
        return html! {
          <section class={classes!("heap", "empty", p.down.then_some("down"))} data-testid="heap" data-channel={format!("{}/{}", p.topic, p.channel)} data-len={p.len.to_string()}>
            <h3>{Text::new("ui.heap.empty.title").arg("channel", format!("{}/{}", p.topic, p.channel)).render(p.lang)}</h3>
            <p class="hint" data-testid="heap-why">{why}</p>
          </section>
        };
    }
    html! {
      <section class="heap" data-testid="heap" data-channel={format!("{}/{}", p.topic, p.channel)} data-len={p.len.to_string()} aria-label={summary.clone()}>
        <h3>{Text::new("ui.heap.title").arg("channel", &channel).arg("n", p.len).render(l)}</h3>
        <div class="tree-wrap" ref={node}>
          <svg class="tree" width={width.to_string()} height={height.to_string()}
               viewBox={format!("0 0 {width} {height}")} role="img" aria-label={summary}>
            { for (1..shown).map(|i| {
                let (x1, y1) = xy((i - 1) / 2);
                let (x2, y2) = xy(i);
                html!{ <line x1={format!("{x1:.1}")} y1={format!("{y1:.1}")} x2={format!("{x2:.1}")} y2={format!("{y2:.1}")} class="edge"/> }
            }) }
            { for hole.map(|i| {
                let (x, y) = xy(i);
                html!{ <g class="hnode hole mark" data-index={i.to_string()} style={format!("transform: translate({x:.1}px, {y:.1}px)")}>
                  <rect x="-32" y="-18" width="64" height="36" rx="9"/>
                  <text y="4" class="lbl">{t(l, "ui.hole")}</text>
                  <text x="-28" y="-22" class="idx">{i}</text>
                </g> }
            }) }
            { for nodes.iter().map(|&(i, c)| {
                let (x, y) = xy(i);
                let cls = classes!(
                    "hnode",
                    p.marks.contains(&i).then_some("mark"),
                    (p.highlight.as_deref() == Some(c.id.as_str())).then_some("hot"),
                );
                html!{ <g key={c.id.clone()} class={cls} data-index={i.to_string()} data-id={c.id.clone()}
                          style={format!("transform: translate({x:.1}px, {y:.1}px); --h: {}", c.hue)}>
                  <title>{Text::new("ui.heap.node").arg("label", &c.label).arg("due", due_text(l, c.due, p.now)).arg("i", i).render(l)}</title>
                  <rect x="-32" y="-18" width="64" height="36" rx="9"/>
                  <text y="-3" class="lbl">{c.label.clone()}</text>
                  <text y="11" class="due">{due_text(p.lang, c.due, p.now)}</text>
                  <text x="-28" y="-22" class="idx">{i}</text>
                </g> }
            }) }
          </svg>
        </div>
        { if hidden > 0 { html!{ <p class="more" data-testid="heap-more">{Text::new("ui.heap.more")
            .arg("hidden", hidden).arg("from", levels + 1).arg("to", deeper).arg("depth", deeper).arg("swaps", deeper.saturating_sub(1)).render(l)}</p> } } else { html!{} } }
        <div class="array" data-testid="heap-array" role="list" aria-label={t(l, "ui.heap.array")}>
          { for p.cells.iter().enumerate().map(|(i, c)| match c {
              Some(c) => html!{
                <div role="listitem" class={classes!("cell", p.marks.contains(&i).then_some("mark"))} data-index={i.to_string()} data-id={c.id.clone()}
                     data-flip={c.id.clone()} data-due={c.due.to_string()} style={format!("--h: {}", c.hue)}>
                  <span class="i">{i}</span><span class="l">{c.label.clone()}</span><span class="d">{due_text(p.lang, c.due, p.now)}</span>
                </div> },
              None => html!{ <div role="listitem" class="cell hole mark" data-index={i.to_string()}><span class="i">{i}</span><span class="l">{t(l, "ui.hole")}</span></div> },
          }) }
          { if p.len > p.cells.len() { html!{ <div class="cell more">{format!("+{}", p.len - p.cells.len())}</div> } } else { html!{} } }
        </div>
      </section>
    }
}
