//! Tests for `review`.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::*;
use tandem_core::edits::build_plan;

fn review(files: &[(&str, &str)], reply: &str) -> Review {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    Review::new(7, build_plan(dir.path(), reply).unwrap())
}

type State = (Review, Vec<Command>);

fn harness(review: Review, side_by_side: bool) -> Harness<'static, State> {
    tall_harness(review, side_by_side, 700.0)
}

fn tall_harness(review: Review, side_by_side: bool, height: f32) -> Harness<'static, State> {
    Harness::builder()
        .with_size(vec2(1000.0, height))
        .build_ui_state(
            move |ui, (review, commands): &mut State| {
                show(ui, review, side_by_side, None, commands)
            },
            (review, Vec::new()),
        )
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn buttons_links_and_extras_push_commands() {
    let old = numbered(30);
    let reply = format!(
        "<tandem-write path=\"a.txt\">{}</tandem-write>\n\
         <tandem-write path=\"new.txt\">hi\n</tandem-write>\n\
         <tandem-add-dependency packages=\"serde\"/>\n\
         <tandem-execute-sql>DROP TABLE x;</tandem-execute-sql>\n\
         <tandem-chat-summary>Tidy up</tandem-chat-summary>",
        old.replace("line 5\n", "line five\n")
    );
    for side_by_side in [false, true] {
        let mut h = harness(review(&[("a.txt", &old)], &reply), side_by_side);
        h.run();
        h.get_by_label("Tidy up");
        h.get_by_label_contains("Not executed");
        for label in ["Approve", "Reject", "a.txt", "Install these packages"] {
            h.get_by_label(label).click();
            h.run();
        }
        let other = if side_by_side {
            "Unified"
        } else {
            "Side-by-side"
        };
        h.get_by_label(other).click();
        h.run();
        assert_eq!(
            h.state().1,
            [
                Command::Approve,
                Command::Reject,
                Command::OpenFile("a.txt".into()),
                Command::ToggleDependencies,
                Command::ToggleSideBySide,
            ]
        );
    }
}

#[test]
fn a_failed_file_cannot_be_approved() {
    let reply = "<tandem-write path=\"a.txt\">one\ntwo\n</tandem-write>\n\
        <tandem-search-replace path=\"a.txt\">\n<<<<<<< SEARCH\nmissing\n=======\nx\n>>>>>>> REPLACE\n</tandem-search-replace>";
    let mut h = harness(review(&[("a.txt", "zero\n")], reply), false);
    h.run();
    assert!(!h.state().0.anything_checked());
    h.get_by_label("Failed operations");
    h.get_by_label("Approve").click();
    h.run();
    assert!(h.state().1.is_empty(), "{:?}", h.state().1);
}

#[test]
fn moving_the_cursor_scrolls_its_hunk_into_view() {
    let old = numbered(2000);
    let reply = format!(
        "<tandem-write path=\"a.txt\">{}</tandem-write>",
        old.replace("0\n", "0 changed\n")
    );
    let mut h = harness(review(&[("a.txt", &old)], &reply), false);
    h.run();
    let hunks = &h.state().0.plan.files[0].hunks;
    assert!(hunks.len() > 150);
    let header = diff_view::hunk_header(&hunks[150]);
    assert!(
        h.query_by_label(&header).is_none(),
        "off-screen hunks are not laid out"
    );
    h.state_mut().0.cursor = (0, 150);
    h.run();
    h.get_by_label(&header);
}

#[test]
fn very_long_hunks_fold_behind_a_button() {
    let old = numbered(500);
    let reply = format!(
        "<tandem-write path=\"a.txt\">{}</tandem-write>",
        old.replace("line", "LINE")
    );
    for side_by_side in [false, true] {
        let review = review(&[("a.txt", &old)], &reply);
        let mut h = tall_harness(review, side_by_side, 9000.0);
        h.run();
        let more = if side_by_side { 100 } else { 600 };
        h.get_by_label(&format!("Show {more} more lines")).click();
        h.run();
        assert!(h.query_by_label_contains("more lines").is_none());
    }
}

/// A big proposal lays out only what is on screen: the shapes drawn stay bounded whatever
/// the diff's length (frame time itself is measured in `benches/frame.rs`, not here).
#[test]
fn large_diffs_lay_out_only_visible_rows() {
    let old = numbered(3000);
    let new = old
        .replace("line 1", "LINE 1")
        .replace("5\n", "5 changed\n");
    let reply = format!("<tandem-write path=\"big.txt\">{new}</tandem-write>");
    let review = review(&[("big.txt", &old)], &reply);
    assert!(review.plan.files[0].added > 1000);
    let ctx = egui::Context::default();
    let input = || egui::RawInput {
        screen_rect: Some(Rect::from_min_size(pos2(0.0, 0.0), vec2(1200.0, 800.0))),
        ..Default::default()
    };
    for side_by_side in [false, true] {
        for _ in 0..4 {
            let mut output = ctx.run_ui(input(), |ui| {
                show(ui, &review, side_by_side, None, &mut Vec::new());
            });
            output.textures_delta.clear();
            assert!(output.shapes.len() < 3000, "{} shapes", output.shapes.len());
        }
    }
}

/// The Run panel: prefilled with the check command, typed over, run; then its output.
#[test]
fn the_run_panel_runs_what_is_typed_and_shows_the_output() {
    use crate::command::WorkspaceCommand;
    use crate::model::workspaces::RunView;

    type RunState = (Review, RunView, Vec<Command>);
    let review = review(
        &[("a.txt", "a\n")],
        "<tandem-write path=\"a.txt\">b\n</tandem-write>",
    );
    let mut h = Harness::builder()
        .with_size(vec2(1000.0, 700.0))
        .build_ui_state(
            |ui, (review, run, commands): &mut RunState| {
                let panel = RunPanel {
                    view: Some(run),
                    default_command: "cargo check",
                };
                show(ui, review, false, Some(&panel), commands);
            },
            (review, RunView::default(), Vec::new()),
        );
    h.run();
    assert!(h.query_all_by_value("cargo check").next().is_some());
    h.get_by_label("Run").click();
    h.run();
    assert_eq!(h.state().2, [Command::Workspace(WorkspaceCommand::Run)]);

    h.state_mut().1.running = true;
    h.run_steps(2);
    h.get_by_label("Running…");

    h.state_mut().1 = RunView {
        command: Some("echo hi".into()),
        running: false,
        last: Some(Ok(tandem_core::app::WorkspaceRun {
            chat_id: 1,
            command: "echo hi".into(),
            exit_code: Some(0),
            signal: None,
            stdout: "hi\n".into(),
            stderr: String::new(),
            timed_out: false,
            cancelled: false,
            duration_ms: 12,
            sandbox: serde_json::json!({"confined": true}),
            kind: "overlay",
            proposal: Some(tandem_core::app::RunProposal {
                message_id: Some(7),
                held: tandem_core::app::Held {
                    written: vec!["README.md".into()],
                    kept: vec!["src/lib.rs".into()],
                    restored: Vec::new(),
                    left_out: vec![tandem_core::app::LeftOut {
                        path: "src/main.rs".into(),
                        reason: "the search text was not found".into(),
                    }],
                },
            }),
        })),
    };
    h.run();
    h.get_by_label("src/lib.rs: the workspace's own version ran, not the proposal's");
    h.get_by_label(
        "src/main.rs: not in the run (the search text was not found); the project's version ran",
    );
    assert!(h.query_all_by_value("echo hi").next().is_some());
    h.get_by_label("exit code 0");
    h.get_by_label("hi");
    h.get_by_label("Hide").click();
    h.run();
    assert_eq!(
        h.state().2.last(),
        Some(&Command::Workspace(WorkspaceCommand::ClearRun))
    );
}
