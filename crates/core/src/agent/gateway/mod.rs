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

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_util::sync::CancellationToken;

use super::policy::{Risk, classify_shell};
use crate::store::{DecideError, DecidedBy, ExecutorDecision, ExecutorRequestKind, Store};

mod auth;
mod client;
mod risk;
pub use auth::generate_token;
use auth::refusal;
pub use client::{Approver, ApproverConfig, ApproverStatus, Backoff};
pub use risk::{Language, effective_risk};

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

/// What needs no person. The default asks for everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoAnswer {
    /// Evaluations up to this (effective) risk are approved; `None` asks for all.
    pub evaluations_up_to: Option<Risk>,
    pub code_responses: CodeResponsePolicy,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeResponsePolicy {
    Always,
    /// Approved when the exit code is 0; asked otherwise.
    OnSuccess,
    /// Never auto-approved: always asked.
    #[default]
    Never,
}

impl AutoAnswer {
    /// Why `request` is approved without asking, or `None` when the person decides.
    fn approves(&self, request: &GatewayRequest, risk: Option<Risk>) -> Option<String> {
        let GatewayRequest::CodeResponse { exit_code, .. } = request else {
            let (limit, risk) = (self.evaluations_up_to?, risk?);
            return (risk <= limit).then(|| format!("auto-approved: {risk} risk, limit {limit}"));
        };
        match self.code_responses {
            CodeResponsePolicy::Always => Some("auto-approved: all code responses".into()),
            CodeResponsePolicy::OnSuccess if *exit_code == 0 => {
                Some("auto-approved: exit 0".into())
            }
            CodeResponsePolicy::OnSuccess | CodeResponsePolicy::Never => None,
        }
    }
}

/// A request as the client's frame holds it (`type` included; see `docs/gateway.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GatewayRequest {
    #[serde(rename = "security_evaluation", alias = "Security Evaluation Request")]
    Evaluation {
        code: String,
        language: Option<String>,
        explanation: String,
        /// As the client declared it.
        #[serde(alias = "risk_level")]
        risk: Risk,
    },
    #[serde(alias = "code response approval")]
    CodeResponse {
        code: Option<String>,
        stdout: String,
        stderr: String,
        exit_code: i32,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayEvent {
    /// A request waits for the person. Auto-approved requests only produce `Decided`.
    Requested {
        id: i64,
        client: Option<String>,
        fingerprint: String,
        request: GatewayRequest,
        /// The effective risk of an evaluation (see [`effective_risk`]); `None` otherwise.
        risk: Option<Risk>,
    },
    Decided {
        id: i64,
        approved: bool,
        /// "auto" or "user".
        decided_by: String,
        reason: Option<String>,
    },
    ClientConnected {
        conn: u64,
        addr: SocketAddr,
    },
    /// `abandoned`: its requests still pending, whose answer nobody is waiting for now.
    ClientGone {
        conn: u64,
        client: Option<String>,
        abandoned: Vec<i64>,
    },
    /// A frame that could not be read; the peer got an `error` frame saying the same, and
    /// nothing was recorded.
    BadFrame {
        conn: u64,
        id: Option<String>,
        message: String,
    },
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

/// The running gateway. Dropping it stops the server too, without waiting.
pub struct Gateway {
    serving: Serving,
    addr: SocketAddr,
}

impl Gateway {
    /// Listens on 127.0.0.1:`config.port` and serves until [`Gateway::shutdown`].
    pub async fn start(config: GatewayConfig, store: Arc<Store>) -> Result<Gateway> {
        if config.token.trim().is_empty() {
            return Err(GatewayError::EmptyToken);
        }
        let port = config.port;
        let bind = |source| GatewayError::Bind { port, source };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port));
        let listener = listener.await.map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let events = broadcast::channel(EVENT_BUFFER).0;
        let shared = Shared::new(store, config.token, config.auto, events);
        let serving = Serving::start(Arc::clone(&shared), serve(listener, shared));
        Ok(Gateway { serving, addr })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn subscribe(&self) -> broadcast::Receiver<GatewayEvent> {
        self.serving.shared.events.subscribe()
    }

    /// Whether a client, connected now, waits for the decision on request `id`.
    pub fn is_waiting(&self, id: i64) -> bool {
        lock(&self.serving.shared.waiting).contains_key(&id)
    }

    /// The person's decision: persisted, then sent to the waiting client if it is still
    /// connected. A request already decided is [`DecideError::AlreadyDecided`].
    pub fn decide(&self, id: i64, approved: bool, reason: Option<String>) -> Result<()> {
        self.serving.decide(id, approved, reason)
    }

    /// Applies to requests arriving from now on; those already waiting stay with the person.
    pub fn set_auto(&self, auto: AutoAnswer) {
        self.serving.set_auto(auto);
    }

    /// Stops listening, closes every connection (close code 1001) and waits for them to end.
    pub async fn shutdown(self) {
        self.serving.shutdown().await;
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    let mut next_conn = 0u64;
    let handshaking = Arc::new(Semaphore::new(MAX_HANDSHAKING));
    let mut refusing = JoinSet::new();
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let permit = match Arc::clone(&handshaking).try_acquire_owned() {
                        Ok(permit) if connections.len() < MAX_CONNECTIONS => permit,
                        // Refusals are bounded too; past that the stream is just dropped.
                        _ if refusing.len() < MAX_CONNECTIONS => {
                            refusing.spawn(busy(stream));
                            continue;
                        }
                        _ => continue,
                    };
                    next_conn += 1;
                    let shared = Arc::clone(&shared);
                    connections.spawn(connection(stream, peer, next_conn, shared, permit));
                }
                // Out of file descriptors and the like: breathe instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            Some(_) = refusing.join_next(), if !refusing.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Answers 503 to a connection over the limits. The request is read (and dropped) before
/// closing: closing with it unread would reset the connection and lose the answer.
async fn busy(mut stream: TcpStream) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let answer = async {
        stream.write_all(BUSY).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answer).await;
}

/// `handshaking` is held until the handshake has ended, well or not.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    conn: u64,
    shared: Arc<Shared>,
    handshaking: OwnedSemaphorePermit,
) {
    let limit = Some(MAX_MESSAGE);
    let config = WebSocketConfig::default()
        .max_message_size(limit)
        .max_frame_size(limit);
    let token = shared.token.clone();
    // The callback's type, large error and all, is tungstenite's.
    #[allow(clippy::result_large_err)]
    let check = move |req: &Request, response| refusal(req, &token).map_or(Ok(response), Err);
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config));
    // A stalled handshake must not hold up shutdown either.
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake);
    let handshake = shared.stop.run_until_cancelled(handshake).await;
    drop(handshaking);
    // A wrong token (answered 401 by `refusal`), a timeout or a broken handshake ends here,
    // closing the connection.
    let Some(Ok(Ok(ws))) = handshake else {
        return;
    };
    shared.emit(GatewayEvent::ClientConnected { conn, addr: peer });
    session(ws, conn, None, &shared).await;
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// The peer closed or dropped the connection.
    Peer,
    /// We are stopping.
    Stopped,
}

/// Serves one authenticated connection (`client`: its name until a hello says otherwise):
/// requests in, acks and decisions out, until either side ends it; then its undecided
/// requests are reported abandoned.
async fn session<S>(
    mut ws: WebSocketStream<S>,
    conn: u64,
    client: Option<String>,
    shared: &Shared,
) -> Ended
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (reply, mut replies) = mpsc::unbounded_channel();
    let conn = Conn { id: conn, reply };
    let mut session = Session {
        conn,
        client,
        shared,
    };
    let ended = loop {
        tokio::select! {
            () = shared.stop.cancelled() => {
                close(&mut ws, CloseCode::Away, "tandem is shutting down").await;
                break Ended::Stopped;
            }
            Some(frame) = replies.recv() => {
                if ws.send(Message::text(frame)).await.is_err() {
                    break Ended::Peer;
                }
            }
            // Pings are answered (and a close is acknowledged) by tungstenite as it reads.
            incoming = ws.next() => match incoming {
                Some(Ok(Message::Text(text))) => session.handle(text.as_str()),
                Some(Ok(Message::Binary(_))) => session.error(None, "send JSON text frames"),
                Some(Ok(_)) => {}
                Some(Err(WsError::Capacity(_))) => {
                    close(&mut ws, CloseCode::Size, "messages are limited to 1 MiB").await;
                    break Ended::Peer;
                }
                Some(Err(_)) | None => break Ended::Peer,
            },
        }
    };
    let mut waiting = lock(&shared.waiting);
    let gone = waiting.extract_if(|_, (waiter, _)| waiter.id == session.conn.id);
    let mut abandoned: Vec<i64> = gone.map(|(id, _)| id).collect();
    drop(waiting);
    abandoned.sort_unstable();
    let (conn, client) = (session.conn.id, session.client);
    shared.emit(GatewayEvent::ClientGone {
        conn,
        client,
        abandoned,
    });
    ended
}

/// Sends a close frame and gives the client a moment to answer it.
async fn close<S>(ws: &mut WebSocketStream<S>, code: CloseCode, reason: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let reason = reason.into();
    if ws.close(Some(CloseFrame { code, reason })).await.is_ok() {
        let drain = async { while ws.next().await.is_some() {} };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    }
}

/// One connection's state: its client's name and the way back to it.
struct Session<'a> {
    conn: Conn,
    client: Option<String>,
    shared: &'a Shared,
}

impl Session<'_> {
    /// Tells the peer (and subscribers) why a frame was not recorded.
    fn error(&self, id: Option<String>, message: &str) {
        let frame = json!({"type": "error", "id": id, "message": message});
        // Fails only once the connection loop has ended, when nobody is left to tell.
        let _ = self.conn.reply.send(frame.to_string());
        let (conn, message) = (self.conn.id, message.to_string());
        self.shared
            .emit(GatewayEvent::BadFrame { conn, id, message });
    }

    fn handle(&mut self, text: &str) {
        let frame: Value = match serde_json::from_str(text) {
            Ok(frame) => frame,
            Err(e) => return self.error(None, &format!("not JSON: {e}")),
        };
        let id = frame["id"].as_str().map(str::to_owned);
        if frame["type"] == "hello" {
            let client = frame["client"].as_str().map(str::to_owned);
            match client {
                Some(_) => self.client = client,
                None => self.error(id, "a hello needs a string `client`"),
            }
            return;
        }
        match (id, GatewayRequest::deserialize(&frame)) {
            (Some(id), Ok(request)) => self.request(id, request, &frame),
            (None, _) => self.error(None, "a request needs a string `id`"),
            (id, Err(e)) => self.error(id, &format!("malformed frame: {e}")),
        }
    }

    /// Records the request (`frame` as its payload), acks it, and either approves it at once
    /// or leaves it to the person.
    fn request(&mut self, client_id: String, request: GatewayRequest, frame: &Value) {
        use GatewayRequest::{CodeResponse, Evaluation};
        let (shared, client) = (self.shared, self.client.clone());
        let risk = effective_risk(&request);
        let auto = lock(&shared.auto).approves(&request, risk);
        let conn = self.conn.id;
        let pending = lock(&shared.waiting)
            .values()
            .filter(|(c, _)| c.id == conn)
            .count();
        if auto.is_none() && pending >= MAX_PENDING_PER_CONNECTION {
            let message = format!(
                "not recorded: this connection already has {pending} requests waiting for the \
                 person (at most {MAX_PENDING_PER_CONNECTION}); send it again once some are decided"
            );
            return self.error(Some(client_id), &message);
        }
        let (kind, code) = match &request {
            Evaluation { code, .. } => (ExecutorRequestKind::Evaluation, Some(code)),
            CodeResponse { code, .. } => (ExecutorRequestKind::CodeResponse, code.as_ref()),
        };
        let fingerprint = fingerprint(code.map_or("", String::as_str));
        let mut waiting = lock(&shared.waiting);
        let store = &shared.store;
        let added = store.add_approval_request(kind, client.as_deref(), &fingerprint, frame, risk);
        let id = match added {
            Ok(id) => id,
            Err(e) => return self.error(Some(client_id), &format!("cannot record it: {e}")),
        };
        let ack = json!({"type": "ack", "id": client_id, "request_id": id});
        let _ = self.conn.reply.send(ack.to_string());
        waiting.insert(id, (self.conn.clone(), client_id));
        // Should the auto-approval fail to be recorded, the person decides instead.
        let by = DecidedBy::Auto;
        if auto.is_some_and(|why| shared.settle(&mut waiting, id, true, by, Some(why)).is_ok()) {
            return;
        }
        let event = GatewayEvent::Requested {
            id,
            client,
            fingerprint,
            request,
            risk,
        };
        shared.emit(event);
    }
}
