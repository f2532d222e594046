//! Ollama's native API: `POST /api/chat` streaming NDJSON, `GET /api/tags`, `POST /api/show`.
//!
//! The native API (not Ollama's OpenAI-compatible one) is used because only it takes
//! `options.num_ctx`; without it Ollama silently truncates long prompts.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::framing::{Decode, Events, Item, drive, parse_frame};
use super::http::Http;
use super::{
    ChatRequest, LlmError, ModelInfo, Provider, ProviderConfig, StreamEvent, ToolCall, Usage,
};

const DEFAULT_HOST: &str = "http://localhost:11434";
const DEFAULT_PORT: &str = "11434";

/// Where Ollama listens: `ollama_host` (the value of `OLLAMA_HOST`, as the Ollama CLI reads
/// it) when set, else `http://localhost:11434`.
pub fn default_base_url(ollama_host: Option<&str>) -> String {
    match ollama_host {
        Some(host) => base_url_from_host(host),
        None => DEFAULT_HOST.to_string(),
    }
}

/// Turns an `OLLAMA_HOST` value into a URL. It may be `host`, `host:port`, `:port` or a full
/// URL; a wildcard bind address (`0.0.0.0`, `::`) is where the server listens, not an
/// address to connect to, so loopback is used instead. Without a scheme the port defaults
/// to 11434; with one, to the scheme's port.
pub(crate) fn base_url_from_host(value: &str) -> String {
    let value = value.trim().trim_end_matches('/');
    if value.is_empty() {
        return DEFAULT_HOST.to_string();
    }
    let (scheme, rest, default_port) = match value.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => ("https", rest, "443"),
        Some((_, rest)) => ("http", rest, "80"),
        None => ("http", value, DEFAULT_PORT),
    };
    let (host_port, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let (host, port) = split_host_port(host_port);
    let host = match host {
        "" | "0.0.0.0" => "127.0.0.1",
        "[::]" => "[::1]",
        other => other,
    };
    format!("{scheme}://{host}:{}{path}", port.unwrap_or(default_port))
}

/// `host:port`, `[v6]:port`, `host`, or a bare IPv6 address (bracketed on return).
fn split_host_port(text: &str) -> (&str, Option<&str>) {
    if text.starts_with('[')
        && let Some(close) = text.find(']')
    {
        let port = text[close + 1..]
            .strip_prefix(':')
            .filter(|p| !p.is_empty());
        return (&text[..=close], port);
    }
    if text.matches(':').count() > 1 {
        // A bare IPv6 address has no room for a port; "::" is the wildcard.
        return (if text == "::" { "[::]" } else { text }, None);
    }
    match text.split_once(':') {
        Some((host, port)) if !port.is_empty() => (host, Some(port)),
        Some((host, _)) => (host, None),
        None => (text, None),
    }
}

pub struct OllamaProvider {
    http: Arc<Http>,
}

impl OllamaProvider {
    pub fn new(config: ProviderConfig) -> Self {
        OllamaProvider {
            http: Arc::new(Http::new(config)),
        }
    }
}

fn chat_body(request: &ChatRequest) -> Value {
    let messages = super::wire::ollama_messages(request);
    let mut options = Map::new();
    if let Some(num_ctx) = request.num_ctx() {
        options.insert("num_ctx".into(), json!(num_ctx));
    }
    if let Some(temperature) = request.temperature {
        options.insert("temperature".into(), json!(temperature));
    }
    if let Some(num_predict) = request.max_output_tokens {
        options.insert("num_predict".into(), json!(num_predict));
    }
    let mut body = json!({ "model": request.model, "messages": messages, "stream": true });
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    if let Some(tools) = super::wire::function_tools(request) {
        body["tools"] = tools;
    }
    body
}

/// One NDJSON line per piece; the last (`"done": true`) carries the token counts.
struct ChatDecoder {
    provider: String,
}

impl Decode<String> for ChatDecoder {
    fn frame(&mut self, line: String, out: &mut Vec<Item>) {
        let json = match parse_frame(&self.provider, "a line", &line) {
            Ok(json) => json,
            Err(err) => return out.push(Err(err)),
        };
        if let Some(error) = json.get("error") {
            let message = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return out.push(Err(LlmError::Server {
                provider: self.provider.clone(),
                message,
            }));
        }
        let message = &json["message"];
        if let Some(thinking) = message["thinking"].as_str().filter(|t| !t.is_empty()) {
            out.push(Ok(StreamEvent::Reasoning(thinking.to_string())));
        }
        if let Some(content) = message["content"].as_str().filter(|t| !t.is_empty()) {
            out.push(Ok(StreamEvent::Text(content.to_string())));
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let function = &call["function"];
            out.push(Ok(StreamEvent::ToolCall(ToolCall {
                id: call["id"].as_str().map(str::to_string),
                name: function["name"].as_str().unwrap_or_default().to_string(),
                arguments: function["arguments"].clone(),
            })));
        }
        if json["done"].as_bool() == Some(true) {
            out.push(Ok(StreamEvent::Usage(Usage {
                input_tokens: json["prompt_eval_count"].as_u64().unwrap_or(0),
                output_tokens: json["eval_count"].as_u64().unwrap_or(0),
            })));
            out.push(Ok(StreamEvent::Done {
                finish_reason: json["done_reason"].as_str().map(str::to_string),
            }));
        }
    }

    fn end(&mut self, _out: &mut Vec<Item>) {
        // Without the `done` line the reply was cut short; the driver reports that.
    }
}

/// Model details from `/api/show`: the context length sits under an architecture-specific
/// key (`llama.context_length`, `qwen2.context_length`…).
fn model_info_from_show(model: &str, show: &Value) -> ModelInfo {
    let context_length = show["model_info"].as_object().and_then(|info| {
        info.iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, value)| value.as_u64())
            .and_then(|n| u32::try_from(n).ok())
    });
    let capabilities: Vec<&str> = show["capabilities"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    ModelInfo {
        id: model.to_string(),
        context_length,
        supports_tools: capabilities.contains(&"tools"),
        supports_images: capabilities.contains(&"vision"),
        supports_reasoning: capabilities.contains(&"thinking"),
        context_source: context_length.map(|_| "/api/show".to_string()),
    }
}

impl Provider for OllamaProvider {
    fn config(&self) -> &ProviderConfig {
        &self.http.config
    }

    fn stream(&self, request: ChatRequest) -> Events {
        let http = Arc::clone(&self.http);
        let provider = http.name().to_string();
        let decoder = ChatDecoder {
            provider: provider.clone(),
        };
        let start = async move {
            let url = http.url("/api/chat");
            let body = chat_body(&request);
            let model = Some(request.model.as_str());
            // A key is only sent when one is configured (a proxy in front of Ollama).
            let response = http.post_bearer(&url, &body, model).await?;
            Ok(http.ndjson(response))
        };
        drive(start, decoder, provider)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<ModelInfo>, LlmError>> {
        let http = Arc::clone(&self.http);
        Box::pin(async move {
            let url = http.url("/api/tags");
            let tags = http.json(|c| c.get(&url), None).await?;
            Ok(http
                .array(&tags, "models")?
                .iter()
                .filter_map(|m| m["name"].as_str())
                .map(|name| ModelInfo {
                    id: name.to_string(),
                    ..ModelInfo::default()
                })
                .collect())
        })
    }

    fn model_info(&self, model: &str) -> BoxFuture<'static, Result<ModelInfo, LlmError>> {
        let http = Arc::clone(&self.http);
        let model = model.to_string();
        Box::pin(async move {
            let url = http.url("/api/show");
            let body = json!({ "model": model });
            let show = http
                .json(|c| c.post(&url).json(&body), Some(&model))
                .await?;
            Ok(model_info_from_show(&model, &show))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ChatRole};

    #[test]
    fn ollama_host_values_become_urls() {
        let cases = [
            ("", "http://localhost:11434"),
            ("0.0.0.0:11434", "http://127.0.0.1:11434"),
            ("0.0.0.0", "http://127.0.0.1:11434"),
            (":8080", "http://127.0.0.1:8080"),
            ("gpu-box:9000", "http://gpu-box:9000"),
            ("gpu-box", "http://gpu-box:11434"),
            ("http://gpu-box:9000/", "http://gpu-box:9000"),
            (
                "https://ollama.example.com",
                "https://ollama.example.com:443",
            ),
            ("http://example.com/ollama", "http://example.com:80/ollama"),
            ("[::]:11434", "http://[::1]:11434"),
            ("::", "http://[::1]:11434"),
            ("[fe80::1]", "http://[fe80::1]:11434"),
        ];
        for (value, url) in cases {
            assert_eq!(base_url_from_host(value), url, "OLLAMA_HOST={value:?}");
        }
    }

    #[test]
    fn body_omits_absent_options() {
        let mut request = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::new(ChatRole::User, "hi")],
            max_output_tokens: None,
            context_window: None,
            temperature: None,
            tools: Vec::new(),
            reasoning_effort: None,
            estimate_scale: 1.0,
        };
        assert!(chat_body(&request).get("options").is_none());
        request.context_window = Some(8192);
        request.max_output_tokens = Some(100);
        let body = chat_body(&request);
        assert_eq!(
            body["options"],
            json!({ "num_ctx": 1024, "num_predict": 100 })
        );
        assert_eq!(
            body["messages"],
            json!([{ "role": "user", "content": "hi" }])
        );
    }

    #[test]
    fn lines_become_events() {
        let mut decoder = ChatDecoder {
            provider: "Ollama".into(),
        };
        let mut out = Vec::new();
        let lines = [
            r#"{"message":{"role":"assistant","content":"","thinking":"hmm"},"done":false}"#,
            r#"{"message":{"role":"assistant","content":"Hi"},"done":false}"#,
            r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":2}"#,
        ];
        for line in lines {
            decoder.frame(line.to_string(), &mut out);
        }
        let expected = vec![
            Ok(StreamEvent::Reasoning("hmm".into())),
            Ok(StreamEvent::Text("Hi".into())),
            Ok(StreamEvent::Usage(Usage {
                input_tokens: 5,
                output_tokens: 2,
            })),
            Ok(StreamEvent::Done {
                finish_reason: Some("stop".into()),
            }),
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn show_reports_context_and_capabilities() {
        let show = json!({
            "model_info": { "general.architecture": "qwen3", "qwen3.context_length": 40960 },
            "capabilities": ["completion", "tools", "thinking"]
        });
        let info = model_info_from_show("qwen3", &show);
        assert_eq!(info.context_length, Some(40960));
        assert!(info.supports_tools && info.supports_reasoning && !info.supports_images);
    }
}
