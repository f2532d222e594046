//! Chat turns: a prompt becomes a persisted, streamed reply whose proposal waits for review.
//!
//! [`ChatService`] runs on the Tokio runtime. Each turn is a task: it saves the prompt and an
//! assistant placeholder at once, builds the request (system prompt, codebase, history) to fit
//! the model's window, streams the reply — publishing coalesced [`ChatEvent`]s and writing the
//! text to SQLite in linear bytes — then plans the reply's edits and, with auto-approve, applies
//! them. Several chats stream at once; a second send to a busy chat cancels the first.

mod agent_turn;
pub mod attachments;
mod checks;
pub mod checkup;
mod cli_turn;
mod compact;
mod focus;
pub mod follow_ups;
pub mod mentions;
mod models;
mod prepare;
mod prompt;
mod ranking;
pub mod repair;
mod review;
mod stream;
mod turn;
mod workspace;
mod writer;

pub use agent_turn::PendingPermission;
pub use focus::{EditorFocus, EditorSelection, MAX_OPEN_TABS, MAX_SELECTION_CHARS, SentSelection};
pub use models::{ModelChoice, ensure_default_provider, model_profile, provider_config};
pub use prompt::{
    ContextBreakdown, HistoryTurn, IncludedFile, PromptError, history, history_turns,
    strip_for_history, system_prompt,
};
pub(crate) use ranking::learn_history;
pub use turn::TurnOutcome;
pub use writer::{Coalescer, DB_FLUSH_INTERVAL, EVENT_INTERVAL, StreamWriter};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, EngineError};
use crate::environment::Environment;
use crate::folder::context::ContextCache;
use crate::llm::secrets::Secrets;
use crate::llm::{LlmError, Usage};
use crate::store::{AttachmentKind, ChatMode, MessageStatus, Role, StoreError};

/// How long a second send waits for the cancelled turn to settle.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(4);

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("no provider is configured: add one with `tandem provider add`")]
    NoProvider,
    #[error("no provider named {0:?}; `tandem provider list` shows them")]
    UnknownProvider(String),
    #[error(
        "no model chosen for {provider}: pass --model (`tandem models --provider {provider}` lists them) or set a default"
    )]
    NoModel { provider: String },
    #[error("no saved prompt named {0:?} (`@prompt:{0}`); `tandem prompt list` shows them")]
    UnknownPrompt(String),
    #[error("cannot attach: {0}")]
    Attachment(String),
    #[error(
        "{model} does not take images (its server says so): remove the images, or choose a \
         vision model"
    )]
    NoVision { model: String },
    #[error("chat {0} has no reply to redo")]
    NothingToRedo(i64),
    #[error("the chat task stopped unexpectedly: {0}")]
    Task(String),
    #[error("cannot read secrets: {0}")]
    Secrets(String),
}

/// What a subscriber (the GUI, the CLI) is told about a turn.
#[derive(Debug, Clone, Serialize)]
pub struct ChatEvent {
    pub chat_id: i64,
    pub message_id: i64,
    pub kind: ChatEventKind,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEventKind {
    Started {
        model: String,
        breakdown: ContextBreakdown,
    },
    /// New text since the last delta (coalesced to at most one per ~30 ms).
    Delta {
        text: String,
        reasoning: String,
    },
    /// The turn ended: the last event of its reply, and what auto-approve made of its
    /// proposal.
    Finished {
        status: MessageStatus,
        error: Option<String>,
        usage: Option<Usage>,
        /// The reply proposes changes (pending review, or applied with `commit`).
        proposal: bool,
        /// The commit auto-approve landed the proposal as.
        commit: Option<String>,
        /// Why auto-approve could not land the proposal (it stays pending).
        approve_error: Option<String>,
    },
    TitleChanged {
        title: String,
    },
    /// Older turns were summarised to fit (the summary is sent in their place from now on).
    Compacted {
        summary: crate::store::ChatSummary,
    },
    /// The reply's edits failed and went back to the model (the failed reply is the `Step`
    /// just before): the text streamed so far is replaced by repair round `round`'s.
    Retrying {
        round: usize,
    },
    /// Agent mode: a step was recorded (plan, tool call with its result, step done…).
    Step {
        step: crate::store::AgentStep,
    },
    /// Agent mode: a call waits for the person ([`ChatService::answer`]).
    Approval {
        approval: PendingPermission,
    },
    /// The approval was answered, or the turn stopped waiting.
    ApprovalSettled {
        id: u64,
    },
}

/// Options for one send.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Overrides the auto-approve setting (and the project's override) for this turn.
    pub auto_approve: Option<bool>,
    /// Agent mode: pre-approve calls up to this risk (hard denies, trust and the sandbox
    /// still apply).
    pub allow_risk: Option<crate::agent::policy::Risk>,
    /// Files and images sent with the prompt (kept with it).
    pub attachments: Vec<attachments::Attach>,
    /// The editor's open tabs and selection: they steer which files are packed, and the
    /// selection goes with the prompt (not kept with it).
    pub editor: EditorFocus,
}

struct Active {
    message_id: i64,
    cancel: CancellationToken,
    done: watch::Receiver<bool>,
}

/// Runs chat turns. Share it in an `Arc`.
pub struct ChatService {
    engine: Arc<Engine>,
    secrets: Secrets,
    cache: Arc<ContextCache>,
    /// The code index of each project, ranking its files for a prompt.
    indexes: Arc<crate::index::Indexes>,
    events: broadcast::Sender<ChatEvent>,
    active: Mutex<HashMap<i64, Active>>,
    approvals: agent_turn::Permissions,
    /// The data directory: attachments are kept under it.
    data_dir: PathBuf,
    /// The MCP servers of each project, running across agent turns.
    mcp: crate::agent::mcp::McpPool,
}

/// A started turn: its reply's message id, and the task's result.
pub struct TurnHandle {
    pub chat_id: i64,
    pub message_id: i64,
    pub user_message_id: Option<i64>,
    pub outcome: tokio::task::JoinHandle<TurnOutcome>,
}

impl ChatService {
    pub fn new(engine: Arc<Engine>, secrets: Secrets) -> Arc<Self> {
        let (events, _) = broadcast::channel(4096);
        let data_dir = secrets
            .file()
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Arc::new(ChatService {
            indexes: Arc::new(crate::index::Indexes::new(Some(&data_dir))),
            data_dir,
            engine,
            secrets,
            cache: Arc::new(ContextCache::default()),
            events,
            active: Mutex::new(HashMap::new()),
            approvals: agent_turn::Permissions::default(),
            mcp: crate::agent::mcp::McpPool::new(),
        })
    }

    /// A service whose secrets file lives in `dir` (the data directory by default), reading
    /// keys and settings from `env` (see [`Secrets::open`]).
    pub fn with_data_dir(engine: Arc<Engine>, dir: PathBuf, env: &Environment) -> Arc<Self> {
        Self::new(engine, Secrets::open(&dir, env))
    }

    /// The environment the service reads keys and Tandem's settings from.
    pub fn environment(&self) -> &Environment {
        self.secrets.environment()
    }

    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The MCP servers running for agent turns, per project.
    pub fn mcp_pool(&self) -> &crate::agent::mcp::McpPool {
        &self.mcp
    }

    pub fn context_cache(&self) -> &ContextCache {
        &self.cache
    }

    /// The projects' code indexes.
    pub fn indexes(&self) -> &Arc<crate::index::Indexes> {
        &self.indexes
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ChatEvent> {
        self.events.subscribe()
    }

    fn publish(&self, event: ChatEvent) {
        // No subscriber is fine: the database has everything.
        let _ = self.events.send(event);
    }

    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Active>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a reply is streaming in `chat_id`, and which.
    pub fn streaming(&self, chat_id: i64) -> Option<i64> {
        self.active().get(&chat_id).map(|a| a.message_id)
    }

    /// Cancels the chat's streaming reply; its text so far is kept. False when none streams.
    pub fn cancel(&self, chat_id: i64) -> bool {
        match self.active().get(&chat_id) {
            Some(active) => {
                active.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels a streaming reply in `chat_id` and waits (bounded) until it has settled.
    async fn settle(&self, chat_id: i64) {
        let done = self.active().get(&chat_id).map(|active| {
            active.cancel.cancel();
            active.done.clone()
        });
        if let Some(mut done) = done {
            let _ = tokio::time::timeout(SETTLE_TIMEOUT, done.wait_for(|d| *d)).await;
        }
    }

    /// The prompt with its `@prompt:NAME` mentions replaced by the saved prompts' texts.
    pub fn expand(&self, prompt: &str) -> Result<String, ChatError> {
        let store = self.engine.store();
        mentions::expand_prompts(prompt, |name| {
            store.prompt_named(name).ok().flatten().map(|p| p.text)
        })
        .map_err(ChatError::UnknownPrompt)
    }

    /// Sends `prompt` in `chat_id`: saves it, starts the reply and returns at once.
    pub async fn send(
        self: &Arc<Self>,
        chat_id: i64,
        prompt: &str,
        options: SendOptions,
    ) -> Result<TurnHandle, ChatError> {
        self.settle(chat_id).await;
        let chat = self.engine.store().chat(chat_id)?;
        let prompt = self.expand(prompt)?;
        let mut options = options;
        // Pages mentioned with `@https://…` are fetched now and go with the prompt.
        for url in mentions::mentioned_urls(&prompt)
            .into_iter()
            .take(attachments::MAX_PAGES)
        {
            let page = crate::web::fetch_text(&url, crate::web::DEFAULT_MAX_CHARS)
                .await
                .map_err(|e| ChatError::Attachment(e.to_string()))?;
            options.attachments.push(attachments::Attach {
                name: page.url,
                bytes: page.text.into_bytes(),
            });
        }
        let kinds = attachments::check(&options.attachments)?;
        if kinds.iter().any(|(kind, _)| *kind == AttachmentKind::Image) {
            let choice = self.choose_for(&chat, &options)?;
            let profile = models::model_profile(self.engine.store(), &choice).await;
            if models::lacks_vision(&profile) {
                return Err(ChatError::NoVision {
                    model: choice.model,
                });
            }
        }
        let user = self
            .engine
            .store()
            .insert_message(&crate::store::NewMessage::new(chat.id, Role::User, &prompt))?;
        if let Err(e) =
            attachments::keep(self.engine.store(), user.id, &options.attachments, &kinds)
        {
            // Nothing is sent without its attachments.
            let _ = self.engine.store().delete_message(user.id);
            return Err(e);
        }
        self.start(chat.id, prompt, Some(user.id), options, None)
            .await
    }

    /// Runs the chat's last turn again, with its prompt or with `new_prompt`. The earlier
    /// prompt and replies stay until the new reply is complete and are removed with it in one
    /// step; a resend that fails or is cancelled leaves them as they were (next to the failed
    /// attempt, which a later redo replaces too).
    pub async fn redo(
        self: &Arc<Self>,
        chat_id: i64,
        new_prompt: Option<&str>,
        options: SendOptions,
    ) -> Result<TurnHandle, ChatError> {
        self.settle(chat_id).await;
        let store = self.engine.store();
        let messages = store.messages(chat_id)?;
        let last_user = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .ok_or(ChatError::NothingToRedo(chat_id))?;
        let user = &messages[last_user];
        let mut replaces: Vec<i64> = messages[last_user + 1..].iter().map(|m| m.id).collect();
        match new_prompt {
            Some(prompt) => {
                let prompt = &self.expand(prompt)?;
                replaces.push(user.id);
                let redo = turn::Redo {
                    prompt_id: user.id,
                    replaces,
                };
                let new_user = store.insert_message(&crate::store::NewMessage::new(
                    chat_id,
                    Role::User,
                    prompt,
                ))?;
                let started = self
                    .start(
                        chat_id,
                        prompt.to_string(),
                        Some(new_user.id),
                        options,
                        Some(redo),
                    )
                    .await;
                if started.is_err() {
                    // Nothing was sent: the chat is left as it was. The caller still has the
                    // prompt, and the error says why.
                    let _ = store.delete_message(new_user.id);
                }
                started
            }
            None => {
                let redo = turn::Redo {
                    prompt_id: user.id,
                    replaces,
                };
                self.start(
                    chat_id,
                    user.content.clone(),
                    Some(user.id),
                    options,
                    Some(redo),
                )
                .await
            }
        }
    }

    /// Creates a chat in a project (HEAD recorded as its start).
    pub fn new_chat(
        &self,
        project_id: i64,
        mode: ChatMode,
    ) -> Result<crate::store::Chat, ChatError> {
        let project = self.engine.store().project(project_id)?;
        let head = crate::vcs::open(&project.path)
            .ok()
            .and_then(|repo| crate::vcs::head(&repo).ok().flatten());
        Ok(self
            .engine
            .store()
            .create_chat(project_id, mode, head.as_deref())?)
    }
}
