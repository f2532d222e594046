//! An agent turn in the window: its steps, the card of a waiting call (mouse and keyboard),
//! Plan mode handing its plan to Agent mode, following the files it reads.

use super::*;

#[test]
fn an_agent_turn_shows_its_steps_waits_for_approval_and_leaves_a_proposal() {
    let (world, prefs) = agent_world(read_then_write("I added `src/greet.rs`."));
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "add a greeting");
    assert_eq!(
        app(&harness).state.chat().unwrap().chat.mode,
        ChatMode::Agent
    );

    // The read ran without asking and is shown as a step card while the turn goes on.
    wait_for_approval(&mut harness);
    {
        let chat = app(&harness).state.chat().unwrap();
        let live = chat.streaming.as_ref().expect("the turn is still running");
        assert_eq!(live.steps.len(), 1);
        assert_eq!(live.steps[0].tool.as_deref(), Some("read_file"));
        assert_eq!(live.steps[0].decision, Some(StepDecision::Allowed));
    }
    assert!(has_label(&harness, "read_file"));
    assert!(has_label(&harness, "files read: src/main.rs"));
    assert!(has_label(&harness, "src/main.rs (lines 1-3 of 3)"));
    // The write waits: its card names the tool, the file, the risk and the way to allow it.
    assert!(has_label(&harness, "Approval needed"));
    assert!(has_label(&harness, "src/greet.rs"));
    assert!(has_label(&harness, "medium risk"));
    assert!(has_label(&harness, "Always allow \"tool:write_file\""));
    assert!(has_label(&harness, "waiting for your approval"));
    assert!(!world.root.join("src/greet.rs").exists());

    harness.get_by_label("Approve").click();
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    harness.step();
    let state = &app(&harness).state;
    assert!(state.agent.approvals.is_empty(), "the card is gone");
    let paths: Vec<_> = state
        .review()
        .unwrap()
        .plan
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect();
    assert_eq!(paths, ["src/greet.rs"]);
    // The finished reply, reloaded from the database, keeps its whole trace.
    let chat = state.chat().unwrap();
    let reply = chat.messages.last().unwrap();
    assert_eq!(reply.message.content, "I added `src/greet.rs`.");
    let decisions: Vec<_> = reply
        .steps
        .iter()
        .map(|s| (s.tool.clone().unwrap(), s.decision.unwrap()))
        .collect();
    assert_eq!(
        decisions,
        [
            ("read_file".to_string(), StepDecision::Allowed),
            ("write_file".to_string(), StepDecision::Approved),
        ]
    );
    assert!(has_label(&harness, "✔ approved"));
    assert!(has_label(&harness, "Added to the proposal: src/greet.rs"));
    // The proposal review shows the new file; approving it writes the file.
    assert!(has_label(&harness, "Proposal (1 files)"));
    assert!(
        !world.root.join("src/greet.rs").exists(),
        "nothing before review"
    );
    harness.get_by_label("Approve").click();
    wait_until(&mut harness, "the applied proposal", |a| {
        a.state.review().is_none()
            && a.state.project.as_ref().is_some_and(|p| {
                p.history
                    .first()
                    .is_some_and(|v| v.message.starts_with("[tandem]"))
            })
    });
    assert_eq!(
        std::fs::read_to_string(world.root.join("src/greet.rs")).unwrap(),
        "pub fn greet() {}\n"
    );
    // The model got the file's text back from read_file.
    let requests = chat_requests(&world);
    let second = requests[1]["messages"].as_array().unwrap();
    let result = second.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(result["content"].as_str().unwrap().contains("println!"));
}

#[test]
fn rejecting_a_call_tells_the_model_and_proposes_nothing() {
    let (world, prefs) = agent_world(read_then_write("OK, I will not write it."));
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "add a greeting");
    wait_for_approval(&mut harness);
    harness.get_by_label("Reject").click();
    wait_until(&mut harness, "the finished turn", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none()
                && c.messages
                    .last()
                    .is_some_and(|m| m.message.content == "OK, I will not write it.")
        })
    });
    harness.step();
    let state = &app(&harness).state;
    assert!(state.review().is_none(), "a rejected edit proposes nothing");
    assert!(state.agent.approvals.is_empty());
    let steps = &state.chat().unwrap().messages.last().unwrap().steps;
    assert_eq!(steps[1].decision, Some(StepDecision::Rejected));
    assert!(has_label(&harness, "✖ rejected"));
    assert!(!world.root.join("src/greet.rs").exists());
    // The model was told, as the call's result.
    let requests = chat_requests(&world);
    assert_eq!(requests.len(), 3);
    let last = requests[2]["messages"].as_array().unwrap();
    let result = last.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("user rejected"),
        "{result}"
    );
}

#[test]
fn the_keyboard_answers_a_waiting_call() {
    let (world, prefs) = agent_world(read_then_write("Done."));
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "add a greeting");
    wait_for_approval(&mut harness);
    // Alt+A: approve, and allow calls like this one from now on.
    harness.key_press_modifiers(egui::Modifiers::ALT, egui::Key::A);
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    let policy: tandem_core::agent::policy::PolicySettings = world
        .store()
        .setting(tandem_core::store::keys::AGENT_POLICY)
        .unwrap()
        .unwrap();
    assert_eq!(policy.allow, ["tool:write_file"]);
    // The settings form shows the new pattern.
    wait_until(&mut harness, "the reloaded policy", |a| {
        a.state.agent.form.allow == "tool:write_file"
    });
}

#[test]
fn plan_mode_then_implement_this_plan_sends_it_to_agent_mode() {
    let plan = "1. Add `src/greet.rs` with `greet()`.\n2. Call it from `main`.";
    let (world, prefs) = agent_world(vec![text(plan), text("Implemented.")]);
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Plan", "plan a greeting");
    assert_eq!(app(&harness).state.mode, ChatMode::Plan);
    wait_until(&mut harness, "the plan", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none() && c.messages.last().is_some_and(|m| m.message.content == plan)
        })
    });
    harness.step();
    let first = chat_requests(&world);
    let tools = first[0]["tools"].as_array().unwrap();
    assert!(
        !tools.iter().any(|t| t["function"]["name"] == "write_file"),
        "Plan mode only reads"
    );
    harness.get_by_label("Implement this plan").click();
    wait_until(&mut harness, "the agent's reply", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none()
                && c.messages
                    .last()
                    .is_some_and(|m| m.message.content == "Implemented.")
        })
    });
    let state = &app(&harness).state;
    assert_eq!(state.mode, ChatMode::Agent);
    wait_until(&mut harness, "the chat in Agent mode", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.chat.mode == ChatMode::Agent)
    });
    let requests = chat_requests(&world);
    assert_eq!(requests.len(), 2);
    let messages = requests[1]["messages"].as_array().unwrap();
    let prompt = messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(prompt, format!("Implement this plan:\n\n{plan}"));
    let tools = requests[1]["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|t| t["function"]["name"] == "write_file"),
        "the plan goes to Agent mode, whose tools edit"
    );
    // The button belongs to a Plan chat's last reply only.
    harness.step();
    assert!(harness.query_by_label("Implement this plan").is_none());
}

#[test]
fn an_approval_card_shows_hidden_characters_escaped_and_long_commands_whole() {
    let long = format!("touch {}", "a".repeat(400));
    let (world, prefs) = agent_world(vec![
        // `touch` is asked about; `\r` would put the cursor back over it on a terminal.
        ollama_tool_call("run_shell", json!({"command": "touch a.txt\r# only ls"})),
        ollama_tool_call("run_shell", json!({"command": long})),
        text("Nothing done."),
    ]);
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "list the files");
    wait_for_approval(&mut harness);
    // The carriage return is shown, so "# only ls" cannot pass for the whole command.
    assert!(has_label(&harness, "touch a.txt\\r# only ls"));
    assert!(!has_label(&harness, "a.txt\r"));
    assert!(has_label(&harness, "control or invisible characters"));
    harness.get_by_label("Reject").click();

    // A long command is cut on the card, and shown whole on request.
    wait_until(&mut harness, "the second approval", |a| {
        a.state
            .agent
            .approvals
            .iter()
            .any(|v| v.approval.arguments["command"] == long.as_str())
    });
    harness.step();
    let whole = |harness: &H| harness.query_all_by_label(&long).count();
    assert_eq!(whole(&harness), 0, "cut on the card");
    harness.get_by_label("Show whole command").click();
    harness.step();
    assert_eq!(whole(&harness), 1, "shown whole");
    // The expanded command may push the buttons out of view: answer with the keyboard.
    harness.key_press_modifiers(egui::Modifiers::ALT, egui::Key::N);
    wait_until(&mut harness, "the finished turn", |a| {
        a.state.chat().is_some_and(|c| c.streaming.is_none())
    });
}

#[test]
fn following_the_agent_opens_the_file_it_reads_at_the_line() {
    let (world, mut prefs) = agent_world(vec![
        ollama_tool_call("read_file", json!({"path": "src/main.rs", "start_line": 2})),
        text("Read it."),
    ]);
    prefs.follow_agent = true;
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "read main");
    wait_until(&mut harness, "the file the agent read", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs.iter().any(|t| t.path == "src/main.rs"))
    });
    wait_until(&mut harness, "the end of the turn", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    assert!(has_label(&harness, "Follow agent"));
}

#[test]
fn without_following_the_agent_no_file_opens() {
    let (world, prefs) = agent_world(vec![
        ollama_tool_call("read_file", json!({"path": "src/main.rs"})),
        text("Read it."),
    ]);
    assert!(!prefs.follow_agent, "off unless the person turns it on");
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "read main");
    wait_until(&mut harness, "the end of the turn", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    harness.run_steps(3);
    assert!(
        app(&harness)
            .state
            .project
            .as_ref()
            .unwrap()
            .tabs
            .is_empty()
    );
}
