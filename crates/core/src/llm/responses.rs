//! OpenAI's Responses API (`POST /responses`, SSE), which api.openai.com serves its models
//! through (reasoning models included); other OpenAI-compatible servers keep Chat
//! Completions (`super::openai`).
//!
//! The stream is typed events: `response.output_text.delta` (text),
//! `response.reasoning_summary_text.delta` (reasoning), `response.output_item.added` /
//! `response.function_call_arguments.delta` / `response.output_item.done` (a tool call),
//! then `response.completed` (usage) or `response.incomplete` / `response.failed` / `error`.
//! A stream that ended normally without a word or a call is asked again without streaming
//! (some models and proxies only answer that way); the two usages are added up.

use std::collections::VecDeque;
use std::sync::Arc;

use eventsource_stream::Event;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream;
use serde_json::{Value, json};

use super::framing::{Decode, Events, Item, drive, parse_frame, snippet};
use super::http::Http;
use super::wire::is_reasoning_model;
use super::{ChatRequest, LlmError, StreamEvent, ToolCall, Usage};

/// The request body; `stream: false` for the retry.
pub(crate) fn body(request: &ChatRequest, stream: bool) -> Value {
    let reasoning = is_reasoning_model(&request.model);
    let mut body = json!({
        "model": request.model,
        "input": super::wire::responses_input(request),
        "stream": stream,
        // Tandem keeps the conversation itself; nothing is left stored at OpenAI.
        "store": false,
    });
    if let Some(max) = request.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    // Reasoning models refuse a temperature; they take an effort instead.
    match (reasoning, request.temperature, request.reasoning_effort) {
        (false, Some(temperature), _) => body["temperature"] = json!(temperature),
        (true, _, Some(effort)) => body["reasoning"] = json!({ "effort": effort.as_str() }),
        _ => {}
    }
    if let Some(tools) = super::wire::responses_tools(request) {
        body["tools"] = tools;
    }
    body
}

fn usage_of(response: &Value) -> Option<Usage> {
    let usage = response.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
    })
}

fn call_of(item: &Value) -> ToolCall {
    let arguments = item["arguments"].as_str().unwrap_or_default();
    ToolCall {
        id: item["call_id"].as_str().map(str::to_string),
        name: item["name"].as_str().unwrap_or_default().to_string(),
        // Arguments that are not JSON are passed on as a string for the caller to judge.
        arguments: serde_json::from_str(arguments)
            .unwrap_or_else(|_| Value::String(arguments.to_string())),
    }
}

/// `response.incomplete`'s reason in the names the rest of Tandem uses (`length`).
fn finish_reason(response: &Value, called: bool) -> String {
    match response["incomplete_details"]["reason"].as_str() {
        Some("max_output_tokens") => "length".into(),
        Some(other) => other.into(),
        None if called => "tool_calls".into(),
        None => "stop".into(),
    }
}

fn error_text(error: &Value) -> String {
    match (error["code"].as_str(), error["message"].as_str()) {
        (Some(code), Some(message)) => format!("{message} ({code})"),
        (None, Some(message)) => message.to_string(),
        _ => snippet(&error.to_string()),
    }
}

/// The events of a whole response object (the non-streaming reply), ending with `Done`.
pub(crate) fn response_events(response: &Value) -> Vec<Item> {
    let mut out = Vec::new();
    let mut called = false;
    for item in response["output"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    let text = part["text"].as_str().or_else(|| part["refusal"].as_str());
                    if let Some(text) = text.filter(|t| !t.is_empty()) {
                        out.push(Ok(StreamEvent::Text(text.to_string())));
                    }
                }
            }
            Some("reasoning") => {
                for part in item["summary"].as_array().into_iter().flatten() {
                    if let Some(text) = part["text"].as_str().filter(|t| !t.is_empty()) {
                        out.push(Ok(StreamEvent::Reasoning(text.to_string())));
                    }
                }
            }
            Some("function_call") => {
                called = true;
                out.push(Ok(StreamEvent::ToolCall(call_of(item))));
            }
            _ => {}
        }
    }
    if let Some(usage) = usage_of(response) {
        out.push(Ok(StreamEvent::Usage(usage)));
    }
    out.push(Ok(StreamEvent::Done {
        finish_reason: Some(finish_reason(response, called)),
    }));
    out
}

/// A function call being streamed: its item, then pieces of its arguments.
#[derive(Debug)]
struct PartialCall {
    item_id: String,
    item: Value,
    arguments: String,
}

#[derive(Debug)]
pub(crate) struct ResponsesDecoder {
    provider: String,
    calls: Vec<PartialCall>,
    called: bool,
}

impl ResponsesDecoder {
    pub(crate) fn new(provider: String) -> Self {
        ResponsesDecoder {
            provider,
            calls: Vec::new(),
            called: false,
        }
    }

    fn server_error(&self, message: String) -> Item {
        Err(LlmError::Server {
            provider: self.provider.clone(),
            message,
        })
    }

    /// A finished call item: the item's own arguments when it carries them, else the pieces.
    fn call_done(&mut self, item: &Value, out: &mut Vec<Item>) {
        let id = item["id"].as_str().unwrap_or_default();
        let pieces = match self.calls.iter().position(|c| c.item_id == id) {
            Some(position) => self.calls.remove(position).arguments,
            None => String::new(),
        };
        let mut item = item.clone();
        if item["arguments"].as_str().is_none_or(str::is_empty) {
            item["arguments"] = json!(pieces);
        }
        self.called = true;
        out.push(Ok(StreamEvent::ToolCall(call_of(&item))));
    }

    fn finish(&mut self, response: &Value, out: &mut Vec<Item>) {
        // Calls never closed by `output_item.done` still count, with what arrived of them.
        for call in std::mem::take(&mut self.calls) {
            let mut item = call.item;
            item["arguments"] = json!(call.arguments);
            self.called = true;
            out.push(Ok(StreamEvent::ToolCall(call_of(&item))));
        }
        if let Some(usage) = usage_of(response) {
            out.push(Ok(StreamEvent::Usage(usage)));
        }
        out.push(Ok(StreamEvent::Done {
            finish_reason: Some(finish_reason(response, self.called)),
        }));
    }
}

impl Decode<Event> for ResponsesDecoder {
    fn frame(&mut self, event: Event, out: &mut Vec<Item>) {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return;
        }
        let json = match parse_frame(&self.provider, "an event", data) {
            Ok(json) => json,
            Err(err) => return out.push(Err(err)),
        };
        let kind = json["type"].as_str().unwrap_or(event.event.as_str());
        let delta = || json["delta"].as_str().filter(|d| !d.is_empty());
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = delta() {
                    out.push(Ok(StreamEvent::Text(text.to_string())));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = delta() {
                    out.push(Ok(StreamEvent::Reasoning(text.to_string())));
                }
            }
            "response.output_item.added" if json["item"]["type"] == "function_call" => {
                self.calls.push(PartialCall {
                    item_id: json["item"]["id"].as_str().unwrap_or_default().to_string(),
                    item: json["item"].clone(),
                    arguments: String::new(),
                });
            }
            "response.function_call_arguments.delta" => {
                let id = json["item_id"].as_str().unwrap_or_default();
                if let (Some(call), Some(piece)) =
                    (self.calls.iter_mut().find(|c| c.item_id == id), delta())
                {
                    call.arguments.push_str(piece);
                }
            }
            "response.output_item.done" if json["item"]["type"] == "function_call" => {
                self.call_done(&json["item"], out);
            }
            "response.completed" | "response.incomplete" => self.finish(&json["response"], out),
            "response.failed" => {
                let error = &json["response"]["error"];
                out.push(self.server_error(error_text(error)));
            }
            "error" => {
                let error = json.get("error").unwrap_or(&json);
                out.push(self.server_error(error_text(error)));
            }
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut Vec<Item>) {
        // Without `response.completed` the reply was cut short; the driver says so.
    }
}

/// Streams one reply from `/responses`, asking again without streaming when the stream
/// ended normally with neither text nor a call.
pub(crate) fn stream(http: Arc<Http>, request: ChatRequest) -> Events {
    let provider = http.name().to_string();
    let decoder = ResponsesDecoder::new(provider.clone());
    let streamed = {
        let http = Arc::clone(&http);
        let request = request.clone();
        async move {
            let response = send(&http, &request, true).await?;
            http.event_stream(response).await
        }
    };
    let first = drive(streamed, decoder, provider);
    let retry: BoxFuture<'static, Vec<Item>> = Box::pin(async move {
        let reply = match send(&http, &request, false).await {
            Ok(response) => http.read_json(response).await,
            Err(err) => Err(err),
        };
        match reply {
            Ok(response) if response["status"] == "failed" => {
                vec![Err(LlmError::Server {
                    provider: http.name().to_string(),
                    message: error_text(&response["error"]),
                })]
            }
            Ok(response) => response_events(&response),
            Err(err) => vec![Err(err)],
        }
    });
    retry_when_empty(first, retry)
}

async fn send(
    http: &Http,
    request: &ChatRequest,
    streaming: bool,
) -> Result<reqwest::Response, LlmError> {
    let url = http.url("/responses");
    let body = body(request, streaming);
    http.post_bearer(&url, &body, Some(&request.model)).await
}

/// Passes `first` through; when it ends with `Done` having given neither text nor a tool
/// call, yields what `retry` gives instead of that `Done` (its usage added to the first's).
fn retry_when_empty(first: Events, retry: BoxFuture<'static, Vec<Item>>) -> Events {
    struct State {
        first: Option<Events>,
        retry: Option<BoxFuture<'static, Vec<Item>>>,
        answered: bool,
        /// The first stream's usage and `Done`, held until it is known whether to retry.
        usage: Option<Usage>,
        pending: VecDeque<Item>,
    }
    let state = State {
        first: Some(first),
        retry: Some(retry),
        answered: false,
        usage: None,
        pending: VecDeque::new(),
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                return Some((item, st));
            }
            let first = st.first.as_mut()?;
            let item = first.next().await;
            match item {
                Some(Ok(StreamEvent::Usage(usage))) => st.usage = Some(usage),
                Some(Ok(StreamEvent::Done { finish_reason })) => {
                    st.first = None;
                    let retry = st.retry.take().filter(|_| !st.answered);
                    match retry {
                        None => {
                            st.pending
                                .extend(st.usage.take().map(|u| Ok(StreamEvent::Usage(u))));
                            st.pending
                                .push_back(Ok(StreamEvent::Done { finish_reason }));
                        }
                        Some(retry) => {
                            let mut items = retry.await;
                            add_usage(&mut items, st.usage.take());
                            st.pending.extend(items);
                        }
                    }
                }
                Some(item) => {
                    if matches!(item, Ok(StreamEvent::Text(_) | StreamEvent::ToolCall(_))) {
                        st.answered = true;
                    }
                    if item.is_err() {
                        st.first = None;
                    }
                    return Some((item, st));
                }
                None => st.first = None,
            }
        }
    })
    .boxed()
}

/// Adds `earlier` (the empty stream's usage) to the retry's, or puts it before its `Done`.
fn add_usage(items: &mut Vec<Item>, earlier: Option<Usage>) {
    let Some(earlier) = earlier else { return };
    if let Some(Ok(StreamEvent::Usage(usage))) = items
        .iter_mut()
        .find(|i| matches!(i, Ok(StreamEvent::Usage(_))))
    {
        usage.input_tokens += earlier.input_tokens;
        usage.output_tokens += earlier.output_tokens;
        return;
    }
    let at = items
        .iter()
        .position(|i| matches!(i, Ok(StreamEvent::Done { .. })))
        .unwrap_or(items.len());
    items.insert(at, Ok(StreamEvent::Usage(earlier)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut ResponsesDecoder, data: Value) -> Vec<Item> {
        let mut out = Vec::new();
        let event = Event {
            event: data["type"].as_str().unwrap_or("message").into(),
            data: data.to_string(),
            ..Event::default()
        };
        decoder.frame(event, &mut out);
        out
    }

    #[test]
    fn deltas_calls_and_completion_become_events() {
        let mut d = ResponsesDecoder::new("OpenAI".into());
        let text = feed(
            &mut d,
            json!({"type": "response.output_text.delta", "item_id": "m1", "delta": "Hi"}),
        );
        assert_eq!(text, vec![Ok(StreamEvent::Text("Hi".into()))]);
        let added = json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9",
                     "name": "read_file", "arguments": ""}});
        assert!(feed(&mut d, added).is_empty());
        for piece in ["{\"path\":", "\"a.rs\"}"] {
            let delta = json!({"type": "response.function_call_arguments.delta",
                               "item_id": "fc_1", "delta": piece});
            assert!(feed(&mut d, delta).is_empty());
        }
        // The done item without arguments: the streamed pieces make the call.
        let done = json!({"type": "response.output_item.done",
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9",
                     "name": "read_file"}});
        let call = ToolCall {
            id: Some("call_9".into()),
            name: "read_file".into(),
            arguments: json!({"path": "a.rs"}),
        };
        assert_eq!(feed(&mut d, done), vec![Ok(StreamEvent::ToolCall(call))]);
        let completed = json!({"type": "response.completed", "response": {
            "status": "completed", "model": "gpt-5-2025-08-07",
            "usage": {"input_tokens": 12, "output_tokens": 5}}});
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 5,
        };
        assert_eq!(
            feed(&mut d, completed),
            vec![
                Ok(StreamEvent::Usage(usage)),
                Ok(StreamEvent::Done {
                    finish_reason: Some("tool_calls".into())
                })
            ]
        );
    }

    #[test]
    fn failures_and_cut_replies_are_errors_and_incomplete_is_length() {
        let mut d = ResponsesDecoder::new("OpenAI".into());
        let failed = json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "The model crashed"}}});
        let got = feed(&mut d, failed);
        assert!(
            matches!(&got[..], [Err(LlmError::Server { message, .. })]
                if message == "The model crashed (server_error)"),
            "{got:?}"
        );
        let incomplete = json!({"type": "response.incomplete", "response": {
            "incomplete_details": {"reason": "max_output_tokens"}}});
        assert_eq!(
            feed(&mut d, incomplete),
            vec![Ok(StreamEvent::Done {
                finish_reason: Some("length".into())
            })]
        );
        let garbage = Event {
            data: "{not json".into(),
            ..Event::default()
        };
        let mut out = Vec::new();
        d.frame(garbage, &mut out);
        assert!(
            matches!(&out[..], [Err(LlmError::Protocol { .. })]),
            "{out:?}"
        );
    }

    #[test]
    fn a_whole_response_reads_text_reasoning_calls_and_usage() {
        let response = json!({"status": "completed", "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Done."}]},
            {"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"}],
            "usage": {"input_tokens": 3, "output_tokens": 2}});
        let events: Vec<StreamEvent> = response_events(&response)
            .into_iter()
            .filter_map(Result::ok)
            .collect();
        assert_eq!(events.len(), 5, "{events:?}");
        assert_eq!(events[0], StreamEvent::Reasoning("thinking".into()));
        assert_eq!(events[1], StreamEvent::Text("Done.".into()));
        assert!(matches!(&events[2], StreamEvent::ToolCall(c) if c.id.as_deref() == Some("c1")));
    }

    #[test]
    fn reasoning_models_get_an_effort_and_no_temperature() {
        let mut request = ChatRequest {
            model: "o4-mini".into(),
            messages: vec![super::super::ChatMessage::new(
                super::super::ChatRole::User,
                "hi",
            )],
            max_output_tokens: Some(100),
            context_window: None,
            temperature: Some(0.3),
            tools: Vec::new(),
            reasoning_effort: Some(super::super::ReasoningEffort::High),
            estimate_scale: 1.0,
        };
        let sent = body(&request, true);
        assert_eq!(sent["reasoning"]["effort"], "high");
        assert_eq!(sent["max_output_tokens"], 100);
        assert!(sent.get("temperature").is_none());
        request.model = "gpt-4.1".into();
        let sent = body(&request, false);
        assert!(sent.get("reasoning").is_none());
        assert_eq!(sent["temperature"], json!(0.3f32));
        assert_eq!(sent["stream"], false);
    }
}
