//! Builders for each protocol's real wire bytes: one chunk per piece plus a final chunk,
//! so `Reply::cut(n, …)` keeps exactly the first `n` pieces.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Chunk, End, INPUT_TOKENS, MODEL, OUTPUT_TOKENS, Reply};

fn stream(content_type: &str, chunks: Vec<Vec<u8>>, delay: Duration) -> Reply {
    let chunks = chunks
        .into_iter()
        .map(|bytes| Chunk { delay, bytes })
        .collect();
    Reply::Stream {
        status: 200,
        content_type: content_type.to_string(),
        chunks,
        end: End::Finish,
        gate: None,
    }
}

/// One NDJSON line.
pub fn ndjson_line(value: &Value) -> Vec<u8> {
    format!("{value}\n").into_bytes()
}

/// One SSE event (`event:` line only when `event` is given).
pub fn sse_event(event: Option<&str>, data: &Value) -> Vec<u8> {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n").into_bytes(),
        None => format!("data: {data}\n\n").into_bytes(),
    }
}

fn ollama_piece(content: &str, thinking: Option<&str>) -> Vec<u8> {
    let mut message = json!({ "role": "assistant", "content": content });
    if let Some(thinking) = thinking {
        message["thinking"] = json!(thinking);
    }
    let line = json!({ "model": MODEL, "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false });
    ndjson_line(&line)
}

fn ollama_done() -> Vec<u8> {
    ndjson_line(&json!({
        "model": MODEL, "created_at": "2025-01-01T00:00:00Z",
        "message": { "role": "assistant", "content": "" },
        "done": true, "done_reason": "stop",
        "prompt_eval_count": INPUT_TOKENS, "eval_count": OUTPUT_TOKENS,
    }))
}

/// An Ollama reply whose server counted `prompt_tokens` in the prompt (`prompt_eval_count`).
pub fn ollama_stream_counted(pieces: &[&str], prompt_tokens: u64) -> Reply {
    let mut chunks: Vec<Vec<u8>> = pieces.iter().map(|p| ollama_piece(p, None)).collect();
    chunks.push(ndjson_line(&json!({
        "model": MODEL, "created_at": "2025-01-01T00:00:00Z",
        "message": { "role": "assistant", "content": "" },
        "done": true, "done_reason": "stop",
        "prompt_eval_count": prompt_tokens, "eval_count": OUTPUT_TOKENS,
    })));
    stream("application/x-ndjson", chunks, Duration::from_millis(5))
}

pub fn ollama_stream(pieces: &[&str], delay: Duration) -> Reply {
    ollama_thinking_stream(&[], pieces, delay)
}

/// `thinking` pieces (as `message.thinking`) first, then the text pieces.
pub fn ollama_thinking_stream(thinking: &[&str], pieces: &[&str], delay: Duration) -> Reply {
    let mut chunks: Vec<Vec<u8>> = thinking.iter().map(|t| ollama_piece("", Some(t))).collect();
    chunks.extend(pieces.iter().map(|p| ollama_piece(p, None)));
    chunks.push(ollama_done());
    stream("application/x-ndjson", chunks, delay)
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    })
}

fn openai_trailer() -> Vec<u8> {
    let mut bytes = sse_event(None, &openai_chunk(json!({}), Some("stop")));
    let usage = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
        "choices": [],
        "usage": { "prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS, "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS },
    });
    bytes.extend(sse_event(None, &usage));
    bytes.extend(b"data: [DONE]\n\n");
    bytes
}

pub fn openai_stream(pieces: &[&str], delay: Duration) -> Reply {
    openai_reasoning_stream(&[], pieces, delay)
}

/// `reasoning` pieces as `delta.reasoning_content` first, then the text pieces. The
/// first chunk also carries the role, as real servers send it.
pub fn openai_reasoning_stream(reasoning: &[&str], pieces: &[&str], delay: Duration) -> Reply {
    let mut chunks: Vec<Vec<u8>> = reasoning
        .iter()
        .map(|r| sse_event(None, &openai_chunk(json!({ "reasoning_content": r }), None)))
        .chain(
            pieces
                .iter()
                .map(|p| sse_event(None, &openai_chunk(json!({ "content": p }), None))),
        )
        .collect();
    if let Some(first) = chunks.first_mut() {
        let mut with_role = sse_event(
            None,
            &openai_chunk(json!({ "role": "assistant", "content": "" }), None),
        );
        with_role.append(first);
        *first = with_role;
    }
    chunks.push(openai_trailer());
    stream("text/event-stream", chunks, delay)
}

pub fn anthropic_stream(pieces: &[&str], delay: Duration) -> Reply {
    let delta = |text: &str| {
        let data = json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } });
        sse_event(Some("content_block_delta"), &data)
    };
    let mut chunks: Vec<Vec<u8>> = pieces.iter().map(|p| delta(p)).collect();
    let start = json!({
        "type": "message_start",
        "message": { "id": "msg_fake", "type": "message", "role": "assistant", "model": MODEL, "content": [],
            "stop_reason": null, "usage": { "input_tokens": INPUT_TOKENS, "output_tokens": 1 } },
    });
    let mut preamble = sse_event(Some("message_start"), &start);
    let block = json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } });
    preamble.extend(sse_event(Some("content_block_start"), &block));
    preamble.extend(sse_event(Some("ping"), &json!({ "type": "ping" })));
    match chunks.first_mut() {
        Some(first) => {
            preamble.append(first);
            *first = preamble;
        }
        None => chunks.push(preamble),
    }
    let mut trailer = sse_event(
        Some("content_block_stop"),
        &json!({ "type": "content_block_stop", "index": 0 }),
    );
    let message_delta = json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn", "stop_sequence": null }, "usage": { "output_tokens": OUTPUT_TOKENS } });
    trailer.extend(sse_event(Some("message_delta"), &message_delta));
    trailer.extend(sse_event(
        Some("message_stop"),
        &json!({ "type": "message_stop" }),
    ));
    chunks.push(trailer);
    stream("text/event-stream", chunks, delay)
}

fn gemini_chunk(text: &str, finish: bool) -> Vec<u8> {
    let mut candidate =
        json!({ "content": { "role": "model", "parts": [{ "text": text }] }, "index": 0 });
    let mut data = json!({ "modelVersion": MODEL });
    if finish {
        candidate["finishReason"] = json!("STOP");
        data["usageMetadata"] = json!({ "promptTokenCount": INPUT_TOKENS, "candidatesTokenCount": OUTPUT_TOKENS, "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS });
    }
    data["candidates"] = json!([candidate]);
    // Gemini ends SSE lines with CRLF.
    format!("data: {data}\r\n\r\n").into_bytes()
}

pub fn gemini_stream(pieces: &[&str], delay: Duration) -> Reply {
    let mut chunks: Vec<Vec<u8>> = pieces.iter().map(|p| gemini_chunk(p, false)).collect();
    chunks.push(gemini_chunk("", true));
    stream("text/event-stream", chunks, delay)
}

/// An Ollama reply that calls one tool natively (no text), then ends.
pub fn ollama_tool_call(name: &str, arguments: Value) -> Reply {
    let call = json!({ "model": MODEL, "created_at": "2025-01-01T00:00:00Z",
        "message": { "role": "assistant", "content": "",
                     "tool_calls": [{ "function": { "name": name, "arguments": arguments } }] },
        "done": false });
    stream(
        "application/x-ndjson",
        vec![ndjson_line(&call), ollama_done()],
        Duration::from_millis(5),
    )
}

/// An Anthropic reply that calls one tool: a `tool_use` block whose input arrives as two
/// `input_json_delta` fragments.
pub fn anthropic_tool_call(id: &str, name: &str, arguments: Value) -> Reply {
    let text = arguments.to_string();
    let (a, b) = text.split_at(text.len() / 2);
    let start = json!({ "type": "message_start", "message": { "id": "msg_fake", "type": "message",
        "role": "assistant", "model": MODEL, "content": [], "stop_reason": null,
        "usage": { "input_tokens": INPUT_TOKENS, "output_tokens": 1 } } });
    let block = json!({ "type": "content_block_start", "index": 0,
        "content_block": { "type": "tool_use", "id": id, "name": name, "input": {} } });
    let delta = |part: &str| {
        json!({ "type": "content_block_delta", "index": 0,
        "delta": { "type": "input_json_delta", "partial_json": part } })
    };
    let end = json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" },
        "usage": { "output_tokens": OUTPUT_TOKENS } });
    let chunks = vec![
        sse_event(Some("message_start"), &start),
        sse_event(Some("content_block_start"), &block),
        sse_event(Some("content_block_delta"), &delta(a)),
        sse_event(Some("content_block_delta"), &delta(b)),
        sse_event(
            Some("content_block_stop"),
            &json!({ "type": "content_block_stop", "index": 0 }),
        ),
        sse_event(Some("message_delta"), &end),
        sse_event(Some("message_stop"), &json!({ "type": "message_stop" })),
    ];
    stream("text/event-stream", chunks, Duration::from_millis(5))
}

/// A Gemini reply that calls one function.
pub fn gemini_tool_call(name: &str, arguments: Value) -> Reply {
    let data = json!({ "modelVersion": MODEL, "candidates": [{ "index": 0, "finishReason": "STOP",
        "content": { "role": "model", "parts": [{ "functionCall": { "name": name, "args": arguments } }] } }] });
    let chunks = vec![format!("data: {data}\r\n\r\n").into_bytes()];
    stream("text/event-stream", chunks, Duration::from_millis(5))
}

/// OpenAI Responses API events: `response.created`, the text as `output_text.delta`s, then
/// `response.completed` with usage and the served model.
pub fn responses_stream(pieces: &[&str], delay: Duration) -> Reply {
    let event = |data: Value| sse_event(data["type"].as_str(), &data);
    let mut chunks: Vec<Vec<u8>> = pieces
        .iter()
        .map(|p| {
            event(
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                         "output_index": 0, "content_index": 0, "delta": p}),
            )
        })
        .collect();
    let created = event(json!({"type": "response.created",
        "response": {"id": "resp_1", "status": "in_progress", "model": MODEL}}));
    match chunks.first_mut() {
        Some(first) => {
            first.splice(0..0, created);
        }
        None => chunks.push(created),
    }
    chunks.push(responses_completed(&[]));
    stream("text/event-stream", chunks, delay)
}

fn responses_completed(output: &[Value]) -> Vec<u8> {
    let data = json!({"type": "response.completed", "response": {
        "id": "resp_1", "status": "completed", "model": format!("{MODEL}-2025-01-01"),
        "output": output,
        "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                  "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}});
    sse_event(Some("response.completed"), &data)
}

/// A Responses stream calling one function: the item added, its arguments in two pieces,
/// the item done (with its arguments), completed.
pub fn responses_tool_call(call_id: &str, name: &str, arguments: Value) -> Reply {
    let args = arguments.to_string();
    let (a, b) = args.split_at(args.len() / 2);
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name,
                      "arguments": "", "status": "in_progress"});
    let done = json!({"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name,
                      "arguments": args, "status": "completed"});
    let event = |data: Value| sse_event(data["type"].as_str(), &data);
    let chunks = vec![
        event(json!({"type": "response.output_item.added", "output_index": 0, "item": item})),
        event(
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                     "output_index": 0, "delta": a}),
        ),
        event(
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                     "output_index": 0, "delta": b}),
        ),
        event(json!({"type": "response.output_item.done", "output_index": 0, "item": done})),
        responses_completed(std::slice::from_ref(&done)),
    ];
    stream("text/event-stream", chunks, Duration::ZERO)
}

/// The non-streaming Responses reply: one message with `text`.
pub fn responses_json(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "resp_2", "object": "response", "status": "completed",
            "model": format!("{MODEL}-2025-01-01"),
            "output": [{"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                      "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}),
    )
}
