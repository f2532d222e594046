//! The gateway's own judgement of every language, and its limits: requests waiting per
//! connection, connections still in their handshake.

use super::*;
use tandem_core::agent::gateway::{MAX_HANDSHAKING, MAX_PENDING_PER_CONNECTION};

fn in_language(id: &str, code: &str, language: Option<&str>, risk: &str) -> Value {
    json!({"type": "security_evaluation", "id": id, "code": code, "language": language,
        "explanation": "runs something", "risk": risk})
}

#[tokio::test]
async fn code_in_other_languages_is_high_risk_whatever_the_client_declares() {
    let mut s = setup(auto(Some(Risk::Medium), CodeResponsePolicy::Never)).await;
    let mut ws = connect(&s.gateway).await;
    let cases = [
        ("py", "import shutil; shutil.rmtree('/')", Some("python")),
        (
            "js",
            "require('fs').rmSync('/', {recursive: true})",
            Some("JavaScript"),
        ),
        ("unknown", "whatever", Some("cobol")),
    ];
    for (id, code, language) in cases {
        let frame = in_language(id, code, language, "low");
        let request = submit_asked(&mut s, &mut ws, frame).await;
        let record = s.store.approval_request(request).unwrap();
        assert_eq!(record.risk, Some(Risk::High), "{language:?}");
    }
    // A harmless shell command, declared low, is still judged by what it does.
    let frame = in_language("sh", "ls -la", None, "low");
    let request = submit_auto_approved(&mut s, &mut ws, frame).await;
    assert_eq!(
        s.store.approval_request(request).unwrap().risk,
        Some(Risk::Low)
    );
    // The declared risk can raise ours.
    let frame = in_language("raised", "ls -la", Some("bash"), "high");
    let request = submit_asked(&mut s, &mut ws, frame).await;
    assert_eq!(
        s.store.approval_request(request).unwrap().risk,
        Some(Risk::High)
    );
}

#[tokio::test]
async fn a_connection_may_have_only_so_many_requests_waiting() {
    let mut s = setup(auto(Some(Risk::Low), CodeResponsePolicy::Never)).await;
    let mut ws = connect(&s.gateway).await;
    let mut waiting = Vec::new();
    for i in 0..MAX_PENDING_PER_CONNECTION {
        let frame = evaluation(&format!("w{i}"), "make", "medium");
        waiting.push(submit_asked(&mut s, &mut ws, frame).await);
    }
    // One more is refused with an error naming it, and nothing is recorded for it.
    send(&mut ws, evaluation("over", "make", "medium")).await;
    let error = recv(&mut ws).await;
    assert_eq!(
        (error["type"].as_str(), &error["id"]),
        (Some("error"), &json!("over"))
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&MAX_PENDING_PER_CONNECTION.to_string()),
        "{message}"
    );
    let pending = s.store.pending_approval_requests().unwrap();
    assert_eq!(pending.len(), MAX_PENDING_PER_CONNECTION);
    // Auto-approved requests never wait, so they still go through.
    submit_auto_approved(&mut s, &mut ws, evaluation("auto", "ls", "low")).await;
    // Another connection has its own allowance.
    let mut other = connect(&s.gateway).await;
    submit_asked(&mut s, &mut other, evaluation("other", "make", "medium")).await;
    // Once one is decided, there is room again.
    let first = waiting[0];
    s.gateway.decide(first, false, None).unwrap();
    assert_eq!(recv(&mut ws).await["request_id"], first);
    let decided = event(&mut s.events).await;
    assert!(
        matches!(decided, GatewayEvent::Decided { id, .. } if id == first),
        "{decided:?}"
    );
    submit_asked(&mut s, &mut ws, evaluation("again", "make", "medium")).await;
}

/// A handshake with `token`: the connection, or the HTTP status it was refused with.
async fn try_connect(addr: std::net::SocketAddr, token: &str) -> Result<Ws, StatusCode> {
    let mut request = format!("ws://{addr}/").into_client_request().unwrap();
    let bearer = format!("Bearer {token}").parse().unwrap();
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    match connect_async(request).await {
        Ok((ws, _)) => Ok(ws),
        Err(WsError::Http(response)) => Err(response.status()),
        Err(other) => panic!("expected a connection or an HTTP refusal, got {other}"),
    }
}

#[tokio::test]
async fn connections_that_do_not_finish_their_handshake_are_limited() {
    let s = setup(AutoAnswer::default()).await;
    let addr = s.gateway.local_addr();
    // Connections that never send a handshake hold every slot…
    let mut idle = Vec::new();
    for _ in 0..MAX_HANDSHAKING {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // …so a client with the token is refused at once, with a 503 (once the idle ones have
    // all been accepted).
    let busy = tokio::time::timeout(BOUND, async {
        loop {
            match try_connect(addr, TOKEN).await {
                Err(status) => break status,
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    });
    assert_eq!(busy.await.unwrap(), StatusCode::SERVICE_UNAVAILABLE);
    // Closing them frees the slots; a wrong token is refused (401) and does not keep one.
    drop(idle);
    let connected = tokio::time::timeout(BOUND, async {
        loop {
            let wrong = try_connect(addr, "wrong").await.err();
            if wrong == Some(StatusCode::UNAUTHORIZED)
                && let Ok(ws) = try_connect(addr, TOKEN).await
            {
                break ws;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    connected.await.unwrap();
}
