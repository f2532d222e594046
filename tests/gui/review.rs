//! A proposal from the reply to the commit: the review's checkboxes, partial approval and its
//! cards, rejection, the check's problems, a security review's findings.

use super::*;

/// The proposal reply, queued on the fake server and held after its first piece until the
/// returned gate opens.
fn held_proposal(world: &World) -> Gate {
    let reply = proposal_reply();
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    let gate = Gate::default();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&pieces, Duration::ZERO).hold_before(1, &gate),
    );
    gate
}

/// Opens a new chat, sends the proposal's prompt and waits until its first piece streams in.
fn send_until_streaming(harness: &mut gui_harness::H) {
    open_chat(harness);
    send(harness, "spell out 2 and 18");
    wait_until(harness, "streamed text", |a| {
        a.state
            .chat()
            .and_then(|c| c.streaming.as_ref())
            .is_some_and(|s| s.parser.text().contains("spell out two numbers"))
    });
}

#[test]
fn send_stream_review_uncheck_a_hunk_and_approve() {
    let (world, prefs) = world();
    // The reply stops after its first piece until the test has seen it stream.
    let gate = held_proposal(&world);
    let mut harness = harness(&world.data, prefs);
    // The reply streams in live.
    send_until_streaming(&mut harness);
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

#[test]
fn an_auto_approved_turn_toasts_its_commit_whichever_chat_is_open() {
    let (world, prefs) = world();
    world
        .store()
        .set_setting(tandem_core::store::keys::AUTO_APPROVE, &true)
        .unwrap();
    // The reply stops after its first piece until another chat is open.
    let gate = held_proposal(&world);
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "auto-approve on", |a| a.state.auto_approve);
    send_until_streaming(&mut harness);
    let sent_in = app(&harness).state.chat().unwrap().chat.id;
    harness.get_by_label("+ New").click();
    wait_until(&mut harness, "another chat", |a| {
        a.state.chat().is_some_and(|c| c.chat.id != sent_in)
    });
    gate.open();
    wait_until(&mut harness, "the commit in history", |a| {
        a.state.project.as_ref().is_some_and(|p| {
            p.history
                .first()
                .is_some_and(|v| v.message.contains("Spell out numbers"))
        })
    });
    let head = common::git(&world.root, &["rev-parse", "HEAD"]);
    let applied = format!("Applied as commit {}", tandem_core::vcs::short(head.trim()));
    wait_until(&mut harness, "the commit's toast", |a| {
        a.state.toasts.iter().any(|t| t.text == applied)
    });
    assert_ne!(app(&harness).state.chat().unwrap().chat.id, sent_in);
    let on_disk = std::fs::read_to_string(world.root.join("notes.txt")).unwrap();
    assert!(on_disk.contains("line two\n") && on_disk.contains("line eighteen\n"));
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
