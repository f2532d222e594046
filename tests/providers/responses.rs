//! OpenAI's Responses API (what api.openai.com is sent through) against the fake server:
//! the request it sends, text and usage from its typed events, a tool call round trip, the
//! non-streaming retry when a stream says nothing, and a failed response.

use std::sync::Arc;

use super::*;
use fake_provider::{responses_json, responses_stream, responses_tool_call};
use tandem_core::llm::ReasoningEffort;
use tandem_core::llm::openai::{OpenaiApi, OpenaiProvider};

const PATH: &str = "/v1/responses";

async fn setup_responses() -> (FakeProvider, SharedProvider) {
    let server = FakeProvider::start().await;
    let config = config(ProviderKind::Openai, &server.url());
    let llm: SharedProvider = Arc::new(OpenaiProvider::with_api(config, OpenaiApi::Responses));
    (server, llm)
}

#[tokio::test]
async fn responses_stream_text_then_usage_and_done() {
    let (server, llm) = setup_responses().await;
    server.push(
        "POST",
        PATH,
        responses_stream(&PIECES, Duration::from_millis(5)),
    );
    let mut req = request();
    req.model = "o4-mini".into();
    req.temperature = Some(0.4);
    req.max_output_tokens = Some(300);
    req.reasoning_effort = Some(ReasoningEffort::Low);
    let outcome = run(&llm, req).await;
    assert_complete(ProviderKind::Openai, &outcome);
    assert_eq!(outcome.text, PIECES);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, PATH);
    assert_eq!(sent.header("authorization"), Some("Bearer test-key"));
    let body = &sent.body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["model"], "o4-mini");
    assert_eq!(body["max_output_tokens"], 300);
    // A reasoning model: its effort, and no temperature (the API refuses one).
    assert_eq!(body["reasoning"]["effort"], "low");
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(
        body["input"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert!(body.get("messages").is_none(), "{body}");
}

#[tokio::test]
async fn responses_tool_call_round_trip() {
    let (server, llm) = setup_responses().await;
    let arguments = json!({"path": "src/main.rs"});
    server.push(
        "POST",
        PATH,
        responses_tool_call("call_7", "read_file", arguments.clone()),
    );
    let mut first = request();
    first.tools = vec![super::tools::read_tool()];
    let outcome = run(&llm, first).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let call = super::tools::the_call(&outcome);
    assert_eq!(call.id.as_deref(), Some("call_7"));
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("read_file", &arguments)
    );
    assert!(matches!(
        outcome.events.last(),
        Some(StreamEvent::Done { finish_reason: Some(r) }) if r == "tool_calls"
    ));
    // A call is an answer: no retry.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.requests()[0].body["tools"][0]["name"], "read_file");

    server.push("POST", PATH, responses_stream(&["ok"], Duration::ZERO));
    run(&llm, super::tools::follow_up(&call)).await;
    let input = server.requests()[1].body["input"].clone();
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_7", "name": "read_file",
               "arguments": arguments.to_string()})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_7", "output": "fn main() {}"})
    );
}

#[tokio::test]
async fn a_stream_without_text_is_asked_again_without_streaming() {
    let (server, llm) = setup_responses().await;
    server.push("POST", PATH, responses_stream(&[], Duration::ZERO));
    server.push("POST", PATH, responses_json("Answered whole."));
    let outcome = run(&llm, request()).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.joined(), "Answered whole.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[1].body["stream"], false);
    assert_eq!(requests[1].body["input"], requests[0].body["input"]);
    // Both requests were paid for: the usages add up, once, before Done.
    let usages: Vec<_> = outcome
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Usage(_)))
        .collect();
    let both = Usage {
        input_tokens: 2 * INPUT_TOKENS,
        output_tokens: 2 * OUTPUT_TOKENS,
    };
    assert_eq!(usages, vec![&StreamEvent::Usage(both)]);
    assert!(matches!(
        outcome.events.last(),
        Some(StreamEvent::Done { .. })
    ));
}

#[tokio::test]
async fn a_failed_response_and_a_cut_stream_are_errors() {
    let (server, llm) = setup_responses().await;
    let failed = json!({"type": "response.failed", "response": {"id": "resp_1",
        "status": "failed", "error": {"code": "server_error", "message": "overloaded"}}});
    let mut bytes = b"event: response.failed\ndata: ".to_vec();
    bytes.extend(failed.to_string().into_bytes());
    bytes.extend(b"\n\n");
    server.push(
        "POST",
        PATH,
        fake_provider::Reply::Raw {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: bytes,
        },
    );
    let outcome = run(&llm, request()).await;
    match outcome.error {
        Some(LlmError::Server { message, .. }) => assert!(message.contains("overloaded")),
        other => panic!("{other:?}"),
    }
    // Cut after the first delta, before `response.completed`: a disconnect, not a retry.
    server.push(
        "POST",
        PATH,
        responses_stream(&PIECES, Duration::ZERO).cut(1, End::Finish),
    );
    let outcome = run(&llm, request()).await;
    assert!(
        matches!(outcome.error, Some(LlmError::Disconnected { .. })),
        "{:?}",
        outcome.error
    );
    assert_eq!(server.requests().len(), 2);
}
