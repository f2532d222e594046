//! Chat turns end to end against a fake provider server speaking the real wire formats:
//! streaming, persistence, proposals, faults, cancel, concurrency.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

#[path = "../common/mod.rs"]
mod common;
#[path = "../fake_provider/mod.rs"]
mod fake_provider;

mod attachments;
mod editor;
mod follow_ups;
mod repair;
mod streaming;
mod turns;
mod window;

use std::time::Duration;

use fake_provider::setup::{Setup, add_provider, setup};
use fake_provider::{
    Chunk, End, FakeProvider, Reply, ollama_stream, ollama_stream_counted, openai_stream,
};
use tandem_core::chat::{ChatEventKind, SendOptions, TurnOutcome};
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ApprovalState, ChatMode, MessageStatus, ProviderSettings};

const BOUND: Duration = Duration::from_secs(20);

const REPLY: [&str; 6] = [
    "I'll add a greeting.\n",
    "<tandem-write path=\"src/greet.rs\" description=\"greeting\">\n",
    "pub fn greet() -> &'static str {\n",
    "    \"hi\"\n}\n",
    "</tandem-write>\n",
    "<tandem-chat-summary>Add greet</tandem-chat-summary>",
];

/// Sends `prompt` in `chat` and waits (at most [`BOUND`]) for the turn's end.
async fn send_and_wait(s: &Setup, chat: i64, prompt: &str, options: SendOptions) -> TurnOutcome {
    let handle = s.service.send(chat, prompt, options).await.unwrap();
    tokio::time::timeout(BOUND, handle.outcome)
        .await
        .unwrap()
        .unwrap()
}

/// A reply of `pieces` whose stream ends with `end` after them.
fn faulty(mut reply: Reply, keep: usize, end: End) -> Reply {
    if let Reply::Stream { chunks, end: e, .. } = &mut reply {
        chunks.truncate(keep);
        *e = end;
    }
    reply
}

/// An Ollama stream whose closing line reports `prompt_eval_count`.
fn ollama_counting(text: &str, prompt_eval_count: u64) -> Reply {
    let line = |value: serde_json::Value| Chunk {
        delay: Duration::from_millis(5),
        bytes: fake_provider::ndjson_line(&value),
    };
    Reply::Stream {
        status: 200,
        content_type: "application/x-ndjson".into(),
        chunks: vec![
            line(
                serde_json::json!({"model": "test-model", "message": {"role": "assistant", "content": text}, "done": false}),
            ),
            line(
                serde_json::json!({"model": "test-model", "message": {"role": "assistant", "content": ""},
                "done": true, "done_reason": "stop", "prompt_eval_count": prompt_eval_count, "eval_count": 3}),
            ),
        ],
        end: End::Finish,
        gate: None,
    }
}

fn search_replace(search: &str, replace: &str) -> String {
    format!(
        "Changing main.\n<tandem-search-replace path=\"src/main.rs\" description=\"greet\">\n\
         <<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n</tandem-search-replace>\n"
    )
}

/// Sends `prompt` in a new Build chat and waits for the outcome, collecting the events.
async fn build_turn(
    s: &fake_provider::setup::Setup,
    prompt: &str,
) -> (tandem_core::chat::TurnOutcome, Vec<ChatEventKind>) {
    let chat = s.chat(ChatMode::Build);
    let mut events = s.service.subscribe();
    let outcome = send_and_wait(s, chat, prompt, SendOptions::default()).await;
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event.kind);
    }
    s.assert_settled(chat);
    (outcome, seen)
}

fn write_main(body: &str) -> String {
    format!("Done.\n<tandem-write path=\"src/main.rs\">\nfn main() {{ {body} }}\n</tandem-write>\n")
}
