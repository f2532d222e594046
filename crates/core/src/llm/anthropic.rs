//! Anthropic's Messages API: `POST /messages` streaming typed SSE events.

use std::sync::Arc;

use eventsource_stream::Event;
use futures_util::future::BoxFuture;
use reqwest::RequestBuilder;
use serde_json::{Value, json};

use super::framing::{Decode, Events, Item, drive, parse_frame, snippet};
use super::http::Http;
use super::{
    ChatRequest, LlmError, ModelInfo, Provider, ProviderConfig, StreamEvent, ToolCall, Usage,
};

/// With `/v1`, as requests use it; a configured URL without it (the SDKs' spelling) gets it
/// added ([`super::ProviderKind::normalize_base_url`]).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
const API_VERSION: &str = "2023-06-01";
const KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The API requires `max_tokens`; this fits every current model.
const DEFAULT_MAX_TOKENS: u32 = 8192;

pub struct AnthropicProvider {
    http: Arc<Http>,
}

impl AnthropicProvider {
    pub fn new(config: ProviderConfig) -> Self {
        AnthropicProvider {
            http: Arc::new(Http::new(config)),
        }
    }
}

fn authorize(request: RequestBuilder, key: &str) -> RequestBuilder {
    request
        .header("x-api-key", key)
        .header("anthropic-version", API_VERSION)
}

/// System messages go in the top-level `system` field; the API has no system role.
fn chat_body(request: &ChatRequest) -> Value {
    let system = request.system_texts();
    let messages = super::wire::anthropic_messages(request);
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if let Some(tools) = super::wire::anthropic_tools(request) {
        body["tools"] = tools;
    }
    body
}

/// A `tool_use` content block whose input arrives as JSON fragments.
#[derive(Debug)]
struct ToolBlock {
    index: u64,
    id: String,
    name: String,
    input: String,
}

#[derive(Debug)]
struct MessagesDecoder {
    provider: String,
    usage: Usage,
    stop_reason: Option<String>,
    tools: Vec<ToolBlock>,
}

impl MessagesDecoder {
    fn new(provider: String) -> Self {
        MessagesDecoder {
            provider,
            usage: Usage::default(),
            stop_reason: None,
            tools: Vec::new(),
        }
    }

    fn error(&self, json: &Value) -> LlmError {
        let error = &json["error"];
        let message = error["message"]
            .as_str()
            .map_or_else(|| snippet(&json.to_string()), str::to_string);
        let provider = self.provider.clone();
        // Overload and rate limits are "wait and retry" for the person, like HTTP 529/429.
        match error["type"].as_str() {
            Some("overloaded_error") => LlmError::RateLimited {
                provider,
                status: 529,
                message,
            },
            Some("rate_limit_error") => LlmError::RateLimited {
                provider,
                status: 429,
                message,
            },
            _ => LlmError::Server { provider, message },
        }
    }
}

fn text_event(value: &Value, reasoning: bool) -> Option<Item> {
    let text = value.as_str().filter(|t| !t.is_empty())?.to_string();
    Some(Ok(if reasoning {
        StreamEvent::Reasoning(text)
    } else {
        StreamEvent::Text(text)
    }))
}

impl Decode<Event> for MessagesDecoder {
    fn frame(&mut self, event: Event, out: &mut Vec<Item>) {
        let json = match parse_frame(&self.provider, "an event", &event.data) {
            Ok(json) => json,
            Err(err) => return out.push(Err(err)),
        };
        // The event name and the data's `type` agree; the name is used when present.
        let kind = match event.event.as_str() {
            "" | "message" => json["type"].as_str().unwrap_or_default().to_string(),
            name => name.to_string(),
        };
        match kind.as_str() {
            "message_start" => {
                let usage = &json["message"]["usage"];
                // Cached prompt tokens are still prompt tokens in the context window.
                let prompt_fields = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ];
                self.usage.input_tokens = prompt_fields
                    .iter()
                    .filter_map(|k| usage[*k].as_u64())
                    .sum();
                self.usage.output_tokens = usage["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                let block = &json["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") => self.tools.push(ToolBlock {
                        index: json["index"].as_u64().unwrap_or(0),
                        id: block["id"].as_str().unwrap_or_default().to_string(),
                        name: block["name"].as_str().unwrap_or_default().to_string(),
                        input: String::new(),
                    }),
                    Some("thinking") => out.extend(text_event(&block["thinking"], true)),
                    _ => out.extend(text_event(&block["text"], false)),
                }
            }
            "content_block_delta" => {
                let delta = &json["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => out.extend(text_event(&delta["text"], false)),
                    Some("thinking_delta") => out.extend(text_event(&delta["thinking"], true)),
                    Some("input_json_delta") => {
                        let index = json["index"].as_u64().unwrap_or(0);
                        if let Some(tool) = self.tools.iter_mut().find(|t| t.index == index) {
                            tool.input
                                .push_str(delta["partial_json"].as_str().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = json["index"].as_u64().unwrap_or(0);
                if let Some(at) = self.tools.iter().position(|t| t.index == index) {
                    let tool = self.tools.remove(at);
                    // A tool without parameters streams no input at all.
                    let arguments = if tool.input.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&tool.input).unwrap_or(Value::String(tool.input))
                    };
                    out.push(Ok(StreamEvent::ToolCall(ToolCall {
                        id: Some(tool.id),
                        name: tool.name,
                        arguments,
                    })));
                }
            }
            "message_delta" => {
                if let Some(reason) = json["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_string());
                }
                // `output_tokens` here is the running total, not an increment.
                if let Some(output) = json["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = output;
                }
            }
            "message_stop" => {
                out.push(Ok(StreamEvent::Usage(self.usage)));
                out.push(Ok(StreamEvent::Done {
                    finish_reason: self.stop_reason.take(),
                }));
            }
            "error" => out.push(Err(self.error(&json))),
            // `ping` and event types added later carry nothing to show.
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut Vec<Item>) {
        // Without `message_stop` the reply was cut short; the driver reports that.
    }
}

fn model_from_entry(entry: &Value) -> Option<ModelInfo> {
    let context_length = ["max_input_tokens", "context_window"]
        .iter()
        .find_map(|key| entry[*key].as_u64())
        .and_then(|n| u32::try_from(n).ok());
    Some(ModelInfo {
        id: entry["id"].as_str()?.to_string(),
        context_length,
        ..ModelInfo::default()
    })
}

impl Provider for AnthropicProvider {
    fn config(&self) -> &ProviderConfig {
        &self.http.config
    }

    fn stream(&self, request: ChatRequest) -> Events {
        let http = Arc::clone(&self.http);
        let provider = http.name().to_string();
        let decoder = MessagesDecoder::new(provider.clone());
        let start = async move {
            let url = http.url("/messages");
            let body = chat_body(&request);
            let model = Some(request.model.as_str());
            let make = |c: &reqwest::Client, key: Option<&str>| {
                authorize(c.post(&url).json(&body), key.unwrap_or_default())
            };
            let response = http.send_keyed(make, model, Some(KEY_ENV)).await?;
            http.event_stream(response).await
        };
        drive(start, decoder, provider)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<ModelInfo>, LlmError>> {
        let http = Arc::clone(&self.http);
        Box::pin(async move {
            let key = http.key().ok_or_else(|| http.no_key(KEY_ENV))?;
            // The list is paged (20 by default); one large page holds every model.
            let url = http.url("/models?limit=1000");
            let models = http.json(|c| authorize(c.get(&url), key), None).await?;
            Ok(http
                .array(&models, "data")?
                .iter()
                .filter_map(model_from_entry)
                .collect())
        })
    }

    fn model_info(&self, model: &str) -> BoxFuture<'static, Result<ModelInfo, LlmError>> {
        let http = Arc::clone(&self.http);
        let model = model.to_string();
        Box::pin(async move {
            let key = http.key().ok_or_else(|| http.no_key(KEY_ENV))?;
            let url = http.url(&format!("/models/{model}"));
            let entry = http
                .json(|c| authorize(c.get(&url), key), Some(&model))
                .await?;
            model_from_entry(&entry).ok_or_else(|| {
                http.protocol(format!(
                    "a model without an id: {}",
                    snippet(&entry.to_string())
                ))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider_at(base_url: &str) -> AnthropicProvider {
        AnthropicProvider::new(ProviderConfig {
            kind: super::super::ProviderKind::Anthropic,
            name: "claude".into(),
            base_url: base_url.into(),
            api_keys: Vec::new(),
            api_key_env: None,
            connect_timeout: std::time::Duration::ZERO,
            idle_timeout: std::time::Duration::ZERO,
        })
    }

    #[test]
    fn messages_and_models_are_under_v1_whichever_way_the_url_is_given() {
        for base in [
            "https://api.anthropic.com",
            "https://api.anthropic.com/",
            "https://api.anthropic.com/v1",
            " https://api.anthropic.com/v1/ ",
            "",
        ] {
            let http = &provider_at(base).http;
            assert_eq!(
                http.url("/messages"),
                "https://api.anthropic.com/v1/messages",
                "{base:?}"
            );
            assert_eq!(
                http.url("/models?limit=1000"),
                "https://api.anthropic.com/v1/models?limit=1000",
                "{base:?}"
            );
        }
        // A proxy's path is kept, with /v1 after it.
        let proxied = provider_at("http://127.0.0.1:8080/anthropic");
        assert_eq!(
            proxied.http.url("/messages"),
            "http://127.0.0.1:8080/anthropic/v1/messages"
        );
    }

    fn feed(decoder: &mut MessagesDecoder, name: &str, data: Value) -> Vec<Item> {
        let mut out = Vec::new();
        let event = Event {
            event: name.into(),
            data: data.to_string(),
            ..Event::default()
        };
        decoder.frame(event, &mut out);
        out
    }

    #[test]
    fn events_become_text_usage_and_done() {
        let mut d = MessagesDecoder::new("Anthropic".into());
        let start = json!({"type":"message_start","message":{"usage":{"input_tokens":9,"cache_read_input_tokens":1,"output_tokens":1}}});
        assert!(feed(&mut d, "message_start", start).is_empty());
        let think = json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}});
        assert_eq!(
            feed(&mut d, "content_block_delta", think),
            vec![Ok(StreamEvent::Reasoning("hm".into()))]
        );
        let text = json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}});
        assert_eq!(
            feed(&mut d, "content_block_delta", text),
            vec![Ok(StreamEvent::Text("Hi".into()))]
        );
        assert!(feed(&mut d, "ping", json!({"type":"ping"})).is_empty());
        let delta = json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}});
        assert!(feed(&mut d, "message_delta", delta).is_empty());
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 4,
        };
        let done = Ok(StreamEvent::Done {
            finish_reason: Some("end_turn".into()),
        });
        let stop = feed(&mut d, "message_stop", json!({"type":"message_stop"}));
        assert_eq!(stop, vec![Ok(StreamEvent::Usage(usage)), done]);
    }

    #[test]
    fn tool_use_input_is_assembled() {
        let mut d = MessagesDecoder::new("Anthropic".into());
        let start = json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"read","input":{}}});
        assert!(feed(&mut d, "content_block_start", start).is_empty());
        for piece in ["{\"path\":", "\"a\"}"] {
            let delta = json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":piece}});
            assert!(feed(&mut d, "content_block_delta", delta).is_empty());
        }
        let call = ToolCall {
            id: Some("t1".into()),
            name: "read".into(),
            arguments: json!({"path":"a"}),
        };
        let stop = feed(
            &mut d,
            "content_block_stop",
            json!({"type":"content_block_stop","index":2}),
        );
        assert_eq!(stop, vec![Ok(StreamEvent::ToolCall(call))]);
    }

    #[test]
    fn system_messages_move_to_the_system_field() {
        use crate::llm::{ChatMessage, ChatRole};
        let request = ChatRequest {
            model: "claude".into(),
            messages: vec![
                ChatMessage::new(ChatRole::System, "a"),
                ChatMessage::new(ChatRole::System, "b"),
                ChatMessage::new(ChatRole::User, "hi"),
            ],
            max_output_tokens: None,
            context_window: None,
            temperature: None,
            tools: Vec::new(),
            reasoning_effort: None,
            estimate_scale: 1.0,
        };
        let body = chat_body(&request);
        assert_eq!(body["system"], "a\n\nb");
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(
            body["messages"],
            json!([{ "role": "user", "content": "hi" }])
        );
    }
}
