//! Google's Gemini API: `POST /models/{model}:streamGenerateContent?alt=sse`.
//!
//! Free-tier keys run out of quota quickly: with several keys, one rate limited before the
//! reply starts is swapped for the next (as for every kind, see `Http::send_keyed`).

use std::sync::Arc;

use eventsource_stream::Event;
use futures_util::future::BoxFuture;
use reqwest::{Client, RequestBuilder, Response};
use serde_json::{Value, json};

use super::framing::{Decode, Events, Item, drive, parse_frame, snippet};
use super::http::Http;
use super::{
    ChatRequest, LlmError, ModelInfo, Provider, ProviderConfig, StreamEvent, ToolCall, Usage,
};

pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
const KEY_ENV: &str = "GEMINI_API_KEY";

pub struct GeminiProvider {
    http: Arc<Http>,
}

impl GeminiProvider {
    pub fn new(config: ProviderConfig) -> Self {
        GeminiProvider {
            http: Arc::new(Http::new(config)),
        }
    }
}

/// Every request needs a key: sent with the one in use, rotating on quota errors.
async fn send_keyed<F>(http: &Http, make: F, model: Option<&str>) -> Result<Response, LlmError>
where
    F: Fn(&Client, &str) -> RequestBuilder,
{
    let make = |c: &Client, key: Option<&str>| make(c, key.unwrap_or_default());
    http.send_keyed(make, model, Some(KEY_ENV)).await
}

fn authorize(request: RequestBuilder, key: &str) -> RequestBuilder {
    request.header("x-goog-api-key", key)
}

/// Model ids are used bare; the API's own listings prefix them with `models/`.
fn bare_model(model: &str) -> &str {
    model.strip_prefix("models/").unwrap_or(model)
}

fn chat_body(request: &ChatRequest) -> Value {
    let system = request.system_texts();
    let contents = super::wire::gemini_contents(request);
    let mut body = json!({ "contents": contents });
    if let Some(tools) = super::wire::gemini_tools(request) {
        body["tools"] = tools;
    }
    if !system.is_empty() {
        body["systemInstruction"] = json!({ "parts": [{ "text": system.join("\n\n") }] });
    }
    let mut config = serde_json::Map::new();
    if let Some(max) = request.max_output_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = request.temperature {
        config.insert("temperature".into(), json!(temperature));
    }
    if !config.is_empty() {
        body["generationConfig"] = Value::Object(config);
    }
    body
}

#[derive(Debug)]
struct GenerateDecoder {
    provider: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl GenerateDecoder {
    fn new(provider: String) -> Self {
        GenerateDecoder {
            provider,
            finish_reason: None,
            usage: None,
        }
    }

    fn error(&self, error: &Value) -> LlmError {
        let provider = self.provider.clone();
        let message = error["message"]
            .as_str()
            .map_or_else(|| snippet(&error.to_string()), str::to_string);
        if error["status"] == "RESOURCE_EXHAUSTED" || error["code"] == 429 {
            return LlmError::RateLimited {
                provider,
                status: 429,
                message,
            };
        }
        LlmError::Server { provider, message }
    }
}

impl Decode<Event> for GenerateDecoder {
    fn frame(&mut self, event: Event, out: &mut Vec<Item>) {
        let json = match parse_frame(&self.provider, "an event", &event.data) {
            Ok(json) => json,
            Err(err) => return out.push(Err(err)),
        };
        if let Some(error) = json.get("error") {
            return out.push(Err(self.error(error)));
        }
        if let Some(reason) = json["promptFeedback"]["blockReason"].as_str() {
            return out.push(Err(LlmError::Server {
                provider: self.provider.clone(),
                message: format!("the prompt was blocked ({reason}); rephrase it"),
            }));
        }
        if let Some(usage) = json.get("usageMetadata") {
            // Thinking tokens are billed and counted as output.
            let output = ["candidatesTokenCount", "thoughtsTokenCount"]
                .iter()
                .filter_map(|k| usage[*k].as_u64())
                .sum();
            self.usage = Some(Usage {
                input_tokens: usage["promptTokenCount"].as_u64().unwrap_or(0),
                output_tokens: output,
            });
        }
        let candidate = &json["candidates"][0];
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(text) = part["text"].as_str().filter(|t| !t.is_empty()) {
                let text = text.to_string();
                out.push(Ok(if part["thought"] == true {
                    StreamEvent::Reasoning(text)
                } else {
                    StreamEvent::Text(text)
                }));
            }
            if let Some(call) = part.get("functionCall") {
                out.push(Ok(StreamEvent::ToolCall(ToolCall {
                    id: call["id"].as_str().map(str::to_string),
                    name: call["name"].as_str().unwrap_or_default().to_string(),
                    arguments: call["args"].clone(),
                })));
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
    }

    fn end(&mut self, out: &mut Vec<Item>) {
        // Gemini has no end marker: the stream closes after the chunk with `finishReason`.
        if self.finish_reason.is_some() {
            if let Some(usage) = self.usage.take() {
                out.push(Ok(StreamEvent::Usage(usage)));
            }
            out.push(Ok(StreamEvent::Done {
                finish_reason: self.finish_reason.take(),
            }));
        }
    }
}

fn model_from_entry(entry: &Value) -> Option<ModelInfo> {
    let id = bare_model(entry["name"].as_str()?).to_string();
    Some(ModelInfo {
        id,
        context_length: entry["inputTokenLimit"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok()),
        supports_reasoning: entry["thinking"] == true,
        ..ModelInfo::default()
    })
}

/// Embedding and other non-chat models are left out of the list.
fn can_chat(entry: &Value) -> bool {
    match entry["supportedGenerationMethods"].as_array() {
        Some(methods) => methods.iter().any(|m| m == "generateContent"),
        None => true,
    }
}

impl Provider for GeminiProvider {
    fn config(&self) -> &ProviderConfig {
        &self.http.config
    }

    fn stream(&self, request: ChatRequest) -> Events {
        let http = Arc::clone(&self.http);
        let provider = self.http.name().to_string();
        let decoder = GenerateDecoder::new(provider.clone());
        let start = async move {
            let model = bare_model(&request.model);
            let path = format!("/models/{model}:streamGenerateContent?alt=sse");
            let url = http.url(&path);
            let body = chat_body(&request);
            let make = |c: &Client, key: &str| authorize(c.post(&url).json(&body), key);
            let response = send_keyed(&http, make, Some(model)).await?;
            http.event_stream(response).await
        };
        drive(start, decoder, provider)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<ModelInfo>, LlmError>> {
        let http = Arc::clone(&self.http);
        Box::pin(async move {
            let url = http.url("/models?pageSize=1000");
            let response = send_keyed(&http, |c, key| authorize(c.get(&url), key), None).await?;
            let models = http.read_json(response).await?;
            Ok(http
                .array(&models, "models")?
                .iter()
                .filter(|entry| can_chat(entry))
                .filter_map(model_from_entry)
                .collect())
        })
    }

    fn model_info(&self, model: &str) -> BoxFuture<'static, Result<ModelInfo, LlmError>> {
        let http = Arc::clone(&self.http);
        let model = bare_model(model).to_string();
        Box::pin(async move {
            let url = http.url(&format!("/models/{model}"));
            let make = |c: &Client, key: &str| authorize(c.get(&url), key);
            let response = send_keyed(&http, make, Some(&model)).await?;
            let entry = http.read_json(response).await?;
            model_from_entry(&entry).ok_or_else(|| {
                let shown = snippet(&entry.to_string());
                http.protocol(format!("a model without a name: {shown}"))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ChatRole};

    fn feed(decoder: &mut GenerateDecoder, data: Value) -> Vec<Item> {
        let mut out = Vec::new();
        let event = Event {
            event: "message".into(),
            data: data.to_string(),
            ..Event::default()
        };
        decoder.frame(event, &mut out);
        out
    }

    #[test]
    fn parts_become_events_and_done_waits_for_the_end() {
        let mut d = GenerateDecoder::new("Gemini".into());
        let first = json!({"candidates":[{"content":{"role":"model","parts":[{"text":"plan","thought":true},{"text":"Hi"}]}}]});
        let expected = vec![
            Ok(StreamEvent::Reasoning("plan".into())),
            Ok(StreamEvent::Text("Hi".into())),
        ];
        assert_eq!(feed(&mut d, first), expected);
        let last = json!({"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2}});
        assert_eq!(feed(&mut d, last), vec![Ok(StreamEvent::Text("!".into()))]);
        let mut out = Vec::new();
        d.end(&mut out);
        let usage = Usage {
            input_tokens: 4,
            output_tokens: 2,
        };
        let done = Ok(StreamEvent::Done {
            finish_reason: Some("STOP".into()),
        });
        assert_eq!(out, vec![Ok(StreamEvent::Usage(usage)), done]);
    }

    #[test]
    fn roles_and_system_instruction() {
        let request = ChatRequest {
            model: "models/gemini-x".into(),
            messages: vec![
                ChatMessage::new(ChatRole::System, "be brief"),
                ChatMessage::new(ChatRole::User, "hi"),
                ChatMessage::new(ChatRole::Assistant, "hello"),
            ],
            max_output_tokens: Some(50),
            context_window: None,
            temperature: None,
            tools: Vec::new(),
            reasoning_effort: None,
            estimate_scale: 1.0,
        };
        let body = chat_body(&request);
        assert_eq!(
            body["systemInstruction"],
            json!({"parts":[{"text":"be brief"}]})
        );
        assert_eq!(body["contents"][1]["role"], "model");
        assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 50}));
        assert_eq!(bare_model(&request.model), "gemini-x");
    }
}
