//! Model providers: one trait for streaming a chat request, with an implementation per wire
//! format (Ollama's NDJSON, OpenAI-compatible SSE, Anthropic Messages SSE, Gemini SSE).
//!
//! A provider turns a [`ChatRequest`] into a stream of [`StreamEvent`]s. Dropping the stream
//! aborts the HTTP request: that is how a turn is cancelled.

use std::sync::Arc;
use std::time::Duration;

pub mod anthropic;
mod failures;
mod framing;
pub mod gemini;
mod http;
pub mod ollama;
pub mod openai;
mod responses;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::tokens;

pub mod secrets;
mod window;
mod wire;

pub use http::key_in_use;
pub use window::{estimate_tokens, fitting, reply_reserve_for};

/// Default idle time allowed between two chunks of a streaming reply.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Environment variable overriding the idle timeout, in seconds.
pub const IDLE_TIMEOUT_ENV: &str = "TANDEM_IDLE_TIMEOUT_SECS";
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Ollama,
    /// Any OpenAI-compatible chat-completions server (OpenAI, LM Studio, llama.cpp, vLLM,
    /// OpenRouter, DeepSeek, Groq…).
    Openai,
    Anthropic,
    Gemini,
    /// The Codex CLI, run as an agent in a scratch copy of the project (`crate::cli_agents`).
    Codex,
    /// Claude Code (`claude -p`), run the same way.
    #[serde(rename = "claude-code")]
    ClaudeCode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
    /// The result of a tool call, answering an assistant message's `tool_calls`.
    Tool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
    /// Assistant messages: the tool calls the model made in this turn (native tool calling).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages: the id of the call this answers (OpenAI `tool_call_id`, Anthropic
    /// `tool_use_id`); `None` when the provider gave the call no id (Ollama).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool messages: the tool's name (Gemini's `functionResponse` and Ollama need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// User messages: images sent with the text, in each API's own shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageData>,
}

/// An image as sent: its media type and its bytes in base64 (encoded once, shared).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageData {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: String,
    pub base64: std::sync::Arc<str>,
}

impl ImageData {
    pub fn new(mime: &str, bytes: &[u8]) -> Self {
        use base64::Engine as _;
        ImageData {
            mime: mime.to_string(),
            base64: base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into(),
        }
    }

    /// A `data:` URL (OpenAI-compatible `image_url`).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64)
    }
}

impl ChatMessage {
    /// Tokens this message takes as sent: its text, its tool calls and the framing.
    pub fn estimated_tokens(&self) -> usize {
        let calls: usize = self
            .tool_calls
            .iter()
            .map(|c| tokens::estimate(&c.name) + tokens::estimate(&c.arguments.to_string()))
            .sum();
        tokens::estimate(&self.content)
            + calls
            + self.images.len() * tokens::IMAGE_TOKENS
            + tokens::MESSAGE_OVERHEAD
    }

    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            images: Vec::new(),
        }
    }

    /// An assistant turn that called tools (its text may be empty).
    pub fn assistant_with_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            tool_calls: calls,
            ..ChatMessage::new(ChatRole::Assistant, content)
        }
    }

    /// A tool's result, answering `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Self {
        ChatMessage {
            tool_call_id: call.id.clone(),
            tool_name: Some(call.name.clone()),
            ..ChatMessage::new(ChatRole::Tool, content)
        }
    }
}

/// A tool the model may call (native tool calling): name, what it does, and its parameters as
/// a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// One request: the whole conversation to send, system prompt first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    pub model: String,
    /// System messages (if any) first, then the conversation, ending with the user's prompt.
    pub messages: Vec<ChatMessage>,
    /// Upper bound for the reply's tokens (Anthropic requires one; others may omit it).
    pub max_output_tokens: Option<u32>,
    /// The model's whole context window, when known. Servers that must be told how much
    /// context to allocate (Ollama's `options.num_ctx`, which otherwise keeps the tail of a
    /// long prompt without a word) get [`ChatRequest::num_ctx`]: this request plus its reply,
    /// sized for each request, never over this.
    pub context_window: Option<u32>,
    pub temperature: Option<f32>,
    /// Tools offered for native tool calling; empty sends none.
    pub tools: Vec<ToolSpec>,
    /// How hard a reasoning model thinks, where the API takes it (OpenAI's reasoning
    /// models); `None` leaves the server's default.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// What Tandem's token estimates of this request are multiplied by to count as the
    /// model's server does (see [`crate::store::ModelProfile::estimate_scale`]); 1 when it
    /// never counted more.
    #[serde(skip)]
    pub estimate_scale: f64,
}

/// How much a reasoning model may think before answering (OpenAI's `reasoning.effort` /
/// `reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub const ALL: [ReasoningEffort; 4] = [
        ReasoningEffort::Minimal,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        ReasoningEffort::ALL
            .into_iter()
            .find(|e| e.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| {
                format!("{text:?} is not a reasoning effort (minimal, low, medium, high)")
            })
    }
}

impl std::fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ChatRequest {
    /// The system messages' texts, for APIs that take the system prompt outside the
    /// conversation (Anthropic, Gemini).
    pub fn system_texts(&self) -> Vec<&str> {
        self.messages
            .iter()
            .filter(|m| m.role == ChatRole::System)
            .map(|m| m.content.as_str())
            .collect()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A tool call requested by the model (used by agent mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: Option<String>,
    pub name: String,
    pub arguments: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    ToolCall(ToolCall),
    Usage(Usage),
    /// The reply ended normally; `finish_reason` as the provider named it (`stop`, `length`…).
    Done {
        finish_reason: Option<String>,
    },
}

/// What a model can do, as far as its provider tells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    pub context_length: Option<u32>,
    pub supports_tools: bool,
    pub supports_images: bool,
    pub supports_reasoning: bool,
    /// Where the context length came from (`/api/show`, `/props`, `/models`…), when known.
    #[serde(default)]
    pub context_source: Option<String>,
}

/// Errors a person can act on; each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("Ollama is not running at {url} — start it with `ollama serve`")]
    OllamaNotRunning { url: String },
    #[error("cannot connect to {url}: {message}")]
    Connect { url: String, message: String },
    #[error("model {model} is not pulled: `ollama pull {model}`")]
    ModelNotPulled { model: String },
    #[error("{provider} does not know the model {model}: {message}")]
    UnknownModel {
        provider: String,
        model: String,
        message: String,
    },
    #[error("{provider} rejected the API key (HTTP {status}); check the key in settings")]
    KeyRejected { provider: String, status: u16 },
    #[error("{provider} has no API key: set {env} or store a key in settings")]
    NoApiKey { provider: String, env: String },
    #[error("the model does not support this request: {0}")]
    Unsupported(String),
    #[error("{provider} is rate limiting or out of quota (HTTP {status}): {message}")]
    RateLimited {
        provider: String,
        status: u16,
        message: String,
    },
    /// The server refused the request as longer than the model's window, before any reply.
    #[error("{provider} refused the request as longer than the model's window{}: {message}",
        counted.map(|n| format!(" (it counted {n} prompt tokens)")).unwrap_or_default())]
    TooLong {
        provider: String,
        /// The prompt tokens the server counted, when its message says.
        counted: Option<u64>,
        message: String,
    },
    #[error("{provider} answered HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },
    #[error(
        "no data from {provider} for {secs} s; the connection was given up (set {IDLE_TIMEOUT_ENV} to wait longer)"
    )]
    IdleTimeout { provider: String, secs: u64 },
    #[error("the connection to {provider} broke mid-reply: {message}")]
    Disconnected { provider: String, message: String },
    #[error("{provider} sent something Tandem cannot read: {message}")]
    Protocol { provider: String, message: String },
    /// The server reported an error inside a reply it had already started (an error line
    /// or event); not retried, since part of the reply may have been shown.
    #[error("{provider} reported an error mid-reply: {message}")]
    Server { provider: String, message: String },
}

impl LlmError {
    /// The prompt tokens the server counted when it refused the request as too long.
    pub fn counted_prompt(&self) -> Option<u64> {
        match self {
            LlmError::TooLong { counted, .. } => *counted,
            _ => None,
        }
    }
}

/// A configured provider, as the chat turn needs it.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// The name shown to the person (and used in error messages).
    pub name: String,
    /// e.g. `http://localhost:11434`, `https://api.openai.com/v1`.
    pub base_url: String,
    /// Keys to use, in order; Gemini rotates to the next on 429/quota errors.
    pub api_keys: Vec<String>,
    /// The environment variable a key is expected in (for error messages).
    pub api_key_env: Option<String>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
}

pub trait Provider: Send + Sync {
    fn config(&self) -> &ProviderConfig;
    /// Streams one reply. The stream ends after `Done` or an error; dropping it cancels.
    fn stream(&self, request: ChatRequest) -> BoxStream<'static, Result<StreamEvent, LlmError>>;
    /// The models the provider serves now.
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<ModelInfo>, LlmError>>;
    /// One model's context length and capabilities.
    fn model_info(&self, model: &str) -> BoxFuture<'static, Result<ModelInfo, LlmError>>;
}

/// The idle timeout: `env_value` (of `TANDEM_IDLE_TIMEOUT_SECS`) when it is a number of
/// seconds, else `setting`, else the default.
pub fn idle_timeout(env_value: Option<&str>, setting: Option<Duration>) -> Duration {
    env_value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .or(setting)
        .unwrap_or(DEFAULT_IDLE_TIMEOUT)
}

/// Installs the TLS crypto provider once per process (reqwest is built without one, to keep
/// the build free of the heavier default).
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub type SharedProvider = Arc<dyn Provider>;

/// The provider for `config`, speaking its kind's wire format. Installs the TLS provider.
/// `None` for the kinds that run a CLI agent instead of calling an API
/// ([`ProviderKind::is_cli_agent`]; `crate::cli_agents` runs those).
pub fn http_provider(config: ProviderConfig) -> Option<SharedProvider> {
    Some(match config.kind {
        ProviderKind::Ollama => Arc::new(ollama::OllamaProvider::new(config)),
        ProviderKind::Openai => Arc::new(openai::OpenaiProvider::new(config)),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicProvider::new(config)),
        ProviderKind::Gemini => Arc::new(gemini::GeminiProvider::new(config)),
        ProviderKind::Codex | ProviderKind::ClaudeCode => return None,
    })
}

/// What each kind of provider is: every fact about a kind lives here.
impl ProviderKind {
    /// Every kind, in the order Settings offers them.
    pub const ALL: [ProviderKind; 6] = [
        ProviderKind::Ollama,
        ProviderKind::Openai,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::Codex,
        ProviderKind::ClaudeCode,
    ];

    /// The kinds that call an HTTP API (every kind but the CLI agents).
    pub const HTTP: [ProviderKind; 4] = [
        ProviderKind::Ollama,
        ProviderKind::Openai,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
    ];

    /// Whether the kind runs an external coding agent (a CLI) rather than calling an API: its
    /// "base URL" is the program to run.
    pub fn is_cli_agent(self) -> bool {
        matches!(self, ProviderKind::Codex | ProviderKind::ClaudeCode)
    }

    /// The usual base URL: Ollama's honours `OLLAMA_HOST` in `env`; OpenAI's is
    /// api.openai.com (other compatible servers need their own URL).
    pub fn default_base_url(self, env: &crate::environment::Environment) -> String {
        match self {
            ProviderKind::Ollama => ollama::default_base_url(env.get("OLLAMA_HOST")),
            ProviderKind::Openai => openai::DEFAULT_BASE_URL.to_string(),
            ProviderKind::Anthropic => anthropic::DEFAULT_BASE_URL.to_string(),
            ProviderKind::Gemini => gemini::DEFAULT_BASE_URL.to_string(),
            ProviderKind::Codex => "codex".to_string(),
            ProviderKind::ClaudeCode => "claude".to_string(),
        }
    }

    /// A configured base URL as requests use it: Anthropic's SDKs take it without the `/v1`
    /// its paths start with (`https://api.anthropic.com`), so it is added when missing; the
    /// others are used as given (an empty one means the default, `OLLAMA_HOST` aside: a
    /// provider's config already has the base URL the environment gives).
    pub fn normalize_base_url(self, url: &str) -> String {
        let url = url.trim().trim_end_matches('/');
        if url.is_empty() {
            return self.default_base_url(&crate::environment::Environment::default());
        }
        match self {
            ProviderKind::Anthropic if !url.ends_with("/v1") => format!("{url}/v1"),
            _ => url.to_string(),
        }
    }

    /// The environment variables that conventionally hold its key, in the order they are
    /// read (empty: it needs none).
    pub fn key_env_vars(self) -> &'static [&'static str] {
        match self {
            ProviderKind::Ollama => &[],
            ProviderKind::Openai => &["OPENAI_API_KEY"],
            ProviderKind::Anthropic => &["ANTHROPIC_API_KEY"],
            ProviderKind::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            // The CLI agents log in themselves; a key, when given, is handed to them here.
            ProviderKind::Codex => &["CODEX_API_KEY"],
            ProviderKind::ClaudeCode => &["ANTHROPIC_API_KEY"],
        }
    }

    /// Whether every current model of the kind takes native tool calls (cloud APIs), so
    /// Agent mode need not ask the model.
    pub fn tools_always_native(self) -> bool {
        matches!(self, ProviderKind::Anthropic | ProviderKind::Gemini)
    }

    /// Whether each request says how large a context the server must give it (Ollama's
    /// `num_ctx`; the others size it themselves, and refuse what does not fit).
    pub fn request_sets_window(self) -> bool {
        self == ProviderKind::Ollama
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_takes_its_base_url_with_or_without_v1() {
        let kind = ProviderKind::Anthropic;
        for url in [
            "https://api.anthropic.com",
            "https://api.anthropic.com/",
            "https://api.anthropic.com/v1",
            "https://api.anthropic.com/v1/",
        ] {
            assert_eq!(
                kind.normalize_base_url(url),
                "https://api.anthropic.com/v1",
                "{url}"
            );
        }
        assert_eq!(kind.normalize_base_url("  "), anthropic::DEFAULT_BASE_URL);
        // Every kind's default is already as requests use it.
        for kind in ProviderKind::HTTP {
            let default = kind.default_base_url(&crate::environment::Environment::default());
            assert_eq!(kind.normalize_base_url(&default), default, "{kind:?}");
        }
        // Others are used as given (an OpenAI-compatible server may have no /v1 at all).
        let openai = ProviderKind::Openai;
        assert_eq!(
            openai.normalize_base_url("http://x:1/api/"),
            "http://x:1/api"
        );
    }
}
