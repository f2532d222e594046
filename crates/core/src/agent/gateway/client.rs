//! The approval client: instead of waiting for clients, Tandem connects out to an executor's
//! WebSocket and answers the requests it sends there. Everything after the handshake is the
//! gateway's own session (frames, persistence, auto-approval, decisions, events); what is
//! new is dialling out with the token and coming back after a drop, with a capped backoff.
//! An executor that refuses the token (HTTP 401 or 403) is reported and not tried again.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::session::{Ended, session};
use super::{
    AutoAnswer, EVENT_BUFFER, GatewayError, GatewayEvent, MAX_MESSAGE, Result, Serving, Shared,
    lock,
};
use crate::store::Store;

/// A connection attempt (TCP and WebSocket handshake) that takes longer is given up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait before trying again: `first`, doubling up to `max`; back to `first` once a
/// connection was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first: Duration::from_secs(1),
            max: Duration::from_secs(30),
        }
    }
}

/// No `Debug`, so that the token cannot end up in a log by accident.
#[derive(Clone)]
pub struct ApproverConfig {
    /// `ws://host:port/path` or `wss://…` of the executor.
    pub url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub token: String,
    pub auto: AutoAnswer,
    pub backoff: Backoff,
}

/// Where the connection to the executor stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ApproverStatus {
    Connecting,
    Connected,
    /// The last attempt failed or the connection dropped (`error` says how); the next
    /// attempt is `after` from when this status was sent.
    Reconnecting {
        after: Duration,
        error: String,
    },
    /// Given up for good: the executor refused the token. Fix it and connect again.
    Refused(String),
    /// Disconnected on purpose (or never connected).
    #[default]
    Stopped,
}

/// The running client. Dropping it stops it too, without waiting.
pub struct Approver {
    serving: Serving,
    /// Subscribed before the connection task starts, for the first subscriber: what happens
    /// before anyone could call [`Approver::subscribe`] is not lost.
    first_events: Mutex<Option<broadcast::Receiver<GatewayEvent>>>,
    status: watch::Receiver<ApproverStatus>,
}

impl Approver {
    /// Checks the address and the token, then connects in the background, again and again
    /// until [`Approver::shutdown`] or a refused token.
    pub fn start(config: ApproverConfig, store: Arc<Store>) -> Result<Approver> {
        if config.token.trim().is_empty() {
            return Err(GatewayError::EmptyToken);
        }
        let request = request(&config.url, &config.token)?;
        // Requests are stored under the executor's address until it names itself.
        let name = request.uri().authority().map(|a| format!("executor {a}"));
        let (events, first_events) = broadcast::channel(EVENT_BUFFER);
        let shared = Shared::new(store, config.token, config.auto, events);
        let (report, status) = watch::channel(ApproverStatus::Connecting);
        let run = run(Arc::clone(&shared), request, name, config.backoff, report);
        Ok(Approver {
            serving: Serving::start(shared, run),
            first_events: Mutex::new(Some(first_events)),
            status,
        })
    }

    /// Every event from now on; the first call's receiver holds every event since the start
    /// (the connection may be made before it is called).
    pub fn subscribe(&self) -> broadcast::Receiver<GatewayEvent> {
        let first = lock(&self.first_events).take();
        first.unwrap_or_else(|| self.serving.shared.events.subscribe())
    }

    /// The status now, and every change to it.
    pub fn status(&self) -> watch::Receiver<ApproverStatus> {
        self.status.clone()
    }

    /// Whether the executor, connected now, waits for the decision on request `id`.
    pub fn is_waiting(&self, id: i64) -> bool {
        self.serving.is_waiting(id)
    }

    /// The person's decision: persisted, then sent to the executor if it still waits for it.
    pub fn decide(&self, id: i64, approved: bool, reason: Option<String>) -> Result<()> {
        self.serving.decide(id, approved, reason)
    }

    /// Applies to requests arriving from now on.
    pub fn set_auto(&self, auto: AutoAnswer) {
        self.serving.set_auto(auto);
    }

    /// Closes the connection (code 1001) or stops waiting to reconnect, and waits for it.
    pub async fn shutdown(self) {
        self.serving.shutdown().await;
    }
}

/// The handshake request: `url` checked, the token as a bearer header.
fn request(url: &str, token: &str) -> Result<Request> {
    let bad = |why| GatewayError::ExecutorUrl {
        url: url.to_string(),
        why,
    };
    let trimmed = url.trim();
    if !trimmed.starts_with("ws://") && !trimmed.starts_with("wss://") {
        return Err(bad("must start with ws:// or wss://"));
    }
    let mut request = trimmed
        .into_client_request()
        .map_err(|_| bad("is not a valid WebSocket address"))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| GatewayError::ExecutorToken)?;
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    Ok(request)
}

/// Why an attempt failed: worth trying again, or not.
enum Failure {
    Retry(String),
    Refused(String),
}

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn connect(request: Request) -> Result<(Ws, SocketAddr), Failure> {
    let limit = Some(MAX_MESSAGE);
    let config = WebSocketConfig::default()
        .max_message_size(limit)
        .max_frame_size(limit);
    // wss:// builds its TLS client from the process's crypto provider.
    crate::llm::init_tls();
    let attempt = tokio_tungstenite::connect_async_with_config(request, Some(config), true);
    let (ws, _) = match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok(connected)) => connected,
        Ok(Err(WsError::Http(response)))
            if matches!(
                response.status(),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ) =>
        {
            let status = response.status();
            return Err(Failure::Refused(format!(
                "the executor refused the token (HTTP {status}); check it in Settings"
            )));
        }
        Ok(Err(WsError::Http(response))) => {
            let status = response.status();
            return Err(Failure::Retry(format!(
                "the executor answered HTTP {status}"
            )));
        }
        Ok(Err(e)) => return Err(Failure::Retry(format!("cannot connect: {e}"))),
        Err(_) => return Err(Failure::Retry("the connection attempt timed out".into())),
    };
    let unknown = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
    let peer = match ws.get_ref() {
        MaybeTlsStream::Plain(stream) => stream.peer_addr().unwrap_or(unknown),
        MaybeTlsStream::Rustls(stream) => stream.get_ref().0.peer_addr().unwrap_or(unknown),
        _ => unknown,
    };
    Ok((ws, peer))
}

/// Connects, serves, and after a drop or a failed attempt waits and connects again.
async fn run(
    shared: Arc<Shared>,
    request: Request,
    name: Option<String>,
    backoff: Backoff,
    report: watch::Sender<ApproverStatus>,
) {
    let mut delay = backoff.first;
    let mut conn = 0u64;
    loop {
        report.send_replace(ApproverStatus::Connecting);
        let attempt = shared.stop.run_until_cancelled(connect(request.clone()));
        let error = match attempt.await {
            None => break,
            Some(Ok((ws, addr))) => {
                conn += 1;
                delay = backoff.first;
                report.send_replace(ApproverStatus::Connected);
                shared.emit(GatewayEvent::ClientConnected { conn, addr });
                match session(ws, conn, name.clone(), &shared).await {
                    Ended::Stopped => break,
                    Ended::Peer => "the executor closed the connection".to_string(),
                }
            }
            Some(Err(Failure::Refused(why))) => {
                report.send_replace(ApproverStatus::Refused(why));
                return;
            }
            Some(Err(Failure::Retry(why))) => why,
        };
        let after = delay;
        report.send_replace(ApproverStatus::Reconnecting { after, error });
        let wait = shared.stop.run_until_cancelled(tokio::time::sleep(after));
        if wait.await.is_none() {
            break;
        }
        delay = (delay * 2).min(backoff.max);
    }
    report.send_replace(ApproverStatus::Stopped);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_websocket_addresses_are_taken() {
        assert!(request("ws://127.0.0.1:4002/", "t").is_ok());
        assert!(request(" ws://localhost:4002/x?y=1 ", "t").is_ok());
        assert!(request("wss://executor.example.com/approvals", "t").is_ok());
        for bad in [
            "https://example.com/",
            "http://x/",
            "127.0.0.1:4002",
            "ws://",
        ] {
            assert!(
                matches!(request(bad, "t"), Err(GatewayError::ExecutorUrl { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            request("ws://x/", "bad\ntoken"),
            Err(GatewayError::ExecutorToken)
        ));
        let sent = request("ws://x:1/", "secret").unwrap();
        assert_eq!(sent.headers()[header::AUTHORIZATION], "Bearer secret");
    }

    #[tokio::test]
    async fn wss_speaks_tls() {
        // A plain TCP peer that answers garbage: the client tried a TLS handshake (and says
        // the attempt failed, to be retried), rather than refusing wss:// outright.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            if let Ok((mut socket, _)) = listener.accept().await {
                use tokio::io::AsyncWriteExt;
                let _ = socket.write_all(b"HTTP/1.1 200 OK\r\n\r\nnot tls").await;
            }
        });
        let sent = request(&format!("wss://127.0.0.1:{port}/"), "t").unwrap();
        match connect(sent).await {
            Err(Failure::Retry(why)) => assert!(why.starts_with("cannot connect"), "{why}"),
            Err(Failure::Refused(why)) => panic!("refused: {why}"),
            Ok(_) => panic!("a TLS session with a plain TCP peer"),
        }
    }
}
