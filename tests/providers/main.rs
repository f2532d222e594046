//! The four providers against a fake server speaking real wire bytes: the requests they
//! send, the events they yield, and how each fault ends (always within a bound).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../fake_provider/mod.rs"]
mod fake_provider;
mod faults;
mod responses;
mod tools;

use std::time::{Duration, Instant};

use fake_provider::{
    End, FakeProvider, INPUT_TOKENS, MODEL, OUTPUT_TOKENS, Reply, anthropic_stream, gemini_stream,
    ollama_stream, ollama_thinking_stream, openai_reasoning_stream, openai_stream, refused_url,
};
use futures_util::StreamExt;
use serde_json::json;
use tandem_core::cli_agents::provider;
use tandem_core::llm::{
    ChatMessage, ChatRequest, ChatRole, LlmError, ProviderConfig, ProviderKind, SharedProvider,
    StreamEvent, Usage,
};

const BOUND: Duration = Duration::from_secs(10);
const KINDS: [ProviderKind; 4] = ProviderKind::HTTP;
const PIECES: [&str; 3] = ["Hello", ", ", "world!"];

fn config(kind: ProviderKind, url: &str) -> ProviderConfig {
    let base_url = match kind {
        ProviderKind::Ollama => url.to_string(),
        ProviderKind::Openai | ProviderKind::Anthropic => format!("{url}/v1"),
        ProviderKind::Gemini => format!("{url}/v1beta"),
        ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
    };
    ProviderConfig {
        kind,
        name: format!("{kind:?}"),
        base_url,
        api_keys: vec!["test-key".into()],
        api_key_env: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
    }
}

fn chat_path(kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Ollama => "/api/chat".into(),
        ProviderKind::Openai => "/v1/chat/completions".into(),
        ProviderKind::Anthropic => "/v1/messages".into(),
        ProviderKind::Gemini => format!("/v1beta/models/{MODEL}:streamGenerateContent"),
        ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
    }
}

fn reply(kind: ProviderKind, pieces: &[&str], delay: Duration) -> Reply {
    match kind {
        ProviderKind::Ollama => ollama_stream(pieces, delay),
        ProviderKind::Openai => openai_stream(pieces, delay),
        ProviderKind::Anthropic => anthropic_stream(pieces, delay),
        ProviderKind::Gemini => gemini_stream(pieces, delay),
        ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
    }
}

/// One wire frame in `kind`'s framing, carrying `data` verbatim.
fn frame(kind: ProviderKind, data: &str) -> Vec<u8> {
    match kind {
        ProviderKind::Ollama => format!("{data}\n").into_bytes(),
        _ => format!("data: {data}\n\n").into_bytes(),
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        model: MODEL.into(),
        messages: vec![
            ChatMessage::new(ChatRole::System, "You are terse."),
            ChatMessage::new(ChatRole::User, "Say hello"),
        ],
        max_output_tokens: Some(256),
        context_window: Some(16384),
        temperature: None,
        tools: Vec::new(),
        reasoning_effort: None,
        estimate_scale: 1.0,
    }
}

async fn setup(kind: ProviderKind) -> (FakeProvider, SharedProvider) {
    let server = FakeProvider::start().await;
    let llm = provider(config(kind, &server.url()));
    (server, llm)
}

#[derive(Debug, Default)]
struct Outcome {
    text: Vec<String>,
    reasoning: Vec<String>,
    events: Vec<StreamEvent>,
    error: Option<LlmError>,
}

impl Outcome {
    fn joined(&self) -> String {
        self.text.concat()
    }
}

/// Consumes a whole stream within [`BOUND`], checking nothing follows `Done` or an error.
async fn run(llm: &SharedProvider, request: ChatRequest) -> Outcome {
    let mut stream = llm.stream(request);
    let consume = async {
        let mut outcome = Outcome::default();
        while let Some(item) = stream.next().await {
            assert!(outcome.error.is_none(), "an item after the error: {item:?}");
            match item {
                Ok(event) => {
                    let done = matches!(outcome.events.last(), Some(StreamEvent::Done { .. }));
                    assert!(!done, "an event after Done: {event:?}");
                    match &event {
                        StreamEvent::Text(t) => outcome.text.push(t.clone()),
                        StreamEvent::Reasoning(t) => outcome.reasoning.push(t.clone()),
                        _ => {}
                    }
                    outcome.events.push(event);
                }
                Err(err) => outcome.error = Some(err),
            }
        }
        outcome
    };
    tokio::time::timeout(BOUND, consume)
        .await
        .expect("the stream ended within the bound")
}

fn assert_complete(kind: ProviderKind, outcome: &Outcome) {
    assert!(outcome.error.is_none(), "{kind:?}: {:?}", outcome.error);
    let n = outcome.events.len();
    assert!(n >= 2, "{kind:?}: {:?}", outcome.events);
    let usage = Usage {
        input_tokens: INPUT_TOKENS,
        output_tokens: OUTPUT_TOKENS,
    };
    assert_eq!(outcome.events[n - 2], StreamEvent::Usage(usage), "{kind:?}");
    assert!(
        matches!(
            &outcome.events[n - 1],
            StreamEvent::Done {
                finish_reason: Some(_)
            }
        ),
        "{kind:?}"
    );
}

#[tokio::test]
async fn every_protocol_streams_the_pieces_in_order_then_usage_and_done() {
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        server.push(
            "POST",
            &chat_path(kind),
            reply(kind, &PIECES, Duration::from_millis(5)),
        );
        let outcome = run(&llm, request()).await;
        assert_complete(kind, &outcome);
        assert_eq!(outcome.text, PIECES, "{kind:?}");
        assert_eq!(server.requests().len(), 1, "{kind:?}");
        assert_eq!(
            server.hangups(),
            0,
            "{kind:?}: a complete reply is not a hang-up"
        );
    }
}

#[tokio::test]
async fn ollama_sends_the_native_chat_body_with_num_ctx() {
    let (server, llm) = setup(ProviderKind::Ollama).await;
    server.push("POST", "/api/chat", ollama_stream(&["hi"], Duration::ZERO));
    run(&llm, request()).await;
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/api/chat");
    let expected = json!({
        "model": MODEL,
        "messages": [
            { "role": "system", "content": "You are terse." },
            { "role": "user", "content": "Say hello" },
        ],
        "stream": true,
        // Sized to the request (a few tokens) plus its reply (256), not the whole window.
        "options": { "num_ctx": 1024, "num_predict": 256 },
    });
    assert_eq!(sent.body, expected);
}

#[tokio::test]
async fn openai_sends_usage_option_and_bearer_key_and_no_key_when_none() {
    let (server, llm) = setup(ProviderKind::Openai).await;
    server.push(
        "POST",
        "/v1/chat/completions",
        openai_stream(&["hi"], Duration::ZERO),
    );
    run(&llm, request()).await;
    let sent = &server.requests()[0];
    let expected = json!({
        "model": MODEL,
        "messages": [
            { "role": "system", "content": "You are terse." },
            { "role": "user", "content": "Say hello" },
        ],
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_tokens": 256,
    });
    assert_eq!(sent.body, expected);
    assert_eq!(sent.header("authorization"), Some("Bearer test-key"));

    // A local server without a key: no Authorization header at all.
    let mut keyless = config(ProviderKind::Openai, &server.url());
    keyless.api_keys.clear();
    server.push(
        "POST",
        "/v1/chat/completions",
        openai_stream(&["hi"], Duration::ZERO),
    );
    let outcome = run(&provider(keyless), request()).await;
    assert_complete(ProviderKind::Openai, &outcome);
    assert_eq!(server.requests()[1].header("authorization"), None);
}

#[tokio::test]
async fn anthropic_moves_system_to_its_field_and_sends_key_and_version() {
    let (server, llm) = setup(ProviderKind::Anthropic).await;
    server.push(
        "POST",
        "/v1/messages",
        anthropic_stream(&["hi"], Duration::ZERO),
    );
    let mut req = request();
    req.messages
        .insert(1, ChatMessage::new(ChatRole::System, "Use Rust."));
    req.max_output_tokens = None;
    run(&llm, req).await;
    let sent = &server.requests()[0];
    let expected = json!({
        "model": MODEL,
        "max_tokens": 8192,
        "system": "You are terse.\n\nUse Rust.",
        "messages": [{ "role": "user", "content": "Say hello" }],
        "stream": true,
    });
    assert_eq!(sent.body, expected);
    assert_eq!(sent.header("x-api-key"), Some("test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn gemini_sends_system_instruction_and_key_header_on_the_sse_url() {
    let (server, llm) = setup(ProviderKind::Gemini).await;
    server.push(
        "POST",
        &chat_path(ProviderKind::Gemini),
        gemini_stream(&["hi"], Duration::ZERO),
    );
    run(&llm, request()).await;
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse")
    );
    let expected = json!({
        "contents": [{ "role": "user", "parts": [{ "text": "Say hello" }] }],
        "systemInstruction": { "parts": [{ "text": "You are terse." }] },
        "generationConfig": { "maxOutputTokens": 256 },
    });
    assert_eq!(sent.body, expected);
    assert_eq!(sent.header("x-goog-api-key"), Some("test-key"));
}

#[tokio::test]
async fn reasoning_arrives_as_reasoning_events_before_the_text() {
    let (server, llm) = setup(ProviderKind::Ollama).await;
    let thinking = ollama_thinking_stream(&["Let me ", "think."], &["Answer."], Duration::ZERO);
    server.push("POST", "/api/chat", thinking);
    let outcome = run(&llm, request()).await;
    assert_complete(ProviderKind::Ollama, &outcome);
    assert_eq!(outcome.reasoning, ["Let me ", "think."]);
    assert_eq!(outcome.events[2], StreamEvent::Text("Answer.".into()));

    let (server, llm) = setup(ProviderKind::Openai).await;
    let reasoning = openai_reasoning_stream(&["Hmm."], &["Answer."], Duration::ZERO);
    server.push("POST", "/v1/chat/completions", reasoning);
    let outcome = run(&llm, request()).await;
    assert_complete(ProviderKind::Openai, &outcome);
    assert_eq!(outcome.events[0], StreamEvent::Reasoning("Hmm.".into()));
    assert_eq!(outcome.text, ["Answer."]);
}

#[tokio::test]
async fn each_provider_lists_its_models() {
    let cases = [
        (
            ProviderKind::Ollama,
            "/api/tags",
            json!({ "models": [{ "name": "llama3.2:3b" }, { "name": "qwen3:8b" }] }),
        ),
        (
            ProviderKind::Openai,
            "/v1/models",
            json!({ "object": "list", "data": [{ "id": "gpt-x" }, { "id": "gpt-y", "context_length": 128000 }] }),
        ),
        (
            ProviderKind::Anthropic,
            "/v1/models",
            json!({ "data": [{ "id": "claude-a", "type": "model" }, { "id": "claude-b", "type": "model" }] }),
        ),
        (
            ProviderKind::Gemini,
            "/v1beta/models",
            json!({ "models": [
            { "name": "models/gemini-a", "inputTokenLimit": 1048576, "supportedGenerationMethods": ["generateContent"] },
            { "name": "models/embedding-001", "supportedGenerationMethods": ["embedContent"] },
            { "name": "models/gemini-b", "inputTokenLimit": 32768, "supportedGenerationMethods": ["generateContent", "countTokens"] },
        ] }),
        ),
    ];
    for (kind, path, body) in cases {
        let (server, llm) = setup(kind).await;
        server.push("GET", path, Reply::json(200, body));
        let models = tokio::time::timeout(BOUND, llm.list_models())
            .await
            .unwrap()
            .unwrap();
        let ids: Vec<_> = models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids.len(), 2, "{kind:?}: {ids:?}");
        assert!(
            !ids.iter()
                .any(|id| id.starts_with("models/") || id.contains("embedding")),
            "{kind:?}"
        );
        if kind == ProviderKind::Gemini {
            assert_eq!(models[0].context_length, Some(1048576));
        }
        assert_eq!(server.requests()[0].method, "GET");
    }
}

#[tokio::test]
async fn ollama_show_gives_context_length_and_capabilities() {
    let (server, llm) = setup(ProviderKind::Ollama).await;
    let show = json!({
        "details": { "family": "qwen3" },
        "model_info": { "general.architecture": "qwen3", "qwen3.context_length": 40960, "qwen3.embedding_length": 4096 },
        "capabilities": ["completion", "tools", "thinking"],
    });
    server.push("POST", "/api/show", Reply::json(200, show));
    let info = tokio::time::timeout(BOUND, llm.model_info("qwen3:8b"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(info.id, "qwen3:8b");
    assert_eq!(info.context_length, Some(40960));
    assert!(info.supports_tools && info.supports_reasoning && !info.supports_images);
    assert_eq!(server.requests()[0].body, json!({ "model": "qwen3:8b" }));

    server.push(
        "POST",
        "/api/show",
        Reply::json(404, json!({ "error": "model 'nope' not found" })),
    );
    let error = llm.model_info("nope").await.unwrap_err();
    assert_eq!(
        error,
        LlmError::ModelNotPulled {
            model: "nope".into()
        }
    );
}

#[tokio::test]
async fn openai_model_info_reads_a_listed_context_length() {
    let (server, llm) = setup(ProviderKind::Openai).await;
    let list = json!({ "data": [{ "id": "local", "max_model_len": 32768 }] });
    server.push("GET", "/v1/models", Reply::json(200, list.clone()));
    let info = llm.model_info("local").await.unwrap();
    assert_eq!(info.context_length, Some(32768));
    server.push("GET", "/v1/models", Reply::json(200, list));
    let unknown = llm.model_info("other").await.unwrap();
    assert_eq!(
        (unknown.id.as_str(), unknown.context_length),
        ("other", None)
    );
}

#[tokio::test]
async fn an_openai_compatible_window_comes_from_llama_cpp_props_or_lm_studio() {
    // llama.cpp: /v1/models says nothing of the window; /props has the loaded n_ctx.
    let (server, llm) = setup(ProviderKind::Openai).await;
    server.push(
        "GET",
        "/v1/models",
        Reply::json(200, json!({ "data": [{ "id": "qwen" }] })),
    );
    server.push(
        "GET",
        "/props",
        Reply::json(
            200,
            json!({ "default_generation_settings": { "n_ctx": 16384 }, "modalities": { "vision": true } }),
        ),
    );
    let info = llm.model_info("qwen").await.unwrap();
    assert_eq!(info.context_length, Some(16384));
    assert_eq!(info.context_source.as_deref(), Some("/props"));
    assert!(info.supports_images);

    // LM Studio: no /props; its own API tells the loaded context and the capabilities.
    let (server, llm) = setup(ProviderKind::Openai).await;
    server.push(
        "GET",
        "/v1/models",
        Reply::json(200, json!({ "data": [{ "id": "coder" }] })),
    );
    server.push(
        "GET",
        "/props",
        Reply::json(404, json!({"error": "not found"})),
    );
    server.push(
        "GET",
        "/api/v0/models/coder",
        Reply::json(
            200,
            json!({ "id": "coder", "type": "llm", "max_context_length": 131072,
                    "loaded_context_length": 8192, "capabilities": ["tool_use"] }),
        ),
    );
    let info = llm.model_info("coder").await.unwrap();
    assert_eq!(
        info.context_length,
        Some(8192),
        "the loaded window, not the maximum"
    );
    assert_eq!(info.context_source.as_deref(), Some("/api/v0/models"));
    assert!(info.supports_tools && !info.supports_images);
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/models", "/props", "/api/v0/models/coder"]);
}

#[tokio::test]
async fn anthropic_without_v1_in_its_base_url_still_reaches_v1_messages() {
    let server = FakeProvider::start().await;
    // As the Anthropic SDKs spell it: the host only.
    let mut config = config(ProviderKind::Anthropic, &server.url());
    config.base_url = format!("{}/", server.url());
    let llm = provider(config);
    server.push(
        "POST",
        "/v1/messages",
        anthropic_stream(&["hi"], Duration::ZERO),
    );
    run(&llm, request()).await;
    assert_eq!(server.requests()[0].path, "/v1/messages");
}

#[tokio::test]
async fn images_go_in_each_providers_own_format() {
    let png = b"\x89PNG\r\n\x1a\nnot really a picture";
    let image = tandem_core::llm::ImageData::new("image/png", png);
    let data = image.base64.to_string();
    for kind in KINDS {
        let (server, llm) = setup(kind).await;
        server.push(
            "POST",
            &chat_path(kind),
            reply(kind, &PIECES, Duration::ZERO),
        );
        let mut with_image = request();
        with_image.messages[1].images = vec![image.clone()];
        let outcome = run(&llm, with_image).await;
        assert_complete(kind, &outcome);
        let body = &server.requests()[0].body;
        match kind {
            ProviderKind::Ollama => {
                let user = &body["messages"][1];
                assert_eq!(user["content"], "Say hello");
                assert_eq!(user["images"], json!([data]));
            }
            ProviderKind::Openai => {
                let parts = &body["messages"][1]["content"];
                assert_eq!(parts[0], json!({"type": "text", "text": "Say hello"}));
                assert_eq!(parts[1]["type"], "image_url");
                assert_eq!(
                    parts[1]["image_url"]["url"],
                    format!("data:image/png;base64,{data}")
                );
            }
            ProviderKind::Anthropic => {
                let blocks = &body["messages"][0]["content"];
                assert_eq!(
                    blocks[0],
                    json!({"type": "image", "source": {"type": "base64",
                           "media_type": "image/png", "data": data}})
                );
                assert_eq!(blocks[1], json!({"type": "text", "text": "Say hello"}));
            }
            ProviderKind::Gemini => {
                let parts = &body["contents"][0]["parts"];
                assert_eq!(parts[0], json!({"text": "Say hello"}));
                assert_eq!(
                    parts[1],
                    json!({"inlineData": {"mimeType": "image/png", "data": data}})
                );
            }
            ProviderKind::Codex | ProviderKind::ClaudeCode => unreachable!("HTTP kinds only"),
        }
        // The estimate counts the image, so the request's num_ctx makes room for it.
        let mut counted = tandem_core::llm::ChatRequest {
            messages: vec![ChatMessage::new(ChatRole::User, "x")],
            ..request()
        };
        let without = counted.estimated_tokens();
        counted.messages[0].images = vec![image.clone()];
        assert!(counted.estimated_tokens() >= without + 1_000);
    }
}
