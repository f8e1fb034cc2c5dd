//! The flow view's component: boxes and edges in the page, and every message a token drawn
//! on a canvas above them, gliding from place to place (the glide's length follows the
//! playback speed; with reduced motion, a moved token fades in where it now is). The layout is
//! [`crate::flow::layout`], the motion [`crate::glide`]. A canvas keeps a thousand gliding
//! tokens at the display's frame rate, where a thousand DOM elements cannot.

use super::heap::use_width;
use crate::flow::BoxKind;
use crate::glide::{Drawn, Glides};
use crate::i18n::{t, Lang, Text};
use gloo_render::{request_animation_frame, AnimationFrame};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, MouseEvent};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct FlowProps {
    pub lang: Lang,
    /// Lays the view out for a width.
    pub layout: Callback<f64, crate::flow::Flow>,
    /// The model's version ([`crate::model::Model::version`]): the props differ whenever the
    /// model changed, so the view is drawn again.
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

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Draws the tokens, one animation frame after another while any moves.
#[derive(Clone)]
struct Painter {
    canvas: NodeRef,
    glides: Rc<RefCell<Glides>>,
    frame: Rc<RefCell<Option<AnimationFrame>>>,
    size: Rc<RefCell<(f64, f64)>>,
}

impl Painter {
    /// Paint now, and keep painting while something moves.
    fn kick(&self) {
        let me = self.clone();
        let handle = request_animation_frame(move |_| {
            let now = now_ms();
            me.paint(now);
            if me.glides.borrow().busy(now) {
                me.kick();
            } else {
                me.frame.borrow_mut().take();
            }
        });
        *self.frame.borrow_mut() = Some(handle);
    }

    fn paint(&self, now: f64) {
        let Some(canvas) = self.canvas.cast::<HtmlCanvasElement>() else {
            return;
        };
        let Some(ctx) = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        else {
            return;
        };
        let (w, h) = *self.size.borrow();
        let dpr = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio());
        let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
        ctx.clear_rect(0.0, 0.0, w, h);
        let glides = self.glides.borrow();
        let frame = glides.frame(now);
        let mut colours: HashMap<u16, (String, String)> = HashMap::new();
        ctx.set_font("11px ui-monospace, monospace");
        ctx.set_text_align("center");
        ctx.set_text_baseline("middle");
        for d in &frame {
            draw(&ctx, d, &mut colours);
        }
        ctx.set_global_alpha(1.0);
        let _ = canvas.set_attribute("data-moving", &glides.moving(now).to_string());
    }
}

/// A path around a pill (a rectangle with round ends).
fn pill(ctx: &CanvasRenderingContext2d, x: f64, y: f64, w: f64, h: f64) {
    let r = h / 2.0;
    ctx.begin_path();
    ctx.move_to(x + r, y);
    ctx.line_to(x + w - r, y);
    let _ = ctx.arc(
        x + w - r,
        y + r,
        r,
        -std::f64::consts::FRAC_PI_2,
        std::f64::consts::FRAC_PI_2,
    );
    ctx.line_to(x + r, y + h);
    let _ = ctx.arc(
        x + r,
        y + r,
        r,
        std::f64::consts::FRAC_PI_2,
        3.0 * std::f64::consts::FRAC_PI_2,
    );
    ctx.close_path();
}

fn draw(
    ctx: &CanvasRenderingContext2d,
    d: &Drawn<'_>,
    colours: &mut HashMap<u16, (String, String)>,
) {
    use std::f64::consts::{FRAC_PI_2, TAU};
    let g = d.glide;
    let tk = &g.token;
    let (w, h) = crate::glide::size(tk);
    ctx.set_global_alpha(d.alpha);
    let (fill, stroke) = colours.entry(tk.hue).or_insert_with(|| {
        (
            format!("hsl({} 80% 90%)", tk.hue),
            format!("hsl({} 45% 50%)", tk.hue),
        )
    });
    let (fill, stroke): (&str, &str) = if g.back {
        ("#ffe3e3", "#b42318")
    } else {
        (fill, stroke)
    };
    if tk.dot {
        ctx.begin_path();
        let _ = ctx.arc(d.x + w / 2.0, d.y + h / 2.0, w / 2.0, 0.0, TAU);
    } else {
        pill(ctx, d.x, d.y, w, h);
    }
    ctx.set_fill_style_str(fill);
    ctx.fill();
    // A timed-out token going back is told apart by shape too, not by colour alone: a dashed
    // outline, and a return arrow before its label.
    let dash = js_sys::Array::new();
    if g.back {
        dash.push(&JsValue::from_f64(3.0));
        dash.push(&JsValue::from_f64(2.0));
    }
    let _ = ctx.set_line_dash(&dash);
    ctx.set_line_width(if g.back { 1.5 } else { 1.0 });
    ctx.set_stroke_style_str(stroke);
    ctx.stroke();
    let _ = ctx.set_line_dash(&js_sys::Array::new());
    if g.hot {
        if tk.dot {
            ctx.begin_path();
            let _ = ctx.arc(d.x + w / 2.0, d.y + h / 2.0, w / 2.0 + 3.0, 0.0, TAU);
        } else {
            pill(ctx, d.x - 3.0, d.y - 3.0, w + 6.0, h + 6.0);
        }
        ctx.set_line_width(2.0);
        ctx.set_stroke_style_str("#b53a0a");
        ctx.stroke();
    }
    let mut text_x = d.x + w / 2.0;
    if let Some(share) = tk.ring {
        // The countdown ring: the share of its time left to be answered.
        let (cx, cy) = if tk.dot {
            (d.x + w / 2.0, d.y + h / 2.0)
        } else {
            (d.x + 11.0, d.y + h / 2.0)
        };
        ctx.begin_path();
        let _ = ctx.arc(
            cx,
            cy,
            5.0,
            -FRAC_PI_2,
            -FRAC_PI_2 + TAU * share.clamp(0.0, 1.0),
        );
        ctx.set_line_width(3.0);
        ctx.set_stroke_style_str("#1f7431");
        ctx.stroke();
        text_x += 7.0;
    }
    if !tk.dot {
        ctx.set_fill_style_str("#17202e");
        let room = if tk.ring.is_some() { w - 22.0 } else { w - 8.0 };
        let label = if g.back {
            format!("↩ {}", tk.label)
        } else {
            tk.label.clone()
        };
        let _ = ctx.fill_text_with_max_width(&label, text_x, d.y + h / 2.0 + 0.5, room);
    }
}

#[function_component(FlowView)]
pub fn flow_view(p: &FlowProps) -> Html {
    let node = use_node_ref();
    let width = use_width(node.clone(), true, 1000.0);
    let f = p.layout.emit(width);
    let l = p.lang;
    let canvas = use_node_ref();
    let painter = {
        let canvas = canvas.clone();
        use_mut_ref(move || Painter {
            canvas,
            glides: Rc::new(RefCell::new(Glides::default())),
            frame: Rc::new(RefCell::new(None)),
            size: Rc::new(RefCell::new((0.0, 0.0))),
        })
        .borrow()
        .clone()
    };
    // After every render: the tokens' new places, then paint (and glide) from there.
    {
        let painter = painter.clone();
        let tokens = f.tokens.clone();
        let hot = p.highlight.clone();
        let back = p.timed_out;
        let glide = p.glide_ms as f64;
        let size = (f.width, f.height);
        use_effect(move || {
            *painter.size.borrow_mut() = size;
            let reduced = super::flip::reduced_motion();
            painter.glides.borrow_mut().update(
                &tokens,
                hot.as_deref(),
                back,
                now_ms(),
                glide,
                reduced,
            );
            painter.kick();
        });
    }
    // For tests and the curious: `canvas.tokens()` lists each token as drawn now.
    {
        let painter = painter.clone();
        let hook = use_mut_ref(|| None::<Closure<dyn Fn() -> JsValue>>);
        let canvas = canvas.clone();
        use_effect_with((), move |_| {
            let glides = painter.glides.clone();
            let f = Closure::<dyn Fn() -> JsValue>::new(move || {
                let now = now_ms();
                let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
                let list: Vec<String> = glides
                    .borrow()
                    .frame(now)
                    .iter()
                    .map(|d| {
                        let tk = &d.glide.token;
                        format!(
                            "{{\"key\":{},\"id\":\"{}\",\"label\":{},\"region\":\"{:?}\",\"x\":{},\"y\":{},\"to\":[{},{}],\"alpha\":{},\"hot\":{},\"back\":{},\"ring\":{}}}",
                            q(&tk.key),
                            tk.id,
                            q(&tk.label),
                            tk.region,
                            d.x,
                            d.y,
                            tk.x,
                            tk.y,
                            d.alpha,
                            d.glide.hot,
                            d.glide.back,
                            tk.ring.map_or("null".to_string(), |r| r.to_string()),
                        )
                    })
                    .collect();
                JsValue::from_str(&format!("[{}]", list.join(",")))
            });
            if let Some(c) = canvas.cast::<HtmlCanvasElement>() {
                let _ = js_sys::Reflect::set(&c, &JsValue::from_str("tokens"), f.as_ref());
            }
            *hook.borrow_mut() = Some(f);
        });
    }
    // The token under the pointer is named (the canvas's title).
    let onmousemove = {
        let painter = painter.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(c) = painter.canvas.cast::<HtmlCanvasElement>() else {
                return;
            };
            let r = c.get_bounding_client_rect();
            let (x, y) = (
                e.client_x() as f64 - r.left(),
                e.client_y() as f64 - r.top(),
            );
            let title = painter
                .glides
                .borrow()
                .hit(x, y, now_ms())
                .map(|g| match g.token.ring {
                    Some(share) => Text::new("ui.flow.ring")
                        .arg("label", &g.token.label)
                        .arg("left", format!("{:.0}%", share * 100.0))
                        .render(l),
                    None => g.token.label.clone(),
                })
                .unwrap_or_default();
            let _ = c.set_attribute("title", &title);
        })
    };
    let dpr = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio());
    html! {
      <section class="flow" data-testid="flow"
               aria-label={match &p.pane { Some(x) => format!("{} · {x}", t(l, "ui.flow")), None => t(l, "ui.flow").to_string() }}>
        <h3>{t(l, "ui.flow")}</h3>
        { if f.down { html!{ <p class="down-banner" role="status" data-testid="down">{t(l, "ui.down")}</p> } } else { html!{} } }
        <div class="flow-area" ref={node} style={format!("height: {:.0}px", f.height)}
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
                  BoxKind::CrashedConsumer => "consumer crashed",
              };
              html!{ <div class={classes!("fbox", kind)} data-key={b.key.clone()} data-testid={(b.kind == BoxKind::CrashedConsumer).then_some("crashed-consumer")}
                          style={format!("left: {:.1}px; top: {:.1}px; width: {:.1}px; height: {:.1}px", b.x, b.y, b.w, b.h)}>
                <span class="ftitle">{b.title.render(l)}</span></div> }
          }) }
          <canvas ref={canvas} class="tokens" data-testid="tokens" data-count={f.tokens.len().to_string()}
                  width={format!("{:.0}", f.width * dpr)} height={format!("{:.0}", f.height * dpr)}
                  style={format!("width: {:.0}px; height: {:.0}px", f.width, f.height)} {onmousemove}/>
          { for f.more.iter().map(|&(x, y, n)| html!{
              <div class="fmore" style={format!("left: {x:.0}px; top: {y:.0}px")}>{Text::new("ui.flow.more").arg("n", n).render(l)}</div> }) }
        </div>
        <p class="flow-legend" data-testid="flow-legend">
          <span class="mk hot" aria-hidden="true"></span>{t(l, "ui.flow.legend.hot")}
          <span class="mk back" aria-hidden="true">{"↩"}</span>{t(l, "ui.flow.legend.back")}
          <span class="mk ring" aria-hidden="true"></span>{t(l, "ui.flow.legend.ring")}
          <span class="mk crashed" aria-hidden="true">{"✕"}</span>{t(l, "ui.flow.legend.crashed")}
        </p>
      </section>
    }
}
