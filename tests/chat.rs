//! Chat turns end to end against a fake provider server speaking the real wire formats:
//! streaming, persistence, proposals, faults, cancel, concurrency.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;

#[path = "chat/attachments.rs"]
mod attachments;
#[path = "chat/editor.rs"]
mod editor;
#[path = "chat/follow_ups.rs"]
mod follow_ups;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ollama_reply_streams_is_saved_and_waits_for_review() {
    let s = setup(ProviderKind::Ollama).await;
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&REPLY, Duration::from_millis(15)),
    );
    let chat = s.chat(ChatMode::Build);
    let mut events = s.service.subscribe();
    let handle = s
        .service
        .send(chat, "add a greeting", SendOptions::default())
        .await
        .unwrap();
    // The prompt and the placeholder are saved before any token arrives.
    let early = s.engine.store().messages(chat).unwrap();
    assert_eq!(early.len(), 2);
    assert_eq!(early[0].content, "add a greeting");

    let outcome = tokio::time::timeout(BOUND, handle.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );
    assert_eq!(outcome.content, REPLY.concat());
    let mut streamed = String::new();
    let mut finished = false;
    while let Ok(event) = events.try_recv() {
        match event.kind {
            ChatEventKind::Delta { text, .. } => streamed.push_str(&text),
            ChatEventKind::Finished {
                status, proposal, ..
            } => {
                assert_eq!(status, MessageStatus::Complete);
                assert!(proposal);
                finished = true;
            }
            _ => {}
        }
    }
    assert!(finished);
    assert_eq!(streamed, REPLY.concat());

    let message = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(message.content, REPLY.concat());
    assert_eq!(message.status, MessageStatus::Complete);
    assert_eq!(message.approval_state, Some(ApprovalState::Pending));
    assert_eq!(message.model.as_deref(), Some("test-model"));
    assert!(message.source_commit_hash.is_some());
    assert!(message.input_tokens.is_some() && message.output_tokens.is_some());
    assert!(
        !s.root.join("src/greet.rs").exists(),
        "nothing applied without approval"
    );

    // The request: system prompt with rules and files, the prompt last, num_ctx sized.
    let request = &s.chat_requests()[0];
    let body = &request.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("<tandem-write") && system.contains("Always use tabs."));
    assert!(system.contains("src/main.rs"));
    assert_eq!(messages.last().unwrap()["content"], "add a greeting");
    let num_ctx = body["options"]["num_ctx"].as_u64().unwrap();
    assert!((1024..=32_768).contains(&num_ctx), "{num_ctx}");

    // Planned once when the reply ended; showing the proposal again reuses that plan.
    assert_eq!(s.engine.plans_made(), 1);
    s.engine.review(handle.message_id).unwrap();
    assert_eq!(s.engine.plans_made(), 1);

    // Approving applies it.
    let approved = s.engine.approve(handle.message_id, None).unwrap();
    assert!(approved.commit.is_some());
    assert!(s.root.join("src/greet.rs").exists());
    s.assert_settled(chat);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_commits_at_the_end_of_the_turn() {
    let s = setup(ProviderKind::Openai).await;
    s.server.push(
        "POST",
        "/v1/chat/completions",
        openai_stream(&REPLY, Duration::from_millis(5)),
    );
    let chat = s.chat(ChatMode::Build);
    let options = SendOptions {
        auto_approve: Some(true),
        ..SendOptions::default()
    };
    let outcome = send_and_wait(&s, chat, "add a greeting", options).await;
    let commit = outcome.approval.unwrap().commit.unwrap();
    assert_eq!(common::git(&s.root, &["rev-parse", "HEAD"]).trim(), commit);
    let message = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(message.approval_state, Some(ApprovalState::Approved));
    assert_eq!(message.commit_hash.as_deref(), Some(commit.as_str()));
    let request = &s.chat_requests()[0];
    assert_eq!(request.body["stream_options"]["include_usage"], true);
    assert!(request.body.get("options").is_none(), "num_ctx is Ollama's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_mode_never_proposes() {
    let s = setup(ProviderKind::Ollama).await;
    s.server
        .push("POST", "/api/chat", ollama_stream(&REPLY, Duration::ZERO));
    let chat = s.chat(ChatMode::Ask);
    let outcome = send_and_wait(&s, chat, "explain", SendOptions::default()).await;
    assert_eq!(outcome.status, MessageStatus::Complete);
    assert!(outcome.plan.is_none());
    let message = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(message.approval_state, None);
    let system = s.chat_requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("never change files"));
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_mid_stream_keeps_the_partial_text_as_an_error() {
    let s = setup(ProviderKind::Ollama).await;
    let reply = faulty(
        ollama_stream(&["Hello ", "there ", "friend"], Duration::from_millis(5)),
        2,
        End::Disconnect,
    );
    s.server.push("POST", "/api/chat", reply);
    let chat = s.chat(ChatMode::Build);
    let outcome = send_and_wait(&s, chat, "hi", SendOptions::default()).await;
    assert_eq!(outcome.status, MessageStatus::Error);
    let message = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(message.status, MessageStatus::Error);
    assert_eq!(message.content, "Hello there ");
    assert!(message.error.is_some());
    s.assert_settled(chat);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_then_success_is_retried_before_the_first_token() {
    let s = setup(ProviderKind::Openai).await;
    s.server.push(
        "POST",
        "/v1/chat/completions",
        Reply::Json {
            status: 429,
            body: serde_json::json!({"error": {"message": "slow down"}}),
        },
    );
    s.server.push(
        "POST",
        "/v1/chat/completions",
        openai_stream(&["ok"], Duration::ZERO),
    );
    let chat = s.chat(ChatMode::Build);
    let outcome = send_and_wait(&s, chat, "hi", SendOptions::default()).await;
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );
    assert_eq!(outcome.content, "ok");
    assert_eq!(s.chat_requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_garbage_and_stalls_end_as_errors_within_bounds() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("llm.idle_timeout_secs", &1u64)
        .unwrap();
    let chat = s.chat(ChatMode::Build);
    // 500 three times: retries exhausted.
    for _ in 0..3 {
        s.server.push(
            "POST",
            "/api/chat",
            Reply::Json {
                status: 500,
                body: serde_json::json!({"error": "boom"}),
            },
        );
    }
    let outcome = send_and_wait(&s, chat, "a", SendOptions::default()).await;
    assert_eq!(outcome.status, MessageStatus::Error);
    assert!(outcome.error.unwrap().contains("500"));

    // A garbage line after some text.
    let mut reply = ollama_stream(&["partial "], Duration::ZERO);
    if let Reply::Stream { chunks, .. } = &mut reply {
        chunks.insert(
            1,
            Chunk {
                delay: Duration::ZERO,
                bytes: b"this is not json\n".to_vec(),
            },
        );
    }
    s.server.push("POST", "/api/chat", reply);
    let outcome = send_and_wait(&s, chat, "b", SendOptions::default()).await;
    assert_eq!(outcome.status, MessageStatus::Error);
    assert_eq!(outcome.content, "partial ");

    // A stall longer than the idle timeout.
    let reply = faulty(
        ollama_stream(&["waiting ", "never"], Duration::ZERO),
        1,
        End::Stall(Duration::from_secs(8)),
    );
    s.server.push("POST", "/api/chat", reply);
    let outcome = send_and_wait(&s, chat, "c", SendOptions::default()).await;
    assert_eq!(outcome.status, MessageStatus::Error);
    assert_eq!(outcome.content, "waiting ");
    assert!(outcome.error.unwrap().contains("no data"));
    s.assert_settled(chat);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_keeps_the_text_received() {
    let s = setup(ProviderKind::Ollama).await;
    let pieces: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&pieces, Duration::from_millis(40)),
    );
    let chat = s.chat(ChatMode::Build);
    let mut events = s.service.subscribe();
    let handle = s
        .service
        .send(chat, "long", SendOptions::default())
        .await
        .unwrap();
    // Wait for some text, then cancel.
    tokio::time::timeout(BOUND, async {
        loop {
            if let Ok(event) = events.recv().await
                && matches!(event.kind, ChatEventKind::Delta { .. })
            {
                break;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(s.service.streaming(chat), Some(handle.message_id));
    assert!(s.service.cancel(chat));
    let outcome = tokio::time::timeout(BOUND, handle.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, MessageStatus::Cancelled);
    assert!(outcome.content.starts_with("w0 "), "{}", outcome.content);
    assert!(outcome.content.len() < pieces.concat().len());
    let message = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(message.status, MessageStatus::Cancelled);
    assert_eq!(message.content, outcome.content);
    assert_eq!(s.service.streaming(chat), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_chats_stream_at_once_without_mixing() {
    let s = setup(ProviderKind::Ollama).await;
    let mut servers = Vec::new();
    let mut handles = Vec::new();
    for i in 0..3 {
        let server = FakeProvider::start().await;
        let name = format!("p{i}");
        add_provider(&s.engine, &name, ProviderKind::Ollama, &server);
        let words: Vec<String> = (0..20).map(|w| format!("c{i}w{w} ")).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        server.push(
            "POST",
            "/api/chat",
            ollama_stream(&words, Duration::from_millis(10)),
        );
        let chat = s.chat(ChatMode::Build);
        let options = SendOptions {
            provider: Some(name),
            ..SendOptions::default()
        };
        handles.push((chat, i, s.service.send(chat, "go", options).await.unwrap()));
        servers.push(server);
    }
    for (chat, i, handle) in handles {
        let outcome = tokio::time::timeout(BOUND, handle.outcome)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome.status, MessageStatus::Complete);
        let expected: String = (0..20).map(|w| format!("c{i}w{w} ")).collect();
        assert_eq!(outcome.content, expected);
        assert_eq!(
            s.engine
                .store()
                .message(outcome.message_id)
                .unwrap()
                .content,
            expected
        );
        s.assert_settled(chat);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_send_cancels_the_first_and_history_is_sent_without_thinking() {
    let s = setup(ProviderKind::Ollama).await;
    let chat = s.chat(ChatMode::Build);
    // First turn completes, with reasoning.
    s.server.push(
        "POST",
        "/api/chat",
        fake_provider::ollama_thinking_stream(
            &["let me think"],
            &["First answer."],
            Duration::ZERO,
        ),
    );
    let first = s
        .service
        .send(chat, "one", SendOptions::default())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, first.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.content,
        "<think>let me think</think>\nFirst answer."
    );
    // Second turn is slow; a third send cancels it.
    let slow: Vec<String> = (0..100).map(|i| format!("s{i} ")).collect();
    let slow: Vec<&str> = slow.iter().map(String::as_str).collect();
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&slow, Duration::from_millis(50)),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Third."], Duration::ZERO),
    );
    let mut events = s.service.subscribe();
    let second = s
        .service
        .send(chat, "two", SendOptions::default())
        .await
        .unwrap();
    // Cancel once the second reply has streamed something, whatever the clock says.
    let second_id = second.message_id;
    tokio::time::timeout(BOUND, async {
        loop {
            let event = events.recv().await.unwrap();
            if event.message_id == second_id
                && matches!(&event.kind, ChatEventKind::Delta { text, .. } if !text.is_empty())
            {
                break;
            }
        }
    })
    .await
    .expect("the second reply streams");
    let third = s
        .service
        .send(chat, "three", SendOptions::default())
        .await
        .unwrap();
    let second = tokio::time::timeout(BOUND, second.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.status, MessageStatus::Cancelled);
    let third = tokio::time::timeout(BOUND, third.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(third.status, MessageStatus::Complete);
    // The third request's history: turn one without its thinking, turn two as far as it got.
    let requests = s.chat_requests();
    let messages = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts[1], "one");
    assert_eq!(texts[2], "First answer.");
    assert_eq!(texts[3], "two");
    // At least the first piece streamed before the cancel (history is sent trimmed).
    assert!(texts[4].starts_with("s0"), "{texts:?}");
    assert_eq!(*texts.last().unwrap(), "three");
    s.assert_settled(chat);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redo_replaces_the_last_reply() {
    let s = setup(ProviderKind::Ollama).await;
    let chat = s.chat(ChatMode::Build);
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["first try"], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["second try"], Duration::ZERO),
    );
    let first = s
        .service
        .send(chat, "q", SendOptions::default())
        .await
        .unwrap();
    tokio::time::timeout(BOUND, first.outcome)
        .await
        .unwrap()
        .unwrap();
    let again = s
        .service
        .redo(chat, None, SendOptions::default())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, again.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.content, "second try");
    let messages = s.engine.store().messages(chat).unwrap();
    let texts: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["q", "second try"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redo_that_fails_keeps_the_prompt_and_the_reply() {
    // Issue 10: Redo deleted the prompt and the reply before resending; a failed send lost both.
    let s = setup(ProviderKind::Ollama).await;
    let chat = s.chat(ChatMode::Build);
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["first ", "try"], Duration::ZERO),
    );
    let first = s
        .service
        .send(chat, "q", SendOptions::default())
        .await
        .unwrap();
    tokio::time::timeout(BOUND, first.outcome)
        .await
        .unwrap()
        .unwrap();
    let before = s.engine.store().messages(chat).unwrap();
    assert_eq!(before.len(), 2);

    // The provider drops the connection mid-reply.
    s.server.push(
        "POST",
        "/api/chat",
        faulty(
            ollama_stream(&["sec", "ond"], Duration::ZERO),
            1,
            End::Disconnect,
        ),
    );
    let again = s
        .service
        .redo(chat, None, SendOptions::default())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, again.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, MessageStatus::Error);
    let after = s.engine.store().messages(chat).unwrap();
    assert_eq!(after[..2], before[..], "the old turn is untouched");
    // The failed attempt is kept with its error (the chat shows it with Retry).
    assert_eq!(after.len(), 3);
    assert_eq!(after[2].status, MessageStatus::Error);
    // The resend's history does not contain the turn it replaces.
    let sent = &s.chat_requests()[1].body["messages"];
    let texts: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(!texts.contains(&"first try"), "{texts:?}");

    // A redo with a new prompt that cannot even start leaves the chat as it was.
    let options = SendOptions {
        provider: Some("no-such-provider".into()),
        ..SendOptions::default()
    };
    assert!(s.service.redo(chat, Some("q2"), options).await.is_err());
    assert_eq!(s.engine.store().messages(chat).unwrap(), after);

    // A redo that completes replaces the old reply and the failed attempt.
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["third try"], Duration::ZERO),
    );
    let third = s
        .service
        .redo(chat, Some("q3"), SendOptions::default())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, third.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, MessageStatus::Complete);
    let texts: Vec<String> = s
        .engine
        .store()
        .messages(chat)
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(texts, ["q3", "third try"]);
    s.assert_settled(chat);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_not_running_says_how_to_start_it() {
    let s = setup(ProviderKind::Ollama).await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let settings = ProviderSettings {
        default_model: Some("m".into()),
        context_length: Some(4096),
    };
    s.engine
        .store()
        .insert_provider(
            "down",
            ProviderKind::Ollama,
            &format!("http://127.0.0.1:{port}"),
            None,
            &settings,
        )
        .unwrap();
    let chat = s.chat(ChatMode::Build);
    let options = SendOptions {
        provider: Some("down".into()),
        ..SendOptions::default()
    };
    let outcome = send_and_wait(&s, chat, "hi", options).await;
    assert_eq!(outcome.status, MessageStatus::Error);
    assert!(outcome.error.unwrap().contains("ollama serve"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_reply_gets_a_title_from_the_model() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("chat.generate_titles", &true)
        .unwrap();
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Sure."], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["\"Greeting helper\""], Duration::ZERO),
    );
    let chat = s.chat(ChatMode::Build);
    let mut events = s.service.subscribe();
    let handle = s
        .service
        .send(
            chat,
            "please add a function that greets people",
            SendOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        s.engine.store().chat(chat).unwrap().title,
        "please add a function that greets people"
    );
    tokio::time::timeout(BOUND, handle.outcome)
        .await
        .unwrap()
        .unwrap();
    let title = tokio::time::timeout(BOUND, async {
        loop {
            if let Ok(event) = events.recv().await
                && let ChatEventKind::TitleChanged { title } = event.kind
            {
                return title;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(title, "Greeting helper");
    assert_eq!(
        s.engine.store().chat(chat).unwrap().title,
        "Greeting helper"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_count_that_fills_num_ctx_is_told_in_the_chat() {
    let s = setup(ProviderKind::Ollama).await;
    // First a normal count, then one that fills the whole context the request was given.
    s.server
        .push("POST", "/api/chat", ollama_counting("Fine.", 1200));
    let chat = s.chat(ChatMode::Ask);
    let send = |prompt: &'static str| send_and_wait(&s, chat, prompt, SendOptions::default());
    let first = send("hello").await;
    assert_eq!(first.content, "Fine.");
    let num_ctx = s.chat_requests()[0].body["options"]["num_ctx"]
        .as_u64()
        .unwrap();
    s.server
        .push("POST", "/api/chat", ollama_counting("Hmm.", num_ctx));
    let second = send("and again").await;
    assert_eq!(second.status, MessageStatus::Complete);
    assert!(second.content.starts_with("Hmm."), "{}", second.content);
    assert!(
        second
            .content
            .contains(&format!("counted {num_ctx} prompt tokens in a context of")),
        "{}",
        second.content
    );
    // Saved with the reply, so the chat shows it after a restart too.
    let saved = s.engine.store().message(second.message_id).unwrap();
    assert!(saved.content.contains("Context overflow"));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_block_that_matches_nowhere_goes_back_and_the_fix_becomes_the_proposal() {
    let s = setup(ProviderKind::Ollama).await;
    let wrong = search_replace("fn main() { }", "fn main() { println!(\"hi\"); }");
    let right = search_replace("fn main() {}", "fn main() { println!(\"hi\"); }");
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&wrong], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&right], Duration::ZERO),
    );
    let (outcome, events) = build_turn(&s, "print hi").await;
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );

    // The corrected reply is the reply and the proposal; nothing was applied.
    assert_eq!(outcome.content, right);
    let plan = outcome.plan.unwrap();
    assert_eq!(plan.errors().count(), 0, "{:?}", plan.operations);
    assert!(plan.is_proposal());
    let saved = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(saved.content, right);
    assert_eq!(saved.approval_state, Some(ApprovalState::Pending));
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );

    // The model heard the error with the nearest lines, after its own failed reply.
    let requests = s.chat_requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["content"], wrong.trim());
    let feedback = messages[n - 1]["content"].as_str().unwrap();
    assert!(feedback.contains("- src/main.rs: "), "{feedback}");
    assert!(
        feedback.contains("fn main() {}"),
        "nearest lines: {feedback}"
    );
    assert!(feedback.contains("complete reply again"), "{feedback}");

    // The round is kept: its errors and the reply that failed.
    let steps = s.engine.store().agent_steps(outcome.message_id).unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].kind, tandem_core::store::StepKind::Repair);
    assert_eq!(steps[0].result.as_deref(), Some(wrong.as_str()));
    let arguments = steps[0].arguments.clone().unwrap();
    assert_eq!(arguments["round"], 1);
    assert_eq!(arguments["errors"][0]["path"], "src/main.rs");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEventKind::Retrying { round: 1 }))
    );

    // Approving applies the corrected edit.
    s.engine.approve(outcome.message_id, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() { println!(\"hi\"); }\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_rounds_stop_at_the_setting_and_zero_turns_them_off() {
    let s = setup(ProviderKind::Ollama).await;
    let wrong = search_replace("no such line", "x");
    s.engine
        .store()
        .set_setting("chat.repair_rounds", &1)
        .unwrap();
    for _ in 0..2 {
        s.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&[&wrong], Duration::ZERO),
        );
    }
    let (outcome, _) = build_turn(&s, "change it").await;
    assert_eq!(outcome.status, MessageStatus::Complete);
    assert_eq!(
        s.chat_requests().len(),
        2,
        "one repair round, then the failure stands"
    );
    assert_eq!(outcome.plan.unwrap().errors().count(), 1);
    let steps = s.engine.store().agent_steps(outcome.message_id).unwrap();
    assert_eq!(steps.len(), 1);

    s.engine
        .store()
        .set_setting("chat.repair_rounds", &0)
        .unwrap();
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&wrong], Duration::ZERO),
    );
    let (outcome, events) = build_turn(&s, "change it again").await;
    assert_eq!(s.chat_requests().len(), 3, "no repair round");
    assert_eq!(outcome.plan.unwrap().errors().count(), 1);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ChatEventKind::Retrying { .. }))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_waits_for_the_repaired_reply() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("chat.auto_approve", &true)
        .unwrap();
    let wrong = search_replace("fn main() { }", "fn main() { todo!() }");
    let right = search_replace("fn main() {}", "fn main() { todo!() }");
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&wrong], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&right], Duration::ZERO),
    );
    let (outcome, _) = build_turn(&s, "todo").await;
    assert!(outcome.approval.is_some(), "{:?}", outcome.approve_error);
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() { todo!() }\n"
    );
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_turn_tells_the_model_what_was_left_out_and_why() {
    let s = setup(ProviderKind::Ollama).await;
    let reply = "Two files.\n<tandem-write path=\"src/main.rs\">\nfn main() { run() }\n</tandem-write>\n\
                 <tandem-write path=\"src/extra.rs\">\npub fn extra_helper() {}\n</tandem-write>\n";
    s.server
        .push("POST", "/api/chat", ollama_stream(&[reply], Duration::ZERO));
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Understood."], Duration::ZERO),
    );
    let chat = s.chat(ChatMode::Build);
    let send = |prompt: &'static str| send_and_wait(&s, chat, prompt, SendOptions::default());
    let first = send("run it").await;
    let only_main = tandem_core::edits::Selection {
        files: vec![tandem_core::edits::FileSelection {
            path: "src/main.rs".into(),
            hunks: None,
        }],
        dependencies: false,
    };
    s.engine
        .approve_with_reason(first.message_id, Some(&only_main), Some("no extra module"))
        .unwrap();
    assert!(!s.root.join("src/extra.rs").exists());

    send("thanks").await;
    let requests = s.chat_requests();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let earlier = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .unwrap();
    assert!(earlier.starts_with("Two files."), "{earlier}");
    assert!(
        earlier.contains("applied only part of this proposal (1 of 2 hunks)"),
        "{earlier}"
    );
    assert!(
        earlier.contains("- src/extra.rs (the whole change)"),
        "{earlier}"
    );
    assert!(earlier.contains("+pub fn extra_helper() {}"), "{earlier}");
    assert!(
        earlier.contains("Their reason: no extra module"),
        "{earlier}"
    );
}

fn write_main(body: &str) -> String {
    format!("Done.\n<tandem-write path=\"src/main.rs\">\nfn main() {{ {body} }}\n</tandem-write>\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_goes_back_and_the_fixed_proposal_passes_in_a_scratch_copy() {
    let s = setup(ProviderKind::Ollama).await;
    // Fails, naming the place, while any source file says BROKEN.
    s.set_check("! grep -rn BROKEN src");
    let broken = write_main("BROKEN");
    let fixed = write_main("println!(\"ok\")");
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&broken], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&fixed], Duration::ZERO),
    );
    let (outcome, _) = build_turn(&s, "print ok").await;
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );

    // Round 1 failed with a parsed problem, round 2 passed.
    assert_eq!(outcome.checks.len(), 2, "{:#?}", outcome.checks);
    let first = &outcome.checks[0];
    assert!(!first.passed && first.exit_code == Some(1), "{first:#?}");
    assert_eq!(first.round, 1);
    assert_eq!(first.problems.len(), 1, "{first:#?}");
    assert_eq!(first.problems[0].path, "src/main.rs");
    assert_eq!(first.problems[0].line, 1);
    assert!(outcome.checks[1].passed, "{:#?}", outcome.checks[1]);
    assert_eq!(outcome.checks[1].round, 2);

    // The model was told, with the place and the output.
    let requests = s.chat_requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let feedback = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        feedback.contains("`! grep -rn BROKEN src` failed with exit code 1"),
        "{feedback}"
    );
    assert!(feedback.contains("- src/main.rs:1: "), "{feedback}");

    // The fixed reply is the proposal; the person's tree was never touched.
    assert_eq!(outcome.content, fixed);
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
    let kinds: Vec<_> = s
        .engine
        .store()
        .agent_steps(outcome.message_id)
        .unwrap()
        .iter()
        .map(|s| s.kind)
        .collect();
    use tandem_core::store::StepKind::{Check, Repair};
    assert_eq!(kinds, [Check, Repair, Check]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_still_failing_after_the_rounds_blocks_auto_approve() {
    let s = setup(ProviderKind::Ollama).await;
    s.set_check("! grep -rn BROKEN src");
    let store = s.engine.store();
    store.set_setting("chat.repair_rounds", &1).unwrap();
    store.set_setting("chat.auto_approve", &true).unwrap();
    let broken = write_main("BROKEN");
    for _ in 0..2 {
        s.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&[&broken], Duration::ZERO),
        );
    }
    let (outcome, _) = build_turn(&s, "break it").await;
    assert_eq!(outcome.checks.len(), 2);
    assert!(outcome.checks.iter().all(|c| !c.passed));
    assert!(
        outcome.approval.is_none(),
        "a failing proposal waits for the person"
    );
    let message = store.message(outcome.message_id).unwrap();
    assert_eq!(message.approval_state, Some(ApprovalState::Pending));
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_whose_search_blocks_keep_failing_is_asked_for_whole_files() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("chat.repair_rounds", &0)
        .unwrap();
    let two_wrong = format!(
        "{}{}",
        search_replace("nothing like this", "x"),
        search_replace("nor this", "y")
    );
    let fine = search_replace("fn main() {}", "fn main() { }");
    for reply in [&two_wrong, &fine, &two_wrong, &fine] {
        s.server
            .push("POST", "/api/chat", ollama_stream(&[reply], Duration::ZERO));
    }
    let system = |i: usize| {
        s.chat_requests()[i].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // 2 of 2 blocks failed: too few to judge.
    build_turn(&s, "one").await;
    build_turn(&s, "two").await;
    assert!(!system(1).contains("write the whole new file"));
    // 4 of 5 failed: from now on, whole files for small files.
    build_turn(&s, "three").await;
    build_turn(&s, "four").await;
    assert!(
        system(3).contains("write the whole new file"),
        "{}",
        system(3)
    );
    let profile = s.service.model_profile(None, None).await.unwrap();
    assert_eq!((profile.edit_blocks, profile.edit_failures), (6, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_turns_are_summarized_not_dropped_and_a_new_chat_can_start_from_it() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("chat.history_turns", &2)
        .unwrap();
    let chat = s.chat(ChatMode::Ask);
    let send = |prompt: &'static str| send_and_wait(&s, chat, prompt, SendOptions::default());
    let reply = |text: &str| ollama_stream(&[text], Duration::ZERO);
    for answer in ["A1", "A2", "A3"] {
        s.server.push("POST", "/api/chat", reply(answer));
    }
    send("Q1 use tabs").await;
    send("Q2").await;
    send("Q3").await;
    assert_eq!(
        s.chat_requests().len(),
        3,
        "no summary while the history fits"
    );

    // A fourth turn: Q1/A1 are past the two kept turns, so they are summarized first.
    s.server
        .push("POST", "/api/chat", reply("SUM-1: the person wants tabs."));
    s.server.push("POST", "/api/chat", reply("A4"));
    let mut events = s.service.subscribe();
    send("Q4").await;
    let requests = s.chat_requests();
    assert_eq!(requests.len(), 5);
    let asked = requests[3].body["messages"].as_array().unwrap();
    assert!(
        asked[0]["content"]
            .as_str()
            .unwrap()
            .contains("condense a conversation")
    );
    let transcript = asked[1]["content"].as_str().unwrap();
    assert!(transcript.contains("User: Q1 use tabs") && transcript.contains("Assistant: A1"));
    assert!(!transcript.contains("Q2"), "{transcript}");
    let sent = requests[4].body["messages"].as_array().unwrap();
    let system = sent[0]["content"].as_str().unwrap();
    assert!(
        system.contains("Earlier in this conversation (summarized, 1 turn(s))"),
        "{system}"
    );
    assert!(system.contains("SUM-1: the person wants tabs."));
    let contents: Vec<&str> = sent.iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(
        !contents.contains(&"Q1 use tabs"),
        "the summary stands for it"
    );
    assert!(contents.contains(&"Q2") && contents.contains(&"Q3") && contents.contains(&"Q4"));
    let mut compacted = false;
    while let Ok(event) = events.try_recv() {
        compacted |= matches!(event.kind, ChatEventKind::Compacted { .. });
    }
    assert!(compacted);

    // The next one folds the earlier summary into the new one.
    s.server
        .push("POST", "/api/chat", reply("SUM-2: tabs; Q2 done."));
    s.server.push("POST", "/api/chat", reply("A5"));
    send("Q5").await;
    let requests = s.chat_requests();
    let transcript = requests[5].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        transcript.contains("SUM-1: the person wants tabs."),
        "{transcript}"
    );
    assert!(transcript.contains("User: Q2") && !transcript.contains("Q1"));
    let summaries = s.engine.store().chat_summaries(chat).unwrap();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[1].turns, 2);
    assert_eq!(summaries[1].content, "SUM-2: tabs; Q2 done.");

    // Summarize into a new chat: the whole chat, folded into one summary it starts from.
    s.server
        .push("POST", "/api/chat", reply("SUM-ALL: tabs everywhere."));
    let new_chat = s
        .service
        .summarize_into_new_chat(chat, &SendOptions::default())
        .await
        .unwrap();
    assert_ne!(new_chat.id, chat);
    assert!(new_chat.title.starts_with("Summary of"));
    let start = s
        .engine
        .store()
        .latest_chat_summary(new_chat.id)
        .unwrap()
        .unwrap();
    assert_eq!(start.content, "SUM-ALL: tabs everywhere.");
    assert_eq!(start.source_chat_id, Some(chat));
    assert_eq!(start.turns, 5);
    s.server.push("POST", "/api/chat", reply("ok"));
    send_and_wait(&s, new_chat.id, "go on", SendOptions::default()).await;
    let last = s.chat_requests().pop().unwrap();
    let system = last.body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("SUM-ALL: tabs everywhere."), "{system}");
}

/// A server whose tokenizer counts more than Tandem estimates (a small model's vocabulary):
/// the count its reply reports is learnt, and the next request keeps that much free and asks
/// Ollama for a context that holds the prompt as the server counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_counting_more_tokens_than_estimated_gets_room_in_the_next_requests() {
    let s = setup(ProviderKind::Ollama).await;
    let prompt = "please add a greeting to the program and explain each step ".repeat(60);
    let options = SendOptions::default();
    let before = s
        .service
        .preview(&s.project, &prompt, &options)
        .await
        .unwrap();
    assert_eq!(before.margin, 0);
    // The server counts twice what Tandem estimated for the whole request.
    let counted = 2 * before.total() as u64;
    for _ in 0..2 {
        s.server
            .push("POST", "/api/chat", ollama_stream_counted(&REPLY, counted));
    }
    let mut num_ctx = Vec::new();
    for turn in 0..2 {
        let chat = s.chat(ChatMode::Build);
        let outcome = send_and_wait(&s, chat, &prompt, options.clone()).await;
        assert_eq!(
            outcome.status,
            MessageStatus::Complete,
            "{:?}",
            outcome.error
        );
        let request = &s.chat_requests()[turn];
        num_ctx.push(request.body["options"]["num_ctx"].as_u64().unwrap());
    }
    // Learnt: the meter keeps the difference free and says so.
    let after = s
        .service
        .preview(&s.project, &prompt, &options)
        .await
        .unwrap();
    let room = after.window - after.reply_reserve;
    assert!(
        after.margin * 3 >= room,
        "about half the room kept free: {after:?}"
    );
    assert!(after.fits(), "{after:?}");
    assert!(after.meter().contains("kept free"), "{}", after.meter());
    // The second request asked for a context holding the prompt as the server counts it.
    assert!(
        num_ctx[1] >= counted * 9 / 10 + 8192 && num_ctx[1] > num_ctx[0],
        "num_ctx {num_ctx:?} for a prompt counted at {counted}"
    );
}

/// A server that refuses a request as longer than the model's window (as OpenAI and
/// llama.cpp word it, with its count of the prompt): the count is learnt, the request packed
/// again to fit it and sent once more, and the turn completes. Refused again: the error is
/// shown, and nothing loops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_as_too_long_is_packed_again_from_the_servers_count_once() {
    let s = setup(ProviderKind::Openai).await;
    let prompt = "please add a greeting to the program and explain each step ".repeat(60);
    let options = SendOptions::default();
    let before = s
        .service
        .preview(&s.project, &prompt, &options)
        .await
        .unwrap();
    let counted = 2 * before.total();
    let refusal = Reply::json(
        400,
        serde_json::json!({"error": {
            "message": format!("This model's maximum context length is 32768 tokens. However, \
                you requested {} tokens ({counted} in the messages, 8192 in the completion). \
                Please reduce the length of the messages or completion.", counted + 8192),
            "type": "invalid_request_error", "param": "messages",
            "code": "context_length_exceeded"}}),
    );
    let path = "/v1/chat/completions";
    s.server.push("POST", path, refusal.clone());
    s.server.push(
        "POST",
        path,
        openai_stream(&REPLY, Duration::from_millis(5)),
    );
    let chat = s.chat(ChatMode::Build);
    let outcome = send_and_wait(&s, chat, &prompt, options.clone()).await;
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );
    assert_eq!(outcome.content, REPLY.concat());
    assert_eq!(s.chat_requests().len(), 2, "sent again once");
    let packed = outcome.breakdown.expect("the breakdown of what was sent");
    assert!(packed.margin > 0 && packed.fits(), "{packed:?}");

    // Refused again (a count that says nothing new): one retry at most, the error shown.
    s.server.push("POST", path, refusal.clone());
    s.server.push("POST", path, refusal);
    let chat = s.chat(ChatMode::Build);
    let outcome = send_and_wait(&s, chat, &prompt, options).await;
    assert_eq!(outcome.status, MessageStatus::Error);
    let error = outcome.error.unwrap_or_default();
    assert!(
        error.contains("longer than the model's window") && error.contains(&counted.to_string()),
        "{error}"
    );
    assert_eq!(
        s.chat_requests().len(),
        3,
        "not sent again: the count taught nothing new"
    );
}

/// A server that answers 200 and then breaks off before the first word (llama-cpp-python
/// with a prompt longer than its context says why only in its log): when the request filled
/// the window, the error says what to try.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_broken_off_before_its_first_word_with_a_full_window_says_what_to_try() {
    let s = setup(ProviderKind::Openai).await;
    let path = "/v1/chat/completions";
    let send = |prompt: String| {
        let s = &s;
        async move {
            s.server.push(
                "POST",
                path,
                faulty(
                    openai_stream(&REPLY, Duration::from_millis(5)),
                    0,
                    End::Disconnect,
                ),
            );
            let chat = s.chat(ChatMode::Ask);
            let outcome = send_and_wait(s, chat, &prompt, SendOptions::default()).await;
            assert_eq!(outcome.status, MessageStatus::Error);
            outcome.error.unwrap_or_default()
        }
    };
    // A prompt of about 22,000 estimated tokens: with the reply's 8,192, over 90% of 32,768.
    let full = "abcd".repeat(22_000);
    let preview = s
        .service
        .preview(&s.project, &full, &SendOptions::default())
        .await
        .unwrap();
    assert!(preview.used_fraction() >= 0.9, "{}", preview.meter());
    let error = send(full).await;
    assert!(error.contains("broke mid-reply"), "{error}");
    assert!(error.contains("tandem model set --context"), "{error}");
    // A small request that broke off is only a broken connection.
    let error = send("hello".into()).await;
    assert!(
        error.contains("broke mid-reply") && !error.contains("model set"),
        "{error}"
    );
}
