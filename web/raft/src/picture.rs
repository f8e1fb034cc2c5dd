//! The replication scenario's picture, as HTML (the page puts it in place; its styles are
//! [`CSS`], which the page adds when it loads this module): the producer and the consumer, three nodes with their
//! role, term, vote and log (each entry's index, term and contents; committed ones filled,
//! those still being written dashed), the leader's channel, and the raft messages on the wire.
//! Every word comes from [`crate::words`]; every text is escaped.

use crate::words::{render, word};
use crate::{
    kind_say, short_say, what_say, ClientShot, EntryShot, NodeShot, Role, Say, Shot, WireKind,
    WireShot,
};
use std::fmt::Write;

/// The picture's styles (the page adds them when it loads this module; its colours are the
/// page's `style.css` variables).
pub const CSS: &str = r#".replication { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 8px; display: flex; flex-direction: column; gap: 8px; }
.rp-clients, .rp-nodes { display: grid; gap: 8px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 220px), 1fr)); }
.rp-client, .rp-node { border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; display: flex; flex-direction: column; gap: 2px; min-width: 0; }
.rp-client .rp-at, .rp-client span { font-size: 13px; color: var(--muted); }
.rp-client.off { opacity: .6; border-style: dashed; }
.rp-head { display: flex; flex-wrap: wrap; gap: 2px 8px; align-items: baseline; }
.rp-role { font-size: 12px; font-weight: 650; text-transform: uppercase; letter-spacing: .04em; border-radius: 8px; padding: 0 6px; background: #eef1f6; }
.rp-node.leader { border-color: var(--accent); box-shadow: 0 0 0 1px var(--accent) inset; }
.rp-node.leader .rp-role { background: var(--accent); color: #fff; }
.rp-node.candidate .rp-role, .rp-node.precandidate .rp-role { background: #fff1d6; color: #7a4b00; }
.rp-node.down { background: #f3f3f3; border-style: dashed; }
.rp-node.down .rp-role { background: var(--warn); color: #fff; }
.rp-term, .rp-voted, .rp-commit { font-size: 12px; color: var(--muted); }
.rp-log { display: flex; flex-wrap: wrap; gap: 3px; margin: 4px 0 2px; }
.rp-entry { display: inline-flex; flex-direction: column; align-items: center; min-width: 44px; max-width: 76px; padding: 1px 3px;
            border: 1px solid #7d8799; border-radius: 4px; background: #fff; font-size: 11px; line-height: 1.25; }
.rp-entry.committed { background: #dff0e2; border-color: var(--ok); }
.rp-entry.writing { border-style: dashed; background: #fffaf0; }
.rp-entry .rp-index { font-weight: 700; }
.rp-entry .rp-eterm { color: var(--muted); }
.rp-entry .rp-what { max-width: 70px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.rp-broker { margin-top: 4px; border-top: 1px solid var(--line); padding-top: 4px; font-size: 13px; display: flex; flex-direction: column; }
.rp-wire { font-size: 13px; }
.rp-wire ul { list-style: none; margin: 4px 0 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 8px; }
.rp-msg { border: 1px solid var(--line); border-radius: 12px; padding: 1px 8px; display: inline-flex; gap: 6px; background: #fff; }
.rp-msg .rp-route { font-weight: 650; }
.rp-msg.vote, .rp-msg.answer { border-color: #c08a1a; }
.rp-msg.append { border-color: var(--accent); }
.rp-msg.ack { border-color: var(--ok); }
.rp-quiet { color: var(--muted); margin-left: 6px; }
.replication .legend { font-size: 12px; color: var(--muted); }"#;

/// The picture of `s`, in Chinese when `zh`.
pub fn html(s: &Shot, zh: bool) -> String {
    let p = Painter { s, zh };
    let mut out = String::with_capacity(4096);
    out.push_str(
        r#"<figure class="replication" data-testid="replication"><div class="rp-clients">"#,
    );
    p.client(&mut out, &s.producer, "producer");
    p.client(&mut out, &s.consumer, "consumer");
    out.push_str(r#"</div><div class="rp-nodes">"#);
    for n in &s.nodes {
        p.node(&mut out, n);
    }
    let _ = write!(
        out,
        r#"</div><div class="rp-wire" data-testid="rp-wire"><b>{}</b>"#,
        p.w("rp.ui.wire")
    );
    if s.wire.is_empty() {
        let _ = write!(
            out,
            r#"<span class="rp-quiet">{}</span>"#,
            p.w("rp.ui.wire.empty")
        );
    } else {
        out.push_str("<ul>");
        for m in &s.wire {
            p.wire(&mut out, m);
        }
        out.push_str("</ul>");
    }
    let _ = write!(
        out,
        r#"</div><figcaption class="legend">{}</figcaption></figure>"#,
        p.w("rp.ui.legend")
    );
    out
}

/// Text made safe for HTML.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

struct Painter<'a> {
    s: &'a Shot,
    zh: bool,
}

impl Painter<'_> {
    /// A word, escaped.
    fn w(&self, key: &str) -> String {
        esc(&self.say(&Say::new(key)))
    }

    fn say(&self, s: &Say) -> String {
        debug_assert!(word(&s.key).is_some(), "no words for {:?}", s.key);
        render(s, self.zh)
    }

    fn name(&self, id: u64) -> String {
        self.s
            .nodes
            .iter()
            .find(|n| n.id == id)
            .map_or_else(|| id.to_string(), |n| n.name.clone())
    }

    fn labels(&self, xs: &[String]) -> String {
        if xs.is_empty() {
            self.say(&Say::new("rp.ui.none"))
        } else {
            xs.join(", ")
        }
    }

    fn client(&self, out: &mut String, c: &ClientShot, id: &str) {
        let at = match c.at {
            Some(n) => self.say(&Say::new("rp.ui.connected").arg("node", self.name(n))),
            None => self.say(&Say::new("rp.ui.disconnected")),
        };
        let (who, rows) = if id == "producer" {
            (
                "rp.who.producer",
                [
                    (
                        "awaiting",
                        Say::new("rp.ui.awaiting").arg("labels", self.labels(&c.waiting)),
                    ),
                    (
                        "acked",
                        Say::new("rp.ui.acked").arg("labels", self.labels(&c.acked)),
                    ),
                ],
            )
        } else {
            (
                "rp.who.consumer",
                [
                    (
                        "working",
                        Say::new("rp.ui.working").arg("labels", self.labels(&c.working)),
                    ),
                    (
                        "done",
                        Say::new("rp.ui.done").arg("labels", self.labels(&c.done)),
                    ),
                ],
            )
        };
        let off = if c.at.is_none() { " off" } else { "" };
        let _ = write!(
            out,
            r#"<div class="rp-client{off}" data-testid="rp-{id}"><b>{}</b><span class="rp-at">{}</span>"#,
            self.w(who),
            esc(&at)
        );
        for (k, say) in rows {
            let _ = write!(
                out,
                r#"<span class="rp-{k}" data-testid="rp-{id}-{k}">{}</span>"#,
                esc(&self.say(&say))
            );
        }
        out.push_str("</div>");
    }

    fn node(&self, out: &mut String, n: &NodeShot) {
        let role = match n.role {
            Role::Leader => "leader",
            Role::Candidate => "candidate",
            Role::PreCandidate => "precandidate",
            Role::Follower => "follower",
            Role::Down => "down",
        };
        let _ = write!(
            out,
            r#"<div class="rp-node {role}" data-testid="rp-node-{}" data-role="{role}"><div class="rp-head"><b>{}</b><span class="rp-role">{}</span><span class="rp-term">{}</span>"#,
            n.id,
            esc(&n.name),
            self.w(n.role.key()),
            esc(&self.say(&Say::new("rp.ui.term").arg("term", n.term)))
        );
        if n.voted != 0 {
            let _ = write!(
                out,
                r#"<span class="rp-voted">{}</span>"#,
                esc(&self.say(&Say::new("rp.ui.voted").arg("node", self.name(n.voted))))
            );
        }
        let _ = write!(
            out,
            r#"</div><div class="rp-log" role="list" aria-label="{}">"#,
            self.w("rp.ui.log")
        );
        for e in &n.log {
            self.entry(out, e, n.commit);
        }
        let _ = write!(
            out,
            r#"</div><div class="rp-commit" data-testid="rp-commit-{}">{}</div>"#,
            n.id,
            esc(&self.say(&Say::new("rp.ui.commit").arg("index", n.commit)))
        );
        if n.serving {
            let _ = write!(
                out,
                r#"<div class="rp-broker" data-testid="rp-broker-{}"><b>{}</b><span>{}/{}</span><span>{}</span><span>{}</span></div>"#,
                n.id,
                self.w("rp.ui.serving"),
                crate::TOPIC,
                crate::CHANNEL,
                esc(&self.say(&Say::new("rp.ui.waiting").arg("labels", self.labels(&n.waiting)))),
                esc(&self.say(&Say::new("rp.ui.inflight").arg("labels", self.labels(&n.in_flight)))),
            );
        }
        out.push_str("</div>");
    }

    fn entry(&self, out: &mut String, e: &EntryShot, commit: u64) {
        let what = esc(&self.say(&what_say(&e.what)));
        let short = esc(&self.say(&short_say(&e.what)));
        let mut class = String::from("rp-entry");
        if e.index <= commit {
            class.push_str(" committed");
        }
        if !e.durable {
            class.push_str(" writing");
        }
        let _ = write!(
            out,
            r#"<span class="{class}" role="listitem" title="{what}" data-index="{i}"><span class="rp-index">{i}</span><span class="rp-eterm">t{t}</span><span class="rp-what">{short}</span></span>"#,
            i = e.index,
            t = e.term
        );
    }

    fn wire(&self, out: &mut String, m: &WireShot) {
        let class = match &m.kind {
            WireKind::PreVote { .. } | WireKind::Vote { .. } => "vote",
            WireKind::PreVoteAnswer { .. } | WireKind::VoteAnswer { .. } => "answer",
            WireKind::Append { .. } => "append",
            WireKind::AppendAnswer { .. } => "ack",
            WireKind::Other => "other",
        };
        let _ = write!(
            out,
            r#"<li class="rp-msg {class}"><span class="rp-route">{} → {}</span><span class="rp-kind">{}</span></li>"#,
            esc(&self.name(m.from)),
            esc(&self.name(m.to)),
            esc(&self.say(&kind_say(&m.kind)))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EntryWhat, NodeShot};

    fn shot() -> Shot {
        Shot {
            nodes: vec![
                NodeShot {
                    id: 1,
                    name: "nsqd-1".into(),
                    role: Role::Leader,
                    term: 2,
                    voted: 1,
                    log: vec![
                        EntryShot {
                            index: 1,
                            term: 1,
                            what: EntryWhat::Start,
                            durable: true,
                        },
                        EntryShot {
                            index: 2,
                            term: 2,
                            what: EntryWhat::Pub("#1<b>".into()),
                            durable: false,
                        },
                    ],
                    commit: 1,
                    serving: true,
                    waiting: vec!["#1<b>".into()],
                    in_flight: vec![],
                },
                NodeShot {
                    id: 2,
                    name: "nsqd-2".into(),
                    role: Role::Down,
                    ..NodeShot::default()
                },
            ],
            wire: vec![WireShot {
                from: 1,
                to: 2,
                kind: WireKind::Append {
                    first: 2,
                    last: 2,
                    commit: 1,
                },
            }],
            producer: ClientShot {
                at: Some(1),
                waiting: vec!["#1<b>".into()],
                ..ClientShot::default()
            },
            consumer: ClientShot::default(),
        }
    }

    #[test]
    fn the_picture_shows_roles_entries_and_the_wire() {
        let h = html(&shot(), false);
        assert!(
            h.contains(r#"data-testid="rp-node-1" data-role="leader""#),
            "{h}"
        );
        assert!(h.contains(r#"data-role="down""#));
        assert!(
            h.contains(r#"class="rp-entry committed""#),
            "entry 1 is committed"
        );
        assert!(
            h.contains(r#"class="rp-entry writing""#),
            "entry 2 is being written"
        );
        assert!(h.contains("nsqd-1 → nsqd-2"));
        assert!(h.contains("waiting for OK: #1&lt;b&gt;"), "escaped: {h}");
        assert!(!h.contains("<b>\""), "nothing unescaped");
        assert!(!h.contains('{'), "every place filled: {h}");
        let zh = html(&shot(), true);
        assert!(zh.contains("领导者") && zh.contains("宕机"), "{zh}");
        assert!(!zh.contains('{'));
    }

    #[test]
    fn an_empty_wire_says_so() {
        let mut s = shot();
        s.wire.clear();
        assert!(html(&s, false).contains("heartbeats are not drawn"));
    }
}
