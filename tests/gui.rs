//! The desktop app driven headless with egui_kittest, against the fake provider server: the
//! real `TandemApp` state, backend and engine; interactions through the accessibility tree
//! the way a person (or a screen reader) finds widgets.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use fake_provider::{FakeProvider, ollama_stream};
use tandem::llm::ProviderKind;
use tandem::store::{ProviderSettings, Store};
use tandem::ui::TandemApp;
use tandem::ui::state::Prefs;

const ORIGINAL: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20\n";

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    server: FakeProvider,
    _runtime: tokio::runtime::Runtime,
}

/// A project with notes.txt, a fake Ollama-speaking provider as the default, and the project
/// remembered as the last one opened (so the app opens it by itself).
fn world() -> (World, Prefs) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    common::repo_with(&root, &[("notes.txt", ORIGINAL)]);
    let data = dir.path().join("data");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeProvider::start());
    let engine = tandem::Engine::open(Some(&data)).unwrap();
    let project = engine.add_project(&root, None).unwrap().project;
    let store: &Store = engine.store();
    tandem::chat::ensure_default_provider(store).unwrap();
    let settings = ProviderSettings {
        default_model: Some("test-model".into()),
        context_length: Some(16_384),
    };
    store
        .insert_provider("fake", ProviderKind::Ollama, &server.url(), None, &settings)
        .unwrap();
    store.set_setting("chat.default_provider", "fake").unwrap();
    store
        .set_setting("chat.default_model", "test-model")
        .unwrap();
    store.set_setting("chat.generate_titles", &false).unwrap();
    let prefs = Prefs {
        last_project: Some(project.id),
        ..Prefs::default()
    };
    let root = root.canonicalize().unwrap();
    (
        World {
            _dir: dir,
            root,
            data,
            server,
            _runtime: runtime,
        },
        prefs,
    )
}

type App = Option<TandemApp>;

fn harness(data: &Path, prefs: Prefs) -> Harness<'static, App> {
    let data = data.to_path_buf();
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        // Commit messages and chat text are anyone's Unicode: the real app shows a box for a
        // glyph the fonts lack. Tandem's own UI strings are checked by tests/glyphs.rs.
        .allow_missing_glyphs()
        .build_ui_state(
            move |ui, app: &mut App| {
                let app = app.get_or_insert_with(|| {
                    TandemApp::with_prefs(ui.ctx(), Some(data.clone()), prefs.clone())
                });
                app.update_state(&ui.ctx().clone());
                app.frame(ui);
            },
            None,
        )
}

/// Steps frames until `done` holds (background work runs on its own threads meanwhile).
fn wait_until(harness: &mut Harness<'static, App>, what: &str, done: impl Fn(&TandemApp) -> bool) {
    let start = Instant::now();
    loop {
        harness.step();
        if harness.state().as_ref().is_some_and(&done) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn app<'h>(harness: &'h Harness<'static, App>) -> &'h TandemApp {
    harness.state().as_ref().unwrap()
}

fn open_chat(harness: &mut Harness<'static, App>) {
    wait_until(harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label("+ New").click();
    wait_until(harness, "a chat", |a| a.state.chat().is_some());
}

fn send(harness: &mut Harness<'static, App>, prompt: &str) {
    harness.get_by_role(Role::MultilineTextInput).focus();
    harness.step();
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text(prompt);
    harness.step();
    harness.get_by_label("Send").click();
    harness.step();
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

#[test]
fn send_stream_review_uncheck_a_hunk_and_approve() {
    let (world, prefs) = world();
    let reply = proposal_reply();
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&pieces, Duration::from_millis(60)),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "spell out 2 and 18");
    // The reply streams in live.
    wait_until(&mut harness, "streamed text", |a| {
        a.state
            .chat()
            .and_then(|c| c.streaming.as_ref())
            .is_some_and(|s| s.parser.text().contains("spell out two numbers"))
    });
    // Then the proposal is shown with the right file, two hunks, all checked.
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    {
        let review = app(&harness).state.review().unwrap();
        assert_eq!(review.plan.files.len(), 1);
        assert_eq!(review.plan.files[0].path, "notes.txt");
        assert_eq!(review.files[0].hunks, [true, true]);
    }
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("notes.txt")
            .next()
            .is_some()
    );
    // Uncheck the second hunk. Checkboxes in order: Auto-approve (top bar), the file, then
    // one per hunk.
    let boxes = harness.get_all_by_role(Role::CheckBox).count();
    assert_eq!(boxes, 4, "auto-approve + file + 2 hunks");
    harness
        .get_all_by_role(Role::CheckBox)
        .nth(3)
        .unwrap()
        .click();
    harness.step();
    assert_eq!(
        app(&harness).state.review().unwrap().files[0].hunks,
        [true, false]
    );
    harness.get_by_label("Approve").click();
    wait_until(&mut harness, "the commit in history", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.history
                .first()
                .is_some_and(|v| v.message.contains("Spell out numbers"))
        })
    });
    let on_disk = std::fs::read_to_string(world.root.join("notes.txt")).unwrap();
    assert_eq!(on_disk, ORIGINAL.replace("line 2\n", "line two\n"));
    assert_eq!(common::git(&world.root, &["status", "--porcelain"]), "");
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("Spell out numbers")
            .next()
            .is_some()
    );
}

#[test]
fn reject_leaves_the_disk_untouched() {
    let (world, prefs) = world();
    let reply = proposal_reply();
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    world
        .server
        .push("POST", "/api/chat", ollama_stream(&pieces, Duration::ZERO));
    let head = common::git(&world.root, &["rev-parse", "HEAD"]);
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "change it");
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    harness.step();
    harness.get_by_label("Reject").click();
    wait_until(&mut harness, "the rejection", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.review.is_none() && c.streaming.is_none())
    });
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        ORIGINAL
    );
    assert_eq!(common::git(&world.root, &["rev-parse", "HEAD"]), head);
}

#[test]
fn edit_and_save_a_file_then_restore_the_first_version() {
    let (world, prefs) = world();
    let first = common::git(&world.root, &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label_contains("notes.txt").click();
    wait_until(&mut harness, "the open tab", |a| {
        a.state.project.as_ref().is_some_and(|p| !p.tabs.is_empty())
    });
    // Type at the start of the buffer and save with Ctrl+S. (The composer is a multi-line
    // input too: the editor is the one holding the file's text.)
    let editor = |n: &egui_kittest::kittest::AccessKitNode<'_>| {
        n.role() == Role::MultilineTextInput && n.value().is_some_and(|v| v.starts_with("line 1"))
    };
    harness.get_by(editor).focus();
    harness.step();
    harness.get_by(editor).type_text("edited ");
    harness.step();
    assert!(app(&harness).state.project.as_ref().unwrap().tabs[0].dirty());
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::S);
    wait_until(&mut harness, "the save commit", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.history
                .first()
                .is_some_and(|v| v.message == "[tandem] Edit notes.txt")
        })
    });
    let saved = std::fs::read_to_string(world.root.join("notes.txt")).unwrap();
    assert!(saved.contains("edited "), "{saved}");
    assert!(!app(&harness).state.project.as_ref().unwrap().tabs[0].dirty());
    // Restore the first version from History, confirming the dialog.
    harness.step();
    harness.get_by_label("Restore").click();
    // One frame applies the click's command, the next shows the confirmation.
    harness.step();
    harness.step();
    assert!(
        app(&harness).state.confirm.is_some(),
        "the restore asks for confirmation"
    );
    // The dialog fades in over a few frames.
    for _ in 0..30 {
        if harness.query_by_label("Confirm").is_some() {
            break;
        }
        harness.step();
    }
    harness.get_by_label("Confirm").click();
    wait_until(&mut harness, "the restore", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.history
                .first()
                .is_some_and(|v| v.message.starts_with("[tandem] Restore"))
        })
    });
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        ORIGINAL
    );
    assert_eq!(common::git(&world.root, &["diff", &first, "HEAD"]), "");
    // The open tab is reloaded from disk.
    wait_until(&mut harness, "the reloaded tab", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs[0].text == ORIGINAL)
    });
}

#[test]
fn renaming_a_file_from_the_tree_commits_the_rename() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label_contains("notes.txt").click_secondary();
    harness.step();
    harness.step();
    harness.get_by_label("Rename").click();
    harness.step();
    harness.step();
    // The field starts with the old path selected for editing: replace it.
    let field = || {
        |n: &egui_kittest::kittest::AccessKitNode<'_>| {
            n.role() == Role::TextInput && n.value().as_deref() == Some("notes.txt")
        }
    };
    harness.get_by(field()).focus();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get_by(field()).type_text("docs/notes.md");
    harness.step();
    harness.key_press(egui::Key::Enter);
    wait_until(&mut harness, "the rename commit", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.history
                .first()
                .is_some_and(|v| v.message == "[tandem] Rename notes.txt -> docs/notes.md")
        })
    });
    assert!(world.root.join("docs/notes.md").exists());
    assert!(!world.root.join("notes.txt").exists());
    assert_eq!(common::git(&world.root, &["status", "--porcelain"]), "");
}

#[test]
fn sending_without_a_chat_starts_one() {
    let (world, prefs) = world();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Hello there."], Duration::ZERO),
    );
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    send(&mut harness, "hi");
    wait_until(&mut harness, "the reply in a new chat", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none()
                && c.messages
                    .iter()
                    .any(|m| m.message.content == "Hello there.")
        })
    });
    let project = app(&harness).state.project.as_ref().unwrap();
    assert_eq!(project.chats.len(), 1);
    assert_eq!(project.chats[0].title, "hi");
}
