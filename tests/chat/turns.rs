//! Turns and modes: auto-approve, Ask mode, redo, titles, what the next turn is told.

use super::*;

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
    let mut events = s.service.subscribe();
    let outcome = send_and_wait(&s, chat, "add a greeting", options).await;
    let commit = outcome.approval.unwrap().commit.unwrap();
    assert_eq!(common::git(&s.root, &["rev-parse", "HEAD"]).trim(), commit);
    // The turn's end tells the commit (the window's toast shows it), and no error.
    let mut finished = None;
    while let Ok(event) = events.try_recv() {
        if let ChatEventKind::Finished {
            commit,
            approve_error,
            ..
        } = event.kind
        {
            finished = Some((commit, approve_error));
        }
    }
    assert_eq!(finished, Some((Some(commit.clone()), None)));
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
