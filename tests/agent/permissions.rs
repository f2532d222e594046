//! What the agent may do and who says so: hard denies, risk levels, always-allow patterns, a
//! cancel while asking, the network opened for one approved command, fetches, special files.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_calls_hard_denied_or_preapproved_by_risk_and_run_in_the_project() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("run_shell", json!({"command": "rm -rf /"})),
            ollama_tool_call(
                "run_shell",
                json!({"command": "echo hello > made.txt && cat made.txt && exit 3"}),
            ),
            text("Done."),
        ],
    );
    let options = SendOptions {
        allow_risk: Some(Risk::High),
        ..SendOptions::default()
    };
    let (outcome, asked) = s.turn(ChatMode::Agent, "go", options, &[], false).await;
    assert_complete(&outcome);
    assert_eq!(asked, 0);
    let steps = s.steps(outcome.message_id);
    assert_eq!(
        steps[0].decision,
        Some(StepDecision::Denied),
        "hard denies win"
    );
    assert!(
        steps[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("never allowed")
    );
    assert_eq!(steps[1].decision, Some(StepDecision::Allowed));
    assert_eq!(steps[1].exit_code, Some(3), "{:?}", steps[1].result);
    assert!(steps[1].result.as_deref().unwrap().contains("hello"));
    // It ran in the chat's workspace: the file it made joins the proposal, labelled with
    // the command; the person's tree has no such file until they approve.
    assert!(!s.root.join("made.txt").exists());
    assert_eq!(steps[2].tool.as_deref(), Some("write_file"));
    assert!(
        steps[2]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("changed by `echo hello")
    );
    let review = s.engine.review(outcome.message_id).unwrap();
    let made = review.plan.files.iter().find(|f| f.path == "made.txt");
    assert!(made.is_some(), "{:?}", review.plan.files);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_saves_a_pattern_that_approves_the_next_call() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let call = || ollama_tool_call("write_file", json!({"path": "a.txt", "content": "a"}));
    s.script("/api/chat", vec![call(), call(), text("Twice.")]);
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "write a",
            SendOptions::default(),
            &[Answer::AlwaysAllow],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 1, "the second call matched the saved pattern");
    let policy: PolicySettings = s.engine.store().setting(AGENT_POLICY).unwrap().unwrap();
    assert_eq!(policy.allow, vec!["tool:write_file".to_string()]);
    let steps = s.steps(outcome.message_id);
    assert_eq!(steps[1].decision, Some(StepDecision::Allowed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_waiting_for_approval_stops_the_turn() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![ollama_tool_call(
            "delete_file",
            json!({"path": "src/main.rs"}),
        )],
    );
    let (outcome, asked) = s
        .turn(ChatMode::Agent, "delete", SendOptions::default(), &[], true)
        .await;
    assert_eq!(asked, 1);
    assert_eq!(outcome.status, MessageStatus::Cancelled);
    let steps = s.steps(outcome.message_id);
    assert_eq!(steps[0].decision, Some(StepDecision::Cancelled));
    assert!(s.service.pending_approvals().is_empty());
    assert!(s.root.join("src/main.rs").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_opens_only_for_a_network_command_the_person_approved() {
    use std::sync::atomic::Ordering::SeqCst;
    let (port, count) = counting_server();
    let fetch = format!("curl -s http://127.0.0.1:{port}/");
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let call = || ollama_tool_call("run_shell", json!({ "command": fetch }));

    // Asked, approved: it reaches the server, and the approval said the network comes with it.
    s.script("/api/chat", vec![call(), text("Fetched.")]);
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "fetch",
            SendOptions::default(),
            &[Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 1);
    let step = &s.steps(outcome.message_id)[0];
    assert!(
        step.reason.as_deref().unwrap().contains("use the network"),
        "{step:?}"
    );
    let sandbox = step.sandbox.as_ref().unwrap();
    if sandbox["confined"] == true {
        assert_eq!(sandbox["network"], "allowed", "{sandbox}");
    }
    assert_eq!(step.exit_code, Some(0), "{step:?}");
    assert!(
        step.result.as_deref().unwrap().contains("hello"),
        "{step:?}"
    );
    assert_eq!(count.load(SeqCst), 1);

    // Pre-approved by risk level only: it runs, confined, and the network stays shut.
    s.script("/api/chat", vec![call(), text("Tried.")]);
    let options = SendOptions {
        allow_risk: Some(Risk::High),
        ..SendOptions::default()
    };
    let (outcome, asked) = s.turn(ChatMode::Agent, "fetch", options, &[], false).await;
    assert_complete(&outcome);
    assert_eq!(asked, 0);
    let step = &s.steps(outcome.message_id)[0];
    assert_eq!(step.decision, Some(StepDecision::Allowed));
    let sandbox = step.sandbox.as_ref().unwrap();
    if sandbox["confined"] == true && sandbox["network"] == "isolated" {
        assert_ne!(step.exit_code, Some(0), "{step:?}");
        assert_eq!(
            count.load(SeqCst),
            1,
            "an unapproved command reached the network"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_url_is_asked_first_and_brings_the_page_back_as_text() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let page = "<html><head><title>Docs</title><script>var x = 1;</script></head>\
                <body><h1>Retry policy</h1><p>Use <b>exponential</b> backoff.</p></body></html>";
    s.server.push(
        "GET",
        "/docs/retry",
        Reply::Raw {
            status: 200,
            headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
            body: page.as_bytes().to_vec(),
        },
    );
    let url = format!("{}/docs/retry", s.server.url());
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("fetch_url", json!({"url": url})),
            text("Backoff it is."),
            ollama_tool_call("fetch_url", json!({"url": url})),
            text("Fine, I will not."),
        ],
    );
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "how should retries work?",
            SendOptions::default(),
            &[Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 1, "fetching reaches the network: asked");
    let step = &s.steps(outcome.message_id)[0];
    assert_eq!(step.tool.as_deref(), Some("fetch_url"));
    assert_eq!(step.risk, Some(Risk::Medium));
    let result = step.result.as_deref().unwrap();
    assert!(
        result.contains("Retry policy") && result.contains("exponential"),
        "{result}"
    );
    assert!(
        !result.contains("<b>") && !result.contains("var x"),
        "{result}"
    );
    let gets = |s: &Setup| {
        s.server
            .requests()
            .iter()
            .filter(|r| r.method == "GET")
            .count()
    };
    assert_eq!(gets(&s), 1);

    // Rejected: nothing is fetched, the model hears so.
    let (outcome, _) = s
        .turn(
            ChatMode::Agent,
            "check again",
            SendOptions::default(),
            &[Answer::Reject],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(gets(&s), 1);
}

/// A named pipe where a file is expected (nothing ever writes to it) and a socket: every read
/// a turn makes (the rules file, `@` mentions and the context walk, `read_file`, `grep` named
/// or walking, the edit check) refuses them at once, saying what they are, instead of
/// hanging the turn for ever. The turn runs on a thread of its own so that a hang fails the
/// test instead of hanging it.
#[cfg(unix)]
#[test]
fn named_pipes_and_sockets_are_refused_at_once_by_every_read_of_a_turn() {
    let (done, finished) = std::sync::mpsc::channel();
    let turn = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(named_pipes_turn());
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the turn did not finish: a read blocked on the named pipe")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = turn.join() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}
