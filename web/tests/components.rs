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
async fn mount() -> Element {
    let root = doc().create_element("div").unwrap();
    doc().body().unwrap().append_child(&root).unwrap();
    yew::Renderer::<nsqlab_web::app::App>::with_root(root.clone()).render();
    settle().await;
    root
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

/// The first scenario (DPUB through the heap): each Step shows a new explanation; when the
/// heap is between operations its array is a min-heap; the counter matches the cells.
#[wasm_bindgen_test]
async fn stepping_draws_a_valid_heap() {
    let root = mount().await;
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
        assert_eq!(
            dues.len() as u64,
            count(&root, "deferred"),
            "cells = counter"
        );
        biggest = biggest.max(dues.len());
        let mid_sift = ["Push", "Swap", "Pop", "The last entry"]
            .iter()
            .any(|p| t.starts_with(p));
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
    root.remove();
}

/// The manage form and a consumer's controls change the running simulation.
#[wasm_bindgen_test]
async fn manage_and_consumer_controls() {
    let root = mount().await;
    let consumers = |root: &Element| all(root, ".node.consumer").len();
    let before = consumers(&root);
    type_into(&root, "#m-topic", "jobs").await;
    type_into(&root, "#m-channel", "work").await;
    type_into(&root, "#m-rdy", "3").await;
    click(&root, "[data-testid=add-consumer]").await;
    assert_eq!(consumers(&root), before + 1);
    let mine = all(&root, ".node.consumer").pop().unwrap();
    assert!(mine.text_content().unwrap().contains("work · RDY 3"));
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

    click(&root, ".node.consumer:last-child [data-testid=crash]").await;
    let mine = all(&root, ".node.consumer").pop().unwrap();
    assert!(mine.class_name().split_whitespace().any(|c| c == "crashed"));
    assert_eq!(
        text(&root, ".node.consumer:last-child [data-testid=crash]"),
        "recover"
    );

    type_into(&root, "#m-channel", "bad name").await;
    click(&root, "[data-testid=create-channel]").await;
    assert!(text(&root, "[data-testid=manage-status]").contains("names"));

    click(
        &root,
        ".node.consumer:last-child [data-testid=remove-consumer]",
    )
    .await;
    assert_eq!(consumers(&root), before);
    root.remove();
}
