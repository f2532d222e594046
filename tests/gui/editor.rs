//! The editor and the tree: saving (a commit), restoring, renaming, dirty buffers against the
//! disk and restarts, the search tab, a selection sent to the chat, and what changes outside.

use super::*;

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
