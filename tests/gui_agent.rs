//! Agent and Plan mode in the desktop app, driven headless with egui_kittest against the fake
//! provider server speaking native Ollama tool calls: the step cards, the approval card and
//! its buttons, the proposal the turn leaves, and "Implement this plan".

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;
mod gui_harness;

use fake_provider::ollama_tool_call;

use std::time::Duration;

use egui_kittest::kittest::Queryable;
use fake_provider::Reply;
use gui_harness::{H, MAIN, World, agent_world, app, harness, start, text, wait_until};
use serde_json::{Value, json};
use tandem_core::store::{ChatMode, StepDecision};
use tandem_ui::model::state::Prefs;

/// The /api/chat requests the app made, in order.
fn chat_requests(world: &World) -> Vec<Value> {
    world
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/chat")
        .map(|r| r.body)
        .collect()
}

fn has_label(harness: &H, text: &str) -> bool {
    harness.query_all_by_label_contains(text).next().is_some()
}

/// read_file runs by itself (low risk), write_file waits for the person.
fn read_then_write(after: &str) -> Vec<Reply> {
    vec![
        ollama_tool_call("read_file", json!({"path": "src/main.rs"})),
        ollama_tool_call(
            "write_file",
            json!({"path": "src/greet.rs", "content": "pub fn greet() {}\n",
                   "description": "add a greeting"}),
        ),
        text(after),
    ]
}

fn wait_for_approval(harness: &mut H) {
    wait_until(harness, "the approval card", |a| {
        !a.state.agent.approvals.is_empty()
    });
    harness.step();
}

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

// The approval gateway: an external tool's WebSocket client against the app's gateway.

use futures_util::{SinkExt, StreamExt};
use tandem_core::app::{GATEWAY_TOKEN_SECRET, GatewaySettings};
use tandem_core::store::keys::GATEWAY;
use tandem_ui::model::agent_state::GatewayStatus;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Message, http::header};

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn gateway_port(harness: &mut H) -> u16 {
    wait_until(harness, "the gateway", |a| {
        matches!(a.state.agent.gateway.status, GatewayStatus::Running { .. })
    });
    match app(harness).state.agent.gateway.status {
        GatewayStatus::Running { port } => port,
        _ => unreachable!(),
    }
}

fn connect(world: &World, port: u16, token: &str) -> Ws {
    let mut request = format!("ws://127.0.0.1:{port}/")
        .into_client_request()
        .unwrap();
    let bearer = format!("Bearer {token}").parse().unwrap();
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    world
        .runtime
        .block_on(tokio_tungstenite::connect_async(request))
        .unwrap()
        .0
}

fn ask(world: &World, ws: &mut Ws, code: &str) {
    let frame = json!({"type": "security_evaluation", "id": "r1", "code": code,
        "language": "bash", "explanation": "the runner wants to run this", "risk": "high"});
    world
        .runtime
        .block_on(ws.send(Message::text(frame.to_string())))
        .unwrap();
}

/// The client's next `decision` frame (acks skipped), stepping the app meanwhile.
fn decision(world: &World, harness: &mut H, ws: &mut Ws) -> Value {
    let start = std::time::Instant::now();
    loop {
        harness.step();
        let next = world
            .runtime
            .block_on(async { tokio::time::timeout(Duration::from_millis(50), ws.next()).await });
        if let Ok(Some(Ok(Message::Text(text)))) = next {
            let frame: Value = serde_json::from_str(text.as_str()).unwrap();
            if frame["type"] == "decision" {
                return frame;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no decision");
    }
}

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

/// One command asked about twice: the gateway left on (any free port), the window's agent
/// turn waiting on its `run_shell` call, and an executor asking the gateway about `asked`.
/// The window, and the executor's connection waiting for the decision.
fn asked_twice(world: &World, prefs: Prefs, asked: &str) -> (H, Ws) {
    let on = GatewaySettings {
        enabled: true,
        port: 0,
        token: "test-token-0123456789".into(),
        ..GatewaySettings::default()
    };
    world.store().set_setting(GATEWAY, &on).unwrap();
    tandem_core::llm::secrets::Secrets::open(&world.data, &common::environment())
        .set(GATEWAY_TOKEN_SECRET, &on.token)
        .unwrap();
    let mut harness = harness(&world.data, prefs);
    let port = gateway_port(&mut harness);
    start(&mut harness, "Agent", "make a file");
    wait_for_approval(&mut harness);
    let mut ws = connect(world, port, &on.token);
    ask(world, &mut ws, asked);
    wait_for_gateway_request(&mut harness);
    (harness, ws)
}

fn wait_for_gateway_request(harness: &mut H) {
    wait_until(harness, "the gateway request", |a| {
        a.state
            .agent
            .gateway
            .requests
            .iter()
            .any(|r| r.is_pending())
    });
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

// The approval client: the app connects out to a fake executor, which sends a request.

use tandem_core::app::APPROVER_TOKEN_SECRET;
use tandem_ui::command::{AgentCommand, Command};

/// A fake executor on a free loopback port: accepts one connection carrying `token`, sends
/// `frame`, and hands every text frame it receives to the returned channel.
fn executor(
    world: &World,
    token: &'static str,
    frame: Value,
) -> (String, std::sync::mpsc::Receiver<Value>) {
    use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
    let listener = world
        .runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    world.runtime.spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        #[allow(clippy::result_large_err)]
        let check = |request: &Request, response: Response| {
            let given = request.headers().get(header::AUTHORIZATION);
            match given.and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {token}")) {
                true => Ok(response),
                false => Err(ErrorResponse::new(None)),
            }
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(stream, check)
            .await
            .unwrap();
        ws.send(Message::text(frame.to_string())).await.unwrap();
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Text(text) = message {
                let _ = tx.send(serde_json::from_str(text.as_str()).unwrap());
            }
        }
    });
    (url, rx)
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

/// The review's Run button runs its command (prefilled with the project's check command) in
/// the Agent chat's workspace, where the proposal already is, and shows the output; Settings
/// lists the workspace with its size and cleans it; the proposal stays to be reviewed.
#[test]
fn the_review_runs_a_command_in_the_chats_workspace_and_settings_clean_it() {
    let (world, prefs) = agent_world(vec![
        ollama_tool_call(
            "write_file",
            json!({"path": "src/greet.rs", "content": "pub fn greet() {}\n",
                   "description": "add a greeting"}),
        ),
        text("I added `src/greet.rs`."),
    ]);
    {
        let store = world.store();
        let policy = tandem_core::agent::policy::PolicySettings {
            auto_approve_up_to: Some(tandem_core::agent::policy::Risk::Medium),
            ..Default::default()
        };
        store
            .set_setting(tandem_core::store::keys::AGENT_POLICY, &policy)
            .unwrap();
        let mut project = store.projects().unwrap().remove(0);
        project.settings.check_command = Some("cat src/greet.rs".into());
        store
            .update_project_settings(project.id, &project.settings)
            .unwrap();
    }
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "add a greeting");
    wait_until(&mut harness, "the proposal", |a| {
        a.state.review().is_some() && a.state.chat().is_some_and(|c| c.streaming.is_none())
    });
    harness.step();
    let chat = app(&harness).state.chat().unwrap().chat.id;
    assert!(
        harness
            .query_all_by_value("cat src/greet.rs")
            .next()
            .is_some()
    );
    harness.get_by_label("Run").click();
    harness.step();
    wait_until(&mut harness, "the run's output", |a| {
        a.state
            .workspaces
            .runs
            .get(&chat)
            .is_some_and(|r| r.last.is_some())
    });
    harness.step();
    let run = app(&harness).state.workspaces.runs[&chat].clone();
    let ran = run.last.unwrap().unwrap();
    // The command saw the proposed file, which the project does not have yet.
    assert_eq!(
        (ran.exit_code, ran.stdout.as_str()),
        (Some(0), "pub fn greet() {}\n")
    );
    assert!(!world.root.join("src/greet.rs").exists());
    harness.get_by_label("exit code 0");
    let layer = world.data.join("workspaces").join(chat.to_string());
    assert!(layer.is_dir(), "the chat's workspace");

    harness.get_by_label("⚙ Settings").click();
    wait_until(&mut harness, "the workspaces listed", |a| {
        a.state
            .workspaces
            .list
            .as_ref()
            .is_some_and(|l| l.iter().any(|w| w.chat_id == chat && w.bytes > 0))
    });
    harness.run_steps(2);
    harness.get_by_label("Clean").click_accesskit();
    wait_until(&mut harness, "the workspace cleaned", |a| {
        a.state.workspaces.list.as_ref().is_some_and(Vec::is_empty)
    });
    assert!(!layer.exists());
    assert!(app(&harness).state.review().is_some(), "the proposal stays");
}

/// A Build chat's proposal is written only when approved: its review has no Run panel.
#[test]
fn a_build_chats_review_has_no_run_panel() {
    let (world, prefs) = agent_world(vec![text(
        "<tandem-write path=\"src/greet.rs\" description=\"greet\">pub fn greet() {}\n</tandem-write>",
    )]);
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Build", "add a greeting");
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    harness.run_steps(2);
    assert!(has_label(&harness, "Proposal (1 files)"));
    assert!(harness.query_by_label("Run").is_none());
}
