//! MCP servers' tools in an agent turn.

use super::*;

/// The test MCP server (`tests/mcp_binary`), as the stdio server `testsrv` with `env`.
fn add_test_server(s: &Setup, env: &[(&str, &str)]) {
    let command = mcp_binary::server_binary().to_string_lossy().into_owned();
    let env = (env.iter()).map(|(k, v)| (k.to_string(), v.to_string()));
    let transport = tandem_core::store::McpTransport::Stdio {
        command,
        args: Vec::new(),
        env: env.collect(),
    };
    s.engine
        .store()
        .add_mcp_server("testsrv", transport)
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_join_the_tool_set_and_go_through_the_policy() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    add_test_server(&s, &[]);
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("testsrv__echo", json!({"text": "ping"})),
            text("The server said ping."),
        ],
    );
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "echo",
            SendOptions::default(),
            &[Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 1, "MCP tools are asked about by default");
    let steps = s.steps(outcome.message_id);
    assert_eq!(steps[0].tool.as_deref(), Some("testsrv/echo"));
    assert_eq!(steps[0].decision, Some(StepDecision::Approved));
    assert!(
        steps[0].result.as_deref().unwrap().contains("ping"),
        "{steps:?}"
    );
    let tools = s.chat_requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        tools
            .iter()
            .any(|t| t["function"]["name"] == "testsrv__echo")
    );
}

/// A chat's stdio server lives for its turn: each turn starts it, in the chat's workspace,
/// and the turn's end stops it with everything it started (its workspace closes then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_lives_for_its_turn() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let mark = marks::mark();
    add_test_server(&s, &[("MARK", &mark)]);
    for word in ["one", "two"] {
        s.script(
            "/api/chat",
            vec![
                ollama_tool_call("testsrv__echo", json!({ "text": word })),
                text("Echoed."),
            ],
        );
        let (outcome, _) = s
            .turn(
                ChatMode::Agent,
                "echo",
                SendOptions::default(),
                &[Answer::Approve],
                false,
            )
            .await;
        assert_complete(&outcome);
        let steps = s.steps(outcome.message_id);
        assert_eq!(steps[0].result.as_deref(), Some(word), "{steps:?}");
        let left = marks::survivors(&mark, std::time::Duration::from_secs(5));
        assert!(left.is_empty(), "running after the turn: {left:?}");
        assert!(s.service.mcp_pool().chats().await.is_empty());
    }
}

const DECOY: &str = "DECOY-SECRET-mcp";

/// The attacks of a stdio MCP server run for a model: its tool writes a file in its working
/// directory, reads a decoy credential outside the project (beside it, where a home's
/// `~/.ssh` would be), and starts a helper that would outlive it. In the agent's container,
/// in the chat's workspace: the person's tree does not change (the file is in the proposal,
/// labelled with the tool), the decoy cannot be read, and when the turn ends nothing the
/// server started is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_works_in_the_chats_workspace_and_reaches_nothing_else() {
    if !common::container_here() {
        return;
    }
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let decoy = s._dir.path().join("home/.ssh/id_rsa");
    std::fs::create_dir_all(decoy.parent().unwrap()).unwrap();
    std::fs::write(&decoy, DECOY).unwrap();
    let mark = marks::mark();
    add_test_server(&s, &[("MARK", &mark)]);
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call(
                "testsrv__write_file",
                json!({"path": "made-by-server.txt", "text": "from the server\n"}),
            ),
            ollama_tool_call(
                "testsrv__read_file",
                json!({"path": decoy.to_string_lossy()}),
            ),
            ollama_tool_call("testsrv__spawn_sleeper", json!({})),
            text("Done."),
        ],
    );
    let before = workspace::tree(&s.root);
    let options = SendOptions {
        allow_risk: Some(tandem_core::agent::policy::Risk::High),
        ..SendOptions::default()
    };
    let (outcome, _) = s
        .turn(ChatMode::Agent, "use the server", options, &[], false)
        .await;
    assert_complete(&outcome);
    let steps = s.steps(outcome.message_id);
    let call = |tool: &str| {
        let step = steps.iter().find(|st| st.tool.as_deref() == Some(tool));
        step.unwrap_or_else(|| panic!("no {tool} step: {steps:#?}"))
    };
    let wrote = call("testsrv/write_file");
    assert!(!wrote.is_error, "{wrote:?}");
    let slept = call("testsrv/spawn_sleeper");
    assert!(!slept.is_error, "{slept:?}");

    // Every property is checked before the test fails, so a failure names all that broke.
    let mut broken = Vec::new();
    // (1) The person's tree is as it was; the file is in the proposal, labelled.
    if workspace::tree(&s.root) != before {
        broken.push("the server wrote the person's tree".to_string());
    }
    let labelled = steps.iter().any(|st| {
        st.tool.as_deref() == Some("write_file")
            && st.reason.as_deref() == Some("changed by `testsrv/write_file`")
    });
    let review = s.engine.review(outcome.message_id).unwrap();
    let proposed = (review.plan.files.iter())
        .find(|f| f.path == "made-by-server.txt")
        .and_then(|f| f.new_text.clone());
    if !labelled || proposed.as_deref() != Some("from the server\n") {
        broken.push(format!(
            "the file is not in the proposal, labelled with the tool: {proposed:?} in {:?}",
            review.plan.files
        ));
    }
    // (2) The decoy beside the project cannot be read.
    let read = call("testsrv/read_file");
    let result = read.result.as_deref().unwrap_or_default();
    if result.contains(DECOY) || !read.is_error {
        broken.push(format!("the server read the decoy: {result}"));
    }
    // (3) The turn's end stopped the server and everything it started.
    let left = marks::survivors(&mark, std::time::Duration::from_secs(5));
    if !left.is_empty() {
        broken.push(format!("still running after the turn: {left:?}"));
    }
    assert!(broken.is_empty(), "{broken:#?}\n{steps:#?}");
}

/// What a stdio server writes while no call of its runs (as it starts, as it stops at the
/// turn's end) is in this turn's proposal under its own label: not under the next call's
/// name, not left for the next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_stdio_server_writes_outside_its_calls_is_proposed_as_its_own() {
    if !common::container_here() {
        return;
    }
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    add_test_server(
        &s,
        &[
            ("MCP_TEST_START_LOG", "started.log"),
            ("MCP_TEST_EXIT_WRITE", "stopped.txt"),
        ],
    );
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("testsrv__echo", json!({"text": "ping"})),
            text("Done."),
        ],
    );
    let before = workspace::tree(&s.root);
    let (outcome, _) = s
        .turn(
            ChatMode::Agent,
            "use the server",
            SendOptions::default(),
            &[Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(
        workspace::tree(&s.root),
        before,
        "the person's tree changed"
    );
    let steps = s.steps(outcome.message_id);
    let label = |path: &str| {
        let step = steps.iter().find(|st| {
            st.tool.as_deref() == Some("write_file")
                && (st.arguments.as_ref()).is_some_and(|a| a["path"] == path)
        });
        step.and_then(|st| st.reason.clone())
    };
    let own = Some(tandem_core::agent::runner::BETWEEN_CALLS.to_string());
    assert_eq!(label("started.log"), own, "{steps:#?}");
    assert_eq!(label("stopped.txt"), own, "{steps:#?}");
    let review = s.engine.review(outcome.message_id).unwrap();
    let proposed: Vec<&str> = (review.plan.files.iter())
        .map(|f| f.path.as_str())
        .collect();
    assert!(
        proposed.contains(&"started.log") && proposed.contains(&"stopped.txt"),
        "{proposed:?}"
    );
}
