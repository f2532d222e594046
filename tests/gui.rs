//! The desktop app driven headless with egui_kittest, against the fake provider server: the
//! real `TandemApp` state, backend and engine; interactions through the accessibility tree
//! the way a person (or a screen reader) finds widgets.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;
mod gui_harness;

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

#[test]
fn send_stream_review_uncheck_a_hunk_and_approve() {
    let (world, prefs) = world();
    let reply = proposal_reply();
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    // The reply stops after its first piece until the test has seen it stream.
    let gate = Gate::default();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&pieces, Duration::ZERO).hold_before(1, &gate),
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
    gate.open();
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

#[test]
fn after_a_partial_approval_each_card_says_what_became_of_its_file() {
    let (world, prefs) = gui_harness::world(&[("notes.txt", ORIGINAL), ("keep.txt", "keep me\n")]);
    let changed = ORIGINAL
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    let reply = format!(
        "Three changes.\n\
         <tandem-write path=\"new.txt\" description=\"a new file\">new\n</tandem-write>\n\
         <tandem-write path=\"./keep.txt\" description=\"change keep\">changed\n</tandem-write>\n\
         <tandem-write path=\"notes.txt\" description=\"spell numbers\">\n{changed}</tandem-write>\n\
         <tandem-chat-summary>Three changes</tandem-chat-summary>"
    );
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&reply], Duration::ZERO),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "change three files");
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    harness.step();
    // Leave keep.txt out whole and the second hunk of notes.txt, with a reason.
    let link = harness
        .get_by(|n| n.role() == Role::Link && n.label().as_deref() == Some("keep.txt"))
        .rect();
    let file_box = harness
        .get_all_by_role(Role::CheckBox)
        .filter(|n| n.rect().right() < link.left())
        .min_by(|a, b| {
            let off = |n: &egui_kittest::Node<'_>| (n.rect().center().y - link.center().y).abs();
            off(a).total_cmp(&off(b))
        })
        .unwrap();
    file_box.click();
    harness.step();
    harness
        .get_all_by_role(Role::CheckBox)
        .last()
        .unwrap()
        .click();
    harness.step();
    {
        let review = app(&harness).state.review().unwrap();
        let checked: Vec<(&str, &[bool])> = review
            .plan
            .files
            .iter()
            .zip(&review.files)
            .map(|(f, s)| (f.path.as_str(), s.hunks.as_slice()))
            .collect();
        assert_eq!(
            checked,
            [
                ("new.txt", &[true][..]),
                ("keep.txt", &[false][..]),
                ("notes.txt", &[true, false][..]),
            ]
        );
    }
    harness
        .get_by(|n| n.role() == Role::TextInput && n.placeholder() == Some(WHY_NOT))
        .focus();
    harness.step();
    harness
        .get_by(|n| n.role() == Role::TextInput && n.placeholder() == Some(WHY_NOT))
        .type_text("keep.txt stays as it is");
    harness.step();
    harness.get_by_label("Approve").click();
    wait_until(&mut harness, "the commit", |a| {
        a.state.chat().is_some_and(|c| {
            c.review.is_none() && c.messages.iter().any(|m| m.message.commit_hash.is_some())
        })
    });
    harness.step();
    assert_eq!(
        common::git(&world.root, &["show", "HEAD:keep.txt"]),
        "keep me\n"
    );
    // Each card says what became of its own file; the reason goes with what was left out.
    let labels = chat_labels(&harness);
    let after = |title: &str| {
        let at = labels.iter().position(|l| l == title);
        at.and_then(|i| labels.get(i + 2))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(after("new.txt"), "applied", "{labels:#?}");
    // Only a file's card says it was applied (not the summary's).
    assert_eq!(
        labels.iter().filter(|l| *l == "applied").count(),
        1,
        "{labels:#?}"
    );
    assert_eq!(
        after("./keep.txt"),
        "left out: keep.txt stays as it is",
        "{labels:#?}"
    );
    assert_eq!(
        after("notes.txt"),
        "partly applied: 1 hunk left out (keep.txt stays as it is)",
        "{labels:#?}"
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

#[test]
fn the_context_meter_estimates_the_prompt_while_typing() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    assert!(
        harness
            .query_all_by_label_contains("estimated as you type")
            .next()
            .is_some()
    );
    harness.get_by_role(Role::MultilineTextInput).focus();
    harness.step();
    let prompt = "explain notes.txt ".repeat(40);
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text(&prompt);
    // Nothing is sent: the estimate arrives after a typing pause, for exactly this text.
    wait_until(&mut harness, "the estimate", |a| {
        a.state
            .preview
            .as_ref()
            .is_some_and(|(p, b)| p == prompt.trim() && b.is_ok())
    });
    let estimate = {
        let (_, breakdown) = app(&harness).state.preview.clone().unwrap();
        breakdown.unwrap()
    };
    assert!(estimate.prompt > 100, "{estimate:?}");
    assert!(
        estimate.codebase > 0,
        "notes.txt is in the context: {estimate:?}"
    );
    harness.step();
    // What is sent, what is kept for the reply, of what window, and a percentage that is
    // exactly their share of it.
    let used = estimate.total() + estimate.reply_reserve;
    let percent = (used as f64 * 100.0 / estimate.window as f64).round();
    let label = format!(
        "{} sent + {} reserved for the reply, of {} tokens ({percent}%)",
        estimate.total(),
        estimate.reply_reserve,
        estimate.window
    );
    assert!(
        harness.query_all_by_label_contains(&label).next().is_some(),
        "the meter shows {label}"
    );
    assert!(
        world
            .server
            .requests()
            .iter()
            .all(|r| !r.path.contains("/api/chat"))
    );
}

#[test]
fn settings_count_what_the_context_globs_select_as_they_change() {
    let (world, prefs) = gui_harness::world(&[
        ("notes.txt", ORIGINAL),
        ("src/a.rs", "fn a() {}\n"),
        ("src/b.rs", "fn b() {}\n"),
    ]);
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    // Ctrl+, opens settings.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Comma);
    let counted = |a: &tandem_ui::TandemApp, include: &str| {
        a.state
            .settings
            .glob_counts
            .as_ref()
            .is_some_and(|(i, _, _)| i == include)
    };
    wait_until(&mut harness, "the first count", |a| counted(a, ""));
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("Selected: 3 files")
            .next()
            .is_some()
    );
    // Typing a glob (the form's text, as the field edits it) recounts after a pause.
    {
        let app = harness.state_mut().as_mut().unwrap();
        app.state.settings.include = "src/**".into();
        app.state.settings.globs_edited = Some(std::time::Instant::now());
    }
    wait_until(&mut harness, "the new count", |a| counted(a, "src/**"));
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("Selected: 2 files")
            .next()
            .is_some()
    );
    {
        let app = harness.state_mut().as_mut().unwrap();
        app.state.settings.include = "src/[".into();
        app.state.settings.globs_edited = Some(std::time::Instant::now());
    }
    wait_until(&mut harness, "the glob error", |a| counted(a, "src/["));
    let (_, _, counts) = app(&harness).state.settings.glob_counts.clone().unwrap();
    assert!(counts.is_err(), "{counts:?}");
    // Nothing was saved.
    let project = world.store().projects().unwrap().remove(0);
    assert!(project.settings.context_include.is_empty());
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

#[test]
fn a_long_chat_title_is_cut_short_beside_summarize_and_shown_whole_on_hover() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    let title = "Rename every helper in the parser module and explain why each new name \
                 reads better than the old one, then update the callers"
        .to_string();
    let chat = app(&harness).state.chat().unwrap().chat.id;
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .command(tandem_ui::command::Command::RenameChat(chat, title.clone()));
    wait_until(&mut harness, "the new title", |a| {
        a.state.chat().is_some_and(|c| c.chat.title == title)
    });
    harness.step();
    let summarize = harness.get_by_label("Summarize").rect();
    // The header's title: the one on Summarize's row.
    let header = harness
        .get_all_by_label(&title)
        .find(|n| n.rect().center().y > summarize.top() && n.rect().center().y < summarize.bottom())
        .expect("the title beside Summarize");
    let shown = header.rect();
    assert!(
        shown.right() <= summarize.left(),
        "the title {shown:?} runs under Summarize {summarize:?}"
    );
    // Cut short, it shows whole on hover.
    let before = harness.get_all_by_label(&title).count();
    header.hover();
    let mut shown = false;
    // A tooltip waits for the pointer to rest.
    for _ in 0..120 {
        harness.step();
        if harness.get_all_by_label(&title).count() > before {
            shown = true;
            break;
        }
    }
    assert!(shown, "the whole title in a tooltip");
}

#[test]
fn closing_a_dirty_tab_asks_cancel_keeps_the_text_and_discard_drops_it() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open_and_type(&mut harness, "mine ");
    // The tab's close button asks instead of closing.
    harness.get_by_label("×").click();
    harness.step();
    harness.step();
    assert_eq!(tabs(&harness).len(), 1, "a dirty tab is not closed at once");
    wait_shown(&mut harness, "Discard");
    harness.get_by_label_contains("notes.txt has unsaved changes");
    click_when_shown(&mut harness, "Cancel");
    let open = tabs(&harness);
    assert_eq!(open.len(), 1);
    assert!(open[0].1.contains("mine "), "{:?}", open[0].1);
    assert!(app(&harness).state.closing.is_none());
    assert!(
        harness
            .query_by_label_contains("has unsaved changes")
            .is_none()
    );
    // Ctrl+W asks the same; Discard drops the edits and leaves the disk alone.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::W);
    harness.step();
    click_when_shown(&mut harness, "Discard");
    assert!(tabs(&harness).is_empty());
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        ORIGINAL
    );
}

#[test]
fn saving_after_an_outside_change_does_not_overwrite_it_and_offers_the_choice() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open_and_type(&mut harness, "mine ");
    let outside = "changed by another program\n";
    std::fs::write(world.root.join("notes.txt"), outside).unwrap();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::S);
    wait_until(&mut harness, "the refused save", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs[0].save_refused.is_some())
    });
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        outside,
        "the outside change is not overwritten"
    );
    harness.step();
    harness.get_by_label_contains("changed on disk since you opened it");
    harness.get_by_label("Reload from disk");
    harness.get_by_label("Keep editing");
    // Keep editing: nothing is written and the next save asks again.
    harness.get_by_label("Keep editing").click();
    harness.step();
    assert!(tabs(&harness)[0].1.contains("mine "));
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::S);
    wait_until(&mut harness, "the second refusal", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs[0].save_refused.is_some())
    });
    harness.step();
    harness.get_by_label("Overwrite").click();
    wait_until(&mut harness, "the overwrite commit", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            !p.tabs[0].dirty()
                && p.history
                    .first()
                    .is_some_and(|v| v.message == "[tandem] Edit notes.txt")
        })
    });
    let saved = std::fs::read_to_string(world.root.join("notes.txt")).unwrap();
    assert!(saved.contains("mine "), "{saved}");
}

#[test]
fn a_dirty_buffer_survives_a_restart_and_the_disk_is_never_overwritten() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open_and_type(&mut harness, "unsaved ");
    let (prefs, drafts) = harness.state_mut().as_mut().unwrap().persisted();
    assert_eq!(drafts.len(), 1);
    drop(harness);
    // Meanwhile the file changes on disk.
    let outside = ORIGINAL.replace("line 20\n", "line twenty\n");
    std::fs::write(world.root.join("notes.txt"), &outside).unwrap();
    let mut harness = gui_harness::restarted(&world.data, prefs, drafts);
    wait_until(&mut harness, "the restored tab", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs.iter().any(|t| t.text.contains("unsaved ")))
    });
    {
        let state = &app(&harness).state;
        let tab = &state.project.as_ref().unwrap().tabs[0];
        assert!(tab.dirty());
        assert_eq!(tab.disk_changed.as_deref(), Some(outside.as_str()));
        assert!(
            state
                .log
                .iter()
                .any(|l| l.contains("changed on disk since")),
            "{:?}",
            state.log
        );
        assert!(state.drafts.is_empty(), "the draft was put back");
    }
    harness.step();
    harness.get_by_label_contains("changed on disk while you were editing");
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        outside
    );
    // Saving it still asks before overwriting the newer disk version.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::S);
    wait_until(&mut harness, "the refused save", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs[0].save_refused.is_some())
    });
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        outside
    );
}

#[test]
fn closing_a_dirty_tab_from_the_palette_can_save_it_first() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    open_and_type(&mut harness, "kept ");
    harness.key_press_modifiers(
        egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
        egui::Key::P,
    );
    wait_shown(&mut harness, "Close tab");
    harness.get_by_label("Close tab").click();
    harness.step();
    click_when_shown(&mut harness, "Save");
    wait_until(&mut harness, "the save, then the close", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.tabs.is_empty()
                && p.history
                    .first()
                    .is_some_and(|v| v.message == "[tandem] Edit notes.txt")
        })
    });
    let saved = std::fs::read_to_string(world.root.join("notes.txt")).unwrap();
    assert!(saved.contains("kept "), "{saved}");
}

#[test]
fn a_failing_check_lists_its_problems_opens_the_line_and_sends_them_to_be_fixed() {
    let (world, prefs) = world();
    {
        let store = world.store();
        let mut project = store.projects().unwrap().remove(0);
        project.settings.check_command = Some("! grep -Hn 'line two' notes.txt".into());
        store
            .update_project_settings(project.id, &project.settings)
            .unwrap();
        let scratch = world.data.parent().unwrap().join("scratch");
        store
            .set_setting("checks.scratch_dir", &scratch.to_string_lossy())
            .unwrap();
        store.set_setting("chat.repair_rounds", &0).unwrap();
    }
    let reply = proposal_reply();
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    world
        .server
        .push("POST", "/api/chat", ollama_stream(&pieces, Duration::ZERO));
    world
        .server
        .push("POST", "/api/chat", gui_harness::text("On it."));
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "spell out 2 and 18");
    wait_until(&mut harness, "the proposal, checked", |a| {
        a.state.review().is_some()
            && a.state
                .chat()
                .and_then(tandem_ui::model::problems::last_check)
                .is_some()
    });
    harness.step();
    harness.get_by_label("Problems (1)").click();
    wait_shown(&mut harness, "notes.txt:2");
    harness.get_by_label("notes.txt:2").click();
    wait_until(&mut harness, "the file open at the problem", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.goto.is_none()
                && p.active_tab
                    .and_then(|i| p.tabs.get(i))
                    .is_some_and(|t| t.path == "notes.txt")
        })
    });
    // The person's file was never touched by the check.
    assert_eq!(
        std::fs::read_to_string(world.root.join("notes.txt")).unwrap(),
        ORIGINAL
    );
    harness.get_by_label("Problems (1)").click();
    wait_shown(&mut harness, "Fix these problems");
    harness.get_by_label("Fix these problems").click();
    wait_until(&mut harness, "the fix request", |_| {
        world
            .server
            .requests()
            .iter()
            .filter(|r| r.path == "/api/chat")
            .count()
            == 2
    });
    let requests: Vec<_> = world
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/chat")
        .collect();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let prompt = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(prompt.contains("- notes.txt:2: line two"), "{prompt}");
}

#[test]
fn at_mentions_complete_files_and_prompts_show_chips_and_reach_the_model() {
    let (world, prefs) = gui_harness::world(&[
        ("notes.txt", ORIGINAL),
        ("src/main.rs", "fn main() { println!(\"mentioned\"); }\n"),
    ]);
    world
        .store()
        .save_prompt("review", "Review it for bugs.")
        .unwrap();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Looks fine."], Duration::from_millis(5)),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    wait_until(&mut harness, "the prompt library", |a| {
        a.state.prompts.len() == 1
    });
    harness.get_by_role(Role::MultilineTextInput).focus();
    harness.step();
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text("check @mai");
    // The popup offers the file; Enter takes it (and does not send).
    assert!(shown_containing(&mut harness, "src/main.rs"));
    harness.key_press(egui::Key::Enter);
    harness.step();
    assert_eq!(app(&harness).state.composer, "check @src/main.rs ");
    assert!(
        world
            .server
            .requests()
            .iter()
            .all(|r| !r.path.contains("/api/chat"))
    );
    harness.step();
    assert!(
        harness.query_by_label("src/main.rs ×").is_some(),
        "a chip for the file"
    );

    // A saved prompt, chosen with Tab from what `@prompt:` offers.
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text("@prompt:");
    assert!(shown_containing(&mut harness, "prompt: review"));
    harness.key_press(egui::Key::Tab);
    harness.step();
    assert_eq!(
        app(&harness).state.composer,
        "check @src/main.rs @prompt:review "
    );
    harness.step();
    assert!(harness.query_by_label("prompt: review ×").is_some());

    // Esc closes the suggestions; the chip's × takes a mention out again.
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text("@no");
    assert!(shown_containing(&mut harness, "notes.txt"));
    harness.key_press(egui::Key::Escape);
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("Esc close")
            .next()
            .is_none()
    );
    harness.get_by_label("prompt: review ×").click();
    harness.step();
    assert_eq!(app(&harness).state.composer, "check @src/main.rs @no");

    harness.get_by_label("Send").click();
    wait_until(&mut harness, "the reply", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none()
                && c.messages
                    .iter()
                    .any(|m| m.message.content == "Looks fine.")
        })
    });
    let request = world
        .server
        .requests()
        .into_iter()
        .find(|r| r.path.contains("/api/chat"))
        .unwrap();
    let system = request.body["messages"][0]["content"].as_str().unwrap();
    let (main_at, notes_at) = (
        system.find("mentioned").unwrap(),
        system.find("line 1").unwrap(),
    );
    assert!(main_at < notes_at, "the mentioned file comes first");
}

#[test]
fn the_usage_tab_plots_tokens_per_model_and_costs_them_from_the_price_table() {
    let (world, prefs) = world();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Sure."], Duration::from_millis(5)),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "hello");
    wait_until(&mut harness, "the reply", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    harness.get_by_label("Usage").click();
    wait_until(&mut harness, "the usage report", |a| {
        a.state.usage.as_ref().is_some_and(|u| !u.models.is_empty())
    });
    harness.run_steps(3);
    let (input, output) = (
        fake_provider::INPUT_TOKENS.to_string(),
        fake_provider::OUTPUT_TOKENS.to_string(),
    );
    assert!(harness.query_by_label("tokens per day by model").is_some());
    // The model in the top bar and in the totals.
    let named = harness.query_all_by_label("fake · test-model").count();
    assert_eq!(named, 2);
    assert!(harness.query_all_by_label(&input).next().is_some());
    assert!(harness.query_all_by_label(&output).next().is_some());
    assert!(harness.query_by_label("no price").is_some());

    // A price set in Settings costs the model's tokens.
    harness.get_by_label("⚙ Settings").click();
    harness.run_steps(3);
    for (field, typed) in [
        ("Price of", "test-model"),
        ("input", "1000000"),
        ("output", "0"),
    ] {
        harness.get_by_label(field).focus();
        harness.step();
        harness.get_by_label(field).type_text(typed);
        harness.step();
    }
    // (Through the accessibility tree: the settings window is taller than the test's.)
    harness.get_by_label("Set price").click_accesskit();
    wait_until(&mut harness, "the price", |a| {
        a.state.prices.contains_key("test-model")
    });
    let cost = app(&harness).state.usage.as_ref().unwrap().cost;
    assert_eq!(cost, Some(fake_provider::INPUT_TOKENS as f64));
}

const REVIEW: &str = "I found two problems.\n\
<tandem-security-finding title=\"Verbose errors\" level=\"low\">Errors echo the input back.</tandem-security-finding>\n\
<tandem-security-finding title=\"SQL injection\" level=\"critical\" path=\"notes.txt\" lines=\"3-4\">The id is formatted into the query; bind it as a parameter.</tandem-security-finding>";

#[test]
fn a_security_review_lists_findings_by_level_and_fix_this_goes_to_build_mode() {
    let (world, prefs) = world();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[REVIEW], Duration::from_millis(5)),
    );
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Fixed."], Duration::from_millis(5)),
    );
    let mut harness = harness(&world.data, prefs);
    gui_harness::start(&mut harness, "Security", "review the project");
    wait_until(&mut harness, "the review", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    assert_eq!(
        app(&harness).state.chat().unwrap().chat.mode,
        tandem_core::store::ChatMode::Security
    );
    assert!(
        app(&harness).state.review().is_none(),
        "a review proposes nothing"
    );
    // Each finding shows on its card in the chat and in the Findings tab.
    let shown = |h: &gui_harness::H, title: &str| h.query_all_by_label(title).count();
    assert_eq!(shown(&harness, "SQL injection"), 1);
    click_when_shown(&mut harness, "Findings (2)");
    assert_eq!(shown(&harness, "SQL injection"), 2);
    assert_eq!(shown(&harness, "Verbose errors"), 2);
    harness.get_by_label("low (1)").click();
    harness.step();
    harness.step();
    assert_eq!(shown(&harness, "Verbose errors"), 1, "low findings hidden");
    assert_eq!(shown(&harness, "SQL injection"), 2);
    // Most severe first: the critical one's "Fix this" is the first.

    harness.get_all_by_label("Fix this").next().unwrap().click();
    wait_until(&mut harness, "the fix", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 4)
    });
    assert_eq!(
        app(&harness).state.mode,
        tandem_core::store::ChatMode::Build
    );
    let requests: Vec<_> = world
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/api/chat"))
        .collect();
    let sent = requests[1].body["messages"].as_array().unwrap();
    let prompt = sent.last().unwrap()["content"].as_str().unwrap();
    assert!(
        prompt.starts_with(
            "Fix this critical security finding in notes.txt (lines 3-4): SQL injection"
        ),
        "{prompt}"
    );
    assert!(
        sent[0]["content"]
            .as_str()
            .unwrap()
            .contains("<tandem-write"),
        "sent in Build mode"
    );
}

#[test]
fn settings_offer_a_starter_rules_file_and_keep_rules_per_mode() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label("⚙ Settings").click();
    harness.run_steps(3);
    harness
        .get_by_label("Create a starter AI_RULES.md")
        .click_accesskit();
    wait_until(&mut harness, "the rules file", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs.iter().any(|t| t.path == "AI_RULES.md"))
    });
    let written = std::fs::read_to_string(world.root.join("AI_RULES.md")).unwrap();
    assert!(written.starts_with("# Rules for AI assistants"));
    assert_eq!(common::git(&world.root, &["status", "--porcelain"]), "");

    harness.get_by_label("security").click_accesskit();
    harness.run_steps(2);
    let field = "Sent after AI_RULES.md in security mode only (empty: none)";
    harness.get_by_label(field).focus();
    harness.step();
    harness
        .get_by_label(field)
        .type_text("Check every SQL query.");
    harness.step();
    harness.get_by_label("Save rules").click_accesskit();
    let project_id = app(&harness).state.project.as_ref().unwrap().project.id;
    let start = std::time::Instant::now();
    loop {
        harness.step();
        let saved = world
            .store()
            .project(project_id)
            .unwrap()
            .settings
            .mode_rules;
        if saved.get("security").map(String::as_str) == Some("Check every SQL query.") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "saved: {saved:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_search_tab_finds_text_and_opens_the_file_at_the_line() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label("Search").click();
    harness.run_steps(2);
    let field = harness
        .get_all_by_label("Search")
        .find(|n| format!("{n:?}").contains("TextInput"))
        .unwrap();
    field.focus();
    harness.step();
    harness
        .get_all_by_label("Search")
        .find(|n| format!("{n:?}").contains("TextInput"))
        .unwrap()
        .type_text("line 17");
    wait_until(&mut harness, "the results", |a| {
        a.state
            .search
            .results
            .as_ref()
            .is_some_and(|(key, r)| key.text == "line 17" && r.is_ok())
    });
    harness.run_steps(2);
    assert!(harness.query_by_label("1 match(es) in 1 file(s)").is_some());
    harness.get_by_label("   17").click();
    wait_until(&mut harness, "the file at the line", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs.iter().any(|t| t.path == "notes.txt"))
    });
}

/// A real 8×8 PNG, red.
fn red_png() -> Vec<u8> {
    let image = image::RgbaImage::from_pixel(8, 8, image::Rgba([220, 40, 40, 255]));
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}

#[test]
fn attached_images_are_sent_and_shown_and_a_text_file_can_be_added_to_the_project() {
    let (world, prefs) = world();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["A red square."], Duration::from_millis(5)),
    );
    let dir = tempfile::tempdir().unwrap();
    let (shot, readme) = (dir.path().join("shot.png"), dir.path().join("extra.md"));
    std::fs::write(&shot, red_png()).unwrap();
    std::fs::write(&readme, "# Extra\n").unwrap();
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    // What dropping the files on the window does.
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .backend
        .attach_paths(vec![shot.clone(), readme.clone()]);
    wait_until(&mut harness, "the attachments", |a| {
        a.state.attachments.len() == 2
    });
    harness.run_steps(2);
    assert!(
        harness
            .query_all_by_label_contains("shot.png")
            .next()
            .is_some()
    );
    // The second attachment's ×.
    harness.get_all_by_label("×").nth(1).unwrap().click();
    harness.step();
    assert_eq!(app(&harness).state.attachments.len(), 1);
    assert_eq!(app(&harness).state.attachments[0].name, "shot.png");

    send(&mut harness, "what is this?");
    wait_until(&mut harness, "the reply", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    assert!(
        app(&harness).state.attachments.is_empty(),
        "sent with the prompt"
    );
    let request = world
        .server
        .requests()
        .into_iter()
        .find(|r| r.path.contains("/api/chat"))
        .unwrap();
    let user = request.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(user["images"].as_array().unwrap().len(), 1);
    // Reopened, the message shows its image.
    let chat_id = app(&harness).state.chat().unwrap().chat.id;
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .backend
        .load_chat(chat_id);
    wait_until(&mut harness, "the attachment on the message", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.messages[0].attachments.iter().any(|s| s.image.is_some()))
    });

    // A text file proposed as a new project file, reviewed like any proposal.
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .backend
        .attach_paths(vec![readme]);
    wait_until(&mut harness, "the text attachment", |a| {
        a.state.attachments.len() == 1
    });
    harness.run_steps(2);
    harness.get_by_label("Add to project").click();
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    let review = app(&harness).state.review().unwrap();
    let paths: Vec<_> = review.plan.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["extra.md"]);
    assert!(
        !world.root.join("extra.md").exists(),
        "nothing on disk before approval"
    );
}

#[test]
fn selected_lines_go_to_the_chat_to_ask_about_or_to_change() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label_contains("notes.txt").click();
    wait_until(&mut harness, "the open tab", |a| {
        a.state.project.as_ref().is_some_and(|p| !p.tabs.is_empty())
    });
    harness.run_steps(2);
    // Nothing selected: the buttons are there but off.
    assert!(
        harness
            .query_by_label("Select lines to ask about them or change them")
            .is_some()
    );
    // Select from inside line 2 to inside line 3, as dragging would.
    let select = |harness: &mut gui_harness::H| {
        let editor = |n: &egui_kittest::kittest::AccessKitNode<'_>| {
            n.role() == Role::MultilineTextInput
                && n.value().is_some_and(|v| v.starts_with("line 1"))
        };
        harness.get_by(editor).focus();
        harness.step();
        let id = egui::Id::unique(("tandem-editor", "notes.txt"));
        let mut state = egui::text_edit::TextEditState::load(&harness.ctx, id).unwrap_or_default();
        state
            .cursor
            .set_char_range(Some(egui::text::CCursorRange::two(
                egui::text::CCursor::new(9),
                egui::text::CCursor::new(16),
            )));
        state.store(&harness.ctx, id);
        harness.run_steps(2);
    };
    select(&mut harness);
    assert!(harness.query_by_label("Lines 2-3 selected").is_some());
    harness.get_by_label("Change this").click();
    harness.step();
    let state = &app(&harness).state;
    assert_eq!(state.mode, tandem_core::store::ChatMode::Build);
    assert_eq!(
        state.composer,
        "Change notes.txt lines 2-3 (edit only this part of the file):\n```txt\nline 2\nline 3\n```\n"
    );
    select(&mut harness);
    harness.get_by_label("Ask about this").click();
    harness.step();
    let state = &app(&harness).state;
    assert_eq!(state.mode, tandem_core::store::ChatMode::Ask);
    assert!(
        state.composer.starts_with(
            "About notes.txt lines 2-3:\n```txt\nline 2\nline 3\n```\nChange notes.txt"
        )
    );
}

#[test]
fn settings_show_a_providers_keys_by_fingerprint_and_remove_one() {
    let (world, prefs) = world();
    let app = tandem_core::app::App::open_in(Some(&world.data), common::environment()).unwrap();
    app.add_key("fake", "sk-first-key-0001").unwrap();
    app.add_key("fake", "sk-second-key-0002").unwrap();
    let keys = app.provider_keys("fake").unwrap();
    assert_eq!(keys.len(), 2);
    drop(app);
    let mut harness = harness(&world.data, prefs);
    harness.get_by_label("⚙ Settings").click();
    wait_until(&mut harness, "the keys", |a| {
        a.state
            .provider_keys
            .get("fake")
            .is_some_and(|k| k.len() == 2)
    });
    harness.run_steps(3);
    assert!(
        harness
            .query_by_label("2 keys (rotated on quota errors):")
            .is_some()
    );
    // Each key by its fingerprint; never the key itself.
    for key in &keys {
        assert!(
            harness.query_by_label(&key.fingerprint).is_some(),
            "{key:?}"
        );
    }
    assert!(!shown_containing(&mut harness, "sk-first"));
    // The ✖ on the second key's row, just right of its fingerprint.
    let second = harness.get_by_label(&keys[1].fingerprint).rect();
    let remove = harness
        .query_all_by_label("✖")
        .filter(|b| (b.rect().center().y - second.center().y).abs() < 4.0)
        .filter(|b| b.rect().left() >= second.right())
        .min_by(|a, b| a.rect().left().total_cmp(&b.rect().left()))
        .expect("a remove button beside the second key");
    remove.click_accesskit();
    wait_until(&mut harness, "one key left", |a| {
        a.state
            .provider_keys
            .get("fake")
            .is_some_and(|k| k.len() == 1)
    });
    let app = tandem_core::app::App::open_in(Some(&world.data), common::environment()).unwrap();
    let left = app.provider_keys("fake").unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].fingerprint, keys[0].fingerprint);
}

/// The window and a `tandem` command in a terminal on one data directory: the CLI approves
/// the proposal the window shows, and `git` commits a file; the window notices both without
/// being touched (the tree, the history, the chat's proposal), and an open file with unsaved
/// edits whose file changed asks what to keep.
#[test]
fn the_window_follows_what_the_cli_and_git_change() {
    let (world, prefs) = world();
    let reply = proposal_reply();
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    world
        .server
        .push("POST", "/api/chat", ollama_stream(&pieces, Duration::ZERO));
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "spell out 2 and 18");
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    let id = app(&harness).state.review().unwrap().message_id;

    // A second process approves it.
    let out = common::tandem()
        .arg("--data-dir")
        .arg(&world.data)
        .args(["approve", &id.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until(&mut harness, "the approval seen", |a| {
        a.state.review().is_none()
            && a.state.project.as_ref().is_some_and(|p| {
                p.history
                    .first()
                    .is_some_and(|v| v.message.starts_with("[tandem]"))
            })
    });

    // git commits a new file.
    std::fs::write(world.root.join("outside.txt"), "from git\n").unwrap();
    common::git(&world.root, &["add", "outside.txt"]);
    common::git(&world.root, &["commit", "-q", "-m", "outside commit"]);
    wait_until(&mut harness, "the commit and its file seen", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.files.contains("outside.txt")
                && p.history
                    .first()
                    .is_some_and(|v| v.message == "outside commit")
        })
    });

    // An open file with unsaved edits changes on disk: the window asks.
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .command(tandem_ui::command::Command::OpenFile("outside.txt".into()));
    wait_until(&mut harness, "the open file", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs.iter().any(|t| t.path == "outside.txt"))
    });
    {
        let app = harness.state_mut().as_mut().unwrap();
        let project = app.state.project.as_mut().unwrap();
        let tab = project.tabs.iter_mut().find(|t| t.path == "outside.txt");
        let tab = tab.unwrap();
        tab.text = "my unsaved edit\n".into();
        tab.revision += 1;
    }
    std::fs::write(
        world.root.join("outside.txt"),
        "changed by another editor\n",
    )
    .unwrap();
    wait_until(&mut harness, "the question about the changed file", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.tabs.iter().any(|t| {
                t.path == "outside.txt"
                    && t.disk_changed.as_deref() == Some("changed by another editor\n")
            })
        })
    });
    harness.run_steps(2);
    harness.get_by_label_contains("changed on disk while you were editing");
}

#[test]
fn an_edit_quoting_numbered_lines_applies_and_its_card_says_so() {
    let (world, prefs) = world();
    // A small model's edit: SEARCH and REPLACE copied from a numbered file view.
    let reply = "<tandem-search-replace path=\"notes.txt\">\n<<<<<<< SEARCH\n    12\tline 12\n    13\tline 13\n=======\n    12\tline twelve\n    13\tline 13\n>>>>>>> REPLACE\n</tandem-search-replace>\n";
    world
        .server
        .push("POST", "/api/chat", ollama_stream(&[reply], Duration::ZERO));
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "spell out 12");
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    let want = ORIGINAL.replace("line 12\n", "line twelve\n");
    assert_eq!(
        app(&harness).state.review().unwrap().plan.files[0]
            .new_text
            .as_deref(),
        Some(want.as_str())
    );
    assert!(shown_containing(
        &mut harness,
        "note: SEARCH carried line numbers (12-13) copied from a file view"
    ));
}

#[test]
fn a_prompt_that_cannot_be_sent_goes_back_to_the_composer_and_leaves_no_chat() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    // A provider that is not there any more (removed in another window, say): the first send
    // of a new chat fails before anything is sent.
    harness.state_mut().as_mut().unwrap().state.provider = Some("removed-provider".into());
    let prompt = "a long prompt that took a while to write";
    send(&mut harness, prompt);
    wait_until(&mut harness, "the prompt back in the composer", |a| {
        a.state.composer == prompt
    });
    let state = &app(&harness).state;
    assert!(state.chat().is_none(), "the chat made for it is closed");
    assert!(
        state.project.as_ref().unwrap().chats.is_empty(),
        "and gone from the list"
    );
    let said = state
        .toasts
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>();
    assert!(
        said.iter()
            .any(|t| t.contains("removed-provider") && t.contains("back in the composer")),
        "{said:?}"
    );
    assert!(
        world
            .server
            .requests()
            .iter()
            .all(|r| r.path != "/api/chat"),
        "nothing was sent"
    );
}
