//! Tests for `editor`.
use super::*;
use crate::widgets::highlight::Highlighter;
use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use tandem_core::store::{Project, ProjectSettings};

struct Fixture {
    project: ProjectState,
    cache: HighlightCache,
    commands: Vec<Command>,
}

fn tab(path: &str, text: &str, find: Option<&str>) -> Tab {
    let mut tab = Tab::new(path.to_string(), text.to_string(), None);
    tab.find = find.map(str::to_string);
    tab
}

fn harness(tabs: Vec<Tab>) -> Harness<'static, Fixture> {
    let mut project = ProjectState::new(
        Project {
            id: 1,
            name: "p".into(),
            path: "/tmp/p".into(),
            settings: ProjectSettings::default(),
            created_at: 0,
            updated_at: 0,
        },
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    project.active_tab = (!tabs.is_empty()).then_some(0);
    project.tabs = tabs;
    let fixture = Fixture {
        project,
        cache: HighlightCache::with_highlighter(Highlighter::new()),
        commands: Vec::new(),
    };
    Harness::new_ui_state(
        |ui, f: &mut Fixture| {
            let proposed = BTreeSet::from(["src/lib.rs"]);
            show(
                ui,
                &mut f.project,
                &mut f.cache,
                &Prefs::default(),
                &proposed,
                &mut f.commands,
            );
        },
        fixture,
    )
}

#[test]
fn typing_marks_the_tab_dirty_and_ctrl_s_saves() {
    let mut harness = harness(vec![
        tab("src/main.rs", "fn main() {}\n", None),
        tab("src/lib.rs", "", None),
    ]);
    harness.run();
    harness.get_by_label("main.rs");
    harness.get_by_label("✏");
    harness.get_by_role(Role::MultilineTextInput).focus();
    harness.step();
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text("// hi\n");
    harness.run();
    let edited = &harness.state().project.tabs[0];
    assert_eq!(edited.text, "fn main() {}\n// hi\n");
    assert!(edited.revision >= 1);
    harness.get_by_label("main.rs •");
    harness.key_press_modifiers(Modifiers::COMMAND, Key::S);
    harness.run();
    assert_eq!(harness.state().commands, [Command::Save]);
    harness.get_by_label("lib.rs").click();
    harness.run();
    assert_eq!(
        harness.state().commands.last(),
        Some(&Command::SelectTab(1))
    );
}

#[test]
fn find_counts_and_steps_through_matches() {
    let text = "one\n".repeat(17);
    let mut harness = harness(vec![tab("a.txt", &text, Some("one"))]);
    harness.run();
    harness.get_by_label("1 of 17");
    harness.key_press(Key::Enter);
    harness.run();
    harness.get_by_label("2 of 17");
    harness.key_press_modifiers(Modifiers::SHIFT, Key::Enter);
    harness.key_press_modifiers(Modifiers::SHIFT, Key::Enter);
    harness.run();
    harness.get_by_label("17 of 17");
    harness.key_press(Key::Escape);
    harness.run();
    assert_eq!(harness.state().commands, [Command::ToggleFind]);
}

#[test]
fn a_huge_file_only_highlights_what_is_visible() {
    let text: String = (0..50_000).map(|i| format!("let x{i} = {i};\n")).collect();
    let mut harness = harness(vec![tab("big.rs", &text, None)]);
    harness.run();
    let done = harness.state().cache.stats().lines_highlighted;
    assert!(done > 0 && done < 500, "highlighted {done} lines");
    harness.run_steps(3);
    assert_eq!(harness.state().cache.stats().lines_highlighted, done);
}

#[test]
fn lines_of_a_large_file_are_edited_in_place() {
    let text: String = (0..6_000).map(|i| format!("  line {i}\n")).collect();
    let mut harness = harness(vec![tab("big.txt", &text, None)]);
    harness.run();
    let view = View {
        editing: Some(1),
        place_cursor: Some(2),
        ..View::default()
    };
    let id = Id::unique(("tandem-editor-view", "big.txt"));
    harness.ctx.data_mut(|d| d.insert_temp(id, view));
    harness.run();
    harness.get_by_label("big.txt line 2").type_text("X");
    harness.run();
    let line = |h: &Harness<'_, Fixture>, n: usize| {
        h.state().project.tabs[0]
            .text
            .lines()
            .nth(n)
            .map(str::to_string)
    };
    assert_eq!(line(&harness, 1).as_deref(), Some("  Xline 1"));
    harness.key_press(Key::Enter);
    harness.run();
    assert_eq!(line(&harness, 1).as_deref(), Some("  X"));
    assert_eq!(line(&harness, 2).as_deref(), Some("  line 1"));
    harness.get_by_label("big.txt line 3").type_text("Y");
    harness.run();
    assert_eq!(line(&harness, 2).as_deref(), Some("  Yline 1"));
    harness.event(egui::Event::Paste("p\nq".into()));
    harness.run();
    assert_eq!(line(&harness, 2).as_deref(), Some("  Yp"));
    assert_eq!(line(&harness, 3).as_deref(), Some("qline 1"));
    harness.get_by_label("big.txt line 4").type_text("Z");
    harness.run();
    assert_eq!(line(&harness, 3).as_deref(), Some("qZline 1"));
    // Each queued key is its own frame: two lines up.
    harness.key_press(Key::ArrowUp);
    harness.key_press(Key::ArrowUp);
    harness.run();
    harness.get_by_label("big.txt line 2");
    // At the end of "  X", Delete joins the next line.
    harness.key_press(Key::End);
    harness.run();
    harness.key_press(Key::Delete);
    harness.run();
    assert_eq!(line(&harness, 1).as_deref(), Some("  X  Yp"));
    harness.key_press(Key::Escape);
    harness.run();
    assert!(harness.query_by_label("big.txt line 2").is_none());
    let tab = &harness.state().project.tabs[0];
    assert_eq!(tab.text.len(), text.len() + 8);
    assert!(tab.revision >= 3);
}

#[test]
fn empty_and_binary_tabs() {
    let mut harness = harness(Vec::new());
    harness.run();
    harness.get_by_label("Open a file from the tree");
    let mut binary = tab("logo.png", "", None);
    binary.read_only = Some("binary file (10 bytes): not shown".into());
    let mut harness = self::harness(vec![binary]);
    harness.run();
    harness.get_by_label("Read-only: binary file (10 bytes): not shown");
    assert!(harness.query_by_role(Role::MultilineTextInput).is_none());

    let mut locked = tab("logs/app.log", "a\nb\n", None);
    locked.read_only = Some("this file is 900 KiB: opened read-only".into());
    let mut harness = self::harness(vec![locked]);
    harness.run();
    harness.get_by_label("logs/app.log").focus();
    harness.run();
    harness.get_by_label("logs/app.log").type_text("x");
    harness.run();
    assert_eq!(harness.state().project.tabs[0].text, "a\nb\n");
}

#[test]
fn a_line_number_becomes_its_byte_range() {
    let text = "one\ntwo\nthree";
    assert_eq!(&text[line_range(text, 1)], "one");
    assert_eq!(&text[line_range(text, 2)], "two");
    assert_eq!(&text[line_range(text, 3)], "three");
    // Past the end: the last line; 0 is read as the first.
    assert_eq!(&text[line_range(text, 9)], "three");
    assert_eq!(&text[line_range(text, 0)], "one");
}
