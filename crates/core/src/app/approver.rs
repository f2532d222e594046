//! The approval client (`agent::gateway::Approver`): which executor to connect to, its token
//! (kept with the API keys, like the gateway's, and never handed out whole), connecting and
//! disconnecting. It decides with the gateway's auto-approve rules, and its requests are the
//! gateway's: the same table, cards and [`decide_gateway`](App::decide_gateway).

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};

use super::{App, AppError, Result};
use crate::agent::gateway::{Approver, ApproverConfig, ApproverStatus, Backoff, GatewayEvent};
use crate::store::keys;

/// The key-store entry of the executor's token.
pub const APPROVER_TOKEN_SECRET: &str = "tandem:approver-executor";

/// Where the executor is, whether to connect at start, and its token.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApproverSettings {
    /// `ws://host:port/path`.
    pub url: String,
    /// Connected when Tandem was last closed: connect again at start.
    pub connect: bool,
    #[serde(skip)]
    pub token: String,
}

/// Never prints the token.
impl std::fmt::Debug for ApproverSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApproverSettings")
            .field("url", &self.url)
            .field("connect", &self.connect)
            .field("token", &"<hidden>")
            .finish()
    }
}

/// The settings as the window shows them: the token only as a hint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApproverShown {
    pub url: String,
    pub connect: bool,
    /// `None` when no token is saved; else its last characters (see [`token_hint`]).
    pub token_hint: Option<String>,
}

/// A started client's events (the gateway's kind) and its connection status.
#[derive(Debug)]
pub struct ApproverStarted {
    pub events: broadcast::Receiver<GatewayEvent>,
    pub status: watch::Receiver<ApproverStatus>,
}

/// Enough of a token to tell which one is saved, never enough to use it.
pub fn token_hint(token: &str) -> String {
    let chars: Vec<char> = token.trim().chars().collect();
    match chars.len() {
        0 => String::new(),
        n if n >= 16 => format!("••••{}", chars[n - 4..].iter().collect::<String>()),
        _ => "•••• (short)".to_string(),
    }
}

impl App {
    /// The approval client's settings as saved, with the token from the key store.
    pub fn approver_settings(&self) -> Result<ApproverSettings> {
        let store = self.store();
        let mut settings: ApproverSettings = store.setting(keys::APPROVER)?.unwrap_or_default();
        if let Some(token) = self.chat.secrets().get(APPROVER_TOKEN_SECRET)? {
            settings.token = token;
        }
        Ok(settings)
    }

    /// The settings for the window: the token as a hint.
    pub fn approver_shown(&self) -> Result<ApproverShown> {
        let settings = self.approver_settings()?;
        let hint = (!settings.token.is_empty()).then(|| token_hint(&settings.token));
        Ok(ApproverShown {
            url: settings.url,
            connect: settings.connect,
            token_hint: hint,
        })
    }

    /// Saves the address and whether to connect at start; an empty `token` keeps the saved
    /// one. Returns them as saved, token included.
    pub fn save_approver(&self, settings: &ApproverSettings) -> Result<ApproverSettings> {
        let mut saved = settings.clone();
        saved.url = saved.url.trim().to_string();
        let token = saved.token.trim().to_string();
        if token.is_empty() {
            saved.token = self.approver_settings()?.token;
        } else {
            self.chat.secrets().set(APPROVER_TOKEN_SECRET, &token)?;
            saved.token = token;
        }
        self.store().set_setting(keys::APPROVER, &saved)?;
        Ok(saved)
    }

    /// Connects to the executor in `settings` (replacing a client already running), deciding
    /// with the gateway's auto-approve rules. It keeps reconnecting until
    /// [`stop_approver`](Self::stop_approver) or a refused token.
    pub async fn start_approver(&self, settings: &ApproverSettings) -> Result<ApproverStarted> {
        if settings.url.trim().is_empty() {
            return Err(AppError::Invalid("the executor's address is empty".into()));
        }
        if settings.token.trim().is_empty() {
            return Err(AppError::Invalid("the executor's token is empty".into()));
        }
        let auto = tokio::task::block_in_place(|| self.gateway_settings())?.auto;
        let mut running = self.gateway.approver.lock().await;
        if let Some(approver) = running.take() {
            approver.shutdown().await;
        }
        let config = ApproverConfig {
            url: settings.url.clone(),
            token: settings.token.clone(),
            auto,
            backoff: Backoff::default(),
        };
        let approver = Approver::start(config, self.engine.shared_store())?;
        let started = ApproverStarted {
            events: approver.subscribe(),
            status: approver.status(),
        };
        *running = Some(approver);
        Ok(started)
    }

    /// Disconnects from the executor (nothing happens when not connected).
    pub async fn stop_approver(&self) {
        if let Some(approver) = self.gateway.approver.lock().await.take() {
            approver.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_never_holds_a_short_token_or_most_of_a_long_one() {
        assert_eq!(token_hint(""), "");
        assert_eq!(token_hint("abc"), "•••• (short)");
        assert_eq!(token_hint("0123456789abcdefWXYZ"), "••••WXYZ");
        let debug = format!(
            "{:?}",
            ApproverSettings {
                url: "ws://x/".into(),
                connect: true,
                token: "secret-token".into(),
            }
        );
        assert!(!debug.contains("secret"), "{debug}");
    }
}
