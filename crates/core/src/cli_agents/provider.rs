//! A CLI agent behind the [`Provider`] trait, for the requests that are only text (chat
//! titles, summaries): the conversation goes in as one prompt, the agent runs read-only in an
//! empty directory, its messages come back as the reply. Chat turns do not come here: they
//! run the agent in a scratch copy of the project (`chat::cli_turn`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Access, AgentEvent, CliAgent, RunSpec, agent_for, run};
use crate::llm::{
    ChatRequest, ChatRole, LlmError, ModelInfo, Provider, ProviderConfig, SharedProvider,
    StreamEvent,
};

/// The provider for `config`: a CLI agent for those kinds, else the HTTP provider.
pub fn provider(config: ProviderConfig) -> SharedProvider {
    match agent_for(config.kind) {
        Some(agent) => Arc::new(CliProvider { config, agent }),
        None => match crate::llm::http_provider(config.clone()) {
            Some(provider) => provider,
            // Every kind is one or the other; keep a clear error rather than a panic.
            None => Arc::new(CliProvider {
                config,
                agent: &super::codex::Codex,
            }),
        },
    }
}

pub struct CliProvider {
    config: ProviderConfig,
    agent: &'static dyn CliAgent,
}

impl CliProvider {
    /// The environment that hands it Tandem's key for it, when there is one.
    pub fn key_env(config: &ProviderConfig) -> Vec<(String, String)> {
        match (config.kind.key_env_vars().first(), config.api_keys.first()) {
            (Some(var), Some(key)) => vec![((*var).to_string(), key.clone())],
            _ => Vec::new(),
        }
    }
}

/// The conversation as one prompt: system text first, then each turn labelled.
pub fn flatten(request: &ChatRequest) -> String {
    let mut prompt = String::new();
    for message in &request.messages {
        let label = match message.role {
            ChatRole::System => "Instructions",
            ChatRole::User => "User",
            ChatRole::Assistant => "Assistant",
            ChatRole::Tool => "Tool result",
        };
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(&format!("{label}:\n{}", message.content));
    }
    prompt
}

impl Provider for CliProvider {
    fn config(&self) -> &ProviderConfig {
        &self.config
    }

    fn stream(&self, request: ChatRequest) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let agent = self.agent;
        let name = self.config.name.clone();
        let spec_program = self.config.base_url.clone();
        let env = CliProvider::key_env(&self.config);
        let guard = cancel.clone().drop_guard();
        tokio::spawn(async move {
            let server = |message: String| LlmError::Server {
                provider: name.clone(),
                message,
            };
            let Ok(dir) = tempfile::tempdir() else {
                let _ = tx.send(Err(server("no temporary directory".into())));
                return;
            };
            let spec = RunSpec {
                view: None,
                program: spec_program,
                workdir: dir.path().to_path_buf(),
                model: request.model.clone(),
                access: Access::ReadOnly,
                last_message_file: None,
            };
            let sandbox = crate::sandbox::Settings::default();
            let mut failed = None;
            let mut notice = None;
            let mut texts = 0;
            let ran = run(
                agent,
                &spec,
                &flatten(&request),
                &env,
                Some(&sandbox),
                &cancel,
                |event| match event {
                    AgentEvent::Text(text) => {
                        let sep = if texts > 0 { "\n\n" } else { "" };
                        texts += 1;
                        let _ = tx.send(Ok(StreamEvent::Text(format!("{sep}{text}"))));
                    }
                    AgentEvent::Reasoning(text) => {
                        let _ = tx.send(Ok(StreamEvent::Reasoning(text)));
                    }
                    AgentEvent::Usage(usage) => {
                        let _ = tx.send(Ok(StreamEvent::Usage(usage)));
                    }
                    AgentEvent::Failed(message) => failed = Some(message),
                    AgentEvent::Notice(message) => notice = Some(message),
                    _ => {}
                },
            )
            .await;
            let end = match ran {
                Err(e) => Err(server(e.to_string())),
                Ok(end) => match failed.or_else(|| end.failure(agent).map(|f| notice.unwrap_or(f)))
                {
                    Some(message) => Err(server(message)),
                    None => {
                        if texts == 0
                            && let Some(text) = end.last_message
                        {
                            let _ = tx.send(Ok(StreamEvent::Text(text)));
                        }
                        Ok(StreamEvent::Done {
                            finish_reason: Some("stop".into()),
                        })
                    }
                },
            };
            let _ = tx.send(end);
        });
        let events = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
            let event = rx.recv().await?;
            Some((event, (rx, guard)))
        });
        Box::pin(events)
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<ModelInfo>, LlmError>> {
        let models = self.agent.models(crate::sandbox::home_dir().as_deref());
        Box::pin(async move {
            Ok(models
                .into_iter()
                .map(|id| ModelInfo {
                    id,
                    ..ModelInfo::default()
                })
                .collect())
        })
    }

    fn model_info(&self, model: &str) -> BoxFuture<'static, Result<ModelInfo, LlmError>> {
        let info = ModelInfo {
            id: model.to_string(),
            ..ModelInfo::default()
        };
        Box::pin(async move { Ok(info) })
    }
}
