//! The model check-up: what a model can really do, asked of its server and tried once.
//!
//! The window comes from wherever the server tells it (Ollama's `/api/show`, llama.cpp's
//! `/props`, LM Studio's model API, `/models` fields); native tool calling is tried with a
//! tiny request offering one tool, because servers claim it for models that never call and
//! hide it for models that do; images as the server says. The result is stored with the
//! model's profile and used by every later turn (Agent mode calls tools natively whenever the
//! probe got a call back, whatever the provider).

use std::time::Duration;

use futures_util::StreamExt;

use super::ChatError;
use super::models::{self, ModelChoice};
use crate::llm::{ChatMessage, ChatRequest, ChatRole, StreamEvent, ToolSpec};
use crate::store::{ModelProfile, Store};

/// The probe gives up after this long (a small local model loading for the first time is
/// slow; a hung server must not hold a turn for ever).
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// The one tool the probe offers.
fn probe_tool() -> ToolSpec {
    ToolSpec {
        name: "add".into(),
        description: "Adds two integers and returns the sum.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "a": { "type": "integer", "description": "the first number" },
                "b": { "type": "integer", "description": "the second number" }
            },
            "required": ["a", "b"]
        }),
    }
}

/// Whether the model answers a request offering one tool with a native call of it:
/// `Some(false)` when it answers in text or the server refuses tools, `None` when the
/// question could not be asked (no connection, timed out).
pub async fn probe_tools(choice: &ModelChoice) -> Option<bool> {
    let request = ChatRequest {
        model: choice.model.clone(),
        messages: vec![
            ChatMessage::new(
                ChatRole::System,
                "You can call tools. When a tool fits the request, call it instead of answering.",
            ),
            ChatMessage::new(ChatRole::User, "Use the add tool to add 2 and 3."),
        ],
        max_output_tokens: Some(200),
        context_window: Some(4096),
        temperature: Some(0.0),
        tools: vec![probe_tool()],
        reasoning_effort: None,
        estimate_scale: 1.0,
    };
    let mut stream = choice.provider.stream(request);
    let answer = tokio::time::timeout(PROBE_TIMEOUT, async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(StreamEvent::ToolCall(call)) => return Some(call.name == "add"),
                Ok(StreamEvent::Done { .. }) => return Some(false),
                Ok(_) => {}
                // The server refused the request with its tools: no native calling here.
                Err(crate::llm::LlmError::Http { status, .. }) if (400..500).contains(&status) => {
                    return Some(false);
                }
                Err(_) => return None,
            }
        }
        Some(false)
    })
    .await;
    answer.ok().flatten()
}

/// Runs the whole check-up now (asking the server afresh and probing tools) and stores it.
/// A server that cannot describe the model (no model API) is still probed; only when the
/// probe could not ask either is it an error.
pub async fn check_up(store: &Store, choice: &ModelChoice) -> Result<ModelProfile, ChatError> {
    let described = choice.provider.model_info(&choice.model).await;
    let probe = probe_tools(choice).await;
    let info = match (described, probe) {
        (Ok(info), _) => info,
        (Err(e), None) => return Err(e.into()),
        (Err(_), Some(_)) => store
            .model_profile(choice.record.id, &choice.model)?
            .map(|p| p.info)
            .unwrap_or_else(|| crate::llm::ModelInfo {
                id: choice.model.clone(),
                ..crate::llm::ModelInfo::default()
            }),
    };
    store.save_checkup(choice.record.id, &info, probe)?;
    Ok(models::model_profile(store, choice).await)
}

impl super::ChatService {
    /// The provider and model named (the defaults when `None`), for a check-up or settings.
    pub fn model_choice(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<ModelChoice, ChatError> {
        models::choose(self.engine.store(), &self.secrets, provider, model)
    }

    /// Runs the check-up of a model now and stores it.
    pub async fn check_model(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<ModelProfile, ChatError> {
        let choice = self.model_choice(provider, model)?;
        check_up(self.engine.store(), &choice).await
    }

    /// What is known of a model (asking its server only if it never told a window).
    pub async fn model_profile(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<ModelProfile, ChatError> {
        let choice = self.model_choice(provider, model)?;
        Ok(models::model_profile(self.engine.store(), &choice).await)
    }
}
