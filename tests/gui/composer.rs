//! The composer and the chat header: sending (with or without a chat), the context meter,
//! @-mentions, attachments, a prompt that cannot be sent, a long title.

use super::*;

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
    assert!(
        app(&harness).state.chat().is_none(),
        "the chat made for it is closed"
    );
    // The list is read again after each change the app tells (made, then deleted), on its
    // own task: its last reading, which may come a frame after the prompt, has no chat.
    wait_until(&mut harness, "the chat gone from the list", |a| {
        a.state.project.as_ref().is_some_and(|p| p.chats.is_empty())
    });
    let state = &app(&harness).state;
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

#[test]
fn a_turn_ending_in_another_chat_leaves_the_open_chat_open_and_shows_its_end_when_opened() {
    let (world, prefs) = world();
    let gate = Gate::default();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["First half, ", "second half."], Duration::ZERO).hold_before(1, &gate),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "a long answer please");
    wait_until(&mut harness, "the reply streaming", |a| {
        a.state.chat().and_then(|c| c.streaming.as_ref()).is_some()
    });
    let streaming = app(&harness).state.chat().unwrap().chat.id;
    // The person moves on to a new chat while the first one's reply streams.
    harness.get_by_label("+ New").click();
    wait_until(&mut harness, "the second chat open", |a| {
        a.state.chat().is_some_and(|c| c.chat.id != streaming)
    });
    let open = app(&harness).state.chat().unwrap().chat.id;
    gate.open();
    let store = world.store();
    wait_until(&mut harness, "the first chat's reply stored whole", |_| {
        store.messages(streaming).unwrap().iter().any(|m| {
            m.content == "First half, second half."
                && m.status != tandem_core::store::MessageStatus::Streaming
        })
    });
    for _ in 0..20 {
        harness.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        app(&harness).state.chat().unwrap().chat.id,
        open,
        "the window jumped back"
    );
    // Opened again, the first chat shows the reply as it ended.
    harness.get_by_label("a long answer please").click();
    wait_until(&mut harness, "the first chat with its whole reply", |a| {
        a.state.chat().is_some_and(|c| {
            c.chat.id == streaming
                && c.streaming.is_none()
                && c.messages
                    .iter()
                    .any(|m| m.message.content == "First half, second half.")
        })
    });
}
