//! The approval gateway (`agent::gateway`): its settings (the token with the API keys, never
//! in the settings table), starting and stopping it to match them, and the person's
//! decisions on its requests.

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::{App, Result};
use crate::agent::gateway::{
    Approver, AutoAnswer, Gateway, GatewayConfig, GatewayEvent, generate_token,
};
use crate::store::{DecidedBy, ExecutorDecision, ExecutorRequest, keys};

/// The key-store entry of the gateway's token. A token found in the settings table (older
/// versions) is still read.
pub const GATEWAY_TOKEN_SECRET: &str = "tandem:approval-gateway";
/// The port the gateway listens on (127.0.0.1 only) unless the person picks another.
pub const DEFAULT_GATEWAY_PORT: u16 = 7433;

/// Whether the gateway runs, where, with which token, and what it approves by itself.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GatewaySettings {
    pub enabled: bool,
    pub port: u16,
    #[serde(skip_serializing)]
    pub token: String,
    pub auto: AutoAnswer,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            enabled: false,
            port: DEFAULT_GATEWAY_PORT,
            token: String::new(),
            auto: AutoAnswer::default(),
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum GatewayStatus {
    #[default]
    Off,
    Starting,
    Running {
        port: u16,
    },
    Failed(String),
}

/// What applying the settings did: the status now, and the events of a gateway that was
/// (re)started by it (a running one keeps its earlier subscription).
#[derive(Debug)]
pub struct GatewayApplied {
    pub status: GatewayStatus,
    pub events: Option<broadcast::Receiver<GatewayEvent>>,
}

/// The running gateway, with the port and token it was started with, and the approval
/// client (see `approver`).
#[derive(Default)]
pub(super) struct GatewayHost {
    running: tokio::sync::Mutex<Option<(Gateway, u16, String)>>,
    pub(super) approver: tokio::sync::Mutex<Option<Approver>>,
}

impl App {
    /// The gateway settings as saved, with the token from the key store.
    pub fn gateway_settings(&self) -> Result<GatewaySettings> {
        let mut gateway: GatewaySettings = self.store().setting(keys::GATEWAY)?.unwrap_or_default();
        if let Some(token) = self.chat.secrets().get(GATEWAY_TOKEN_SECRET)? {
            gateway.token = token;
        }
        Ok(gateway)
    }

    /// Saves the gateway settings: a token is made when enabling without one, or when
    /// `new_token`. Returns them as saved; [`apply_gateway`](Self::apply_gateway) makes the
    /// running gateway match.
    pub fn save_gateway(
        &self,
        settings: &GatewaySettings,
        new_token: bool,
    ) -> Result<GatewaySettings> {
        let mut settings = settings.clone();
        if new_token || (settings.enabled && settings.token.trim().is_empty()) {
            settings.token = generate_token()?;
        }
        let secrets = self.chat.secrets();
        if settings.token.is_empty() {
            secrets.delete(GATEWAY_TOKEN_SECRET)?;
        } else {
            secrets.set(GATEWAY_TOKEN_SECRET, &settings.token)?;
        }
        self.store().set_setting(keys::GATEWAY, &settings)?;
        Ok(settings)
    }

    /// Starts, restarts, reconfigures or stops the gateway to match `settings`; the approval
    /// client takes its auto-approve rules too.
    pub async fn apply_gateway(&self, settings: &GatewaySettings) -> GatewayApplied {
        if let Some(approver) = self.gateway.approver.lock().await.as_ref() {
            approver.set_auto(settings.auto);
        }
        let mut running = self.gateway.running.lock().await;
        if let Some((gateway, port, token)) = running.as_ref()
            && settings.enabled
            && *port == settings.port
            && *token == settings.token
        {
            gateway.set_auto(settings.auto);
            let port = gateway.local_addr().port();
            return GatewayApplied {
                status: GatewayStatus::Running { port },
                events: None,
            };
        }
        if let Some((gateway, _, _)) = running.take() {
            gateway.shutdown().await;
        }
        if !settings.enabled {
            return GatewayApplied {
                status: GatewayStatus::Off,
                events: None,
            };
        }
        let config = GatewayConfig {
            port: settings.port,
            token: settings.token.clone(),
            auto: settings.auto,
        };
        match Gateway::start(config, self.engine.shared_store()).await {
            Ok(gateway) => {
                let port = gateway.local_addr().port();
                let events = gateway.subscribe();
                *running = Some((gateway, settings.port, settings.token.clone()));
                GatewayApplied {
                    status: GatewayStatus::Running { port },
                    events: Some(events),
                }
            }
            Err(e) => GatewayApplied {
                status: GatewayStatus::Failed(e.to_string()),
                events: None,
            },
        }
    }

    /// The person's decision on a gateway request: through the approval client when its
    /// executor waits for it, else through the gateway when it runs (so a waiting client hears
    /// it), else straight into the database.
    pub async fn decide_gateway(
        &self,
        id: i64,
        approved: bool,
        reason: Option<String>,
    ) -> Result<()> {
        let approver = self.gateway.approver.lock().await;
        if let Some(approver) = approver.as_ref()
            && approver.is_waiting(id)
        {
            return tokio::task::block_in_place(|| Ok(approver.decide(id, approved, reason)?));
        }
        drop(approver);
        let running = self.gateway.running.lock().await;
        tokio::task::block_in_place(|| match running.as_ref() {
            Some((gateway, _, _)) => Ok(gateway.decide(id, approved, reason)?),
            None => {
                let decision = if approved {
                    ExecutorDecision::Approved
                } else {
                    ExecutorDecision::Rejected
                };
                self.store().decide_approval_request(
                    id,
                    decision,
                    DecidedBy::User,
                    reason.as_deref(),
                )?;
                Ok(())
            }
        })
    }

    /// Whether this process's gateway, or its approval client, waits for the person's decision
    /// on request `id` (a request another process holds is that process's to decide).
    pub(super) async fn holds_request(&self, id: i64) -> bool {
        if let Some(approver) = self.gateway.approver.lock().await.as_ref()
            && approver.is_waiting(id)
        {
            return true;
        }
        let running = self.gateway.running.lock().await;
        running
            .as_ref()
            .is_some_and(|(gateway, _, _)| gateway.is_waiting(id))
    }

    /// The latest `limit` gateway requests, newest first.
    pub fn approval_requests(&self, limit: usize) -> Result<Vec<ExecutorRequest>> {
        Ok(self.store().approval_requests(limit)?)
    }

    /// Stops the gateway if it runs (at exit).
    pub async fn stop_gateway(&self) {
        if let Some((gateway, _, _)) = self.gateway.running.lock().await.take() {
            gateway.shutdown().await;
        }
    }
}
