//! The approval gateway end to end: a real WebSocket client against a gateway on a free
//! loopback port, backed by a real SQLite store.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
// Risk for every language and the connection limits, in their own file.
mod gateway_limits;
// The approval client (Tandem connecting out to an executor), against a fake executor.
mod gateway_client;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tandem_core::agent::gateway::{
    AutoAnswer, CodeResponsePolicy, Gateway, GatewayConfig, GatewayError, GatewayEvent,
    GatewayRequest, fingerprint, generate_token,
};
use tandem_core::agent::policy::Risk;
use tandem_core::store::{DecideError, DecidedBy, ExecutorDecision, ExecutorRequestKind, Store};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{StatusCode, header};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

const TOKEN: &str = "0123456789abcdef-test-token";
const BOUND: Duration = Duration::from_secs(10);
type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

struct Setup {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    gateway: Gateway,
    events: broadcast::Receiver<GatewayEvent>,
}

async fn setup(auto: AutoAnswer) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_file(&dir.path().join("tandem.db")).unwrap());
    let (port, token) = (0, TOKEN.to_string());
    let config = GatewayConfig { port, token, auto };
    let gateway = Gateway::start(config, Arc::clone(&store)).await.unwrap();
    let events = gateway.subscribe();
    Setup {
        _dir: dir,
        store,
        gateway,
        events,
    }
}

fn auto(evaluations_up_to: Option<Risk>, code_responses: CodeResponsePolicy) -> AutoAnswer {
    AutoAnswer {
        evaluations_up_to,
        code_responses,
    }
}

/// Connects with the token as a bearer header.
async fn connect(gateway: &Gateway) -> Ws {
    let mut request = format!("ws://{}/", gateway.local_addr())
        .into_client_request()
        .unwrap();
    let bearer = format!("Bearer {TOKEN}").parse().unwrap();
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    connect_async(request).await.unwrap().0
}

/// Sends `frame` as a text frame (from either end: a client, or the fake executor).
async fn send<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>, frame: Value) {
    ws.send(Message::text(frame.to_string())).await.unwrap();
}

/// The next text frame as JSON (pongs and other control frames skipped).
async fn recv<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>) -> Value {
    let next = async {
        loop {
            match ws.next().await.unwrap().unwrap() {
                Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
                Message::Close(frame) => panic!("closed: {frame:?}"),
                _ => {}
            }
        }
    };
    tokio::time::timeout(BOUND, next).await.unwrap()
}

/// Nothing arrives for a while: the client is (rightly) still waiting.
async fn assert_silent(ws: &mut Ws) {
    let next = tokio::time::timeout(Duration::from_millis(300), ws.next()).await;
    assert!(next.is_err(), "unexpected frame: {next:?}");
}

/// The next event about a request (connections coming and going, and refused frames,
/// skipped).
async fn event(events: &mut broadcast::Receiver<GatewayEvent>) -> GatewayEvent {
    use GatewayEvent::{BadFrame, ClientConnected, ClientGone};
    next_event(events, |e| {
        !matches!(
            e,
            ClientConnected { .. } | ClientGone { .. } | BadFrame { .. }
        )
    })
    .await
}

async fn next_event(
    events: &mut broadcast::Receiver<GatewayEvent>,
    wanted: impl Fn(&GatewayEvent) -> bool,
) -> GatewayEvent {
    loop {
        let event = tokio::time::timeout(BOUND, events.recv()).await;
        let event = event.unwrap().unwrap();
        if wanted(&event) {
            return event;
        }
    }
}

fn evaluation(id: &str, code: &str, risk: &str) -> Value {
    json!({"type": "security_evaluation", "id": id, "code": code, "language": "bash",
        "explanation": "lists files", "risk": risk})
}

fn code_response(id: &str, exit_code: i32) -> Value {
    json!({"type": "code_response", "id": id, "code": "make test", "stdout": "ok\n",
        "stderr": "", "exit_code": exit_code})
}

/// Sends `frame`, checks the ack and returns the request id it names.
async fn submit(ws: &mut Ws, frame: Value) -> i64 {
    let id = frame["id"].clone();
    send(ws, frame).await;
    let ack = recv(ws).await;
    assert_eq!(
        (ack["type"].as_str(), &ack["id"]),
        (Some("ack"), &id),
        "{ack}"
    );
    ack["request_id"].as_i64().unwrap()
}

/// Submits `frame` and expects the person to be asked about it.
async fn submit_asked(s: &mut Setup, ws: &mut Ws, frame: Value) -> i64 {
    let id = submit(ws, frame).await;
    match event(&mut s.events).await {
        GatewayEvent::Requested { id: asked, .. } => assert_eq!(asked, id),
        other => panic!("expected Requested, got {other:?}"),
    }
    assert!(s.store.approval_request(id).unwrap().is_pending());
    id
}

/// Submits `frame` and expects it approved at once, by the auto rules.
async fn submit_auto_approved(s: &mut Setup, ws: &mut Ws, frame: Value) -> i64 {
    let id = submit(ws, frame).await;
    let decision = recv(ws).await;
    let fields = ["type", "request_id", "approved", "decided_by"].map(|k| decision[k].clone());
    let expected = [json!("decision"), json!(id), json!(true), json!("auto")];
    assert_eq!(fields, expected);
    let event = event(&mut s.events).await;
    assert!(
        matches!(&event, GatewayEvent::Decided { id: d, approved: true, decided_by, .. }
            if *d == id && decided_by == "auto"),
        "{event:?}"
    );
    let record = s.store.approval_request(id).unwrap();
    assert_eq!(record.decision, Some(ExecutorDecision::Approved));
    assert_eq!(record.decided_by, Some(DecidedBy::Auto));
    id
}

async fn refused(url: String, bearer: Option<&str>) -> bool {
    let mut request = url.into_client_request().unwrap();
    if let Some(token) = bearer {
        let value = format!("Bearer {token}").parse().unwrap();
        request.headers_mut().insert(header::AUTHORIZATION, value);
    }
    match connect_async(request).await {
        Ok(_) => false,
        Err(WsError::Http(response)) => {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            true
        }
        Err(other) => panic!("expected a 401, got {other}"),
    }
}

#[tokio::test]
async fn the_handshake_needs_the_token() {
    let s = setup(AutoAnswer::default()).await;
    let base = format!("ws://{}/", s.gateway.local_addr());
    assert!(refused(base.clone(), None).await);
    assert!(refused(base.clone(), Some("wrong")).await);
    assert!(refused(base.clone(), Some(&TOKEN[1..])).await);
    assert!(refused(format!("{base}?token=wrong"), None).await);
    assert!(refused(format!("{base}?xtoken={TOKEN}"), None).await);
    assert!(!refused(base.clone(), Some(TOKEN)).await);
    assert!(!refused(format!("{base}?client=x&token={TOKEN}"), None).await);
}

#[tokio::test]
async fn it_listens_on_loopback_only_and_only_with_a_token() {
    let s = setup(AutoAnswer::default()).await;
    let addr = s.gateway.local_addr();
    assert_eq!(addr.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_ne!(addr.port(), 0);

    let (token, auto) = (" ".to_string(), AutoAnswer::default());
    let config = GatewayConfig {
        port: 0,
        token,
        auto,
    };
    let result = Gateway::start(config, Arc::clone(&s.store)).await;
    assert!(matches!(result, Err(GatewayError::EmptyToken)));
}

#[tokio::test]
async fn a_low_risk_evaluation_is_auto_approved_and_persisted() {
    let mut s = setup(auto(Some(Risk::Low), CodeResponsePolicy::Never)).await;
    let mut ws = connect(&s.gateway).await;
    send(&mut ws, json!({"type": "hello", "client": "runner"})).await;
    let id = submit_auto_approved(&mut s, &mut ws, evaluation("e1", "ls   -la", "low")).await;
    let record = s.store.approval_request(id).unwrap();
    assert_eq!(record.kind, ExecutorRequestKind::Evaluation);
    assert_eq!(record.client.as_deref(), Some("runner"));
    assert_eq!(record.risk, Some(Risk::Low));
    assert_eq!(record.fingerprint, fingerprint("ls -la"));
    assert_eq!(record.payload["code"], "ls   -la");
    assert_eq!(record.payload["id"], "e1");
    assert!(record.reason.unwrap().contains("auto"));
    assert!(s.store.pending_approval_requests().unwrap().is_empty());
}

#[tokio::test]
async fn a_medium_risk_evaluation_waits_for_the_person() {
    let mut s = setup(auto(Some(Risk::Low), CodeResponsePolicy::Never)).await;
    let mut ws = connect(&s.gateway).await;
    send(&mut ws, json!({"type": "hello", "client": "runner"})).await;
    send(&mut ws, evaluation("e2", "cargo build", "medium")).await;
    let ack = recv(&mut ws).await;
    let id = ack["request_id"].as_i64().unwrap();
    let request = GatewayRequest::Evaluation {
        code: "cargo build".into(),
        language: Some("bash".into()),
        explanation: "lists files".into(),
        risk: Risk::Medium,
    };
    let fingerprint = fingerprint("cargo build");
    let (client, risk) = (Some("runner".into()), Some(Risk::Medium));
    let expected = GatewayEvent::Requested {
        id,
        client,
        fingerprint,
        request,
        risk,
    };
    assert_eq!(event(&mut s.events).await, expected);
    assert_silent(&mut ws).await;
    assert_eq!(s.store.pending_approval_requests().unwrap()[0].id, id);

    s.gateway.decide(id, false, Some("not now".into())).unwrap();
    let decision = recv(&mut ws).await;
    let expected = json!({"type": "decision", "id": "e2", "request_id": id, "approved": false,
        "reason": "not now", "decided_by": "user"});
    assert_eq!(decision, expected);
    let record = s.store.approval_request(id).unwrap();
    assert_eq!(record.decision, Some(ExecutorDecision::Rejected));
    assert_eq!(record.decided_by, Some(DecidedBy::User));
    assert_eq!(record.reason.as_deref(), Some("not now"));
    assert!(matches!(
        event(&mut s.events).await,
        GatewayEvent::Decided {
            approved: false,
            ..
        }
    ));

    let again = s.gateway.decide(id, true, None);
    let already = matches!(
        again,
        Err(GatewayError::Decide(DecideError::AlreadyDecided { .. }))
    );
    assert!(already, "{again:?}");
    assert_eq!(s.store.approval_request(id).unwrap(), record);
}

#[tokio::test]
async fn a_dangerous_command_labelled_low_is_judged_by_what_it_does() {
    let mut s = setup(auto(Some(Risk::Low), CodeResponsePolicy::Never)).await;
    let mut ws = connect(&s.gateway).await;
    let id = submit_asked(&mut s, &mut ws, evaluation("e3", "rm -rf ~", "low")).await;
    assert_eq!(s.store.approval_request(id).unwrap().risk, Some(Risk::High));
    assert_silent(&mut ws).await;
}

#[tokio::test]
async fn code_responses_follow_their_policy() {
    let mut s = setup(auto(None, CodeResponsePolicy::OnSuccess)).await;
    let mut ws = connect(&s.gateway).await;
    let ok = submit_auto_approved(&mut s, &mut ws, code_response("c1", 0)).await;
    let record = s.store.approval_request(ok).unwrap();
    assert_eq!(
        (record.kind, record.risk),
        (ExecutorRequestKind::CodeResponse, None)
    );
    assert_eq!(record.fingerprint, fingerprint("make test"));
    submit_asked(&mut s, &mut ws, code_response("c2", 1)).await;

    s.gateway.set_auto(AutoAnswer::default()); // Never
    submit_asked(&mut s, &mut ws, code_response("c3", 0)).await;
    s.gateway.set_auto(auto(None, CodeResponsePolicy::Always));
    submit_auto_approved(&mut s, &mut ws, code_response("c4", 2)).await;
    // Evaluations are still asked: nothing auto-approves them.
    submit_asked(&mut s, &mut ws, evaluation("e", "ls", "low")).await;
}

#[tokio::test]
async fn malformed_frames_get_an_error_and_the_connection_stays_usable() {
    let mut s = setup(AutoAnswer::default()).await;
    let mut ws = connect(&s.gateway).await;
    ws.send(Message::text("{not json")).await.unwrap();
    let error = recv(&mut ws).await;
    assert_eq!(
        (error["type"].as_str(), &error["id"]),
        (Some("error"), &Value::Null)
    );

    let cases = [
        json!({"type": "security_evaluation", "id": "m1", "code": "ls"}),
        json!({"type": "security_evaluation", "id": "m2", "code": "ls", "explanation": "",
            "risk": "critical"}),
        json!({"type": "launch_missiles", "id": "m3"}),
        json!({"type": "code_response", "id": "m4", "stdout": "", "stderr": "",
            "exit_code": "zero"}),
    ];
    for case in cases {
        let id = case["id"].clone();
        send(&mut ws, case).await;
        let error = recv(&mut ws).await;
        assert_eq!(
            (error["type"].as_str(), &error["id"]),
            (Some("error"), &id),
            "{error}"
        );
        assert!(error["message"].as_str().unwrap().contains("malformed"));
    }
    send(
        &mut ws,
        json!({"type": "code_response", "stdout": "", "stderr": "", "exit_code": 0}),
    )
    .await;
    assert!(
        recv(&mut ws).await["message"]
            .as_str()
            .unwrap()
            .contains("`id`")
    );
    ws.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    assert_eq!(recv(&mut ws).await["type"], "error");

    // Nothing malformed was recorded, and the connection still works.
    assert!(s.store.approval_requests(10).unwrap().is_empty());
    submit_asked(&mut s, &mut ws, evaluation("ok", "ls", "low")).await;
}

#[tokio::test]
async fn outstanding_requests_are_answered_out_of_order_to_the_right_ids() {
    let mut s = setup(AutoAnswer::default()).await;
    let mut ws = connect(&s.gateway).await;
    let a = submit_asked(&mut s, &mut ws, evaluation("a", "make", "medium")).await;
    let b = submit_asked(&mut s, &mut ws, evaluation("b", "make install", "high")).await;
    assert_ne!(a, b);

    let answer = |frame: Value| {
        (
            frame["id"].clone(),
            frame["request_id"].clone(),
            frame["approved"].clone(),
        )
    };
    s.gateway.decide(b, true, None).unwrap();
    assert_eq!(
        answer(recv(&mut ws).await),
        (json!("b"), json!(b), json!(true))
    );
    s.gateway.decide(a, false, None).unwrap();
    assert_eq!(
        answer(recv(&mut ws).await),
        (json!("a"), json!(a), json!(false))
    );
}

#[tokio::test]
async fn a_decision_reaches_only_the_connection_that_asked() {
    let mut s = setup(AutoAnswer::default()).await;
    let (mut one, mut two) = (connect(&s.gateway).await, connect(&s.gateway).await);
    let id = submit_asked(&mut s, &mut one, evaluation("x", "make", "medium")).await;
    s.gateway.decide(id, true, None).unwrap();
    assert_eq!(recv(&mut one).await["request_id"], id);
    assert_silent(&mut two).await;
}

#[tokio::test]
async fn pings_are_answered() {
    let s = setup(AutoAnswer::default()).await;
    let mut ws = connect(&s.gateway).await;
    ws.send(Message::Ping(b"hi".to_vec().into())).await.unwrap();
    let pong = tokio::time::timeout(BOUND, ws.next()).await.unwrap();
    assert!(matches!(pong, Some(Ok(Message::Pong(payload))) if &payload[..] == b"hi"));
}

#[tokio::test]
async fn a_message_over_one_mebibyte_closes_the_connection() {
    let mut s = setup(AutoAnswer::default()).await;
    let ws = connect(&s.gateway).await;
    let (mut sink, mut stream) = ws.split();
    let big = evaluation("big", &"x".repeat(1 << 20), "low").to_string();
    tokio::spawn(async move { sink.send(Message::text(big)).await });
    let close = async {
        loop {
            match stream.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
                Some(Ok(_)) => {}
                other => panic!("expected a close frame, got {other:?}"),
            }
        }
    };
    let code = tokio::time::timeout(BOUND, close).await.unwrap();
    assert_eq!(code, Some(CloseCode::Size));
    assert!(s.store.approval_requests(10).unwrap().is_empty());
    // Others may still connect.
    let mut ws = connect(&s.gateway).await;
    submit_asked(&mut s, &mut ws, evaluation("small", "ls", "low")).await;
}

#[tokio::test]
async fn a_client_that_leaves_abandons_its_pending_requests_which_stay_recorded() {
    let mut s = setup(AutoAnswer::default()).await;
    let mut ws = connect(&s.gateway).await;
    send(&mut ws, json!({"type": "hello", "client": "runner"})).await;
    let id = submit_asked(&mut s, &mut ws, evaluation("gone", "make", "medium")).await;
    ws.close(None).await.unwrap();
    drop(ws);
    let gone = next_event(&mut s.events, |e| {
        matches!(e, GatewayEvent::ClientGone { .. })
    })
    .await;
    let expected = GatewayEvent::ClientGone {
        conn: 1,
        client: Some("runner".into()),
        abandoned: vec![id],
    };
    assert_eq!(gone, expected);
    assert!(s.store.approval_request(id).unwrap().is_pending());
    // Settling it later is harmless and recorded.
    s.gateway
        .decide(id, false, Some("too late".into()))
        .unwrap();
    let record = s.store.approval_request(id).unwrap();
    assert_eq!(record.decision, Some(ExecutorDecision::Rejected));
}

#[tokio::test]
async fn shutdown_closes_connections_and_stops_listening() {
    let mut s = setup(AutoAnswer::default()).await;
    let addr = s.gateway.local_addr();
    let mut ws = connect(&s.gateway).await;
    let id = submit_asked(&mut s, &mut ws, evaluation("s", "make", "medium")).await;
    // One stuck before its handshake does not hold shutdown up for the 10 s handshake timeout.
    let _stalled = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let quick = Duration::from_secs(5);
    tokio::time::timeout(quick, s.gateway.shutdown())
        .await
        .unwrap();
    let closed = tokio::time::timeout(BOUND, ws.next()).await.unwrap();
    let away = matches!(&closed, Some(Ok(Message::Close(Some(f)))) if f.code == CloseCode::Away);
    assert!(away, "{closed:?}");
    assert!(TcpStream::connect(addr).await.is_err());
    assert!(s.store.approval_request(id).unwrap().is_pending());
}

#[test]
fn fingerprints_ignore_blanks_but_not_commands_or_line_breaks() {
    let fp = fingerprint("ls   -la\r\n");
    assert_eq!(fp, fingerprint("  ls\t-la  "));
    assert_eq!(fingerprint("cd x\n\n   make  "), fingerprint("cd x\nmake"));
    assert_ne!(fp, fingerprint("ls -l"));
    assert_ne!(fingerprint("cd x\nmake"), fingerprint("cd x make"));
    // The git blob id of the normalised text, so any tool can compute it.
    assert_eq!(fingerprint(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    let blob = git2::Oid::hash_object(git2::ObjectType::Blob, b"ls -la").unwrap();
    assert_eq!(fp, blob.to_string());
}

#[test]
fn tokens_are_long_random_hex() {
    let (a, b) = (generate_token().unwrap(), generate_token().unwrap());
    assert_eq!(a.len(), 64);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}
