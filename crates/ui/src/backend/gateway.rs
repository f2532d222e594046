//! Approvals in the background: answers to the agent's waiting tool calls, and the approval
//! gateway and the approval client, their events forwarded to the UI each followed by the
//! refreshed request list.

use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;

use super::{Backend, Emit, Event, error};
use tandem_core::agent::gateway::GatewayEvent;
use tandem_core::agent::runner::Answer;
use tandem_core::app::{
    App, ApproverSettings, ApproverStarted, ApproverStatus, GatewayApplied, GatewaySettings,
    GatewayStatus,
};

/// How many requests the Approvals tab lists.
const REQUESTS_SHOWN: usize = 200;

/// Forwards a started gateway's events, each followed by the refreshed request list.
fn forward(app: Arc<App>, mut events: broadcast::Receiver<GatewayEvent>, emit: Emit) {
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => emit.send_async(Event::Gateway(event)).await,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
            refresh(&app, &emit).await;
        }
    });
}

/// Forwards the approval client's status changes until it stops. `Stopped` itself is not
/// forwarded: a client replaced by a new one stops too, and its late word must not cover the
/// new one's (disconnecting reports it instead).
fn forward_status(mut status: watch::Receiver<ApproverStatus>, emit: Emit) {
    tokio::spawn(async move {
        loop {
            let now = status.borrow_and_update().clone();
            if now == ApproverStatus::Stopped {
                break;
            }
            let refused = matches!(now, ApproverStatus::Refused(_));
            emit.send_async(Event::ApproverStatus(now)).await;
            if refused || status.changed().await.is_err() {
                break;
            }
        }
    });
}

/// Connects the approval client with `settings`, forwarding what it reports.
async fn connect(app: &Arc<App>, settings: &ApproverSettings, emit: &Emit) -> anyhow::Result<()> {
    let ApproverStarted { events, status } = app.start_approver(settings).await?;
    forward(Arc::clone(app), events, emit.clone());
    forward_status(status, emit.clone());
    Ok(())
}

async fn refresh(app: &Arc<App>, emit: &Emit) {
    let app = Arc::clone(app);
    let listed = tokio::task::spawn_blocking(move || app.approval_requests(REQUESTS_SHOWN)).await;
    let event = match listed {
        Ok(Ok(requests)) => Event::ApprovalRequests(requests),
        Ok(Err(e)) => Event::Log(format!("error: listing approval requests: {e}")),
        Err(e) => Event::Log(format!("error: listing approval requests: {e}")),
    };
    emit.send_async(event).await;
}

/// Makes the gateway match `settings` and reports its status.
async fn apply(app: &Arc<App>, settings: &GatewaySettings, emit: &Emit) {
    if settings.enabled {
        emit.send_async(Event::GatewayStatus(GatewayStatus::Starting))
            .await;
    }
    let GatewayApplied { status, events } = app.apply_gateway(settings).await;
    if let Some(events) = events {
        forward(Arc::clone(app), events, emit.clone());
    }
    if let GatewayStatus::Failed(why) = &status {
        emit.send_async(error("starting the approval gateway", why))
            .await;
    }
    emit.send_async(Event::GatewayStatus(status)).await;
}

/// At start: the agent settings, the request history, and the gateway if it was left on.
pub(super) async fn restore(app: &Arc<App>, emit: &Emit) {
    let loaded = {
        let app = Arc::clone(app);
        tokio::task::spawn_blocking(move || {
            Ok::<_, tandem_core::app::AppError>((app.agent_settings()?, app.mcp_servers()?))
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
    refresh(app, emit).await;
    if settings.gateway.enabled {
        apply(app, &settings.gateway, emit).await;
    }
    let approver = {
        let app = Arc::clone(app);
        tokio::task::spawn_blocking(move || {
            Ok::<_, tandem_core::app::AppError>((app.approver_settings()?, app.approver_shown()?))
        })
        .await
    };
    match approver {
        Ok(Ok((settings, shown))) => {
            emit.send_async(Event::ApproverSettings(shown)).await;
            if settings.connect
                && let Err(e) = connect(app, &settings, emit).await
            {
                emit.send_async(error("connecting to the executor", e))
                    .await;
            }
        }
        Ok(Err(e)) => {
            emit.send_async(error("loading the executor settings", e))
                .await
        }
        Err(e) => {
            emit.send_async(error("loading the executor settings", e))
                .await
        }
    }
}

impl Backend {
    /// Answers a tool call waiting in an agent turn (and the gateway requests about the same
    /// command).
    pub fn answer_call(&self, id: u64, answer: Answer) {
        self.spawn_async("answering the approval", move |app, emit| async move {
            if !app.answer_call(id, answer).await? {
                emit.send_async(Event::ApprovalGone(id)).await;
            }
            refresh(&app, &emit).await;
            Ok(())
        });
    }

    /// Saves the gateway settings (a token is made when enabling without one) and starts,
    /// reconfigures or stops the gateway to match. `new_token` replaces the token.
    pub fn save_gateway(&self, settings: GatewaySettings, new_token: bool) {
        self.spawn_async("saving the gateway settings", move |app, emit| async move {
            let saved = tokio::task::block_in_place(|| app.save_gateway(&settings, new_token))?;
            emit.send_async(Event::GatewaySettings(saved.clone())).await;
            apply(&app, &saved, &emit).await;
            Ok(())
        });
    }

    /// Saves the executor's address (and `token` when one was typed) and connects to it;
    /// connects again at start until disconnected.
    pub fn connect_approver(&self, url: String, token: String) {
        self.spawn_async("connecting to the executor", move |app, emit| async move {
            let typed = ApproverSettings {
                url,
                connect: true,
                token,
            };
            let saved = tokio::task::block_in_place(|| app.save_approver(&typed))?;
            let shown = tokio::task::block_in_place(|| app.approver_shown())?;
            emit.send_async(Event::ApproverSettings(shown)).await;
            connect(&app, &saved, &emit).await
        });
    }

    /// Disconnects from the executor and no longer connects at start.
    pub fn disconnect_approver(&self) {
        self.spawn_async(
            "disconnecting from the executor",
            move |app, emit| async move {
                app.stop_approver().await;
                let mut settings = tokio::task::block_in_place(|| app.approver_settings())?;
                settings.connect = false;
                tokio::task::block_in_place(|| app.save_approver(&settings))?;
                emit.send_async(Event::ApproverStatus(ApproverStatus::Stopped))
                    .await;
                let shown = tokio::task::block_in_place(|| app.approver_shown())?;
                emit.send_async(Event::ApproverSettings(shown)).await;
                Ok(())
            },
        );
    }

    /// The person's decision on a gateway request (and on the agent's calls about the same
    /// command in chat `shown`).
    pub fn decide_request(&self, id: i64, approved: bool, shown: Option<i64>) {
        self.spawn_async(
            "deciding the approval request",
            move |app, emit| async move {
                let decided = app.decide_request(id, approved, shown).await;
                refresh(&app, &emit).await;
                Ok(decided.map(drop)?)
            },
        );
    }
}
