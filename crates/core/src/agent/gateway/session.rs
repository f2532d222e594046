//! One authenticated connection's session, the same for the gateway's clients and for the
//! executor the approval client dials: frames in (a hello, requests), acks and decisions out,
//! each request recorded before its ack and either auto-answered or left to the person.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::{
    Conn, GatewayEvent, GatewayRequest, MAX_PENDING_PER_CONNECTION, Shared, effective_risk,
    fingerprint, lock,
};
use crate::store::{DecidedBy, ExecutorRequestKind};

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// The peer closed or dropped the connection.
    Peer,
    /// We are stopping.
    Stopped,
}

/// Serves one authenticated connection (`client`: its name until a hello says otherwise):
/// requests in, acks and decisions out, until either side ends it; then its undecided
/// requests are reported abandoned.
pub(super) async fn session<S>(
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
