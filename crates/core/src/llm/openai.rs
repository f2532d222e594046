//! OpenAI-compatible chat completions (`POST /chat/completions`, SSE), which most local and
//! hosted servers speak: LM Studio, llama.cpp, vLLM, OpenRouter, Groq… api.openai.com itself
//! is sent through its Responses API (`super::responses`).

use std::sync::Arc;

use eventsource_stream::Event;
use futures_util::future::BoxFuture;
use reqwest::RequestBuilder;
use serde_json::{Value, json};

use super::framing::{Decode, Events, Item, drive, parse_frame, snippet};
use super::http::{Http, bearer};
use super::wire::is_reasoning_model;
use super::{
    ChatRequest, LlmError, ModelInfo, Provider, ProviderConfig, StreamEvent, ToolCall, Usage,
};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which of OpenAI's two chat APIs a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenaiApi {
    /// `POST /chat/completions`: every OpenAI-compatible server.
    ChatCompletions,
    /// `POST /responses`: OpenAI's own API.
    Responses,
}

impl OpenaiApi {
    /// Responses for api.openai.com, Chat Completions for every other server.
    pub fn for_base_url(base_url: &str) -> Self {
        let host = reqwest::Url::parse(base_url.trim())
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase));
        match host.as_deref() {
            Some("api.openai.com") => OpenaiApi::Responses,
            _ => OpenaiApi::ChatCompletions,
        }
    }
}

pub struct OpenaiProvider {
    http: Arc<Http>,
    api: OpenaiApi,
}

impl OpenaiProvider {
    /// The API chosen by the base URL ([`OpenaiApi::for_base_url`]).
    pub fn new(config: ProviderConfig) -> Self {
        let api = OpenaiApi::for_base_url(&config.base_url);
        OpenaiProvider::with_api(config, api)
    }

    pub fn with_api(config: ProviderConfig, api: OpenaiApi) -> Self {
        OpenaiProvider {
            http: Arc::new(Http::new(config)),
            api,
        }
    }
}

/// Local servers usually need no key, so a missing key is not an error here.
fn authorize(http: &Http, request: RequestBuilder) -> RequestBuilder {
    bearer(request, http.key())
}

fn chat_body(request: &ChatRequest) -> Value {
    let messages = super::wire::openai_messages(request);
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        // Without this, streamed replies carry no token counts.
        "stream_options": { "include_usage": true },
    });
    // Reasoning models refuse `max_tokens` and any temperature; they take an effort.
    let reasoning = is_reasoning_model(&request.model);
    let max_field = if reasoning {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    if let Some(max) = request.max_output_tokens {
        body[max_field] = json!(max);
    }
    match (reasoning, request.temperature, request.reasoning_effort) {
        (false, Some(temperature), _) => body["temperature"] = json!(temperature),
        (true, _, Some(effort)) => body["reasoning_effort"] = json!(effort.as_str()),
        _ => {}
    }
    if let Some(tools) = super::wire::function_tools(request) {
        body["tools"] = tools;
    }
    body
}

/// A tool call arrives in fragments keyed by `index`: id and name first, then pieces of
/// the JSON arguments.
#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
}

#[derive(Debug)]
struct ChatDecoder {
    provider: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    calls: Vec<PartialCall>,
}

impl ChatDecoder {
    fn new(provider: String) -> Self {
        ChatDecoder {
            provider,
            finish_reason: None,
            usage: None,
            calls: Vec::new(),
        }
    }

    fn flush_calls(&mut self, out: &mut Vec<Item>) {
        for call in self.calls.drain(..) {
            // Arguments that are not JSON are passed on as a string for the caller to judge.
            let arguments = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()));
            out.push(Ok(StreamEvent::ToolCall(ToolCall {
                id: call.id,
                name: call.name,
                arguments,
            })));
        }
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        self.flush_calls(out);
        if let Some(usage) = self.usage.take() {
            out.push(Ok(StreamEvent::Usage(usage)));
        }
        out.push(Ok(StreamEvent::Done {
            finish_reason: self.finish_reason.take(),
        }));
    }

    fn add_call_fragment(&mut self, fragment: &Value) {
        let index = fragment["index"].as_u64().unwrap_or(0);
        let position = match self.calls.iter().position(|c| c.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if let Some(id) = fragment["id"].as_str() {
            call.id = Some(id.to_string());
        }
        let function = &fragment["function"];
        if let Some(name) = function["name"].as_str() {
            call.name.push_str(name);
        }
        if let Some(arguments) = function["arguments"].as_str() {
            call.arguments.push_str(arguments);
        }
    }
}

impl Decode<Event> for ChatDecoder {
    fn frame(&mut self, event: Event, out: &mut Vec<Item>) {
        let data = event.data.trim();
        if data == "[DONE]" {
            return self.finish(out);
        }
        let json = match parse_frame(&self.provider, "an event", data) {
            Ok(json) => json,
            Err(err) => return out.push(Err(err)),
        };
        if event.event == "error" || json.get("error").is_some_and(|e| !e.is_null()) {
            let error = json.get("error").unwrap_or(&json);
            let message = error["message"]
                .as_str()
                .map_or_else(|| snippet(&error.to_string()), str::to_string);
            return out.push(Err(LlmError::Server {
                provider: self.provider.clone(),
                message,
            }));
        }
        // Usage comes in its own chunk (with empty `choices`) or, on some servers, repeated
        // in every chunk; keeping the last one and sending it before `Done` handles both.
        if let Some(usage) = json.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            });
        }
        let choice = &json["choices"][0];
        let delta = &choice["delta"];
        let reasoning = [&delta["reasoning_content"], &delta["reasoning"]]
            .into_iter()
            .find_map(|r| r.as_str().filter(|r| !r.is_empty()));
        if let Some(reasoning) = reasoning {
            out.push(Ok(StreamEvent::Reasoning(reasoning.to_string())));
        }
        if let Some(content) = delta["content"].as_str().filter(|c| !c.is_empty()) {
            out.push(Ok(StreamEvent::Text(content.to_string())));
        }
        for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
            self.add_call_fragment(fragment);
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
            self.flush_calls(out);
        }
    }

    fn end(&mut self, out: &mut Vec<Item>) {
        // Some servers close without `[DONE]`; a finish reason shows the reply was complete.
        if self.finish_reason.is_some() {
            self.finish(out);
        }
    }
}

/// Servers that report a context length use different names for it.
fn model_from_entry(entry: &Value) -> Option<ModelInfo> {
    let id = entry["id"].as_str()?;
    let context_length = ["context_length", "max_model_len", "context_window"]
        .iter()
        .find_map(|key| entry[*key].as_u64())
        .and_then(|n| u32::try_from(n).ok());
    Some(ModelInfo {
        id: id.to_string(),
        context_length,
        context_source: context_length.map(|_| "/models".to_string()),
        ..ModelInfo::default()
    })
}

/// `path` at the server's root, beside `/v1` (where llama.cpp and LM Studio answer).
fn root_url(http: &Http, path: &str) -> String {
    let base = http.config.base_url.trim_end_matches('/');
    format!("{}{path}", base.strip_suffix("/v1").unwrap_or(base))
}

/// The window (and vision) from servers that tell it outside `/models`: llama.cpp's `/props`
/// (`n_ctx` of the loaded model) and LM Studio's `/api/v0/models/{id}` (the loaded context
/// length, else the model's maximum). `None` when neither answers.
async fn window_elsewhere(http: &Http, model: &str) -> Option<ModelInfo> {
    let get = |url: String| async move {
        let response = http
            .send(|c| authorize(http, c.get(&url)), None, false)
            .await;
        http.read_json(response.ok()?).await.ok()
    };
    if let Some(props) = get(root_url(http, "/props")).await {
        let n_ctx = props["default_generation_settings"]["n_ctx"]
            .as_u64()
            .or_else(|| props["n_ctx"].as_u64())
            .and_then(|n| u32::try_from(n).ok());
        if let Some(n_ctx) = n_ctx {
            return Some(ModelInfo {
                id: model.to_string(),
                context_length: Some(n_ctx),
                supports_images: props["modalities"]["vision"].as_bool().unwrap_or(false),
                context_source: Some("/props".into()),
                ..ModelInfo::default()
            });
        }
    }
    let lm = get(root_url(http, &format!("/api/v0/models/{model}"))).await?;
    let window = ["loaded_context_length", "max_context_length"]
        .iter()
        .find_map(|k| lm[*k].as_u64())
        .and_then(|n| u32::try_from(n).ok())?;
    Some(ModelInfo {
        id: model.to_string(),
        context_length: Some(window),
        supports_images: lm["type"].as_str() == Some("vlm"),
        supports_tools: lm["capabilities"]
            .as_array()
            .is_some_and(|c| c.iter().any(|v| v.as_str() == Some("tool_use"))),
        context_source: Some("/api/v0/models".into()),
        ..ModelInfo::default()
    })
}

async fn list(http: Arc<Http>) -> Result<Vec<ModelInfo>, LlmError> {
    let url = http.url("/models");
    let models = http.json(|c| authorize(&http, c.get(&url)), None).await?;
    Ok(http
        .array(&models, "data")?
        .iter()
        .filter_map(model_from_entry)
        .collect())
}

impl Provider for OpenaiProvider {
    fn config(&self) -> &ProviderConfig {
        &self.http.config
    }

    fn stream(&self, request: ChatRequest) -> Events {
        let http = Arc::clone(&self.http);
        if self.api == OpenaiApi::Responses {
            return super::responses::stream(http, request);
        }
        let provider = http.name().to_string();
        let decoder = ChatDecoder::new(provider.clone());
        let start = async move {
            let url = http.url("/chat/completions");
            let body = chat_body(&request);
            let model = Some(request.model.as_str());
            let response = http.post_bearer(&url, &body, model).await?;
            http.event_stream(response).await
        };
        drive(start, decoder, provider)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<ModelInfo>, LlmError>> {
        Box::pin(list(Arc::clone(&self.http)))
    }

    fn model_info(&self, model: &str) -> BoxFuture<'static, Result<ModelInfo, LlmError>> {
        let http = Arc::clone(&self.http);
        let model = model.to_string();
        Box::pin(async move {
            let bare = ModelInfo {
                id: model.clone(),
                ..ModelInfo::default()
            };
            let listed = match list(Arc::clone(&http)).await {
                Ok(models) => models.into_iter().find(|m| m.id == model).unwrap_or(bare),
                // Some compatible servers have no model list; the model may still work.
                Err(LlmError::Http { status: 404, .. }) => bare,
                Err(err) => return Err(err),
            };
            if listed.context_length.is_some() {
                return Ok(listed);
            }
            Ok(window_elsewhere(&http, &model).await.unwrap_or(listed))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut ChatDecoder, data: &str) -> Vec<Item> {
        let mut out = Vec::new();
        let event = Event {
            event: "message".into(),
            data: data.into(),
            ..Event::default()
        };
        decoder.frame(event, &mut out);
        out
    }

    #[test]
    fn chunks_become_events_and_done_comes_once() {
        let mut d = ChatDecoder::new("OpenAI".into());
        let r = feed(
            &mut d,
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
        );
        assert_eq!(r, vec![Ok(StreamEvent::Reasoning("think".into()))]);
        let r = feed(
            &mut d,
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        );
        assert_eq!(r, vec![Ok(StreamEvent::Text("Hi".into()))]);
        assert!(
            feed(
                &mut d,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#
            )
            .is_empty()
        );
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
        assert!(feed(&mut d, usage).is_empty());
        let done = feed(&mut d, "[DONE]");
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 1,
        };
        let expected = vec![
            Ok(StreamEvent::Usage(usage)),
            Ok(StreamEvent::Done {
                finish_reason: Some("stop".into()),
            }),
        ];
        assert_eq!(done, expected);
    }

    #[test]
    fn tool_call_fragments_are_joined() {
        let mut d = ChatDecoder::new("OpenAI".into());
        let first = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#;
        assert!(feed(&mut d, first).is_empty());
        let second = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]},"finish_reason":"tool_calls"}]}"#;
        let calls = feed(&mut d, second);
        let call = ToolCall {
            id: Some("c1".into()),
            name: "read".into(),
            arguments: json!({ "path": "a" }),
        };
        assert_eq!(calls, vec![Ok(StreamEvent::ToolCall(call))]);
    }

    #[test]
    fn openai_itself_gets_responses_and_reasoning_models_their_limits() {
        let api = OpenaiApi::for_base_url;
        assert_eq!(api("https://api.openai.com/v1"), OpenaiApi::Responses);
        assert_eq!(api("https://API.OpenAI.com/v1/"), OpenaiApi::Responses);
        assert_eq!(api("http://localhost:1234/v1"), OpenaiApi::ChatCompletions);
        assert_eq!(
            api("https://openrouter.ai/api/v1"),
            OpenaiApi::ChatCompletions
        );
        for model in [
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "openai/o3",
            "gpt-5-mini",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in [
            "gpt-4.1",
            "gpt-4o-mini",
            "gpt-5-chat-latest",
            "o1x",
            "llama3",
        ] {
            assert!(!is_reasoning_model(model), "{model}");
        }
        let mut request = ChatRequest {
            model: "o3-mini".into(),
            messages: Vec::new(),
            max_output_tokens: Some(500),
            context_window: None,
            temperature: Some(0.5),
            tools: Vec::new(),
            reasoning_effort: Some(super::super::ReasoningEffort::Low),
            estimate_scale: 1.0,
        };
        let body = chat_body(&request);
        assert_eq!(body["max_completion_tokens"], 500);
        assert_eq!(body["reasoning_effort"], "low");
        assert!(body.get("max_tokens").is_none() && body.get("temperature").is_none());
        request.model = "gpt-4o".into();
        let body = chat_body(&request);
        assert_eq!(body["max_tokens"], 500);
        assert!(body.get("reasoning_effort").is_none());
    }

    #[test]
    fn models_report_context_under_any_known_name() {
        let vllm = model_from_entry(&json!({ "id": "q", "max_model_len": 32768 }));
        assert_eq!(vllm.and_then(|m| m.context_length), Some(32768));
        assert!(model_from_entry(&json!({ "object": "model" })).is_none());
    }
}
