//! The model's window: a full one told, older turns summarised, the server's own count of
//! tokens learnt and used.

use super::*;

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
