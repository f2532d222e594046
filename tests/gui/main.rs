//! The desktop app driven headless with egui_kittest, against the fake provider server: the
//! real `TandemApp` state, backend and engine; interactions through the accessibility tree
//! the way a person (or a screen reader) finds widgets.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

#[path = "../common/mod.rs"]
mod common;
mod composer;
mod editor;
#[path = "../fake_provider/mod.rs"]
mod fake_provider;
#[path = "../gui_harness/mod.rs"]
mod gui_harness;
mod review;
mod settings;

use std::time::Duration;

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use fake_provider::{Gate, ollama_stream};
use gui_harness::{World, app, harness, open_chat, send, wait_until};
use tandem_ui::model::state::Prefs;

const ORIGINAL: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20\n";

/// A project with notes.txt (see `gui_harness::world`).
fn world() -> (World, Prefs) {
    gui_harness::world(&[("notes.txt", ORIGINAL)])
}

fn proposal_reply() -> Vec<String> {
    let changed = ORIGINAL
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    vec![
        "I'll spell out two numbers.\n".to_string(),
        format!("<tandem-write path=\"notes.txt\" description=\"spell numbers\">\n{changed}"),
        "</tandem-write>\n<tandem-chat-summary>Spell out numbers</tandem-chat-summary>".to_string(),
    ]
}

const WHY_NOT: &str = "Why not? (tells the model)";

/// The labels of the chat panel (from the left of a "You" message's header), top to bottom.
fn chat_labels(harness: &gui_harness::H) -> Vec<String> {
    let left = harness.get_by_label("You").rect().left();
    let mut labels: Vec<(f32, String)> = harness
        .get_all_by_role(Role::Label)
        .filter(|n| n.rect().left() >= left - 20.0)
        .filter_map(|n| Some((n.rect().top(), n.value()?)))
        .collect();
    labels.sort_by(|a, b| a.0.total_cmp(&b.0));
    labels.into_iter().map(|(_, label)| label).collect()
}

/// Opens notes.txt and types `typed` at the start of its buffer.
fn open_and_type(harness: &mut gui_harness::H, typed: &str) {
    wait_until(harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label_contains("notes.txt").click();
    wait_until(harness, "the open tab", |a| {
        a.state.project.as_ref().is_some_and(|p| !p.tabs.is_empty())
    });
    let editor = |n: &egui_kittest::kittest::AccessKitNode<'_>| {
        n.role() == Role::MultilineTextInput && n.value().is_some_and(|v| v.starts_with("line 1"))
    };
    harness.get_by(editor).focus();
    harness.step();
    harness.get_by(editor).type_text(typed);
    harness.step();
    assert!(app(harness).state.project.as_ref().unwrap().tabs[0].dirty());
}

/// Steps until a (fading-in) dialog's button shows, then clicks it.
fn click_when_shown(harness: &mut gui_harness::H, label: &str) {
    wait_shown(harness, label);
    harness.get_by_label(label).click();
    harness.step();
    harness.step();
}

/// Steps until a widget whose label contains `text` shows (a popup shows from its second
/// frame); whether it did.
fn shown_containing(harness: &mut gui_harness::H, text: &str) -> bool {
    for _ in 0..10 {
        if harness.query_all_by_label_contains(text).next().is_some() {
            return true;
        }
        harness.step();
    }
    false
}

fn wait_shown(harness: &mut gui_harness::H, label: &str) {
    for _ in 0..30 {
        if harness.query_by_label(label).is_some() {
            break;
        }
        harness.step();
    }
}

fn tabs(harness: &gui_harness::H) -> Vec<(String, String)> {
    let project = app(harness).state.project.as_ref().unwrap();
    project
        .tabs
        .iter()
        .map(|t| (t.path.clone(), t.text.clone()))
        .collect()
}

const REVIEW: &str = "I found two problems.\n\
<tandem-security-finding title=\"Verbose errors\" level=\"low\">Errors echo the input back.</tandem-security-finding>\n\
<tandem-security-finding title=\"SQL injection\" level=\"critical\" path=\"notes.txt\" lines=\"3-4\">The id is formatted into the query; bind it as a parameter.</tandem-security-finding>";

/// A real 8×8 PNG, red.
fn red_png() -> Vec<u8> {
    let image = image::RgbaImage::from_pixel(8, 8, image::Rgba([220, 40, 40, 255]));
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}
