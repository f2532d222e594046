//! The conversation and the offered tools in each API's own shape. Plain chat messages are the
//! same everywhere; tool calls and their results differ per API:
//!
//! - OpenAI-compatible: assistant `tool_calls` (arguments as a JSON *string*), `tool` messages
//!   with `tool_call_id`; tools as `{"type":"function","function":{…}}`.
//! - OpenAI Responses: `function_call` and `function_call_output` input items paired by
//!   `call_id`; tools as `{"type":"function","name":…}`.
//! - Ollama: assistant `tool_calls` (arguments as an object), `tool` messages with
//!   `tool_name`; tools in the OpenAI shape.
//! - Anthropic: assistant content blocks `tool_use`, results as `tool_result` blocks inside a
//!   user message (consecutive results share one message: the API wants roles alternating).
//! - Gemini: `functionCall` parts from the model, `functionResponse` parts from the user.
//!
//! Images on a user message: OpenAI `image_url` parts with a `data:` URL, Ollama `images`
//! (base64), Anthropic `image` blocks (base64 source) before the text, Gemini `inlineData`.

use serde_json::{Value, json};

use super::{ChatMessage, ChatRequest, ChatRole, ToolCall};

/// Whether `model` is one of OpenAI's reasoning models (o1, o3, o4, GPT-5 but its chat
/// variant): they take `max_completion_tokens` and a reasoning effort, and no temperature.
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    // `openai/o3` on routers that prefix the vendor.
    let model = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = ["o1", "o3", "o4"]
        .iter()
        .any(|p| model == *p || model.starts_with(&format!("{p}-")));
    o_series || (model.starts_with("gpt-5") && !model.contains("-chat"))
}

/// A call's id, or a stable stand-in for providers that gave none (Ollama), so an OpenAI- or
/// Anthropic-shaped history still pairs each result with its call.
fn call_id(call: &ToolCall, index: usize) -> String {
    call.id.clone().unwrap_or_else(|| format!("call_{index}"))
}

fn result_id(message: &ChatMessage, index: usize) -> String {
    message
        .tool_call_id
        .clone()
        .unwrap_or_else(|| format!("call_{index}"))
}

/// The tools in the OpenAI function shape (also what Ollama takes); `None` when no tools.
pub(crate) fn function_tools(request: &ChatRequest) -> Option<Value> {
    (!request.tools.is_empty()).then(|| {
        let tools = request.tools.iter().map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
            }})
        });
        Value::Array(tools.collect())
    })
}

pub(crate) fn openai_messages(request: &ChatRequest) -> Vec<Value> {
    let mut calls_seen = 0;
    let mut results_seen = 0;
    let mut out = Vec::with_capacity(request.messages.len());
    for m in &request.messages {
        out.push(match m.role {
            ChatRole::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        calls_seen += 1;
                        json!({"id": call_id(c, calls_seen - 1), "type": "function", "function": {
                            "name": c.name, "arguments": c.arguments.to_string(),
                        }})
                    })
                    .collect();
                let content = (!m.content.is_empty()).then_some(m.content.as_str());
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            ChatRole::Tool => {
                results_seen += 1;
                json!({"role": "tool", "tool_call_id": result_id(m, results_seen - 1),
                       "content": m.content})
            }
            _ if !m.images.is_empty() => {
                let mut parts = vec![json!({"type": "text", "text": m.content})];
                parts.extend(
                    m.images
                        .iter()
                        .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
                );
                json!({ "role": m.role, "content": parts })
            }
            _ => json!({ "role": m.role, "content": m.content }),
        });
    }
    out
}

/// The conversation as OpenAI Responses `input` items: messages by role, tool calls as
/// `function_call` items (arguments as a JSON string), results as `function_call_output`.
pub(crate) fn responses_input(request: &ChatRequest) -> Vec<Value> {
    let mut calls_seen = 0;
    let mut results_seen = 0;
    let mut out = Vec::with_capacity(request.messages.len());
    for m in &request.messages {
        match m.role {
            ChatRole::Assistant if !m.tool_calls.is_empty() => {
                if !m.content.trim().is_empty() {
                    out.push(json!({"role": "assistant", "content": m.content}));
                }
                for c in &m.tool_calls {
                    calls_seen += 1;
                    out.push(
                        json!({"type": "function_call", "call_id": call_id(c, calls_seen - 1),
                                    "name": c.name, "arguments": c.arguments.to_string()}),
                    );
                }
            }
            ChatRole::Tool => {
                results_seen += 1;
                out.push(json!({"type": "function_call_output",
                                "call_id": result_id(m, results_seen - 1), "output": m.content}));
            }
            _ if !m.images.is_empty() => {
                let mut parts = vec![json!({"type": "input_text", "text": m.content})];
                parts.extend(
                    m.images
                        .iter()
                        .map(|i| json!({"type": "input_image", "image_url": i.data_url()})),
                );
                out.push(json!({ "role": m.role, "content": parts }));
            }
            _ => out.push(json!({ "role": m.role, "content": m.content })),
        }
    }
    out
}

/// The tools in the Responses shape (`{"type":"function","name":…}`, not nested).
pub(crate) fn responses_tools(request: &ChatRequest) -> Option<Value> {
    (!request.tools.is_empty()).then(|| {
        let tools = request.tools.iter().map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
                   "parameters": t.parameters})
        });
        Value::Array(tools.collect())
    })
}

pub(crate) fn ollama_messages(request: &ChatRequest) -> Vec<Value> {
    let message = |m: &ChatMessage| match m.role {
        ChatRole::Assistant if !m.tool_calls.is_empty() => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| json!({"function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
            json!({"role": "assistant", "content": m.content, "tool_calls": calls})
        }
        ChatRole::Tool => json!({"role": "tool", "content": m.content,
                                 "tool_name": m.tool_name.as_deref().unwrap_or_default()}),
        _ if !m.images.is_empty() => {
            let images: Vec<&str> = m.images.iter().map(|i| &*i.base64).collect();
            json!({ "role": m.role, "content": m.content, "images": images })
        }
        _ => json!({ "role": m.role, "content": m.content }),
    };
    request.messages.iter().map(message).collect()
}

/// Anthropic's messages (system messages excluded: they go in the top-level `system`).
pub(crate) fn anthropic_messages(request: &ChatRequest) -> Vec<Value> {
    let mut calls_seen = 0;
    let mut results_seen = 0;
    let mut out: Vec<Value> = Vec::new();
    for m in request
        .messages
        .iter()
        .filter(|m| m.role != ChatRole::System)
    {
        match m.role {
            ChatRole::Assistant if !m.tool_calls.is_empty() => {
                let mut blocks = Vec::new();
                if !m.content.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    calls_seen += 1;
                    let input = match &c.arguments {
                        Value::Object(_) => c.arguments.clone(),
                        _ => json!({}),
                    };
                    blocks.push(json!({"type": "tool_use", "id": call_id(c, calls_seen - 1),
                                       "name": c.name, "input": input}));
                }
                out.push(json!({"role": "assistant", "content": blocks}));
            }
            ChatRole::Tool => {
                results_seen += 1;
                let block = json!({"type": "tool_result",
                                   "tool_use_id": result_id(m, results_seen - 1),
                                   "content": m.content});
                let previous_results = out.last_mut().filter(|last| {
                    last["role"] == "user"
                        && last["content"][0]["type"].as_str() == Some("tool_result")
                });
                match previous_results.and_then(|last| last["content"].as_array_mut()) {
                    Some(blocks) => blocks.push(block),
                    None => out.push(json!({"role": "user", "content": [block]})),
                }
            }
            _ if !m.images.is_empty() => {
                let mut blocks: Vec<Value> = m
                    .images
                    .iter()
                    .map(|i| {
                        json!({"type": "image", "source": {
                            "type": "base64", "media_type": i.mime, "data": &*i.base64,
                        }})
                    })
                    .collect();
                blocks.push(json!({"type": "text", "text": m.content}));
                out.push(json!({ "role": m.role, "content": blocks }));
            }
            _ => out.push(json!({ "role": m.role, "content": m.content })),
        }
    }
    out
}

pub(crate) fn anthropic_tools(request: &ChatRequest) -> Option<Value> {
    (!request.tools.is_empty()).then(|| {
        let tools = request.tools.iter().map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        );
        Value::Array(tools.collect())
    })
}

/// Gemini's `contents` (system messages excluded: they go in `systemInstruction`).
pub(crate) fn gemini_contents(request: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::new();
    for m in request
        .messages
        .iter()
        .filter(|m| m.role != ChatRole::System)
    {
        let content = match m.role {
            ChatRole::Assistant if !m.tool_calls.is_empty() => {
                let mut parts = Vec::new();
                if !m.content.trim().is_empty() {
                    parts.push(json!({"text": m.content}));
                }
                for c in &m.tool_calls {
                    parts.push(json!({"functionCall": {"name": c.name, "args": c.arguments}}));
                }
                json!({"role": "model", "parts": parts})
            }
            ChatRole::Tool => json!({"role": "user", "parts": [{"functionResponse": {
                "name": m.tool_name.as_deref().unwrap_or_default(),
                "response": {"content": m.content},
            }}]}),
            ChatRole::Assistant => json!({"role": "model", "parts": [{"text": m.content}]}),
            _ => {
                let mut parts = vec![json!({"text": m.content})];
                parts.extend(
                    m.images
                        .iter()
                        .map(|i| json!({"inlineData": {"mimeType": i.mime, "data": &*i.base64}})),
                );
                json!({"role": "user", "parts": parts})
            }
        };
        out.push(content);
    }
    out
}

pub(crate) fn gemini_tools(request: &ChatRequest) -> Option<Value> {
    (!request.tools.is_empty()).then(|| {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        json!([{ "functionDeclarations": declarations }])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    fn conversation() -> ChatRequest {
        let call = ToolCall {
            id: Some("c1".into()),
            name: "read_file".into(),
            arguments: json!({"path": "a.rs"}),
        };
        let second = ToolCall {
            id: None,
            name: "grep".into(),
            arguments: json!({"pattern": "fn"}),
        };
        ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::new(ChatRole::System, "sys"),
                ChatMessage::new(ChatRole::User, "look"),
                ChatMessage::assistant_with_calls("", vec![call.clone(), second.clone()]),
                ChatMessage::tool_result(&call, "fn main() {}"),
                ChatMessage::tool_result(&second, "a.rs:1: fn main"),
            ],
            max_output_tokens: None,
            context_window: None,
            temperature: None,
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Reads".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            reasoning_effort: None,
            estimate_scale: 1.0,
        }
    }

    #[test]
    fn openai_pairs_calls_and_results_by_id_with_string_arguments() {
        let m = openai_messages(&conversation());
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(m[2]["tool_calls"][0]["id"], "c1");
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            r#"{"path":"a.rs"}"#
        );
        // The call without an id gets a stand-in, and its result the same one.
        assert_eq!(m[2]["tool_calls"][1]["id"], "call_1");
        assert_eq!(
            m[3],
            json!({"role":"tool","tool_call_id":"c1","content":"fn main() {}"})
        );
        assert_eq!(m[4]["tool_call_id"], "call_1");
        let tools = function_tools(&conversation()).unwrap();
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(tools[0]["function"]["name"], "read_file");
    }

    #[test]
    fn responses_input_has_call_items_paired_with_their_outputs() {
        let items = responses_input(&conversation());
        // The empty assistant text is left out: system, user, two calls, two outputs.
        assert_eq!(items.len(), 6, "{items:#?}");
        assert_eq!(items[1], json!({"role": "user", "content": "look"}));
        assert_eq!(
            items[2],
            json!({"type": "function_call", "call_id": "c1", "name": "read_file",
                   "arguments": r#"{"path":"a.rs"}"#})
        );
        assert_eq!(items[3]["call_id"], "call_1");
        assert_eq!(
            items[4],
            json!({"type": "function_call_output", "call_id": "c1", "output": "fn main() {}"})
        );
        assert_eq!(items[5]["call_id"], "call_1");
        let tools = responses_tools(&conversation()).unwrap();
        assert_eq!(tools[0]["name"], "read_file");
        assert!(tools[0].get("function").is_none());
    }

    #[test]
    fn ollama_sends_object_arguments_and_tool_names() {
        let m = ollama_messages(&conversation());
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"]["path"],
            "a.rs"
        );
        assert_eq!(
            m[4],
            json!({"role":"tool","content":"a.rs:1: fn main","tool_name":"grep"})
        );
    }

    #[test]
    fn anthropic_merges_consecutive_results_into_one_user_message() {
        let m = anthropic_messages(&conversation());
        assert_eq!(m.len(), 3, "{m:#?}");
        assert_eq!(m[1]["content"][0]["type"], "tool_use");
        assert_eq!(m[1]["content"][1]["id"], "call_1");
        assert_eq!(m[2]["role"], "user");
        let blocks = m[2]["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0]["tool_use_id"], "c1");
        assert_eq!(blocks[1]["tool_use_id"], "call_1");
        assert_eq!(
            anthropic_tools(&conversation()).unwrap()[0]["input_schema"]["type"],
            "object"
        );
    }

    #[test]
    fn gemini_uses_function_call_and_response_parts() {
        let c = gemini_contents(&conversation());
        assert_eq!(c[1]["role"], "model");
        assert_eq!(c[1]["parts"][0]["functionCall"]["name"], "read_file");
        assert_eq!(c[2]["parts"][0]["functionResponse"]["name"], "read_file");
        assert_eq!(
            c[2]["parts"][0]["functionResponse"]["response"]["content"],
            "fn main() {}"
        );
        let tools = gemini_tools(&conversation()).unwrap();
        assert_eq!(tools[0]["functionDeclarations"][0]["name"], "read_file");
    }

    #[test]
    fn no_tools_sends_no_tools_field() {
        let mut request = conversation();
        request.tools.clear();
        assert!(function_tools(&request).is_none());
        assert!(anthropic_tools(&request).is_none());
        assert!(gemini_tools(&request).is_none());
    }
}
