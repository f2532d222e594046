//! The gateway's server: it listens on 127.0.0.1, holds connections to the limits, checks
//! each handshake's token, and hands every authenticated connection to its session.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::auth::refusal;
use super::session::session;
use super::{
    AutoAnswer, BUSY, EVENT_BUFFER, GatewayConfig, GatewayError, GatewayEvent, HANDSHAKE_TIMEOUT,
    MAX_CONNECTIONS, MAX_HANDSHAKING, MAX_MESSAGE, Result, Serving, Shared,
};
use crate::store::Store;

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
        self.serving.is_waiting(id)
    }

    /// The person's decision: persisted, then sent to the waiting client if it is still
    /// connected. A request already decided is
    /// [`DecideError::AlreadyDecided`](crate::store::DecideError::AlreadyDecided).
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
