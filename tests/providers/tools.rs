//! Native tool calling on the wire for Anthropic and Gemini (Ollama and OpenAI's Chat
//! Completions are covered end to end by tests/agent/, the Responses API in responses.rs):
//! the call streamed back, then the follow-up request carrying the call, its result and the
//! tools in each API's own shape.

use super::*;
use fake_provider::{anthropic_tool_call, gemini_tool_call};
use tandem_core::llm::{ToolCall, ToolSpec};

pub(super) fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}),
    }
}

/// The request after the model called `call`: the call, its result, the tools again.
pub(super) fn follow_up(call: &ToolCall) -> ChatRequest {
    let mut req = request();
    req.messages
        .push(ChatMessage::assistant_with_calls("", vec![call.clone()]));
    req.messages
        .push(ChatMessage::tool_result(call, "fn main() {}"));
    req.tools = vec![read_tool()];
    req
}

pub(super) fn the_call(outcome: &Outcome) -> ToolCall {
    let calls: Vec<_> = outcome
        .events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{:?}", outcome.events);
    calls[0].clone()
}

#[tokio::test]
async fn anthropic_tool_use_round_trip() {
    let (server, llm) = setup(ProviderKind::Anthropic).await;
    let arguments = json!({"path": "src/main.rs"});
    server.push(
        "POST",
        "/v1/messages",
        anthropic_tool_call("toolu_1", "read_file", arguments.clone()),
    );
    let mut first = request();
    first.tools = vec![read_tool()];
    let outcome = run(&llm, first).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let call = the_call(&outcome);
    assert_eq!(call.id.as_deref(), Some("toolu_1"));
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("read_file", &arguments)
    );
    assert_eq!(
        server.requests()[0].body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );

    server.push(
        "POST",
        "/v1/messages",
        anthropic_stream(&["ok"], Duration::ZERO),
    );
    run(&llm, follow_up(&call)).await;
    let body = &server.requests()[1].body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{body}");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": arguments}]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}"}]})
    );
}

#[tokio::test]
async fn gemini_function_call_round_trip() {
    let (server, llm) = setup(ProviderKind::Gemini).await;
    let arguments = json!({"path": "src/main.rs"});
    let path = chat_path(ProviderKind::Gemini);
    server.push(
        "POST",
        &path,
        gemini_tool_call("read_file", arguments.clone()),
    );
    let mut first = request();
    first.tools = vec![read_tool()];
    let outcome = run(&llm, first).await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let call = the_call(&outcome);
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("read_file", &arguments)
    );
    assert_eq!(
        server.requests()[0].body["tools"][0]["functionDeclarations"][0]["name"],
        "read_file"
    );

    server.push("POST", &path, gemini_stream(&["ok"], Duration::ZERO));
    run(&llm, follow_up(&call)).await;
    let contents = server.requests()[1].body["contents"].clone();
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": arguments}}]})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "read_file",
            "response": {"content": "fn main() {}"}}}]})
    );
}
