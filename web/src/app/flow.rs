//! The flow view's component: boxes, edges, and every message as a token that glides from
//! place to place (speed follows the playback speed; with reduced motion, a moved token fades
//! in where it now is). The layout is [`crate::flow::layout`].

use super::heap::use_width;
use crate::flow::{BoxKind, Flow};
use crate::i18n::{t, Lang, Text};
use crate::layout::Region;
use std::collections::HashMap;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct FlowProps {
    pub lang: Lang,
    /// Lays the view out for a width.
    pub layout: Callback<f64, Flow>,
    /// Changes with every step (the layout is read again).
    pub version: u64,
    /// How long a glide takes, in ms.
    pub glide_ms: u32,
    /// The message the last step was about, and whether it timed out (it goes back, marked).
    pub highlight: Option<String>,
    pub timed_out: bool,
    /// The lab's heading, when there are several (each flow view is named apart).
    #[prop_or_default]
    pub pane: Option<AttrValue>,
}

#[function_component(FlowView)]
pub fn flow_view(p: &FlowProps) -> Html {
    let node = use_node_ref();
    let width = use_width(node.clone(), true, 1000.0);
    let f = p.layout.emit(width);
    let l = p.lang;
    // With reduced motion, tokens that moved fade in instead of gliding.
    let prev = use_mut_ref(HashMap::<String, (i32, i32)>::new);
    let reduced = super::flip::reduced_motion();
    let moved: std::collections::HashSet<String> = {
        let prev = prev.borrow();
        f.tokens
            .iter()
            .filter(|x| {
                prev.get(&x.key)
                    .is_some_and(|&(a, b)| (a, b) != (x.x as i32, x.y as i32))
            })
            .map(|x| x.key.clone())
            .collect()
    };
    {
        let now: HashMap<String, (i32, i32)> = f
            .tokens
            .iter()
            .map(|x| (x.key.clone(), (x.x as i32, x.y as i32)))
            .collect();
        let prev = prev.clone();
        use_effect(move || {
            *prev.borrow_mut() = now;
        });
    }
    let mut tokens: Vec<_> = f.tokens.iter().collect();
    tokens.sort_by(|a, b| a.key.cmp(&b.key));
    html! {
      <section class="flow" data-testid="flow"
               aria-label={match &p.pane { Some(x) => format!("{} · {x}", t(l, "ui.flow")), None => t(l, "ui.flow").to_string() }}>
        <h3>{t(l, "ui.flow")}</h3>
        <div class="flow-area" ref={node} style={format!("height: {:.0}px; --glide: {}ms", f.height, p.glide_ms)}
             role="img" aria-label={f.boxes.iter().map(|b| b.title.render(l)).collect::<Vec<_>>().join("; ")}>
          <svg class="edges" width={format!("{:.0}", f.width)} height={format!("{:.0}", f.height)} aria-hidden="true">
            { for f.edges.iter().map(|&(x1, y1, x2, y2)| html!{
                <line x1={format!("{x1:.1}")} y1={format!("{y1:.1}")} x2={format!("{x2:.1}")} y2={format!("{y2:.1}")}/> }) }
          </svg>
          { for f.boxes.iter().map(|b| {
              let kind = match &b.kind {
                  BoxKind::Producer => "producer",
                  BoxKind::Topic => "topic",
                  BoxKind::Channel => "channel",
                  BoxKind::Row(_) => "row",
                  BoxKind::Consumer => "consumer",
              };
              html!{ <div class={classes!("fbox", kind)} data-key={b.key.clone()}
                          style={format!("left: {:.1}px; top: {:.1}px; width: {:.1}px; height: {:.1}px", b.x, b.y, b.w, b.h)}>
                <span class="ftitle">{b.title.render(l)}</span></div> }
          }) }
          { for tokens.into_iter().map(|x| {
              let region = match x.region {
                  Region::Held => "held",
                  Region::Deferred => "deferred",
                  Region::Memory => "memory",
                  Region::Disk => "disk",
                  Region::InFlight => "in-flight",
              };
              let hot = p.highlight.as_deref() == Some(&x.key[..x.key.find('@').unwrap_or(0)]);
              let cls = classes!(
                  "tok",
                  region,
                  x.dot.then_some("dot"),
                  hot.then_some("hot"),
                  (hot && p.timed_out).then_some("back"),
                  (reduced && moved.contains(&x.key)).then_some("arrive"),
              );
              let title = match x.ring {
                  Some(r) => Text::new("ui.flow.ring").arg("label", &x.label).arg("left", format!("{:.0}%", r * 100.0)).render(l),
                  None => x.label.clone(),
              };
              html!{ <div key={x.key.clone()} class={cls} data-id={x.id.to_string()} data-region={region} title={title}
                          style={format!("transform: translate({:.1}px, {:.1}px); --h: {}", x.x, x.y, x.hue)}>
                { for x.ring.map(|r| html!{ <svg class="ring" viewBox="0 0 14 14" aria-hidden="true">
                    <circle cx="7" cy="7" r="5" pathLength="100" stroke-dasharray={format!("{:.0} 100", r * 100.0)}/></svg> }) }
                { if x.dot { html!{} } else { html!{ <span class="tl">{x.label.clone()}</span> } } }
              </div> }
          }) }
          { for f.more.iter().map(|&(x, y, n)| html!{
              <div class="fmore" style={format!("left: {x:.0}px; top: {y:.0}px")}>{Text::new("ui.flow.more").arg("n", n).render(l)}</div> }) }
        </div>
      </section>
    }
}
