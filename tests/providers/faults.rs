//! How each fault ends: retried, or a typed error after the text received so far, always
//! within a bound.

use super::*;

#[tokio::test]
async fn a_disconnect_mid_stream_delivers_the_text_so_far_then_disconnected() {
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        let cut = reply(kind, &PIECES, Duration::from_millis(5)).cut(2, End::Disconnect);
        server.push("POST", &chat_path(kind), cut);
        let outcome = run(&llm, request()).await;
        assert_eq!(outcome.text, PIECES[..2], "{kind:?}");
        assert!(
            matches!(outcome.error, Some(LlmError::Disconnected { .. })),
            "{kind:?}: {:?}",
            outcome.error
        );
    }
}

#[tokio::test]
async fn rate_limits_and_server_errors_before_the_reply_are_retried_once_each() {
    for status in [429, 500] {
        for kind in KINDS {
            let (server, llm) = setup(kind).await;
            let path = chat_path(kind);
            server.push(
                "POST",
                &path,
                Reply::json(status, json!({ "error": "busy" })),
            );
            server.push("POST", &path, reply(kind, &PIECES, Duration::ZERO));
            let outcome = run(&llm, request()).await;
            assert_complete(kind, &outcome);
            assert_eq!(outcome.joined(), "Hello, world!", "{kind:?} after {status}");
            assert_eq!(server.requests().len(), 2, "{kind:?} after {status}");
        }
    }
}

#[tokio::test]
async fn three_server_errors_give_up_with_the_servers_message() {
    let (server, llm) = setup(ProviderKind::Openai).await;
    for _ in 0..4 {
        let body = json!({ "error": { "message": "upstream exploded" } });
        server.push("POST", "/v1/chat/completions", Reply::json(503, body));
    }
    let outcome = run(&llm, request()).await;
    let error = outcome.error.unwrap();
    assert!(
        matches!(&error, LlmError::Http { status: 503, message, .. } if message == "upstream exploded"),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let (server, llm) = setup(ProviderKind::Openai).await;
    let headers = vec![("Retry-After".to_string(), "1".to_string())];
    let body = br#"{"error":{"message":"slow down"}}"#.to_vec();
    server.push(
        "POST",
        "/v1/chat/completions",
        Reply::Raw {
            status: 429,
            headers,
            body,
        },
    );
    server.push(
        "POST",
        "/v1/chat/completions",
        openai_stream(&["ok"], Duration::ZERO),
    );
    let started = Instant::now();
    let outcome = run(&llm, request()).await;
    assert_complete(ProviderKind::Openai, &outcome);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_error_after_the_first_token_is_not_retried() {
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        let path = chat_path(kind);
        let error = match kind {
            ProviderKind::Ollama => frame(kind, r#"{"error":"model runner crashed"}"#),
            ProviderKind::Openai => frame(kind, r#"{"error":{"message":"model runner crashed"}}"#),
            ProviderKind::Anthropic => br#"event: error
data: {"type":"error","error":{"type":"api_error","message":"model runner crashed"}}

"#
            .to_vec(),
            ProviderKind::Gemini => frame(
                kind,
                r#"{"error":{"code":500,"message":"model runner crashed","status":"INTERNAL"}}"#,
            ),
            ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
        };
        let broken = reply(kind, &PIECES, Duration::ZERO)
            .insert(1, &error)
            .cut(2, End::Disconnect);
        server.push("POST", &path, broken);
        server.push("POST", &path, reply(kind, &PIECES, Duration::ZERO));
        let outcome = run(&llm, request()).await;
        assert_eq!(outcome.text, ["Hello"], "{kind:?}");
        let error = outcome.error.unwrap();
        assert!(
            matches!(&error, LlmError::Server { message, .. } if message == "model runner crashed"),
            "{kind:?}: {error:?}"
        );
        assert_eq!(server.requests().len(), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn a_garbage_frame_is_a_protocol_error_naming_it_after_the_text_before_it() {
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        let garbage =
            reply(kind, &PIECES, Duration::ZERO).insert(1, &frame(kind, "<html>oops</html>"));
        server.push("POST", &chat_path(kind), garbage);
        let outcome = run(&llm, request()).await;
        assert_eq!(outcome.text, ["Hello"], "{kind:?}");
        let error = outcome.error.unwrap();
        assert!(
            matches!(&error, LlmError::Protocol { message, .. } if message.contains("<html>oops</html>")),
            "{kind:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_stall_longer_than_the_idle_timeout_ends_with_idle_timeout() {
    for kind in KINDS {
        let server = FakeProvider::start().await;
        let mut cfg = config(kind, &server.url());
        cfg.idle_timeout = Duration::from_millis(300);
        let llm = provider(cfg);
        let stalled =
            reply(kind, &PIECES, Duration::ZERO).cut(1, End::Stall(Duration::from_secs(8)));
        server.push("POST", &chat_path(kind), stalled);
        let started = Instant::now();
        let outcome = run(&llm, request()).await;
        assert_eq!(outcome.text, ["Hello"], "{kind:?}");
        assert!(
            matches!(outcome.error, Some(LlmError::IdleTimeout { .. })),
            "{kind:?}: {:?}",
            outcome.error
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{kind:?}: {:?}",
            started.elapsed()
        );
        // The client gave up the connection rather than leaving it open.
        assert!(
            server.wait_for_hangup(Duration::from_secs(2)).await,
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_server_silent_before_its_headers_also_times_out() {
    let server = FakeProvider::start().await;
    let mut cfg = config(ProviderKind::Ollama, &server.url());
    cfg.idle_timeout = Duration::from_millis(300);
    server.push("POST", "/api/chat", Reply::Hang(Duration::from_secs(8)));
    let outcome = run(&provider(cfg), request()).await;
    assert!(
        matches!(outcome.error, Some(LlmError::IdleTimeout { .. })),
        "{:?}",
        outcome.error
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_says_ollama_is_not_running_or_cannot_connect() {
    let url = refused_url().await;
    for kind in KINDS {
        let outcome = run(&provider(config(kind, &url)), request()).await;
        let error = outcome.error.unwrap();
        match kind {
            ProviderKind::Ollama => {
                assert_eq!(error, LlmError::OllamaNotRunning { url: url.clone() });
                assert!(error.to_string().contains("ollama serve"));
            }
            _ => assert!(
                matches!(&error, LlmError::Connect { message, .. } if message.to_lowercase().contains("refused")),
                "{kind:?}: {error:?}"
            ),
        }
    }
}

#[tokio::test]
async fn a_missing_ollama_model_says_how_to_pull_it() {
    let (server, llm) = setup(ProviderKind::Ollama).await;
    server.push(
        "POST",
        "/api/chat",
        Reply::json(404, json!({ "error": "model 'x' not found" })),
    );
    let mut req = request();
    req.model = "x".into();
    let error = run(&llm, req).await.error.unwrap();
    assert_eq!(error, LlmError::ModelNotPulled { model: "x".into() });
    assert!(error.to_string().contains("`ollama pull x`"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_rejected_key_is_key_rejected_without_retry() {
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        let body = json!({ "error": { "message": "invalid x-api-key" } });
        server.push("POST", &chat_path(kind), Reply::json(401, body));
        let error = run(&llm, request()).await.error.unwrap();
        assert!(
            matches!(error, LlmError::KeyRejected { status: 401, .. }),
            "{kind:?}: {error:?}"
        );
        assert_eq!(server.requests().len(), 1, "{kind:?}");
    }
}

#[tokio::test]
async fn a_model_without_tool_support_is_unsupported() {
    let (server, llm) = setup(ProviderKind::Ollama).await;
    let body = json!({ "error": "registry.ollama.ai/library/gemma:2b does not support tools" });
    server.push("POST", "/api/chat", Reply::json(400, body));
    let error = run(&llm, request()).await.error.unwrap();
    assert!(
        matches!(&error, LlmError::Unsupported(m) if m.contains("does not support tools")),
        "{error:?}"
    );
}

#[tokio::test]
async fn anthropic_overload_mid_stream_is_rate_limited_and_a_missing_key_sends_nothing() {
    let (server, llm) = setup(ProviderKind::Anthropic).await;
    let overloaded = br#"event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

"#;
    let reply = anthropic_stream(&PIECES, Duration::ZERO).insert(1, overloaded);
    server.push("POST", "/v1/messages", reply);
    let outcome = run(&llm, request()).await;
    assert_eq!(outcome.text, ["Hello"]);
    assert!(
        matches!(
            outcome.error,
            Some(LlmError::RateLimited { status: 529, .. })
        ),
        "{:?}",
        outcome.error
    );

    let mut keyless = config(ProviderKind::Anthropic, &server.url());
    keyless.api_keys.clear();
    let error = run(&provider(keyless), request()).await.error.unwrap();
    assert!(
        matches!(&error, LlmError::NoApiKey { env, .. } if env == "ANTHROPIC_API_KEY"),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn every_kind_rotates_to_the_next_key_on_quota_errors_and_remembers_it() {
    for kind in KINDS {
        let server = FakeProvider::start().await;
        let mut cfg = config(kind, &server.url());
        // Which key worked is remembered per provider name for the process: a name of its own.
        cfg.name = format!("rotation-{kind:?}");
        cfg.api_keys = vec!["key-one".into(), "key-two".into()];
        let llm = provider(cfg);
        let path = chat_path(kind);
        let quota = json!({ "error": { "code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED" } });
        server.push("POST", &path, Reply::json(429, quota.clone()));
        server.push("POST", &path, reply(kind, &PIECES, Duration::ZERO));
        server.push("POST", &path, reply(kind, &["again"], Duration::ZERO));
        let outcome = run(&llm, request()).await;
        assert_complete(kind, &outcome);
        assert_eq!(outcome.joined(), "Hello, world!", "{kind:?}");
        run(&llm, request()).await;
        let sent_key = |r: &fake_provider::Recorded| -> String {
            let header = match kind {
                ProviderKind::Anthropic => "x-api-key",
                ProviderKind::Gemini => "x-goog-api-key",
                _ => "authorization",
            };
            let value = r.header(header).unwrap_or_default();
            value.trim_start_matches("Bearer ").to_string()
        };
        let keys: Vec<_> = server.requests().iter().map(sent_key).collect();
        assert_eq!(keys, ["key-one", "key-two", "key-two"], "{kind:?}");
        assert_eq!(
            tandem_core::llm::key_in_use(&format!("rotation-{kind:?}")),
            1
        );

        // Every key out of quota: rate limited, one request per key.
        server.push("POST", &path, Reply::json(429, quota.clone()));
        server.push("POST", &path, Reply::json(429, quota));
        let error = run(&llm, request()).await.error.unwrap();
        assert!(
            matches!(&error, LlmError::RateLimited { message, .. } if message.contains("all 2 API keys")),
            "{kind:?}: {error:?}"
        );
        assert_eq!(server.requests().len(), 5, "{kind:?}");
    }
}

#[tokio::test]
async fn dropping_the_stream_mid_reply_closes_the_connection() {
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        let many = ["word "; 50];
        server.push(
            "POST",
            &chat_path(kind),
            reply(kind, &many, Duration::from_millis(100)),
        );
        let mut stream = llm.stream(request());
        let first = tokio::time::timeout(BOUND, stream.next()).await.unwrap();
        assert!(
            matches!(first, Some(Ok(StreamEvent::Text(_)))),
            "{kind:?}: {first:?}"
        );
        drop(stream);
        assert!(
            server.wait_for_hangup(Duration::from_secs(2)).await,
            "{kind:?}: the server never saw the connection close"
        );
    }
}

#[tokio::test]
async fn a_json_page_instead_of_an_event_stream_is_reported_with_its_message() {
    let (server, llm) = setup(ProviderKind::Openai).await;
    let body = json!({ "error": { "message": "streaming is disabled on this proxy" } });
    server.push("POST", "/v1/chat/completions", Reply::json(200, body));
    let error = run(&llm, request()).await.error.unwrap();
    assert!(
        matches!(&error, LlmError::Protocol { message, .. } if message.contains("streaming is disabled")),
        "{error:?}"
    );
}
