//! The gateway and the approval client in the window: enabling it, the Approvals tab, and one
//! answer for a command asked about by the agent and an executor both.

use super::*;

#[test]
fn enabling_the_gateway_in_settings_and_approving_a_request_in_the_approvals_tab() {
    let (world, prefs) = gui_harness::world(&[("src/main.rs", MAIN)]);
    let off = GatewaySettings {
        port: 0,
        ..GatewaySettings::default()
    };
    world.store().set_setting(GATEWAY, &off).unwrap();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the agent settings", |a| {
        a.state.project.is_some() && a.state.agent.form.loaded
    });
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Comma);
    harness.step();
    harness.step();
    // The gateway section is below the fold of the settings window: clicked the way a
    // screen reader clicks.
    harness
        .get_by_label("Enable the approval gateway")
        .click_accesskit();
    let port = gateway_port(&mut harness);
    // Enabling made a token, kept with the secrets (not in the settings table) and shown in
    // the form.
    let token = app(&harness).state.agent.form.gateway_token.clone();
    assert_eq!(token.len(), 64);
    let saved: GatewaySettings = world.store().setting(GATEWAY).unwrap().unwrap();
    assert!(saved.enabled);
    assert!(saved.token.is_empty());
    let secrets = tandem_core::llm::secrets::Secrets::open(&world.data, &common::environment());
    assert_eq!(
        secrets.get(GATEWAY_TOKEN_SECRET).unwrap(),
        Some(token.clone())
    );

    let mut ws = connect(&world, port, &token);
    ask(&world, &mut ws, "make install");
    wait_for_gateway_request(&mut harness);
    // Settings closed (it covers the bottom panel), then the Approvals tab.
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .command(tandem_ui::command::Command::CloseSettings);
    harness.step();
    harness.get_by_label("Approvals (1)").click();
    harness.step();
    harness.step();
    assert!(has_label(&harness, "make install"));
    assert!(has_label(&harness, "the runner wants to run this"));
    assert!(has_label(&harness, "waiting for you"));
    harness.get_by_label("Approve").click();
    let frame = decision(&world, &mut harness, &mut ws);
    assert_eq!(frame["approved"], true, "{frame}");
    assert_eq!(frame["decided_by"], "user");
    wait_until(&mut harness, "the decided request", |a| {
        a.state
            .agent
            .gateway
            .requests
            .iter()
            .all(|r| !r.is_pending())
    });
    harness.step();
    assert!(has_label(&harness, "✔ approved"));
}

#[test]
fn a_gateway_request_about_the_waiting_command_is_decided_with_it() {
    let (world, prefs) = agent_world(vec![
        ollama_tool_call("run_shell", json!({"command": "touch made.txt"})),
        text("Made it."),
    ]);
    let (mut harness, mut ws) = asked_twice(&world, prefs, "touch   made.txt\n");
    harness.step();
    // Shown on the agent's card, not as a second question.
    assert!(has_label(&harness, "asks about this same command"));
    harness.get_by_label("Approve").click();
    let frame = decision(&world, &mut harness, &mut ws);
    assert_eq!(frame["approved"], true, "{frame}");
    wait_until(&mut harness, "the finished turn", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none()
                && c.messages
                    .last()
                    .is_some_and(|m| m.message.content == "Made it.")
        })
    });
    // It ran in the chat's workspace: the file it made is proposed, not in the tree yet.
    assert!(!world.root.join("made.txt").exists());
    let state = &app(&harness).state;
    let steps = &state.chat().unwrap().messages.last().unwrap().steps;
    assert_eq!(steps[0].decision, Some(StepDecision::Approved));
    assert_eq!(steps[0].exit_code, Some(0));
    harness.step();
    assert!(has_label(&harness, "exit 0"));
    // The card says the command ran confined, without the network.
    let confined = app(&harness)
        .state
        .chat()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .steps[0]
        .sandbox
        .clone()
        .unwrap();
    match confined["confined"].as_bool() {
        Some(true) if confined["gaps"].as_array().unwrap().is_empty() => {
            assert!(has_label(&harness, "sandboxed · no network"));
        }
        Some(true) => assert!(has_label(&harness, "⚠ sandbox without: ")),
        _ => assert!(confined["unavailable"].is_string(), "{confined}"),
    }
}

/// The other way round: the person decides the gateway's request (the Approvals tab), and the
/// agent's call waiting in the open chat on the same command is answered with it.
#[test]
fn rejecting_the_gateway_request_rejects_the_agents_call_about_the_same_command() {
    let (world, prefs) = agent_world(vec![
        ollama_tool_call("run_shell", json!({"command": "touch made.txt"})),
        text("Not made."),
    ]);
    let (mut harness, mut ws) = asked_twice(&world, prefs, "touch made.txt");
    let request = app(&harness).state.agent.gateway.requests[0].id;
    // What the Approvals tab's Reject sends.
    let decide = AgentCommand::DecideGateway {
        id: request,
        approved: false,
    };
    harness.state_mut().as_mut().unwrap().command(decide.into());
    let frame = decision(&world, &mut harness, &mut ws);
    assert_eq!(frame["approved"], false, "{frame}");
    wait_until(&mut harness, "the finished turn", |a| {
        a.state.chat().is_some_and(|c| {
            c.streaming.is_none()
                && c.messages
                    .last()
                    .is_some_and(|m| m.message.content == "Not made.")
        })
    });
    let state = &app(&harness).state;
    let steps = &state.chat().unwrap().messages.last().unwrap().steps;
    assert_eq!(steps[0].decision, Some(StepDecision::Rejected));
    assert!(state.agent.approvals.is_empty());
    assert!(!world.root.join("made.txt").exists());
}

#[test]
fn a_request_from_the_executor_asks_for_attention_and_is_approved_in_the_approvals_tab() {
    const TOKEN: &str = "executor-token-0123456789";
    let (world, prefs) = gui_harness::world(&[("src/main.rs", MAIN)]);
    let frame = json!({"type": "Security Evaluation Request", "id": "x1",
        "code": "make install", "explanation": "the executor wants to run this",
        "risk_level": "high"});
    let (url, frames) = executor(&world, TOKEN, frame);
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the agent settings", |a| {
        a.state.project.is_some() && a.state.agent.form.loaded
    });
    // The person looks at another window.
    harness.input_mut().focused = false;
    let tandem = harness.state_mut().as_mut().unwrap();
    tandem.state.agent.approver.url = url.clone();
    tandem.state.agent.approver.token = TOKEN.into();
    tandem.command(Command::Agent(AgentCommand::ConnectApprover));
    let start = std::time::Instant::now();
    loop {
        harness.step();
        let asked = harness.output().viewport_output.values().any(|v| {
            v.commands
                .contains(&egui::ViewportCommand::RequestUserAttention(
                    egui::UserAttentionType::Informational,
                ))
        });
        if asked {
            break;
        }
        let state = &app(&harness).state;
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no attention asked: {:?} {:?} {:?} {:?}",
            state.agent.approver,
            state.agent.gateway.requests,
            state.log,
            world.store().approval_requests(5)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_for_gateway_request(&mut harness);
    let approver = &app(&harness).state.agent.approver;
    assert_eq!(approver.status, tandem_core::app::ApproverStatus::Connected);
    // The token went to the key store; the window keeps only a hint of it.
    assert!(approver.token.is_empty());
    assert_eq!(approver.token_hint.as_deref(), Some("••••6789"));
    let secrets = tandem_core::llm::secrets::Secrets::open(&world.data, &common::environment());
    assert_eq!(
        secrets.get(APPROVER_TOKEN_SECRET).unwrap().as_deref(),
        Some(TOKEN)
    );
    let saved: Value = world.store().setting("gateway.executor").unwrap().unwrap();
    assert_eq!(saved, json!({"url": url, "connect": true}));

    harness.get_by_label("Approvals (1)").click();
    harness.step();
    harness.step();
    assert!(has_label(&harness, "the executor wants to run this"));
    assert!(has_label(
        &harness,
        "Executor: Connected to ws://127.0.0.1:"
    ));
    harness.get_by_label("Approve").click();
    let start = std::time::Instant::now();
    let decision = loop {
        harness.step();
        if let Ok(frame) = frames.try_recv()
            && frame["type"] == "decision"
        {
            break frame;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no decision");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        (&decision["id"], &decision["approved"]),
        (&json!("x1"), &json!(true))
    );
    assert_eq!(decision["decided_by"], "user");
}
