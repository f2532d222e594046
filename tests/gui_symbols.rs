//! Go to definition (F12), find references (Shift+F12) and the file tree's symbol filter,
//! in the real window driven headless with egui_kittest on a temp project (the code index
//! reads the files on disk).

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;
mod gui_harness;

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use gui_harness::{H, World, app, harness, wait_until};
use tandem_ui::command::Command;
use tandem_ui::model::state::Prefs;

/// (The call is outside the macro: the Rust tags query sees no call inside one.)
const MAIN: &str = "mod util;\nuse util::helper;\n\nfn main() {\n    let n = helper(41);\n    println!(\"{n}\");\n}\n";
const UTIL: &str =
    "// Small tools.\n\n/// Adds one.\npub fn helper(n: u32) -> u32 {\n    n + 1\n}\n";
/// Where `helper` is defined in UTIL (1-based) and the character that line starts at.
const HELPER_LINE: usize = 4;
const HELPER_AT: usize = 31;

fn world() -> (World, Prefs) {
    gui_harness::world(&[("src/main.rs", MAIN), ("src/util.rs", UTIL)])
}

/// Opens `path` as the tree would, and waits for its tab.
fn open(harness: &mut H, path: &str) {
    wait_until(harness, "the project", |a| a.state.project.is_some());
    let app = harness.state_mut().as_mut().unwrap();
    app.state
        .apply(Command::OpenFile(path.into()), &app.backend);
    wait_until(harness, "the open tab", |a| {
        active(a).is_some_and(|t| t.path == path)
    });
}

fn active(app: &tandem_ui::TandemApp) -> Option<&tandem_ui::model::state::Tab> {
    let project = app.state.project.as_ref()?;
    project.tabs.get(project.active_tab?)
}

/// Puts the editor's cursor of the file starting with `starts` at character `at`, as a
/// click there would.
fn put_cursor(harness: &mut H, path: &str, starts: &str, at: usize) {
    let editor = |n: &egui_kittest::kittest::AccessKitNode<'_>| {
        n.role() == Role::MultilineTextInput && n.value().is_some_and(|v| v.starts_with(starts))
    };
    harness.get_by(editor).focus();
    harness.step();
    let id = egui::Id::unique(("tandem-editor", path));
    let mut state = egui::text_edit::TextEditState::load(&harness.ctx, id).unwrap_or_default();
    let cursor = egui::text::CCursorRange::one(egui::text::CCursor::new(at));
    state.cursor.set_char_range(Some(cursor));
    state.store(&harness.ctx, id);
    harness.run_steps(2);
}

/// The character index of the editor's cursor in `path`, as egui holds it.
fn cursor_in(harness: &H, path: &str) -> Option<usize> {
    let id = egui::Id::unique(("tandem-editor", path));
    let state = egui::text_edit::TextEditState::load(&harness.ctx, id)?;
    Some(state.cursor.char_range()?.primary.index.0)
}

/// Waits until `path` is the open file with the cursor at HELPER_AT and the line scrolled to.
fn wait_at_helper(harness: &mut H, path: &str) {
    wait_until(harness, "the definition open at its line", |a| {
        a.state.project.as_ref().is_some_and(|p| p.goto.is_none())
            && active(a).is_some_and(|t| t.path == path && t.cursor == Some(HELPER_AT))
    });
    harness.run_steps(2);
    assert_eq!(cursor_in(harness, path), Some(HELPER_AT));
    // The keyboard is there too: typing goes on at the definition.
    let id = egui::Id::unique(("tandem-editor", path));
    assert!(harness.ctx.memory(|m| m.has_focus(id)));
    let text = &active(app(harness)).unwrap().text;
    let line = text[..HELPER_AT].matches('\n').count() + 1;
    assert_eq!(line, HELPER_LINE);
}

#[test]
fn f12_on_a_call_opens_the_file_that_defines_it_at_the_line() {
    assert!(UTIL[HELPER_AT..].starts_with("pub fn helper"));
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open(&mut harness, "src/main.rs");
    // Inside `helper` of `helper(41)` on line 5.
    let call = MAIN.find("helper(41)").unwrap() + 3;
    put_cursor(&mut harness, "src/main.rs", "mod util", call);
    harness.key_press(egui::Key::F12);
    wait_at_helper(&mut harness, "src/util.rs");
    assert!(
        app(&harness)
            .state
            .project
            .as_ref()
            .unwrap()
            .symbols
            .picker
            .is_none()
    );
}

#[test]
fn f12_on_a_name_defined_nowhere_says_so() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open(&mut harness, "src/main.rs");
    let at = MAIN.find("println").unwrap() + 2;
    put_cursor(&mut harness, "src/main.rs", "mod util", at);
    harness.key_press(egui::Key::F12);
    wait_until(&mut harness, "the message", |a| {
        (a.state.toasts.iter()).any(|t| t.text == "No definition of println found in the project")
    });
    assert_eq!(active(app(&harness)).unwrap().path, "src/main.rs");
}

#[test]
fn shift_f12_lists_the_references_and_one_opens_at_its_line() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open(&mut harness, "src/util.rs");
    // On `helper` in its own definition.
    put_cursor(&mut harness, "src/util.rs", "// Small tools", HELPER_AT + 8);
    harness.key_press_modifiers(egui::Modifiers::SHIFT, egui::Key::F12);
    wait_until(&mut harness, "the references", |a| {
        let project = a.state.project.as_ref().unwrap();
        project.symbols.picker.is_some()
    });
    harness.run_steps(2);
    // Shift+F12 is not F12: the definition did not open in place of the list.
    assert_eq!(active(app(&harness)).unwrap().path, "src/util.rs");
    let picker = app(&harness)
        .state
        .project
        .as_ref()
        .unwrap()
        .symbols
        .picker
        .clone();
    assert_eq!(picker.unwrap().title, "3 references to helper in 2 file(s)");
    assert!(
        harness
            .query_by_label_contains("3 references to helper")
            .is_some()
    );
    harness
        .get_by_label("src/main.rs:5  let n = helper(41);")
        .click();
    wait_until(&mut harness, "the reference open at its line", |a| {
        let call_line = MAIN.find("    let n").unwrap();
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.goto.is_none() && p.symbols.picker.is_none())
            && active(a).is_some_and(|t| t.path == "src/main.rs" && t.cursor == Some(call_line))
    });
}

#[test]
fn the_file_filter_lists_symbols_and_opens_one_at_its_line() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    let field = |n: &egui_kittest::kittest::AccessKitNode<'_>| {
        n.role() == Role::TextInput && n.placeholder() == Some("Filter files and symbols")
    };
    harness.get_by(field).focus();
    harness.step();
    harness.get_by(field).type_text("HELP");
    wait_until(&mut harness, "the symbols", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| !(p.symbols.matches_for(&p.files.filter)).is_empty())
    });
    harness.run_steps(2);
    // No file is named so: the symbol is listed all the same.
    assert!(harness.query_by_label("No file matches").is_none());
    harness.get_by_label("helper — src/util.rs:4").click();
    wait_at_helper(&mut harness, "src/util.rs");
}
