//! The application layer: every use case of Tandem, once, for the window and the CLI.
//!
//! The front-ends call [`App`] and read the record types it returns (`store` records, edit
//! plans, versions); they never reach the store, the workspace, git or a provider directly.
//! Calls here return values: no egui, no UI channels. Slow calls block the calling thread
//! (the window runs them on its background runtime); calls that talk to a model are `async`.
//!
//! - [`projects`](App::projects) — projects, their files, history, versions and settings
//! - chats — chats and messages, sending and redoing turns, proposals and their approval
//! - providers — model providers with their keys, and their models
//! - prompts — the prompt library (`@prompt:NAME`)
//! - usage — tokens per model and day, and their cost
//! - [`Settings`] — every global setting, typed, in one place
//! - gateway — the approval gateway for external executors
//! - approver — the approval client: the same requests, from an executor we connect to
//! - workspaces — the chats' workspaces: listing, cleaning, the person's own run in one
//! - symbols — go to definition, find references, definitions matching a filter

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chat::{ChatError, ChatService, ensure_default_provider};
use crate::engine::{Engine, EngineError};
use crate::environment::Environment;
use crate::llm::LlmError;
use crate::llm::secrets::SecretError;
use crate::store::StoreError;

mod answers;
mod approver;
mod chats;
mod config;
mod events;
mod gateway;
mod projects;
mod prompts;
mod providers;
mod settings;
mod symbols;
mod turns;
mod usage;
mod workspaces;

pub use crate::layer::{Held, LeftOut};
pub use answers::{SAME_COMMAND, call_fingerprint};
pub use approver::{
    APPROVER_TOKEN_SECRET, ApproverSettings, ApproverShown, ApproverStarted, token_hint,
};
pub use chats::{LoadedChat, ShownAttachment};
pub use config::{CONFIG_KEYS, ConfigKey, ConfigValue, ValueKind};
pub use events::{AppEvent, AppEvents};
pub use gateway::{
    DEFAULT_GATEWAY_PORT, GATEWAY_TOKEN_SECRET, GatewayApplied, GatewaySettings, GatewayStatus,
};
pub use projects::{
    ContextCount, EDITABLE_LIMIT, FileContent, OpenedProject, RULES_FILE, STARTER_RULES,
};
pub use prompts::MAX_PROMPT_BYTES;
pub use providers::{KeyInfo, KeySource, KeyStored, NewProvider, ProviderModels, ProviderRow};
pub use settings::{AgentSettings, ChatSettings, Settings};
pub use symbols::{
    MAX_REFERENCES, REFERENCE_TEXT_CHARS, Reference, SymbolAt, identifier_at, is_identifier,
};
pub use turns::{NewChat, StartedTurn};
pub use usage::{ModelUsage, USAGE_DAYS, UsageReport, price_of};
pub use workspaces::{
    CleanScope, Cleaned, RUN_OUTPUT_CAP, RunProposal, WorkspaceError, WorkspaceInfo, WorkspaceRun,
    human_bytes,
};

// The records the use cases return, for the front-ends to import from here.
pub use crate::agent::gateway::ApproverStatus;
pub use crate::chat::attachments::{Attach, image_type};
pub use crate::chat::follow_ups::LastCheck;
pub use crate::chat::mentions::at_mentions;
pub use crate::chat::{
    ChatEvent, ChatEventKind, ContextBreakdown, EditorFocus, EditorSelection, IncludedFile,
    MAX_SELECTION_CHARS, PendingPermission, SendOptions, SentSelection, TurnOutcome,
    strip_for_history,
};
/// The git blob hash of file content: what a save checks the disk against.
pub use crate::checks::{CheckRun, Problem, Severity};
pub use crate::cli_agents::LoginStatus;
pub use crate::edits::{SecurityFinding, security_findings, security_findings_in};
pub use crate::engine::{
    AddedProject, ApproveOutcome, Proposal, RestoreOutcome, Review, SaveOutcome, UndoOutcome,
};
pub use crate::folder::context::{PackedAs, SkipReason, code_fence};
#[cfg(target_os = "linux")]
pub use crate::folder::journal::keep_alone as keep_journal;
pub use crate::folder::journal::keep_with as keep_journals_with;
pub use crate::folder::search::{SearchMatch, SearchQuery, SearchResult};
pub use crate::folder::watch::{Changed, Watch};
pub use crate::folder::{blob_hash, normalize_relative};
pub use crate::store::{
    DayTokens, GenerationSettings, McpServerRecord, McpTransport, MessageHit, ModelProfile,
    ModelTokens, Price, Prices, SavedPrompt, mask_header_value, parse_mcp_header,
};

/// What went wrong in a use case: in the engine (projects, proposals, versions), in a chat's
/// turn, or in what the use case itself called (the store, a provider, the files, ...). An
/// error of a service comes as that service's, once: a name or a rule is not given again here.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Context(#[from] crate::folder::context::ContextError),
    #[error(transparent)]
    Listing(#[from] crate::folder::ListError),
    #[error(transparent)]
    Path(#[from] crate::folder::PathError),
    #[error("search: {0}")]
    Search(#[from] crate::folder::search::SearchError),
    #[error(transparent)]
    McpServer(#[from] crate::store::McpServerError),
    #[error(transparent)]
    Gateway(#[from] crate::agent::gateway::GatewayError),
    #[error(transparent)]
    Decide(#[from] crate::store::DecideError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Watch(#[from] crate::folder::watch::WatchError),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("the background task failed: {0}")]
    Task(String),
    /// A value the person gave that cannot be used; the text says why.
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = AppError> = std::result::Result<T, E>;

/// Tandem, opened on one data directory: the door into the core. Below it, side by side:
/// the engine (projects, proposals, versions) and the chat service (turns, which propose
/// through the engine); each use case here calls the one it needs.
pub struct App {
    engine: Arc<Engine>,
    chat: Arc<ChatService>,
    data_dir: PathBuf,
    gateway: gateway::GatewayHost,
    changes: events::Changes,
}

impl App {
    /// Opens (creating if needed) the data directory `dir` (default: the platform's), its
    /// database with migrations, and the secrets; seeds the default local provider once.
    /// Reads this process's environment, once.
    pub fn open(dir: Option<&Path>) -> Result<Arc<App>> {
        App::open_in(dir, Environment::process())
    }

    /// [`App::open`] with `env` as the only environment the app reads (keys, `OLLAMA_HOST`,
    /// Tandem's variables): tests give [`Environment::isolated`].
    pub fn open_in(dir: Option<&Path>, env: Environment) -> Result<Arc<App>> {
        let dir = crate::store::data_dir(dir, &env)?;
        let engine = Arc::new(Engine::open(Some(&dir))?);
        ensure_default_provider(engine.store(), &env)?;
        Ok(App::with_engine(engine, dir, &env))
    }

    /// Around an engine opened elsewhere (tests with a fake file system or short timeouts).
    pub fn with_engine(engine: Arc<Engine>, dir: PathBuf, env: &Environment) -> Arc<App> {
        let chat = ChatService::with_data_dir(Arc::clone(&engine), dir.clone(), env);
        Arc::new(App {
            engine,
            gateway: gateway::GatewayHost::default(),
            chat,
            data_dir: dir,
            changes: events::Changes::default(),
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn store(&self) -> &crate::store::Store {
        self.engine.store()
    }

    /// What the sandbox enforces on this machine (probed once per process).
    pub fn sandbox(&self) -> crate::sandbox::Protections {
        crate::sandbox::probe().clone()
    }
}
