//! The cluster scenario's picture: two nsqlookupd, three nsqd, a producer and the consumers,
//! with the wires between them ([`crate::cluster::picture`] places everything).

use crate::cluster::picture::{layout, Delta, Line, Place, Shown, Who, Wire, HEIGHT, WIDTH};
use crate::cluster::{Cluster, Hand};
use crate::i18n::{t, Lang, Text};
use yew::prelude::*;

fn name(c: &Cluster, w: Who, l: Lang) -> String {
    match w {
        Who::Finder(f) => c.finders[f].name.to_string(),
        Who::Node(i) => c.nodes[i].name.to_string(),
        Who::Producer => t(l, "who.producer").to_string(),
        Who::Reader(r) => c.readers[r].name.render(l),
    }
}

/// A box's test id: its kind and its number (`node-2`).
fn testid(w: Who) -> String {
    let n = match w {
        Who::Finder(k) | Who::Node(k) | Who::Reader(k) => k + 1,
        Who::Producer => return kind_of(w).to_string(),
    };
    format!("{}-{n}", kind_of(w))
}

/// The lines of text inside a box.
fn rows(c: &Cluster, w: Who, l: Lang) -> Vec<(String, Option<&'static str>)> {
    let s = &c.shown;
    match w {
        Who::Finder(f) => {
            if !s.finders.get(f).is_none_or(|x| x.up) {
                return vec![(t(l, "cl.ui.finder-off").to_string(), Some("down"))];
            }
            let listed = s.listing(f);
            if listed.is_empty() {
                return vec![(t(l, "cl.ui.nothing").to_string(), None)];
            }
            let mut out = vec![(
                Text::new("cl.ui.topic")
                    .arg("topic", crate::cluster::TOPIC)
                    .render(l),
                None,
            )];
            out.extend(listed.into_iter().map(|(i, tomb)| {
                let n = c.nodes[i].name;
                if tomb {
                    (
                        Text::new("cl.ui.tombstoned").arg("node", n).render(l),
                        Some("tomb"),
                    )
                } else {
                    (format!("→ {n}"), None)
                }
            }));
            out
        }
        Who::Node(i) => {
            let n = &s.nodes[i];
            if !n.identified {
                return vec![(t(l, "cl.ui.starting").to_string(), None)];
            }
            if !n.up {
                return vec![(t(l, "cl.ui.down").to_string(), Some("down"))];
            }
            if !n.topic {
                return vec![(t(l, "cl.ui.no-topic").to_string(), None)];
            }
            let mut out = Vec::new();
            if n.channels.is_empty() {
                out.push((
                    Text::new("cl.ui.waiting")
                        .arg("topic", crate::cluster::TOPIC)
                        .arg("n", n.waiting)
                        .render(l),
                    None,
                ));
            }
            for (ch, (depth, flight)) in &n.channels {
                out.push((
                    Text::new("cl.ui.channel")
                        .arg("channel", ch)
                        .arg("depth", depth)
                        .arg("flight", flight)
                        .render(l),
                    None,
                ));
            }
            if n.tombstoned {
                out.push((t(l, "cl.ui.tomb").to_string(), Some("tomb")));
            }
            out
        }
        Who::Producer => vec![(
            Text::new("cl.ui.published").arg("n", s.published).render(l),
            None,
        )],
        Who::Reader(r) => {
            let rd = &s.readers[r];
            if !rd.joined {
                return vec![(t(l, "cl.ui.not-yet").to_string(), None)];
            }
            vec![
                (
                    Text::new("cl.ui.reader")
                        .arg("channel", c.readers[r].channel)
                        .arg("fin", rd.finished)
                        .render(l),
                    None,
                ),
                (
                    Text::new("cl.ui.reads-from")
                        .arg(
                            "nodes",
                            rd.conns
                                .iter()
                                .enumerate()
                                .filter(|(_, &on)| on)
                                .map(|(i, _)| c.nodes[i].name)
                                .collect::<Vec<_>>()
                                .join(", "),
                        )
                        .render(l),
                    None,
                ),
            ]
        }
    }
}

fn kind(w: Wire) -> &'static str {
    match w {
        Wire::Registry => "registry",
        Wire::Publish => "publish",
        Wire::Subscribe => "subscribe",
        Wire::Lookup => "lookup",
    }
}

/// A drawn box.
fn place(c: &Cluster, actual: Option<&Shown>, p: &Place, lit: bool, l: Lang) -> Html {
    let title = name(c, p.who, l);
    let role = match p.who {
        Who::Finder(_) => "nsqlookupd",
        Who::Node(_) => "nsqd",
        Who::Producer | Who::Reader(_) => "",
    };
    let down = match p.who {
        Who::Node(i) => c.shown.nodes[i].identified && !c.shown.nodes[i].up,
        Who::Finder(f) => !c.shown.finders.get(f).is_none_or(|x| x.up),
        _ => false,
    };
    let core = match (p.who, actual) {
        // The real counters, to compare with what is drawn (between instants they agree).
        (Who::Node(i), Some(actual)) => {
            let n = &actual.nodes[i];
            Some(
                n.channels
                    .iter()
                    .map(|(ch, (d, f))| format!("{ch}:{d}:{f}"))
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
        _ => None,
    };
    let listed = match p.who {
        Who::Finder(f) => Some(f),
        _ => None,
    }
    .map(|f| {
        c.shown
            .listing(f)
            .into_iter()
            .filter(|(_, tomb)| !tomb)
            .map(|(i, _)| c.nodes[i].name)
            .collect::<Vec<_>>()
            .join(", ")
    });
    let shown = match p.who {
        Who::Node(i) => Some(
            c.shown.nodes[i]
                .channels
                .iter()
                .map(|(ch, (d, f))| format!("{ch}:{d}:{f}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => None,
    };
    html! {
      <g class={classes!("cbox", kind_of(p.who), lit.then_some("lit"), down.then_some("down"))}
         data-testid={testid(p.who)} data-name={title.clone()} data-core={core} data-shown={shown} data-listed={listed}
         transform={format!("translate({:.0},{:.0})", p.x, p.y)}>
        <rect width={format!("{:.0}", p.w)} height={format!("{:.0}", p.h)} rx="8"/>
        <text class="ctitle" x="10" y="20">{title}<tspan class="crole">{if role.is_empty() { String::new() } else { format!("  {role}") }}</tspan></text>
        { for rows(c, p.who, l).into_iter().enumerate().map(|(k, (row, class))| html!{
            <text class={classes!("crow", class)} x="10" y={format!("{}", 40 + k * 17)}>{row}</text>
        }) }
      </g>
    }
}

fn kind_of(w: Who) -> &'static str {
    match w {
        Who::Finder(_) => "finder",
        Who::Node(_) => "node",
        Who::Producer => "producer",
        Who::Reader(_) => "reader",
    }
}

fn wire(ln: &Line) -> Html {
    // A lookup goes around the nodes: a curve out to the side.
    let d = if ln.kind == Wire::Lookup {
        let side = if ln.x1 < WIDTH / 2.0 {
            8.0
        } else {
            WIDTH - 8.0
        };
        format!(
            "M{:.0},{:.0} C{side:.0},{:.0} {side:.0},{:.0} {:.0},{:.0}",
            ln.x1,
            ln.y1,
            ln.y1 - 40.0,
            ln.y2 + 40.0,
            ln.x2,
            ln.y2
        )
    } else {
        format!("M{:.0},{:.0} L{:.0},{:.0}", ln.x1, ln.y1, ln.x2, ln.y2)
    };
    html! {
      <path class={classes!("cwire", kind(ln.kind), ln.lit.then_some("lit"))} d={d}
            data-wire={format!("{}>{}", testid(ln.from), testid(ln.to))}/>
    }
}

/// The cluster drawn.
/// `between`: the clock is between instants (the real counters are then given to compare).
pub fn cluster_view(c: &Cluster, between: bool, l: Lang, on_hand: &Callback<Hand>) -> Html {
    let (places, lines) = layout(&c.shown, c.finders.len(), c.readers.len());
    let actual = c.actual();
    let lit: Vec<Who> = lines
        .iter()
        .filter(|x| x.lit)
        // A registration lights its wires and the node, not the lookupds (both hear it).
        .flat_map(|x| [Some(x.from), (x.kind != Wire::Registry).then_some(x.to)])
        .flatten()
        .chain(match &c.shown.focus {
            Some(Delta::Down(i) | Delta::Up(i) | Delta::Tombstone(i)) => vec![Who::Node(*i)],
            Some(Delta::FinderOff(f) | Delta::FinderOn(f)) => vec![Who::Finder(*f)],
            Some(Delta::Note) => vec![Who::Producer],
            _ => vec![],
        })
        .collect();
    html! {
      <figure class="cluster" data-testid="cluster">
        <svg viewBox={format!("0 0 {WIDTH} {HEIGHT}")} role="img" aria-label={t(l, "cl.ui.label")}>
          <g class="wires">{ for lines.iter().map(wire) }</g>
          { for places.iter().map(|pl| place(c, between.then_some(&actual), pl, lit.contains(&pl.who), l)) }
        </svg>
        <figcaption class="legend">
          <span class="k k-registry">{t(l, "cl.ui.legend.registry")}</span>
          <span class="k k-publish">{t(l, "cl.ui.legend.publish")}</span>
          <span class="k k-subscribe">{t(l, "cl.ui.legend.subscribe")}</span>
          <span class="k k-lookup">{t(l, "cl.ui.legend.lookup")}</span>
        </figcaption>
        <div class="cluster-hands" data-testid="cluster-hands" role="group" aria-label={t(l, "cl.ui.hands")}>
          { for c.nodes.iter().enumerate().map(|(i, n)| {
              let key = if n.up { "cl.ui.off" } else { "cl.ui.on" };
              html!{ <button type="button" data-testid={format!("switch-node-{}", i + 1)} aria-pressed={(!n.up).to_string()}
                        onclick={on_hand.reform(move |_: MouseEvent| Hand::Node(i))}>{Text::new(key).arg("who", n.name).render(l)}</button> }
          }) }
          { for c.finders.iter().enumerate().map(|(f, x)| {
              let key = if x.up { "cl.ui.off" } else { "cl.ui.on" };
              html!{ <button type="button" data-testid={format!("switch-finder-{}", f + 1)} aria-pressed={(!x.up).to_string()}
                        onclick={on_hand.reform(move |_: MouseEvent| Hand::Finder(f))}>{Text::new(key).arg("who", x.name).render(l)}</button> }
          }) }
          <button type="button" data-testid="cluster-publish" onclick={on_hand.reform(|_: MouseEvent| Hand::Publish)}>{t(l, "cl.ui.publish")}</button>
          <button type="button" data-testid="cluster-add-consumer" disabled={c.readers.len() >= crate::cluster::MAX_READERS}
                  onclick={on_hand.reform(|_: MouseEvent| Hand::AddReader)}>{t(l, "cl.ui.add")}</button>
        </div>
      </figure>
    }
}
