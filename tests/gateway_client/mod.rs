//! The approval client against a fake executor: a WebSocket server on a free loopback port
//! that checks the bearer token and sends requests the way an executor does
//! ("Security Evaluation Request" / "code response approval" with `risk_level`), or in the
//! gateway's own spelling. Requests land in the real SQLite store.

use super::*;
use tandem_core::agent::gateway::{Approver, ApproverConfig, ApproverStatus, Backoff};
use tandem_core::app::{App, ApproverSettings};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

type Served = WebSocketStream<TcpStream>;

/// A fake executor: accepts connections, refusing (401) those without the token.
struct Executor {
    listener: TcpListener,
    token: String,
}

impl Executor {
    async fn start(token: &str) -> Executor {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let token = token.to_string();
        Executor { listener, token }
    }

    fn url(&self) -> String {
        format!("ws://{}/approvals", self.listener.local_addr().unwrap())
    }

    /// The next connection: `Some` once its handshake passed, `None` if it was refused.
    async fn accept(&self) -> Option<Served> {
        let accept = async {
            let (stream, _) = self.listener.accept().await.unwrap();
            let expected = format!("Bearer {}", self.token);
            #[allow(clippy::result_large_err)]
            let check = |request: &Request, response: Response| {
                let given = request.headers().get(header::AUTHORIZATION);
                if given.and_then(|v| v.to_str().ok()) == Some(expected.as_str()) {
                    return Ok(response);
                }
                let mut refusal = ErrorResponse::new(Some("bad token".into()));
                *refusal.status_mut() = StatusCode::UNAUTHORIZED;
                Err(refusal)
            };
            tokio_tungstenite::accept_hdr_async(stream, check)
                .await
                .ok()
        };
        tokio::time::timeout(BOUND, accept).await.unwrap()
    }

    /// No connection attempt arrives for a while.
    async fn assert_no_attempt(&self) {
        let attempt = tokio::time::timeout(Duration::from_millis(600), self.listener.accept());
        assert!(attempt.await.is_err(), "the client tried again");
    }
}

/// Sends `frame` and returns Tandem's request id from the ack.
async fn ask(ws: &mut Served, frame: Value) -> i64 {
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

/// As an executor spells a security evaluation.
fn executor_evaluation(id: &str, code: &str, risk_level: &str) -> Value {
    json!({"type": "Security Evaluation Request", "id": id, "code": code,
        "explanation": "the agent wants to run this", "risk_level": risk_level})
}

fn executor_code_response(id: &str, exit_code: i32) -> Value {
    json!({"type": "code response approval", "id": id, "code": "make test",
        "stdout": "all passed\n", "stderr": "", "exit_code": exit_code})
}

fn fast() -> Backoff {
    Backoff {
        first: Duration::from_millis(100),
        max: Duration::from_millis(400),
    }
}

struct Client {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    approver: Approver,
    events: broadcast::Receiver<GatewayEvent>,
    status: watch::Receiver<ApproverStatus>,
}

fn client(url: String, token: &str, auto: AutoAnswer) -> Client {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_file(&dir.path().join("tandem.db")).unwrap());
    let token = token.to_string();
    let config = ApproverConfig {
        url,
        token,
        auto,
        backoff: fast(),
    };
    let approver = Approver::start(config, Arc::clone(&store)).unwrap();
    let (events, status) = (approver.subscribe(), approver.status());
    Client {
        _dir: dir,
        store,
        approver,
        events,
        status,
    }
}

/// Waits for a status that `wanted` accepts, and returns it.
async fn status(
    status: &mut watch::Receiver<ApproverStatus>,
    wanted: impl Fn(&ApproverStatus) -> bool,
) -> ApproverStatus {
    let seen = tokio::time::timeout(BOUND, status.wait_for(|s| wanted(s))).await;
    seen.unwrap().unwrap().clone()
}

#[tokio::test]
async fn requests_from_the_executor_are_decided_by_policy_and_persisted() {
    let executor = Executor::start(TOKEN).await;
    let rules = auto(Some(Risk::Low), CodeResponsePolicy::OnSuccess);
    let mut c = client(executor.url(), TOKEN, rules);
    let mut ws = executor.accept().await.unwrap();
    status(&mut c.status, |s| *s == ApproverStatus::Connected).await;

    // Low risk: approved at once, by the rules, and recorded under the executor's address.
    let low = ask(&mut ws, executor_evaluation("e1", "ls -la", "low")).await;
    let decision = recv(&mut ws).await;
    let expected = json!({"type": "decision", "id": "e1", "request_id": low, "approved": true,
        "reason": "auto-approved: low risk, limit low", "decided_by": "auto"});
    assert_eq!(decision, expected);
    let record = c.store.approval_request(low).unwrap();
    assert_eq!(record.kind, ExecutorRequestKind::Evaluation);
    assert_eq!(record.decided_by, Some(DecidedBy::Auto));
    assert_eq!(record.payload["risk_level"], "low");
    let address = executor.listener.local_addr().unwrap();
    assert_eq!(record.client, Some(format!("executor {address}")));

    // Declared low, but Tandem judges it: it waits for the person, with its fingerprint.
    let risky = ask(&mut ws, executor_evaluation("e2", "rm -rf ~", "low")).await;
    let asked = |e: &GatewayEvent| matches!(e, GatewayEvent::Requested { .. });
    match next_event(&mut c.events, asked).await {
        GatewayEvent::Requested {
            id, fingerprint: f, ..
        } => {
            assert_eq!(id, risky);
            assert_eq!(f, fingerprint("rm   -rf ~ "));
        }
        other => panic!("expected Requested, got {other:?}"),
    }
    assert!(c.store.approval_request(risky).unwrap().is_pending());
    let silent = tokio::time::timeout(Duration::from_millis(300), ws.next()).await;
    assert!(silent.is_err(), "decided without the person: {silent:?}");

    // Code responses follow their own rule: exit 0 passes, a failure waits.
    let ok = ask(&mut ws, executor_code_response("c1", 0)).await;
    assert_eq!(recv(&mut ws).await["approved"], true);
    let failed = ask(&mut ws, executor_code_response("c2", 2)).await;
    assert!(c.store.approval_request(failed).unwrap().is_pending());
    let record = c.store.approval_request(ok).unwrap();
    assert_eq!(record.kind, ExecutorRequestKind::CodeResponse);

    // The person's answers reach the executor, each under its own id.
    c.approver
        .decide(failed, true, Some("expected failure".into()))
        .unwrap();
    let answer = recv(&mut ws).await;
    assert_eq!(
        (&answer["id"], &answer["approved"]),
        (&json!("c2"), &json!(true))
    );
    assert_eq!(answer["decided_by"], "user");
    c.approver.decide(risky, false, None).unwrap();
    let answer = recv(&mut ws).await;
    assert_eq!(
        (&answer["id"], &answer["approved"]),
        (&json!("e2"), &json!(false))
    );
    let record = c.store.approval_request(risky).unwrap();
    assert_eq!(record.decision, Some(ExecutorDecision::Rejected));

    // The gateway's own spelling is understood too.
    let frame = json!({"type": "security_evaluation", "id": "g1", "code": "pwd",
        "explanation": "", "risk": "low"});
    ask(&mut ws, frame).await;
    assert_eq!(recv(&mut ws).await["approved"], true);
    assert_eq!(c.store.approval_requests(10).unwrap().len(), 5);
}

#[tokio::test]
async fn a_malformed_frame_is_reported_and_loses_nothing() {
    let executor = Executor::start(TOKEN).await;
    let mut c = client(executor.url(), TOKEN, AutoAnswer::default());
    let mut ws = executor.accept().await.unwrap();
    let waiting = ask(&mut ws, executor_evaluation("w", "make", "medium")).await;
    event(&mut c.events).await;

    send(
        &mut ws,
        json!({"type": "Security Evaluation Request", "id": "bad", "code": "ls"}),
    )
    .await;
    let error = recv(&mut ws).await;
    assert_eq!(
        (&error["type"], &error["id"]),
        (&json!("error"), &json!("bad"))
    );
    let message = error["message"].as_str().unwrap().to_string();
    assert!(message.contains("malformed"), "{message}");
    let reported = next_event(&mut c.events, |e| {
        matches!(e, GatewayEvent::BadFrame { .. })
    })
    .await;
    let expected = GatewayEvent::BadFrame {
        conn: 1,
        id: Some("bad".into()),
        message,
    };
    assert_eq!(reported, expected);
    ws.send(Message::text("{not json")).await.unwrap();
    assert_eq!(recv(&mut ws).await["type"], "error");

    // Nothing recorded for it; the request before it still waits and can still be answered.
    assert_eq!(c.store.approval_requests(10).unwrap().len(), 1);
    assert!(c.approver.is_waiting(waiting));
    c.approver.decide(waiting, true, None).unwrap();
    assert_eq!(recv(&mut ws).await["id"], "w");
}

#[tokio::test]
async fn a_dropped_connection_is_made_again_with_backoff() {
    let executor = Executor::start(TOKEN).await;
    let rules = auto(Some(Risk::Low), CodeResponsePolicy::Never);
    let mut c = client(executor.url(), TOKEN, rules);
    let mut ws = executor.accept().await.unwrap();
    let pending = ask(&mut ws, executor_evaluation("p", "make install", "high")).await;
    drop(ws);

    let gone = next_event(&mut c.events, |e| {
        matches!(e, GatewayEvent::ClientGone { .. })
    })
    .await;
    let GatewayEvent::ClientGone {
        conn, abandoned, ..
    } = gone
    else {
        unreachable!()
    };
    assert_eq!((conn, abandoned), (1, vec![pending]));
    let reconnecting = status(&mut c.status, |s| {
        matches!(s, ApproverStatus::Reconnecting { .. })
    })
    .await;
    assert!(
        matches!(&reconnecting, ApproverStatus::Reconnecting { after, .. } if *after == fast().first),
        "{reconnecting:?}"
    );

    // It comes back by itself; the abandoned request stays recorded, pending.
    let mut ws = executor.accept().await.unwrap();
    status(&mut c.status, |s| *s == ApproverStatus::Connected).await;
    assert!(c.store.approval_request(pending).unwrap().is_pending());
    assert!(!c.approver.is_waiting(pending));
    ask(&mut ws, executor_evaluation("again", "ls", "low")).await;
    assert_eq!(recv(&mut ws).await["approved"], true);

    // While the executor is away, the waits grow to the cap.
    let address = executor.listener.local_addr().unwrap();
    drop(executor);
    drop(ws);
    // Every wait lasts 100 ms or more: each one is seen, whatever else is missed.
    let mut waits = Vec::new();
    while waits.len() < 4 {
        tokio::time::timeout(BOUND, c.status.changed())
            .await
            .unwrap()
            .unwrap();
        if let ApproverStatus::Reconnecting { after, .. } = &*c.status.borrow_and_update() {
            waits.push(after.as_millis());
        }
    }
    assert_eq!(waits, [100, 200, 400, 400]);

    // Once it is back, a good connection resets the wait.
    let listener = TcpListener::bind(address).await.unwrap();
    let executor = Executor {
        listener,
        token: TOKEN.into(),
    };
    let ws = executor.accept().await.unwrap();
    status(&mut c.status, |s| *s == ApproverStatus::Connected).await;
    drop(ws);
    let seen = status(&mut c.status, |s| {
        matches!(s, ApproverStatus::Reconnecting { .. })
    })
    .await;
    assert!(
        matches!(&seen, ApproverStatus::Reconnecting { after, .. } if *after == fast().first),
        "{seen:?}"
    );
    c.approver.shutdown().await;
}

#[tokio::test]
async fn a_wrong_token_is_reported_and_not_retried() {
    let executor = Executor::start(TOKEN).await;
    let mut c = client(executor.url(), "not-the-token", AutoAnswer::default());
    assert!(executor.accept().await.is_none(), "the fake let it in");
    let refused = status(&mut c.status, |s| matches!(s, ApproverStatus::Refused(_))).await;
    let ApproverStatus::Refused(why) = refused else {
        unreachable!()
    };
    assert!(why.contains("401") && why.contains("token"), "{why}");
    assert!(
        !why.contains("not-the-token"),
        "the token leaked into {why}"
    );
    executor.assert_no_attempt().await;
}

#[tokio::test]
async fn disconnecting_closes_the_connection_and_stops_trying() {
    let executor = Executor::start(TOKEN).await;
    let c = client(executor.url(), TOKEN, AutoAnswer::default());
    let mut ws = executor.accept().await.unwrap();
    let mut status = c.status.clone();
    self::status(&mut status, |s| *s == ApproverStatus::Connected).await;
    // The executor reads (and so answers the close) while the client shuts down.
    let read = async {
        let close = tokio::time::timeout(BOUND, ws.next()).await.unwrap();
        while let Some(Ok(_)) = ws.next().await {}
        close
    };
    let (close, ()) = tokio::join!(read, c.approver.shutdown());
    match close {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Away),
        other => panic!("expected a close frame, got {other:?}"),
    }
    assert_eq!(*status.borrow_and_update(), ApproverStatus::Stopped);
    executor.assert_no_attempt().await;
}

/// Through the application layer, as the window and the CLI use it: the person's decision
/// (or the agent's, for a request with the fingerprint of its own waiting call) is routed to
/// the executor that waits for it, with no gateway running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_routes_decisions_to_the_executor() {
    let executor = Executor::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let app = App::open_in(Some(dir.path()), crate::common::environment()).unwrap();
    let settings = ApproverSettings {
        url: executor.url(),
        connect: true,
        token: TOKEN.into(),
    };
    let mut started = app.start_approver(&settings).await.unwrap();
    let mut ws = executor.accept().await.unwrap();
    let id = ask(&mut ws, executor_evaluation("a", "cargo  test", "medium")).await;
    match event(&mut started.events).await {
        GatewayEvent::Requested { fingerprint: f, .. } => {
            assert_eq!(f, fingerprint("cargo test"));
        }
        other => panic!("expected Requested, got {other:?}"),
    }
    app.decide_gateway(id, true, Some("same command".into()))
        .await
        .unwrap();
    let answer = recv(&mut ws).await;
    assert_eq!(
        (&answer["id"], &answer["approved"]),
        (&json!("a"), &json!(true))
    );
    assert_eq!(app.approval_requests(10).unwrap()[0].id, id);
    app.stop_approver().await;
    assert_eq!(*started.status.borrow(), ApproverStatus::Stopped);
}

/// The connection may be made, and a request arrive, before the window subscribes: its first
/// subscription still hears of them.
#[tokio::test]
async fn the_first_subscriber_hears_what_happened_before_it_subscribed() {
    let executor = Executor::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_file(&dir.path().join("tandem.db")).unwrap());
    let config = ApproverConfig {
        url: executor.url(),
        token: TOKEN.into(),
        auto: AutoAnswer::default(),
        backoff: fast(),
    };
    let approver = Approver::start(config, Arc::clone(&store)).unwrap();
    let mut ws = executor.accept().await.unwrap();
    let id = ask(&mut ws, executor_evaluation("early", "make", "medium")).await;
    let mut events = approver.subscribe();
    assert!(matches!(
        events.recv().await.unwrap(),
        GatewayEvent::ClientConnected { conn: 1, .. }
    ));
    match events.recv().await.unwrap() {
        GatewayEvent::Requested { id: asked, .. } => assert_eq!(asked, id),
        other => panic!("expected Requested, got {other:?}"),
    }
}

/// `tandem gateway connect` against the fake: the token from the environment, the rules from
/// the settings; a refused token ends it with an error.
#[tokio::test]
async fn the_cli_answers_the_executor_headless() {
    let dir = tempfile::tempdir().unwrap();
    let tandem = |args: &[&str]| {
        let mut command = tokio::process::Command::from(crate::common::tandem());
        command
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env("TANDEM_EXECUTOR_TOKEN", TOKEN)
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null());
        command
    };
    let rules = r#"{"auto": {"evaluations_up_to": "low", "code_responses": "never"}}"#;
    let set = tandem(&["config", "set", "gateway.settings", rules]).output();
    assert!(set.await.unwrap().status.success());

    let executor = Executor::start(TOKEN).await;
    let mut child = tandem(&["gateway", "connect", &executor.url()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ws = executor.accept().await.unwrap();
    ask(&mut ws, executor_evaluation("cli", "ls", "low")).await;
    let decision = recv(&mut ws).await;
    assert_eq!(
        (&decision["approved"], &decision["decided_by"]),
        (&json!(true), &json!("auto"))
    );
    child.kill().await.unwrap();

    let wrong = Executor::start("another-token").await;
    let run = tandem(&["gateway", "connect", &wrong.url()]).output();
    let (refused, output) = tokio::join!(wrong.accept(), tokio::time::timeout(BOUND, run));
    assert!(refused.is_none());
    let output = output.unwrap().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refused the token"), "{stderr}");
}
