//! The bridge between the window and the application layer ([`tandem_core::app`]). Every call into
//! it (database, git, disk, network) runs here, on a Tokio runtime, and reports back through
//! [`Event`]s that the UI drains once per frame. Nothing here blocks the caller.
//!
//! The command handlers call most use cases themselves, through the generic runners
//! ([`Backend::run`], [`Backend::query`], [`Backend::query_async`], [`Backend::turn`]). The
//! methods kept here do more than one call and its event: a turn streamed, what a use case
//! changed read again, a project watched, usage numbered, a save's conflict, a dialog.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use tandem_core::agent::gateway::GatewayEvent;
use tandem_core::app::{
    App, AppEvent, ApproveOutcome, ApproverShown, ApproverStatus, ChatEvent, ChatSettings,
    ContextBreakdown, GatewayStatus, LoadedChat, OpenedProject, RestoreOutcome, UndoOutcome,
};
use tandem_core::llm::ModelInfo;
use tandem_core::store::{
    Chat, ExecutorRequest, McpServerRecord, Message, Project, ProviderRecord,
};
use tandem_core::vcs::Version;

pub use tandem_core::app::{AgentSettings, EDITABLE_LIMIT, FileContent, GatewaySettings};

/// Bounded so a runaway producer cannot eat memory; producers wait, the UI never does.
const EVENT_QUEUE: usize = 4096;

/// What the background reports.
#[derive(Debug)]
pub enum Event {
    Ready {
        projects: Vec<Project>,
        providers: Vec<ProviderRecord>,
        settings: ChatSettings,
    },
    ProjectOpened(Box<OpenedProject>),
    /// The project's chats as they are now.
    ChatsChanged {
        project_id: i64,
        chats: Vec<Chat>,
    },
    /// The open project's archived chats.
    ArchivedChats {
        project_id: i64,
        chats: Vec<Chat>,
    },
    /// Messages of the project's chats matching `query`.
    ChatHits {
        query: String,
        hits: Vec<tandem_core::app::MessageHit>,
    },
    /// The Search tab's results for `key`.
    SearchResults {
        key: crate::model::state::SearchKey,
        result: Result<tandem_core::app::SearchResult, String>,
    },
    /// Usage for the Usage tab, with the price table.
    Usage {
        /// The order it was asked in: a report read before a price was saved may arrive
        /// after the one read since, and must not replace it.
        seq: u64,
        report: Box<tandem_core::app::UsageReport>,
        prices: tandem_core::app::Prices,
    },
    /// Files and images read to attach to the prompt, and why others could not be.
    Attached {
        attached: Vec<tandem_core::app::Attach>,
        errors: Vec<String>,
    },
    /// The prompt library changed (or was loaded).
    Prompts(Vec<tandem_core::app::SavedPrompt>),
    /// What the settings' context globs select, for the texts they were counted with.
    ContextCounts {
        include: String,
        exclude: String,
        counts: Result<String, String>,
    },
    /// The live context estimate for the composer's text (`Err`: why there is none).
    ContextPreview {
        prompt: String,
        /// The editor's tabs and selection it was made for (`model::selection::focus_key`).
        focus: u64,
        breakdown: Result<ContextBreakdown, String>,
    },
    ChatLoaded(Box<LoadedChat>),
    Chat(ChatEvent),
    TurnStarted {
        chat_id: i64,
        user: Option<Message>,
        reply_id: i64,
    },
    /// A prompt could not be sent (`message` says why): it goes back to the composer. A chat
    /// made for it was deleted again.
    NotSent {
        deleted_chat: Option<i64>,
        prompt: String,
        attachments: Vec<tandem_core::app::Attach>,
        message: String,
    },
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
    /// What a chat shows may be out of date: its messages changed, or its project's tree did
    /// (a commit: its proposal is planned against the tree, and a restore removes later
    /// messages). The open chat is read again when it is the one, unless it streams (its
    /// turn's end reads it).
    Stale(Stale),
    /// A project's files, as listed now.
    Files {
        project_id: i64,
        files: Vec<String>,
    },
    /// A project's recent versions.
    History {
        project_id: i64,
        history: Vec<Version>,
    },
    VersionDiff {
        commit: String,
        diff: String,
    },
    Restored(RestoreOutcome),
    Undone(UndoOutcome),
    Providers(Vec<ProviderRecord>),
    /// What is known of the chosen model (loaded, checked up, or with new settings).
    ModelProfile(tandem_core::app::ModelProfile),
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
    GatewayStatus(GatewayStatus),
    /// The gateway settings as saved (a new token, a new port).
    GatewaySettings(GatewaySettings),
    /// The gateway's latest requests, newest first.
    ApprovalRequests(Vec<ExecutorRequest>),
    Gateway(GatewayEvent),
    /// The approval client's connection to the executor.
    ApproverStatus(ApproverStatus),
    /// The approval client's settings as saved (the token only as a hint).
    ApproverSettings(ApproverShown),
    /// A provider's keys by fingerprint.
    ProviderKeys {
        provider: String,
        keys: Vec<tandem_core::app::KeyInfo>,
    },
    /// A CLI agent provider: installed? logged in?
    CliAgentStatus {
        provider: String,
        status: tandem_core::app::LoginStatus,
    },
    /// A line its login printed (`line`), or the login ended (`done`: whether it succeeded).
    CliAgentLogin {
        provider: String,
        line: Option<String>,
        done: Option<bool>,
    },
    /// The open project changed outside this window (a `tandem` command, `git`, another
    /// editor): its files or its history.
    ChangedOutside {
        project_id: i64,
        changed: tandem_core::app::Changed,
    },
    /// A run in a chat's workspace ended (`Err`: why it could not run).
    WorkspaceRun {
        chat_id: i64,
        result: Box<Result<tandem_core::app::WorkspaceRun, String>>,
    },
    /// The chats' workspaces, with their sizes.
    Workspaces(Vec<tandem_core::app::WorkspaceInfo>),
    /// What a clean removed.
    WorkspacesCleaned(tandem_core::app::Cleaned),
    /// Where `name` is defined (go to definition).
    Definitions {
        name: String,
        result: Result<Vec<tandem_core::app::SymbolAt>, String>,
    },
    /// Where `name` is used (find references).
    References {
        name: String,
        result: Result<Vec<tandem_core::app::Reference>, String>,
    },
    /// The definitions matching the file tree's filter `query`.
    SymbolMatches {
        query: String,
        result: Result<Vec<tandem_core::app::SymbolAt>, String>,
    },
}

pub struct Backend {
    runtime: tokio::runtime::Runtime,
    tx: mpsc::Sender<Event>,
    rx: mpsc::Receiver<Event>,
    repaint: Arc<dyn Fn() + Send + Sync>,
    data_dir: Option<PathBuf>,
    /// The environment the application reads (this process's, or a test's).
    env: tandem_core::environment::Environment,
    /// The application once the database is open (or why it could not be).
    app: tokio::sync::watch::Receiver<Opened>,
    opened: tokio::sync::watch::Sender<Opened>,
    /// Numbers the usage reports asked for (see [`Event::Usage`]).
    usage_seq: std::sync::atomic::AtomicU64,
    /// The watch on the open project (its id with it), replaced when another opens.
    watch: Arc<std::sync::Mutex<Option<(i64, tandem_core::app::Watch)>>>,
}

/// Where opening the application stands: work asked for before it is open waits for it.
#[derive(Clone)]
enum Opened {
    Opening,
    Ready(Arc<App>),
    Failed(String),
}

impl Drop for Backend {
    /// The window closing stops the MCP servers (and what they started), within a bound.
    fn drop(&mut self) {
        // Blocking is only possible outside a runtime (the UI thread); elsewhere the servers'
        // process groups are still killed as the runtime drops them.
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let opened = self.app.borrow().clone();
        if let Opened::Ready(app) = opened {
            // The timer is made inside the runtime: it needs its clock.
            self.runtime.block_on(async move {
                let _ = tokio::time::timeout(MCP_STOP_LIMIT, app.stop_mcp_servers()).await;
            });
        }
    }
}

/// How long closing the window waits for the MCP servers to stop.
const MCP_STOP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Backend {
    /// Starts the runtime and opens the application (on `data_dir`, reading `env`) in the
    /// background. `repaint` wakes the UI.
    pub fn start(
        data_dir: Option<PathBuf>,
        env: tandem_core::environment::Environment,
        repaint: Arc<dyn Fn() + Send + Sync>,
    ) -> Backend {
        tandem_core::llm::init_tls();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tandem-bg")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the background runtime: {e}"));
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let (opened, app) = tokio::sync::watch::channel(Opened::Opening);
        let backend = Backend {
            runtime,
            tx,
            rx,
            repaint,
            data_dir,
            env,
            app,
            opened,
            usage_seq: Default::default(),
            watch: Default::default(),
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

    /// Runs `job`, an [`App`] use case that blocks (database, git, disk), on a blocking
    /// thread. Its value is not shown (what it changed comes on the app's stream); its error
    /// becomes [`Event::Error`] with `action`, what was being done.
    pub fn run<F, T, E>(&self, action: &str, job: F)
    where
        F: FnOnce(&App) -> Result<T, E> + Send + 'static,
        E: Into<anyhow::Error>,
    {
        self.spawn(action, move |app, _emit| {
            job(&app).map_err(Into::into)?;
            Ok(())
        });
    }

    /// Like [`Backend::run`], and what `job` returns is shown: `shown` makes it the event the
    /// window gets.
    pub fn query<F, T, E, S>(&self, action: &str, job: F, shown: S)
    where
        F: FnOnce(&App) -> Result<T, E> + Send + 'static,
        E: Into<anyhow::Error>,
        S: FnOnce(T) -> Event + Send + 'static,
    {
        self.spawn(action, move |app, emit| {
            let value = job(&app).map_err(Into::into)?;
            emit.send(shown(value));
            Ok(())
        });
    }

    /// [`Backend::query`] for an async use case (the network, a provider, a run): `job`
    /// runs on the runtime.
    pub fn query_async<F, Fut, T, E, S>(&self, action: &str, job: F, shown: S)
    where
        F: FnOnce(Arc<App>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        E: Into<anyhow::Error>,
        S: FnOnce(T) -> Event + Send + 'static,
    {
        self.spawn_async(action, move |app, emit| async move {
            let value = job(app).await.map_err(Into::into)?;
            emit.send_async(shown(value)).await;
            Ok(())
        });
    }

    /// Runs blocking `job` (database, git, disk) on a blocking thread; its events (or its
    /// error) are sent to the UI.
    fn spawn<F>(&self, action: &str, job: F)
    where
        F: FnOnce(Arc<App>, Emit) -> anyhow::Result<()> + Send + 'static,
    {
        self.spawn_async(action, move |app, emit| async move {
            tokio::task::spawn_blocking(move || job(app, emit))
                .await
                .map_err(|e| anyhow::anyhow!("the task failed: {e}"))?
        });
    }

    /// Runs async `job` (a turn, the gateway) on the runtime; an error becomes
    /// [`Event::Error`].
    fn spawn_async<F, Fut>(&self, action: &str, job: F)
    where
        F: FnOnce(Arc<App>, Emit) -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let emit = self.emit();
        let mut opened = self.app.clone();
        let action = action.to_string();
        self.runtime.spawn(async move {
            // Asked for while the database opens (Settings clicked at once): wait for it.
            let state = opened
                .wait_for(|o| !matches!(o, Opened::Opening))
                .await
                .map(|o| o.clone());
            let app = match state {
                Ok(Opened::Ready(app)) => app,
                Ok(Opened::Failed(why)) => {
                    let message = format!("the database could not be opened: {why}");
                    emit.send_async(Event::Error { action, message }).await;
                    return;
                }
                Ok(Opened::Opening) | Err(_) => return,
            };
            if let Err(e) = job(app, emit.clone()).await {
                let message = format!("{e:#}");
                emit.send_async(Event::Error { action, message }).await;
            }
        });
    }

    fn emit(&self) -> Emit {
        Emit {
            tx: self.tx.clone(),
            repaint: Arc::clone(&self.repaint),
        }
    }

    /// Opens the application, reports what the window starts with, forwards chat events,
    /// and restores the agent settings and the gateway.
    fn open(&self) {
        let emit = self.emit();
        let cell = self.opened.clone();
        let (data_dir, env) = (self.data_dir.clone(), self.env.clone());
        self.runtime.spawn(async move {
            let opened =
                tokio::task::spawn_blocking(move || App::open_in(data_dir.as_deref(), env)).await;
            let failed = |why: String| {
                cell.send_replace(Opened::Failed(why.clone()));
                error("opening the database", why)
            };
            let app = match opened {
                Ok(Ok(app)) => app,
                Ok(Err(e)) => return emit.send_async(failed(format!("{e:#}"))).await,
                Err(e) => return emit.send_async(failed(e.to_string())).await,
            };
            cell.send_replace(Opened::Ready(Arc::clone(&app)));
            tokio::spawn(follow(Arc::downgrade(&app), emit.clone()));
            let ready = {
                let app = Arc::clone(&app);
                tokio::task::spawn_blocking(move || -> anyhow::Result<(Event, Event)> {
                    let ready = Event::Ready {
                        projects: app.projects()?,
                        providers: app.providers()?,
                        settings: app.chat_settings()?,
                    };
                    Ok((ready, Event::Prompts(app.prompts()?)))
                })
                .await
            };
            let event = match ready {
                Ok(Ok((event, prompts))) => {
                    emit.send_async(prompts).await;
                    event
                }
                Ok(Err(e)) => error("loading projects", e),
                Err(e) => error("loading projects", e),
            };
            emit.send_async(event).await;
            gateway::restore(&app, &emit).await;
        });
    }
}

/// An [`Event::Error`] for a failure while doing `action`.
fn error(action: &str, e: impl std::fmt::Display) -> Event {
    Event::Error {
        action: action.to_string(),
        message: format!("{e:#}"),
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

mod attachments;
mod chats;
mod gateway;
mod projects;
mod refresh;
mod settings;
mod workspaces;

/// Follows the app's one stream of changes for as long as it lives, turning each into what the
/// window shows (read off the UI thread). It holds the app weakly: the stream ends when the
/// app is dropped.
async fn follow(app: std::sync::Weak<App>, emit: Emit) {
    let Some(mut events) = app.upgrade().map(|app| app.subscribe()) else {
        return;
    };
    loop {
        let event = match events.recv().await {
            Ok(AppEvent::Chat(event)) => {
                emit.send_async(Event::Chat(*event)).await;
                continue;
            }
            Ok(event) => event,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(_) => break,
        };
        let Some(app) = app.upgrade() else { break };
        match tokio::task::spawn_blocking(move || shown(&app, event)).await {
            Ok(Ok(shown)) => {
                for event in shown {
                    emit.send_async(event).await;
                }
            }
            Ok(Err(e)) => emit.send_async(error("reading what changed", e)).await,
            Err(e) => emit.send_async(error("reading what changed", e)).await,
        }
    }
}

/// Which chats an [`Event::Stale`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    Chat(i64),
    /// Every chat of the project.
    ChatsOf(i64),
}

/// What the window shows of a change, read as it is now.
fn shown(app: &App, event: AppEvent) -> anyhow::Result<Vec<Event>> {
    Ok(match event {
        AppEvent::Chat(event) => vec![Event::Chat(*event)],
        AppEvent::ChatsChanged { project_id } => vec![
            Event::ChatsChanged {
                project_id,
                chats: app.chats(project_id)?,
            },
            Event::ArchivedChats {
                project_id,
                chats: app.archived_chats(project_id)?,
            },
        ],
        AppEvent::ProjectChanged { project_id } => {
            let project = app.project_by_id(project_id)?;
            let [files, history] = refresh::project(app, &project)?;
            vec![files, history, Event::Stale(Stale::ChatsOf(project_id))]
        }
        AppEvent::ChatChanged { chat_id } => vec![Event::Stale(Stale::Chat(chat_id))],
        AppEvent::ProvidersChanged => vec![Event::Providers(app.providers()?)],
        AppEvent::ProviderKeysChanged { provider } => vec![Event::ProviderKeys {
            keys: app.provider_keys(&provider)?,
            provider,
        }],
        AppEvent::PromptsChanged => vec![Event::Prompts(app.prompts()?)],
        AppEvent::AgentSettingsChanged => vec![Event::AgentSettings(app.agent_settings()?)],
        AppEvent::McpServersChanged => vec![Event::McpServers(app.mcp_servers()?)],
    })
}
