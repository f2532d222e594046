//! The approval gateway: an optional WebSocket server through which an executor (an outside agent) asks the
//! person at the desktop app before running code (a security evaluation) and before handing its
//! output to a model (a code response). The protocol and its guarantees: `docs/gateway.md`.
//!
//! Only 127.0.0.1 can be bound (the config holds just a port); the handshake needs the token.
//! Requests are persisted before the ack; those undecided when their client leaves stay pending
//! (the person may still settle them) and [`GatewayEvent::ClientGone`] lists them.
//!
//! [`Approver`] is the other direction: Tandem connects out to an executor's WebSocket and
//! answers the same requests, through the same session, rules and store.
//!
//! The gateway's pieces: `requests` is what executors ask and what the gateway tells (with
//! the auto-answer rules), `server` listens on 127.0.0.1 and accepts connections, `session`
//! serves one connection (the server's and the approval client's alike), and this module
//! holds the limits and the state they all share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::policy::{Risk, classify_shell};
use crate::store::{DecideError, DecidedBy, ExecutorDecision, Store};

mod auth;
mod client;
mod requests;
mod risk;
mod server;
mod session;
pub use auth::generate_token;
pub use client::{Approver, ApproverConfig, ApproverStatus, Backoff};
pub use requests::{AutoAnswer, CodeResponsePolicy, GatewayEvent, GatewayRequest};
pub use risk::{Language, effective_risk};
pub use server::Gateway;

/// A request's fingerprint, also how our agent recognises requests about its own tool calls.
pub use crate::store::approval_fingerprint as fingerprint;

/// The largest message (and frame) a client may send.
pub const MAX_MESSAGE: usize = 1 << 20;
/// A connection that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections still in their handshake (not yet authenticated) at once. Every client is on
/// 127.0.0.1, so a per-peer limit would mean nothing; this bounds what a local process that
/// lacks the token can hold open, while a real client completes its handshake in
/// milliseconds.
pub const MAX_HANDSHAKING: usize = 8;
/// Open connections at once, authenticated or not; a client needs one.
pub const MAX_CONNECTIONS: usize = 32;
/// Requests one connection may have waiting for the person; more get an error frame until
/// some are decided. Auto-approved requests never wait, so they do not count.
pub const MAX_PENDING_PER_CONNECTION: usize = 16;
/// The answer to a connection over [`MAX_HANDSHAKING`] or [`MAX_CONNECTIONS`].
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\
Content-Length: 36\r\n\r\ntoo many connections to the gateway\n";
/// Events a slow subscriber may fall behind by before it misses some (the store has them all).
const EVENT_BUFFER: usize = 256;

pub type Result<T, E = GatewayError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("the gateway token must not be empty")]
    EmptyToken,
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("cannot read randomness for a token from /dev/urandom: {0}")]
    NoRandomness(std::io::Error),
    #[error(transparent)]
    Decide(#[from] DecideError),
    #[error("the executor address {url:?} {why}")]
    ExecutorUrl { url: String, why: &'static str },
    #[error("the executor token holds characters an HTTP header cannot carry")]
    ExecutorToken,
}

/// No `Debug`, so that the token cannot end up in a log by accident.
#[derive(Clone)]
pub struct GatewayConfig {
    /// The port on 127.0.0.1; 0 picks any free port (see [`Gateway::local_addr`]).
    pub port: u16,
    /// Clients send it as `Authorization: Bearer <token>` or `?token=<token>`.
    pub token: String,
    pub auto: AutoAnswer,
}

/// A client connection: its number and the way to send it frames.
#[derive(Clone)]
struct Conn {
    id: u64,
    reply: mpsc::UnboundedSender<String>,
}

/// Request id → the connection waiting for its decision and the client's id for it.
type Waiting = HashMap<i64, (Conn, String)>;

struct Shared {
    store: Arc<Store>,
    token: String,
    auto: Mutex<AutoAnswer>,
    events: broadcast::Sender<GatewayEvent>,
    /// Held from a request's insert until its ack is queued and its waiter registered, and
    /// while deciding: a decision can neither miss its waiter nor overtake the ack.
    waiting: Mutex<Waiting>,
    stop: CancellationToken,
}

/// A poisoned lock only means a panic elsewhere; the map and settings stay consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn new(
        store: Arc<Store>,
        token: String,
        auto: AutoAnswer,
        events: broadcast::Sender<GatewayEvent>,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            store,
            token,
            auto: Mutex::new(auto),
            events,
            waiting: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
        })
    }

    fn emit(&self, event: GatewayEvent) {
        // No subscriber is no error: the store keeps everything.
        let _ = self.events.send(event);
    }

    /// Records a decision, answers the waiting client if any, and tells subscribers.
    fn settle(
        &self,
        waiting: &mut Waiting,
        id: i64,
        approved: bool,
        by: DecidedBy,
        reason: Option<String>,
    ) -> Result<(), DecideError> {
        use ExecutorDecision::{Approved, Rejected};
        let decision = if approved { Approved } else { Rejected };
        self.store
            .decide_approval_request(id, decision, by, reason.as_deref())?;
        if let Some((conn, client_id)) = waiting.remove(&id) {
            let frame = json!({"type": "decision", "id": client_id, "request_id": id,
                "approved": approved, "reason": reason, "decided_by": by.as_str()});
            // A client gone since is no error: the decision is recorded.
            let _ = conn.reply.send(frame.to_string());
        }
        self.emit(GatewayEvent::Decided {
            id,
            approved,
            decided_by: by.to_string(),
            reason,
        });
        Ok(())
    }
}

/// What the gateway and the approval client both are: the state their connections serve and
/// the task serving them. Dropping it stops the task, without waiting.
struct Serving {
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl Serving {
    fn start(shared: Arc<Shared>, task: impl Future<Output = ()> + Send + 'static) -> Serving {
        Serving {
            shared,
            task: Some(tokio::spawn(task)),
        }
    }

    /// Whether the connected side waits for the decision on request `id`.
    fn is_waiting(&self, id: i64) -> bool {
        lock(&self.shared.waiting).contains_key(&id)
    }

    /// The person's decision: persisted, then sent to the waiting client if it still waits.
    fn decide(&self, id: i64, approved: bool, reason: Option<String>) -> Result<()> {
        let (shared, by) = (&self.shared, DecidedBy::User);
        Ok(shared.settle(&mut lock(&shared.waiting), id, approved, by, reason)?)
    }

    fn set_auto(&self, auto: AutoAnswer) {
        *lock(&self.shared.auto) = auto;
    }

    /// Stops the task (connections close with code 1001) and waits for it to end.
    async fn shutdown(mut self) {
        self.shared.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}
