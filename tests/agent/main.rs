//! Agent and Plan turns end to end: the loop against the fake provider server, scripted turn
//! by turn in the real wire formats (native tool calls over Ollama NDJSON and OpenAI SSE, and
//! the text protocol, malformed turns included), with approvals answered as the GUI and the
//! CLI answer them.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

#[path = "../common/mod.rs"]
mod common;
#[path = "../fake_provider/mod.rs"]
mod fake_provider;
#[path = "../mcp_server/marks.rs"]
mod marks;
#[path = "../mcp_server/binary.rs"]
mod mcp_binary;
mod workspace;

mod batch;
mod mcp;
mod permissions;
mod protocol;
mod symbols;
mod turns;

use std::time::Duration;

use fake_provider::setup::{Setup, setup};
use fake_provider::{Chunk, End, Reply, ollama_stream, ollama_tool_call, sse_event};
use serde_json::{Value, json};
use tandem_core::agent::policy::{PolicySettings, Risk};
use tandem_core::agent::runner::Answer;
use tandem_core::chat::{ChatEventKind, SendOptions, TurnOutcome};
use tandem_core::llm::ProviderKind;
use tandem_core::store::keys::{AGENT_POLICY, TOOL_CALLING};
use tandem_core::store::{ApprovalState, ChatMode, MessageStatus, StepDecision, StepKind};

const BOUND: Duration = Duration::from_secs(30);
const PAUSE: Duration = Duration::from_millis(5);

fn chunks(content_type: &str, pieces: Vec<Vec<u8>>) -> Reply {
    Reply::Stream {
        status: 200,
        content_type: content_type.into(),
        chunks: pieces
            .into_iter()
            .map(|bytes| Chunk {
                delay: PAUSE,
                bytes,
            })
            .collect(),
        end: End::Finish,
        gate: None,
    }
}

/// An OpenAI-compatible reply that calls one tool, its arguments split over two chunks.
fn openai_call(id: &str, name: &str, arguments: Value) -> Reply {
    let text = arguments.to_string();
    let (a, b) = text.split_at(text.len() / 2);
    let delta = |d: Value, finish: Value| {
        sse_event(
            None,
            &json!({"id": "x", "object": "chat.completion.chunk", "model": "fake-model",
                    "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}),
        )
    };
    chunks(
        "text/event-stream",
        vec![
            delta(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                        "function": {"name": name, "arguments": a}}]}),
                Value::Null,
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
                json!("tool_calls"),
            ),
            b"data: [DONE]\n\n".to_vec(),
        ],
    )
}

fn assert_complete(outcome: &TurnOutcome) {
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );
}

fn text(reply: &str) -> Reply {
    ollama_stream(&[reply], PAUSE)
}

impl Setup {
    fn tool_calling(&self, how: &str) {
        self.engine.store().set_setting(TOOL_CALLING, how).unwrap();
    }

    fn script(&self, path: &str, replies: Vec<Reply>) {
        for reply in replies {
            self.server.push("POST", path, reply);
        }
    }

    /// Sends `prompt` in a new chat of `mode`, answering each approval with the next of
    /// `answers` (or cancelling the turn when they run out and `cancel_when_out`).
    async fn turn(
        &self,
        mode: ChatMode,
        prompt: &str,
        options: SendOptions,
        answers: &[Answer],
        cancel_when_out: bool,
    ) -> (TurnOutcome, usize) {
        let chat = self.chat(mode);
        let mut events = self.service.subscribe();
        let handle = self.service.send(chat, prompt, options).await.unwrap();
        let mut outcome = handle.outcome;
        let mut asked = 0;
        let result = tokio::time::timeout(BOUND, async {
            loop {
                tokio::select! {
                    done = &mut outcome => break done.unwrap(),
                    event = events.recv() => {
                        let Ok(event) = event else { continue };
                        if let ChatEventKind::Approval { approval } = event.kind {
                            match answers.get(asked) {
                                Some(answer) => assert!(self.service.answer(approval.id, *answer)),
                                None if cancel_when_out => assert!(self.service.cancel(chat)),
                                None => panic!("unexpected approval: {approval:?}"),
                            }
                            asked += 1;
                        }
                    }
                }
            }
        })
        .await
        .unwrap();
        self.assert_settled(chat);
        (result, asked)
    }

    fn steps(&self, message_id: i64) -> Vec<tandem_core::store::AgentStep> {
        self.engine.store().agent_steps(message_id).unwrap()
    }
}

// ---- text-form calls in native mode: only a reply that is nothing but the call ------------

/// A local HTTP server counting the connections that reach it.
fn counting_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::Builder::new()
        .name("counting-server".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut stream = stream;
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.read(&mut [0; 1024]);
                let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello");
            }
        })
        .unwrap();
    (port, count)
}

/// The request's size as sent, estimated the way Tandem estimates it.
fn sent_tokens(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| tandem_core::tokens::estimate(m["content"].as_str().unwrap_or("")) + 4)
        .sum()
}

fn chat_path(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Ollama => "/api/chat",
        ProviderKind::Openai => "/v1/chat/completions",
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::Gemini => "/v1beta/models/test-model:streamGenerateContent",
        ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
    }
}

#[cfg(unix)]
async fn named_pipes_turn() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let fifo = |rel: &str| {
        let status = std::process::Command::new("mkfifo")
            .arg(s.root.join(rel))
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo {rel}");
    };
    fifo("src/pipe.rs");
    std::fs::remove_file(s.root.join("AI_RULES.md")).unwrap();
    fifo("AI_RULES.md");
    std::os::unix::net::UnixListener::bind(s.root.join("src/sock.rs")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", s.root.join("src/zero.rs")).unwrap();
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("read_file", json!({"path": "src/pipe.rs"})),
            ollama_tool_call("read_file", json!({"path": "src/sock.rs"})),
            ollama_tool_call("read_file", json!({"path": "src/zero.rs"})),
            ollama_tool_call("grep", json!({"pattern": "main", "path": "src/pipe.rs"})),
            ollama_tool_call("grep", json!({"pattern": "main"})),
            ollama_tool_call("list_files", json!({})),
            ollama_tool_call(
                "search_replace",
                json!({"path": "src/pipe.rs", "search": "a", "replace": "b"}),
            ),
            text("Done."),
        ],
    );
    let (outcome, _) = s
        .turn(
            ChatMode::Agent,
            "look at @src/pipe.rs, @src/sock.rs and @src/",
            SendOptions::default(),
            &[Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    let results: Vec<String> = s
        .steps(outcome.message_id)
        .into_iter()
        .map(|step| step.result.unwrap_or_default())
        .collect();
    let refused =
        |path: &str, kind: &str| format!("{path} is {kind}, not a regular file; it was not read");
    assert!(
        results[0].contains(&refused("src/pipe.rs", "a named pipe")),
        "{results:?}"
    );
    assert!(
        results[1].contains(&refused("src/sock.rs", "a socket")),
        "{results:?}"
    );
    assert!(
        results[2].contains("symlink that leads outside"),
        "{results:?}"
    );
    assert!(
        results[3].contains(&refused("src/pipe.rs", "a named pipe")),
        "{results:?}"
    );
    assert_eq!(results[4], "src/main.rs:1: fn main() {}\n", "{results:?}");
    assert!(
        !results[5].contains("pipe") && !results[5].contains("sock"),
        "{results:?}"
    );
    assert!(
        results[6].contains("src/pipe.rs: a named pipe, not a regular file; it was not read"),
        "{results:?}"
    );
    // The `@` folder mention sent what it could read, the rules file was left out.
    let first = s.chat_requests()[0].body["messages"].to_string();
    assert!(first.contains("fn main() {}"), "{first}");
    assert!(!first.contains("Always use tabs"), "{first}");
}
