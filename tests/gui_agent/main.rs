//! Agent and Plan mode in the desktop app, driven headless with egui_kittest against the fake
//! provider server speaking native Ollama tool calls: the step cards, the approval card and
//! its buttons, the proposal the turn leaves, and "Implement this plan".

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod calls;
#[path = "../common/mod.rs"]
mod common;
#[path = "../fake_provider/mod.rs"]
mod fake_provider;
mod gateway;
#[path = "../gui_harness/mod.rs"]
mod gui_harness;
mod workspace;

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
