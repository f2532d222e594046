//! A reply streaming in, and everything that breaks it: disconnects, rate limits, server
//! errors and stalls, cancels, chats side by side, a server that is not running.

use super::*;

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
