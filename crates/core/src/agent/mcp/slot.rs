//! One configured server as a slot: its connection, started on demand and restarted (with a
//! doubling backoff) after it dropped, and the tools it listed last.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::{Peer, RoleClient};

use super::connect::{Server, StderrTail, connect_within};
use super::{DEFAULT_CALL_TIMEOUT, McpError, McpTool, World, quote_stderr};
use crate::store::McpServerRecord;

/// What a slot knows between calls.
#[derive(Default)]
struct SlotState {
    server: Option<Server>,
    /// Starts so far (the first included).
    starts: u64,
    /// Failed starts in a row, for the backoff.
    failures: u32,
    /// No new start before this.
    retry_at: Option<Instant>,
    /// Why the last start failed, or the connection was lost.
    last_error: Option<String>,
    /// Stopped for good (project closed, server removed, disabled or changed).
    stopped: bool,
}

/// One configured server: its connection (started on demand, restarted when it dropped) and
/// the tools it listed last, which stay offered while it is down.
pub(crate) struct Slot {
    record: McpServerRecord,
    /// Where a stdio server runs (its chat's workspace, in the agent's container); none for a
    /// remote server.
    world: Option<World>,
    state: tokio::sync::Mutex<SlotState>,
    pub(super) tools: std::sync::RwLock<Vec<McpTool>>,
}

/// How a slot starts and restarts its server.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// For the handshake and the tool listing of one start.
    pub connect: Duration,
    /// For one tool call.
    pub call: Duration,
    /// The wait after the first failed restart; doubled after each further one …
    pub backoff_min: Duration,
    /// … up to this.
    pub backoff_max: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            connect: Duration::from_secs(15),
            call: DEFAULT_CALL_TIMEOUT,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
        }
    }
}

impl Slot {
    pub(crate) fn new(record: McpServerRecord, world: Option<World>) -> Arc<Slot> {
        Arc::new(Slot {
            record,
            world,
            state: Default::default(),
            tools: Default::default(),
        })
    }

    pub(crate) fn record(&self) -> &McpServerRecord {
        &self.record
    }

    pub(crate) fn world(&self) -> Option<&World> {
        self.world.as_ref()
    }

    pub(super) fn name(&self) -> &str {
        &self.record.name
    }

    pub(super) fn tools(&self) -> Vec<McpTool> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn state_error(&self, state: &SlotState) -> McpError {
        let reason = if state.stopped {
            "it was stopped (its chat's turn ended, its project closed, or it was removed, \
             disabled or changed)"
                .into()
        } else {
            let last = state.last_error.as_deref().unwrap_or("it stopped");
            match state
                .retry_at
                .map(|at| at.saturating_duration_since(Instant::now()))
            {
                Some(wait) if !wait.is_zero() => {
                    format!(
                        "{last} (next restart attempt in {}s)",
                        wait.as_secs().max(1)
                    )
                }
                _ => last.to_string(),
            }
        };
        McpError::Unavailable {
            server: self.name().to_string(),
            reason,
        }
    }

    /// The running connection: the one there is if it is alive, else a new start (unless the
    /// backoff after failed starts says to wait).
    pub(super) async fn live(
        &self,
        timing: &Timing,
    ) -> Result<(Peer<RoleClient>, StderrTail, u64), McpError> {
        let mut state = self.state.lock().await;
        if state.stopped {
            return Err(self.state_error(&state));
        }
        if let Some(server) = &state.server {
            if server.is_alive() {
                let peer = server.client.peer().clone();
                return Ok((peer, server.stderr.clone(), server.generation));
            }
            let stderr = server.stderr.settled().await;
            state.last_error = Some(format!("it stopped{}", quote_stderr(&stderr)));
            if let Some(dead) = state.server.take() {
                dead.stop().await;
            }
        }
        if state.retry_at.is_some_and(|at| Instant::now() < at) {
            return Err(self.state_error(&state));
        }
        state.starts += 1;
        let generation = state.starts;
        match connect_within(
            &self.record,
            self.world.as_ref(),
            timing.connect,
            generation,
        )
        .await
        {
            Ok((server, tools)) => {
                *self.tools.write().unwrap_or_else(|p| p.into_inner()) = tools;
                let live = (
                    server.client.peer().clone(),
                    server.stderr.clone(),
                    generation,
                );
                state.server = Some(server);
                state.failures = 0;
                state.retry_at = None;
                state.last_error = None;
                Ok(live)
            }
            Err(e) => {
                state.failures += 1;
                let exponent = state.failures.saturating_sub(1).min(16);
                let wait = timing.backoff_min.saturating_mul(1 << exponent);
                state.retry_at = Some(Instant::now() + wait.min(timing.backoff_max));
                state.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Retires the connection of `generation` after it failed (the next call starts anew).
    pub(super) async fn lost(&self, generation: u64, why: String) {
        let mut state = self.state.lock().await;
        if state
            .server
            .as_ref()
            .is_some_and(|s| s.generation == generation)
            && let Some(server) = state.server.take()
        {
            state.last_error = Some(why);
            server.stop().await;
        }
    }

    /// Stops the server for good (and its whole process group).
    pub(crate) async fn stop(&self) {
        let mut state = self.state.lock().await;
        state.stopped = true;
        if let Some(server) = state.server.take() {
            server.stop().await;
        }
    }

    pub(super) async fn pid(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state.server.as_ref().filter(|s| s.is_alive())?.pid
    }

    pub(super) async fn starts(&self) -> u64 {
        self.state.lock().await.starts
    }
}
