//! Approvals in the background: answers to the agent's waiting tool calls, and the approval
//! gateway (`agent::gateway`) run on the backend's runtime, its events forwarded to the UI.

use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;

use super::{Backend, Emit, Event};
use crate::agent::gateway::{AutoApprove, Gateway, GatewayConfig, generate_token};
use crate::agent::runner::Answer;
use crate::chat::ChatService;
use crate::store::{ApprovalDecision, DecidedBy, Store};
use crate::ui::agent_state::{DEFAULT_GATEWAY_PORT, GatewayStatus};

/// Setting: the gateway's [`GatewaySettings`] (JSON).
pub const GATEWAY_SETTING: &str = "gateway.settings";
/// The token lives with the API keys (OS keychain, else the 0600 secrets file), never in the
/// settings table; a token found there (older versions) is still read.
pub const GATEWAY_TOKEN_SECRET: &str = "tandem:approval-gateway";
/// How many requests the Approvals tab lists.
const REQUESTS_SHOWN: usize = 200;

/// Whether the gateway runs, where, with which token, and what it approves by itself.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GatewaySettings {
    pub enabled: bool,
    pub port: u16,
    #[serde(skip_serializing)]
    pub token: String,
    pub auto: AutoApprove,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            enabled: false,
            port: DEFAULT_GATEWAY_PORT,
            token: String::new(),
            auto: AutoApprove::default(),
        }
    }
}

/// Never prints the token (events are logged with `{:?}` in places).
impl std::fmt::Debug for GatewaySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewaySettings")
            .field("enabled", &self.enabled)
            .field("port", &self.port)
            .field("token", &"<hidden>")
            .field("auto", &self.auto)
            .finish()
    }
}

/// The running gateway (if any) and the database connection it uses.
#[derive(Default)]
pub(super) struct GatewayHost {
    store: std::sync::OnceLock<Arc<Store>>,
    /// The gateway with the port and token it was started with.
    running: tokio::sync::Mutex<Option<(Gateway, u16, String)>>,
}

impl GatewayHost {
    pub(super) fn set_store(&self, store: Arc<Store>) {
        let _ = self.store.set(store);
    }

    fn store(&self) -> anyhow::Result<Arc<Store>> {
        self.store
            .get()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the database is still opening"))
    }

    /// Starts, restarts, reconfigures or stops the gateway to match `settings`.
    async fn apply(&self, settings: &GatewaySettings, emit: &Emit) -> anyhow::Result<()> {
        let mut running = self.running.lock().await;
        if let Some((gateway, port, token)) = running.as_ref()
            && settings.enabled
            && *port == settings.port
            && *token == settings.token
        {
            gateway.set_auto(settings.auto);
            return Ok(());
        }
        if let Some((gateway, _, _)) = running.take() {
            gateway.shutdown().await;
        }
        if !settings.enabled {
            emit.send_async(Event::GatewayStatus(GatewayStatus::Off))
                .await;
            return Ok(());
        }
        emit.send_async(Event::GatewayStatus(GatewayStatus::Starting))
            .await;
        let config = GatewayConfig {
            port: settings.port,
            token: settings.token.clone(),
            auto: settings.auto,
        };
        let store = self.store()?;
        match Gateway::start(config, Arc::clone(&store)).await {
            Ok(gateway) => {
                let port = gateway.local_addr().port();
                forward(&gateway, store, emit.clone());
                *running = Some((gateway, settings.port, settings.token.clone()));
                let status = GatewayStatus::Running { port };
                emit.send_async(Event::GatewayStatus(status)).await;
                Ok(())
            }
            Err(e) => {
                let status = GatewayStatus::Failed(e.to_string());
                emit.send_async(Event::GatewayStatus(status)).await;
                Err(e.into())
            }
        }
    }

    /// The person's decision on a request, through the gateway when it runs (so a waiting
    /// client hears it), else straight into the database.
    async fn decide(&self, id: i64, approved: bool, reason: Option<String>) -> anyhow::Result<()> {
        let running = self.running.lock().await;
        let store = self.store()?;
        tokio::task::block_in_place(|| -> anyhow::Result<()> {
            match running.as_ref() {
                Some((gateway, _, _)) => Ok(gateway.decide(id, approved, reason)?),
                None => {
                    let decision = if approved {
                        ApprovalDecision::Approved
                    } else {
                        ApprovalDecision::Rejected
                    };
                    store.decide_approval_request(
                        id,
                        decision,
                        DecidedBy::User,
                        reason.as_deref(),
                    )?;
                    Ok(())
                }
            }
        })
    }
}

/// Forwards the gateway's events, each followed by the refreshed request list.
fn forward(gateway: &Gateway, store: Arc<Store>, emit: Emit) {
    let mut events = gateway.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => emit.send_async(Event::Gateway(event)).await,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
            refresh(&store, &emit).await;
        }
    });
}

async fn refresh(store: &Arc<Store>, emit: &Emit) {
    let store = Arc::clone(store);
    let listed = tokio::task::spawn_blocking(move || store.approval_requests(REQUESTS_SHOWN)).await;
    let event = match listed {
        Ok(Ok(requests)) => Event::ApprovalRequests(requests),
        Ok(Err(e)) => Event::Log(format!("error: listing approval requests: {e}")),
        Err(e) => Event::Log(format!("error: listing approval requests: {e}")),
    };
    emit.send_async(event).await;
}

/// At start: the agent settings, the request history, and the gateway if it was left on.
pub(super) async fn restore(service: &Arc<ChatService>, host: &Arc<GatewayHost>, emit: &Emit) {
    let loaded = {
        let service = Arc::clone(service);
        tokio::task::spawn_blocking(move || {
            let store = service.engine().store();
            Ok::<_, anyhow::Error>((
                super::settings_jobs::load_agent_settings(store, service.secrets())?,
                store.mcp_servers()?,
            ))
        })
        .await
    };
    let settings = match loaded {
        Ok(Ok((settings, servers))) => {
            emit.send_async(Event::AgentSettings(settings.clone()))
                .await;
            emit.send_async(Event::McpServers(servers)).await;
            settings
        }
        Ok(Err(e)) => {
            return emit
                .send_async(error("loading the agent settings", e))
                .await;
        }
        Err(e) => {
            return emit
                .send_async(error("loading the agent settings", e))
                .await;
        }
    };
    if let Ok(store) = host.store() {
        refresh(&store, emit).await;
    }
    if settings.gateway.enabled
        && let Err(e) = host.apply(&settings.gateway, emit).await
    {
        emit.send_async(error("starting the approval gateway", e))
            .await;
    }
}

fn error(action: &str, e: impl std::fmt::Display) -> Event {
    Event::Error {
        action: action.to_string(),
        message: format!("{e:#}"),
    }
}

impl Backend {
    /// Runs async gateway work on the runtime; an error becomes [`Event::Error`].
    fn gateway_job<F, Fut>(&self, action: &'static str, job: F)
    where
        F: FnOnce(Arc<ChatService>, Arc<GatewayHost>, Emit) -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let emit = self.emit();
        let host = Arc::clone(&self.gateway);
        let service = Arc::clone(&self.service);
        self.runtime.spawn(async move {
            let Some(service) = service.get().cloned() else {
                emit.send_async(error(action, "the database is still opening"))
                    .await;
                return;
            };
            if let Err(e) = job(service, host, emit.clone()).await {
                emit.send_async(error(action, e)).await;
            }
        });
    }

    /// Answers a tool call waiting in an agent turn.
    pub fn answer_approval(&self, id: u64, answer: Answer) {
        self.spawn("answering the approval", move |service, emit| {
            if !service.answer(id, answer) {
                emit.send(Event::ApprovalGone(id));
            }
            Ok(())
        });
    }

    /// Saves the gateway settings (a token is made when enabling without one) and starts,
    /// reconfigures or stops the gateway to match. `new_token` replaces the token.
    pub fn save_gateway(&self, settings: GatewaySettings, new_token: bool) {
        self.gateway_job(
            "saving the gateway settings",
            move |service, host, emit| async move {
                let mut settings = settings;
                if new_token || (settings.enabled && settings.token.trim().is_empty()) {
                    settings.token = tokio::task::block_in_place(generate_token)?;
                }
                tokio::task::block_in_place(|| {
                    if settings.token.is_empty() {
                        service.secrets().delete(GATEWAY_TOKEN_SECRET)?;
                    } else {
                        service
                            .secrets()
                            .set(GATEWAY_TOKEN_SECRET, &settings.token)?;
                    }
                    let store = service.engine().store();
                    store.set_setting(GATEWAY_SETTING, &settings)?;
                    Ok::<_, anyhow::Error>(())
                })?;
                emit.send_async(Event::GatewaySettings(settings.clone()))
                    .await;
                host.apply(&settings, &emit).await
            },
        );
    }

    /// The person's decision on a gateway request.
    pub fn decide_gateway(&self, id: i64, approved: bool, reason: Option<String>) {
        self.gateway_job(
            "deciding the approval request",
            move |_service, host, emit| async move {
                let decided = host.decide(id, approved, reason).await;
                refresh(&host.store()?, &emit).await;
                decided
            },
        );
    }
}
