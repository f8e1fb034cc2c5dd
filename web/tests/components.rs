//! The Yew components in a real browser (wasm-bindgen-test in headless Chromium):
//! `wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver web`.
//! Each test renders the app into the page, clicks as a reader would, and checks the DOM.
#![cfg(target_arch = "wasm32")]

use gloo_timers::future::TimeoutFuture;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Element, HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

fn doc() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// Render the app into a fresh root (the page's own start may have rendered one too: each
/// test works inside its root only).
async fn mount() -> Mounted {
    let root = doc().create_element("div").unwrap();
    doc().body().unwrap().append_child(&root).unwrap();
    let app = yew::Renderer::<nsqlab_web::app::App>::with_root(root.clone()).render();
    settle().await;
    Mounted {
        root,
        app: Some(app),
    }
}

/// An app rendered into its own root; dropped, it is destroyed (its timers and key handler
/// with it) and its root removed.
struct Mounted {
    root: Element,
    app: Option<yew::AppHandle<nsqlab_web::app::App>>,
}

impl std::ops::Deref for Mounted {
    type Target = Element;
    fn deref(&self) -> &Element {
        &self.root
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(app) = self.app.take() {
            app.destroy();
        }
        self.root.remove();
    }
}

/// Let Yew render what the last event changed.
async fn settle() {
    TimeoutFuture::new(5).await;
}

fn all(root: &Element, sel: &str) -> Vec<Element> {
    let list = root.query_selector_all(sel).unwrap();
    (0..list.length())
        .filter_map(|i| list.item(i).and_then(|n| n.dyn_into::<Element>().ok()))
        .collect()
}

fn one(root: &Element, sel: &str) -> Element {
    root.query_selector(sel)
        .unwrap()
        .unwrap_or_else(|| panic!("no {sel}"))
}

fn text(root: &Element, sel: &str) -> String {
    one(root, sel).text_content().unwrap_or_default()
}

async fn click(root: &Element, sel: &str) {
    one(root, sel).dyn_into::<HtmlElement>().unwrap().click();
    settle().await;
}

/// Type into an input as a reader would (value, then an input event).
async fn type_into(root: &Element, sel: &str, value: &str) {
    let input: HtmlInputElement = one(root, sel).dyn_into().unwrap();
    input.set_value(value);
    let ev = web_sys::InputEvent::new("input").unwrap();
    input.dispatch_event(&ev).unwrap();
    settle().await;
}

/// Set an input and fire `change` (as leaving the field does).
async fn change_to(root: &Element, sel: &str, value: &str) {
    let input: HtmlInputElement = one(root, sel).dyn_into().unwrap();
    input.set_value(value);
    input
        .dispatch_event(&web_sys::Event::new("change").unwrap())
        .unwrap();
    settle().await;
}

fn count(root: &Element, testid: &str) -> u64 {
    all(root, &format!("[data-testid={testid}]"))
        .iter()
        .map(|e| {
            e.text_content()
                .unwrap_or_default()
                .chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
                .parse::<u64>()
                .unwrap_or(0)
        })
        .sum()
}

/// Render with this URL query (the app reads it at mount).
async fn mount_at(query: &str) -> Mounted {
    let w = web_sys::window().unwrap();
    w.history()
        .unwrap()
        .replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query))
        .unwrap();
    mount().await
}

async fn key(k: &str) {
    let init = web_sys::KeyboardEventInit::new();
    init.set_key(k);
    init.set_bubbles(true);
    let e = web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    doc().body().unwrap().dispatch_event(&e).unwrap();
    settle().await;
}

/// The first scenario (DPUB through the heap): each Step shows a new explanation; when the
/// heap is between operations its array is a min-heap; the counter matches the cells.
#[wasm_bindgen_test]
async fn stepping_draws_a_valid_heap() {
    let root = mount_at("?scenario=dpub-heap&seed=1").await;
    let first = text(&root, "[data-testid=explain]");
    let mut texts = std::collections::HashSet::new();
    let mut biggest = 0;
    for _ in 0..40 {
        click(&root, "[data-testid=step]").await;
        let t = text(&root, "[data-testid=explain]");
        texts.insert(t.clone());
        let dues: Vec<u64> = all(&root, "[data-testid=heap-array] .cell[data-due]")
            .iter()
            .map(|c| c.get_attribute("data-due").unwrap().parse().unwrap())
            .collect();
        if !dues.is_empty() {
            assert_eq!(
                dues.len() as u64,
                count(&root, "deferred"),
                "cells = counter"
            );
        }
        biggest = biggest.max(dues.len());
        let mid_sift = ["Push", "Sift", "Pop", "The last entry"]
            .iter()
            .any(|p| t.contains(p));
        if !mid_sift {
            for i in 1..dues.len() {
                assert!(
                    dues[(i - 1) / 2] <= dues[i],
                    "heap order at {i}: {dues:?} ({t})"
                );
            }
        }
    }
    assert_ne!(first, text(&root, "[data-testid=explain]"));
    assert!(
        texts.len() > 20,
        "each step explains something new: {}",
        texts.len()
    );
    assert_eq!(biggest, 7, "all seven DPUBs reached the heap");
}

/// The manage form and a consumer's controls change the running simulation; refusals show
/// next to their field.
#[wasm_bindgen_test]
async fn manage_and_consumer_controls() {
    let root = mount_at("?scenario=dpub-heap&seed=1").await;
    let consumers = |root: &Element| all(root, ".node.consumer").len();
    let before = consumers(&root);
    type_into(&root, "#m-topic", "jobs").await;
    type_into(&root, "#m-channel", "work").await;
    type_into(&root, "#m-rdy", "3").await;
    click(&root, "[data-testid=add-consumer]").await;
    assert_eq!(consumers(&root), before + 1);
    let mine = all(&root, ".node.consumer").pop().unwrap();
    assert!(
        mine.text_content().unwrap().contains("jobs/work · RDY 3"),
        "{:?}",
        mine.text_content()
    );
    // A re-render keeps what was typed.
    click(&root, "[data-testid=step]").await;
    let v = one(&root, "#m-topic")
        .dyn_into::<HtmlInputElement>()
        .unwrap()
        .value();
    assert_eq!(v, "jobs");

    // Work time and failure rate change one at a time; the other keeps its value.
    let meta = |root: &Element| {
        text(
            root,
            ".node.consumer:last-child [data-testid=consumer-meta]",
        )
    };
    assert!(
        meta(&root).ends_with("500 ms per message, 0 % fail"),
        "{}",
        meta(&root)
    );
    change_to(&root, ".node.consumer:last-child [data-testid=work]", "120").await;
    change_to(&root, ".node.consumer:last-child [data-testid=fail]", "30").await;
    assert!(
        meta(&root).ends_with("120 ms per message, 30 % fail"),
        "{}",
        meta(&root)
    );
    // A bad RDY is refused next to the field, in nsqd's words, and nothing changes.
    change_to(&root, ".node.consumer:last-child [data-testid=rdy]", "-5").await;
    assert_eq!(
        text(&root, ".node.consumer:last-child [data-testid=rdy-refusal]"),
        "E_INVALID RDY could not parse count -5"
    );
    assert!(meta(&root).contains("RDY 3"));

    click(&root, ".node.consumer:last-child [data-testid=crash]").await;
    let mine = all(&root, ".node.consumer").pop().unwrap();
    assert!(mine.class_name().split_whitespace().any(|c| c == "crashed"));
    assert_eq!(
        text(&root, ".node.consumer:last-child [data-testid=crash]"),
        "recover"
    );

    type_into(&root, "#m-channel", "bad name").await;
    click(&root, "[data-testid=create-channel]").await;
    assert!(text(&root, "[data-testid=m-channel-refusal]").contains("INVALID_CHANNEL"));

    click(
        &root,
        ".node.consumer:last-child [data-testid=remove-consumer]",
    )
    .await;
    assert_eq!(consumers(&root), before);
}

/// Issue item 9: space plays and pauses (the key handler never holds stale state); Reset stops
/// playing; a speed not on the menu is not used; the seed is editable on the page.
#[wasm_bindgen_test]
async fn keyboard_and_controls() {
    let root = mount_at("?scenario=dpub-heap&seed=1&speed=7").await;
    let speed: web_sys::HtmlSelectElement = one(&root, "[data-testid=speed]").dyn_into().unwrap();
    assert_eq!(
        speed.value(),
        "1",
        "7× is not on the menu: 1× is used and shown"
    );
    let play = |root: &Element| text(root, "[data-testid=play]");
    assert!(play(&root).contains("Play"));
    key(" ").await;
    assert!(play(&root).contains("Pause"), "space starts playback");
    key(" ").await;
    assert!(play(&root).contains("Play"), "space pauses it again");
    key(" ").await;
    TimeoutFuture::new(200).await;
    click(&root, "[data-testid=reset]").await;
    assert!(play(&root).contains("Play"), "Reset stops playback");
    assert_eq!(text(&root, "[data-testid=clock]"), "t = 0.000 s");

    type_into(&root, "#seed", "x").await;
    click(&root, "[data-testid=apply-seed]").await;
    assert!(text(&root, "[data-testid=seed-refusal]").contains("whole number"));
    type_into(&root, "#seed", "42").await;
    click(&root, "[data-testid=apply-seed]").await;
    settle().await;
    let search = web_sys::window().unwrap().location().search().unwrap();
    assert!(search.contains("seed=42"), "{search}");
}

/// Issue item 9: FIN by hand shows what it did at once; item 8: a refused publish says why
/// next to its field.
#[wasm_bindgen_test]
async fn answers_and_refusals_show_at_once() {
    let root = mount_at("?scenario=load-balance&seed=1").await;
    for _ in 0..200 {
        if root
            .query_selector(".inflight .row button")
            .unwrap()
            .is_some()
        {
            break;
        }
        click(&root, "[data-testid=step]").await;
    }
    let row = one(&root, ".inflight .row");
    let label = row
        .query_selector(".chip")
        .unwrap()
        .unwrap()
        .text_content()
        .unwrap();
    click(&root, ".inflight .row button").await;
    let t = text(&root, "[data-testid=explain]");
    assert!(t.contains(&format!("is done with {label}")), "{t}");

    type_into(&root, "#pub-defer", "abc").await;
    click(&root, "[data-testid=publish]").await;
    assert_eq!(
        text(&root, "[data-testid=pub-defer-refusal]"),
        "E_INVALID DPUB could not parse timeout abc"
    );
    type_into(&root, "#pub-defer", "0").await;
    assert!(
        root.query_selector("[data-testid=pub-defer-refusal]")
            .unwrap()
            .is_none(),
        "editing clears it"
    );

    // A glossary term opens its entry; Escape closes it.
    click(&root, "[data-testid=explain] .term").await;
    assert!(root
        .query_selector("[data-testid=term-pop]")
        .unwrap()
        .is_some());
    key("Escape").await;
    assert!(root
        .query_selector("[data-testid=term-pop]")
        .unwrap()
        .is_none());
}
