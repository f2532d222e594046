//! Approvals in the background: answers to the agent's waiting tool calls, and the approval
//! gateway, its events forwarded to the UI each followed by the refreshed request list.

use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError};

use super::{Backend, Emit, Event, error};
use crate::agent::gateway::GatewayEvent;
use crate::agent::runner::Answer;
use crate::app::{App, GatewayApplied, GatewaySettings, GatewayStatus};

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
            Ok::<_, crate::app::AppError>((app.agent_settings()?, app.mcp_servers()?))
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
}

impl Backend {
    /// Answers a tool call waiting in an agent turn.
    pub fn answer_approval(&self, id: u64, answer: Answer) {
        self.spawn("answering the approval", move |app, emit| {
            if !app.answer(id, answer) {
                emit.send(Event::ApprovalGone(id));
            }
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

    /// The person's decision on a gateway request.
    pub fn decide_gateway(&self, id: i64, approved: bool, reason: Option<String>) {
        self.spawn_async(
            "deciding the approval request",
            move |app, emit| async move {
                let decided = app.decide_gateway(id, approved, reason).await;
                refresh(&app, &emit).await;
                Ok(decided?)
            },
        );
    }
}
