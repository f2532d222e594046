//! The bridge between the window and the engine. Every slow thing (database, git, disk,
//! network) runs here, on a Tokio runtime, and reports back through [`Event`]s that the UI
//! drains once per frame. Nothing here blocks the caller.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::agent::gateway::GatewayEvent;
use crate::chat::{ChatEvent, ChatService, PendingApproval, TurnOutcome, ensure_default_provider};
use crate::edits::EditPlan;
use crate::engine::{ApproveOutcome, Engine, RestoreOutcome, UndoOutcome};
use crate::llm::ModelInfo;
use crate::store::{
    AgentStep, ApprovalRequestRecord, Chat, McpServerRecord, Message, Project, ProviderRecord,
};
use crate::vcs::Version;

pub use gateway_jobs::{GATEWAY_SETTING, GATEWAY_TOKEN_SECRET, GatewaySettings};
pub use settings_jobs::AgentSettings;

/// Bounded so a runaway producer cannot eat memory; producers wait, the UI never does.
const EVENT_QUEUE: usize = 4096;

/// What the background reports.
#[derive(Debug)]
pub enum Event {
    Ready {
        projects: Vec<Project>,
        providers: Vec<ProviderRecord>,
        settings: LoadedSettings,
    },
    ProjectOpened {
        project: Project,
        chats: Vec<Chat>,
        files: Vec<String>,
        history: Vec<Version>,
    },
    ChatsChanged(Vec<Chat>),
    /// What the settings' context globs select, for the texts they were counted with.
    ContextCounts {
        include: String,
        exclude: String,
        counts: Result<String, String>,
    },
    /// The live context estimate for the composer's text (`Err`: why there is none).
    ContextPreview {
        prompt: String,
        breakdown: Result<crate::chat::ContextBreakdown, String>,
    },
    ChatLoaded {
        chat: Chat,
        messages: Vec<Message>,
        /// Agent steps by message id (replies of agent turns only).
        steps: std::collections::HashMap<i64, Vec<AgentStep>>,
        review: Option<(i64, EditPlan)>,
        /// Tool calls waiting for the person now (every chat's).
        approvals: Vec<PendingApproval>,
    },
    Chat(ChatEvent),
    TurnStarted {
        chat_id: i64,
        user: Option<Message>,
        reply_id: i64,
    },
    TurnFinished(Box<TurnOutcome>),
    Approved {
        message_id: i64,
        outcome: ApproveOutcome,
    },
    Rejected(i64),
    FileOpened {
        path: String,
        content: FileContent,
    },
    /// An open file's content on disk differs from what the tab last loaded or saved.
    FileChangedOnDisk {
        path: String,
        text: String,
    },
    FileSaved {
        path: String,
        text: String,
        commit: Option<String>,
    },
    /// A save was not written: the file on disk changed since the buffer was loaded. `disk`
    /// is its text now (`None`: gone; lossy when not UTF-8).
    SaveConflict {
        path: String,
        disk: Option<String>,
    },
    Files(Vec<String>),
    History(Vec<Version>),
    VersionDiff {
        commit: String,
        diff: String,
    },
    Restored(RestoreOutcome),
    Undone(UndoOutcome),
    Providers(Vec<ProviderRecord>),
    Models {
        provider: String,
        models: Result<Vec<ModelInfo>, String>,
    },
    /// The folder chosen in the native dialog, to open as a project.
    FolderPicked(PathBuf),
    /// A background failure, with what was being done.
    Error {
        action: String,
        message: String,
    },
    /// A line for the Log tab.
    Log(String),
    /// The Agent settings as stored.
    AgentSettings(AgentSettings),
    McpServers(Vec<McpServerRecord>),
    /// An approval answer found nobody waiting (the turn ended meanwhile).
    ApprovalGone(u64),
    GatewayStatus(super::agent_state::GatewayStatus),
    /// The gateway settings as saved (a new token, a new port).
    GatewaySettings(GatewaySettings),
    /// The gateway's latest requests, newest first.
    ApprovalRequests(Vec<ApprovalRequestRecord>),
    Gateway(GatewayEvent),
}

#[derive(Debug, Clone, Default)]
pub struct LoadedSettings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    pub auto_approve: bool,
    pub history_turns: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    Text(String),
    /// Shown read-only, with why.
    ReadOnly {
        text: String,
        reason: String,
    },
    Binary {
        bytes: u64,
    },
}

/// Files larger than this open read-only.
pub const EDITABLE_LIMIT: u64 = 2 * 1024 * 1024;

pub struct Backend {
    runtime: tokio::runtime::Runtime,
    tx: mpsc::Sender<Event>,
    rx: mpsc::Receiver<Event>,
    repaint: Arc<dyn Fn() + Send + Sync>,
    data_dir: Option<PathBuf>,
    service: Arc<tokio::sync::OnceCell<Arc<ChatService>>>,
    gateway: Arc<gateway_jobs::GatewayHost>,
}

impl Backend {
    /// Starts the runtime and opens the database in the background. `repaint` wakes the UI.
    pub fn start(data_dir: Option<PathBuf>, repaint: Arc<dyn Fn() + Send + Sync>) -> Backend {
        crate::llm::init_tls();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tandem-bg")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the background runtime: {e}"));
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let backend = Backend {
            runtime,
            tx,
            rx,
            repaint,
            data_dir,
            service: Arc::new(tokio::sync::OnceCell::new()),
            gateway: Arc::default(),
        };
        backend.open();
        backend
    }

    /// Events that arrived since the last call (never waits).
    pub fn drain(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Ok(event) = self.rx.try_recv() {
            events.push(event);
        }
        events
    }

    /// Runs `job` in the background; its events (or its error) are sent to the UI.
    fn spawn<F>(&self, action: &str, job: F)
    where
        F: FnOnce(Arc<ChatService>, Emit) -> anyhow::Result<()> + Send + 'static,
    {
        let emit = Emit {
            tx: self.tx.clone(),
            repaint: Arc::clone(&self.repaint),
        };
        let service = Arc::clone(&self.service);
        let action = action.to_string();
        self.runtime.spawn(async move {
            let Some(service) = service.get().cloned() else {
                let message = "the database is still opening".to_string();
                emit.send_async(Event::Error { action, message }).await;
                return;
            };
            let error_emit = emit.clone();
            let result = tokio::task::spawn_blocking(move || job(service, emit)).await;
            let message = match result {
                Ok(Ok(())) => return,
                Ok(Err(e)) => format!("{e:#}"),
                Err(e) => format!("the task failed: {e}"),
            };
            error_emit
                .send_async(Event::Error { action, message })
                .await;
        });
    }

    fn emit(&self) -> Emit {
        Emit {
            tx: self.tx.clone(),
            repaint: Arc::clone(&self.repaint),
        }
    }

    fn open(&self) {
        let emit = self.emit();
        let cell = Arc::clone(&self.service);
        let gateway = Arc::clone(&self.gateway);
        let data_dir = self.data_dir.clone();
        self.runtime.spawn(async move {
            let opened = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let dir = crate::store::data_dir(data_dir.as_deref())?;
                let engine = Arc::new(Engine::open(Some(&dir))?);
                ensure_default_provider(engine.store())?;
                let gateway_store = engine.shared_store();
                Ok((engine, dir, gateway_store))
            })
            .await;
            let (engine, dir, gateway_store) = match opened {
                Ok(Ok(opened)) => opened,
                Ok(Err(e)) => {
                    let message = format!("{e:#}");
                    emit.send_async(Event::Error {
                        action: "opening the database".into(),
                        message,
                    })
                    .await;
                    return;
                }
                Err(e) => {
                    let message = e.to_string();
                    emit.send_async(Event::Error {
                        action: "opening the database".into(),
                        message,
                    })
                    .await;
                    return;
                }
            };
            let service = ChatService::with_data_dir(engine, dir);
            let _ = cell.set(Arc::clone(&service));
            gateway.set_store(gateway_store);
            // Forward chat events to the UI.
            let mut events = service.subscribe();
            let forward = emit.clone();
            tokio::spawn(async move {
                loop {
                    match events.recv().await {
                        Ok(event) => forward.send_async(Event::Chat(event)).await,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(_) => break,
                    }
                }
            });
            let store = service.engine().store();
            let ready = (|| -> anyhow::Result<Event> {
                Ok(Event::Ready {
                    projects: store.projects()?,
                    providers: store.providers()?,
                    settings: LoadedSettings {
                        default_provider: store.setting("chat.default_provider")?,
                        default_model: store.setting("chat.default_model")?,
                        auto_approve: store.setting("chat.auto_approve")?.unwrap_or(false),
                        history_turns: store.setting("chat.history_turns")?,
                    },
                })
            })();
            let event = ready.unwrap_or_else(|e| Event::Error {
                action: "loading projects".into(),
                message: format!("{e:#}"),
            });
            emit.send_async(event).await;
            // The agent settings, and the gateway if it was left on.
            gateway_jobs::restore(&service, &gateway, &emit).await;
        });
    }
}

/// Sends events to the UI and wakes it.
#[derive(Clone)]
pub struct Emit {
    tx: mpsc::Sender<Event>,
    repaint: Arc<dyn Fn() + Send + Sync>,
}

impl Emit {
    /// From blocking code (jobs run on blocking threads).
    pub fn send(&self, event: Event) {
        if self.tx.blocking_send(event).is_ok() {
            (self.repaint)();
        }
    }

    async fn send_async(&self, event: Event) {
        if self.tx.send(event).await.is_ok() {
            (self.repaint)();
        }
    }
}

#[path = "gateway_jobs.rs"]
mod gateway_jobs;
#[path = "jobs.rs"]
mod jobs;
#[path = "settings_jobs.rs"]
mod settings_jobs;
