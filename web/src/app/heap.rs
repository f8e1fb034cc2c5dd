//! A channel's deferred min-heap, drawn twice: as a tree (the levels that fit the width, then a
//! count of the rest) and as the array it really is. Tree nodes are drawn in a fixed order and
//! move by CSS transform, so a swap glides; array cells glide by FLIP.

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
}

impl HeapProps {
    /// The props for a channel's heap as the view has it.
    pub fn of(view: &View, c: &ChannelView, now: Option<Time>) -> HeapProps {
        let on_this = view.heap_channel.as_ref() == Some(&(c.topic.clone(), c.name.clone()));
        HeapProps {
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
        }
    }
}

fn due_text(due: Time, now: Option<Time>) -> String {
    match now {
        Some(now) if due > now => format!("in {:.1} s", (due - now) as f64 / 1e9),
        Some(_) => "due now".to_string(),
        None => secs(due),
    }
}

/// Follows an element's width (a resize listener owned by the effect, dropped with it).
#[hook]
fn use_width(node: NodeRef, fallback: f64) -> f64 {
    let width = use_state(|| fallback);
    {
        let width = width.clone();
        use_effect_with(node, move |node| {
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
            let win = web_sys::window();
            if let Some(w) = &win {
                let _ = w
                    .add_event_listener_with_callback("resize", on_resize.as_ref().unchecked_ref());
            }
            move || {
                if let Some(w) = win {
                    let _ = w.remove_event_listener_with_callback(
                        "resize",
                        on_resize.as_ref().unchecked_ref(),
                    );
                }
            }
        });
    }
    *width
}

#[function_component(HeapView)]
pub fn heap_view(p: &HeapProps) -> Html {
    let node = use_node_ref();
    let width = use_width(node.clone(), 760.0).max(SLOT);
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
    let summary = match root {
        Some(r) => format!(
            "Deferred heap of {}/{}: {} entr{}; the root, due first, is {} (due {}).",
            p.topic,
            p.channel,
            p.len,
            if p.len == 1 { "y" } else { "ies" },
            r.label,
            due_text(r.due, p.now)
        ),
        None if p.len > 0 => format!(
            "Deferred heap of {}/{}: the root is a hole.",
            p.topic, p.channel
        ),
        None => format!("Deferred heap of {}/{}: empty.", p.topic, p.channel),
    };
    let deeper = heap_depth(p.len);
    if p.cells.is_empty() {
        return html! {
          <section class="heap empty" data-testid="heap" data-channel={format!("{}/{}", p.topic, p.channel)}>
            <h3>{format!("deferred min-heap of {}/{} — empty", p.topic, p.channel)}</h3>
            <p class="hint">{"No message is waiting for its time here: every deferred one has come due."}</p>
          </section>
        };
    }
    html! {
      <section class="heap" data-testid="heap" data-channel={format!("{}/{}", p.topic, p.channel)} aria-label={summary.clone()}>
        <h3>{format!("deferred min-heap of {}/{} — {} pending", p.topic, p.channel, p.len)}</h3>
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
                  <text y="4" class="lbl">{"hole"}</text>
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
                  <title>{format!("{} — due {}, index {i}", c.label, due_text(c.due, p.now))}</title>
                  <rect x="-32" y="-18" width="64" height="36" rx="9"/>
                  <text y="-3" class="lbl">{c.label.clone()}</text>
                  <text y="11" class="due">{due_text(c.due, p.now)}</text>
                  <text x="-28" y="-22" class="idx">{i}</text>
                </g> }
            }) }
          </svg>
        </div>
        { if hidden > 0 { html!{ <p class="more" data-testid="heap-more">{format!(
            "… and {hidden} more in level{} {}–{} (the tree is {deeper} levels deep; a push or pop swaps at most {} times)",
            if deeper > levels + 1 { "s" } else { "" }, levels + 1, deeper, deeper.saturating_sub(1))}</p> } } else { html!{} } }
        <div class="array" data-testid="heap-array" role="list" aria-label="the same heap as an array: the children of index i are 2i+1 and 2i+2">
          { for p.cells.iter().enumerate().map(|(i, c)| match c {
              Some(c) => html!{
                <div role="listitem" class={classes!("cell", p.marks.contains(&i).then_some("mark"))} data-index={i.to_string()} data-id={c.id.clone()}
                     data-flip={c.id.clone()} data-due={c.due.to_string()} style={format!("--h: {}", c.hue)}>
                  <span class="i">{i}</span><span class="l">{c.label.clone()}</span><span class="d">{due_text(c.due, p.now)}</span>
                </div> },
              None => html!{ <div role="listitem" class="cell hole mark" data-index={i.to_string()}><span class="i">{i}</span><span class="l">{"hole"}</span></div> },
          }) }
          { if p.len > p.cells.len() { html!{ <div class="cell more">{format!("+{}", p.len - p.cells.len())}</div> } } else { html!{} } }
        </div>
      </section>
    }
}
