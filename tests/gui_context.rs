//! What the editor shows steers the context, in the real window driven headless with
//! egui_kittest against the fake provider: the meter's estimate follows the open tabs and the
//! selection, and the send carries them (the file open in a tab reaches the model, and the
//! selected lines follow the prompt).

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;
mod gui_harness;

use std::time::Duration;

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use fake_provider::ollama_stream;
use gui_harness::{H, app, harness, open_chat, wait_until};
use tandem_core::app::ContextBreakdown;
use tandem_ui::command::Command;

/// Nothing but the editor points to it: no word of the prompt, not committed since the
/// import, and last in path order behind more than the window holds.
const OPEN_ONLY: &str = "src/zz/open_only.rs";
/// Larger than what a file next in path order finds left of the window.
fn open_only_text() -> String {
    let quiet = "    // a quiet line of the ledger\n".repeat(200);
    format!("pub fn quokka_ledger() -> u32 {{\n    7\n{quiet}}}\n")
}
const PROMPT: &str = "what does this do";

/// The estimate the meter shows now: for the composer's text and the editor as it is.
fn estimate(app: &tandem_ui::TandemApp) -> Option<&ContextBreakdown> {
    let state = &app.state;
    let (prompt, estimate) = state.preview.as_ref()?;
    let current = prompt == state.composer.trim() && state.preview_focus == state.focus_key;
    current.then_some(estimate.as_ref().ok()).flatten()
}

fn why<'b>(estimate: &'b ContextBreakdown, path: &str) -> Option<&'b str> {
    let file = estimate.included.iter().find(|f| f.path == path)?;
    Some(file.why.as_str())
}

/// Selects characters `from..to` of the open file starting with `starts`, as dragging would.
fn select(harness: &mut H, path: &str, starts: &str, from: usize, to: usize) {
    let editor = |n: &egui_kittest::kittest::AccessKitNode<'_>| {
        n.role() == Role::MultilineTextInput && n.value().is_some_and(|v| v.starts_with(starts))
    };
    harness.get_by(editor).focus();
    harness.step();
    let id = egui::Id::unique(("tandem-editor", path));
    let mut state = egui::text_edit::TextEditState::load(&harness.ctx, id).unwrap_or_default();
    state
        .cursor
        .set_char_range(Some(egui::text::CCursorRange::two(
            egui::text::CCursor::new(from),
            egui::text::CCursor::new(to),
        )));
    state.store(&harness.ctx, id);
    harness.run_steps(2);
}

#[test]
fn a_file_open_in_a_tab_and_the_selection_go_with_the_send_and_the_meter_counts_them() {
    let fillers: Vec<(String, String)> = (0..40)
        .map(|i| {
            let body = format!("pub fn unrelated_{i}() -> u32 {{ {i} }}\n").repeat(100);
            (format!("src/aaa/filler_{i:02}.rs"), body)
        })
        .collect();
    let open_only = open_only_text();
    let mut files: Vec<(&str, &str)> = (fillers.iter())
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    files.push((OPEN_ONLY, &open_only));
    let (world, prefs) = gui_harness::world(&files);
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["It counts."], Duration::ZERO),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    harness.get_by_role(Role::MultilineTextInput).focus();
    harness.step();
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text(PROMPT);
    // With no tab open, the file is not in the estimate.
    wait_until(&mut harness, "the estimate", |a| estimate(a).is_some());
    let first = estimate(app(&harness)).unwrap();
    assert_eq!(why(first, OPEN_ONLY), None, "{first:#?}");
    assert!(!first.files_listed.is_empty(), "the window is over-full");

    // Opening it (as the tree does) asks for the estimate again: the meter's hover says why.
    {
        let app = harness.state_mut().as_mut().unwrap();
        app.state
            .apply(Command::OpenFile(OPEN_ONLY.into()), &app.backend);
    }
    wait_until(&mut harness, "the estimate with the open tab", |a| {
        estimate(a).is_some_and(|e| why(e, OPEN_ONLY).is_some())
    });
    let open = estimate(app(&harness)).unwrap();
    assert_eq!(
        why(open, OPEN_ONLY),
        Some("open in the editor"),
        "{open:#?}"
    );
    assert_eq!(open.selection, None);

    // Lines 1-2 selected: counted with the prompt.
    select(&mut harness, OPEN_ONLY, "pub fn quokka", 4, 36);
    assert!(harness.query_by_label("Lines 1-2 selected").is_some());
    wait_until(&mut harness, "the estimate with the selection", |a| {
        estimate(a).is_some_and(|e| e.selection.is_some())
    });
    let selected = estimate(app(&harness)).unwrap();
    let selection = selected.selection.as_ref().unwrap();
    assert_eq!(
        (
            selection.path.as_str(),
            selection.first_line,
            selection.last_line
        ),
        (OPEN_ONLY, 1, 2)
    );
    assert!(
        why(selected, OPEN_ONLY).is_some_and(|w| w.starts_with("selected in the editor")),
        "{selected:#?}"
    );

    harness.get_by_label("Send").click();
    wait_until(&mut harness, "the reply", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none() && (c.messages.iter()).any(|m| m.message.content == "It counts.")
        })
    });
    let request = (world.server.requests().into_iter())
        .find(|r| r.path.contains("/api/chat"))
        .unwrap();
    let messages = request.body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("quokka_ledger"), "the open file is sent");
    let user = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        user.starts_with(PROMPT)
            && user.contains(
                "Selected in the editor: src/zz/open_only.rs lines 1-2\n```rs\npub fn quokka_ledger() -> u32 {\n    7\n```"
            ),
        "{user}"
    );
}
