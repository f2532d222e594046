//! MCP servers' tools in an agent turn.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_join_the_tool_set_and_go_through_the_policy() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let command = mcp_binary::server_binary().to_string_lossy().into_owned();
    s.engine
        .store()
        .add_mcp_server(
            "testsrv",
            tandem_core::store::McpTransport::Stdio {
                command,
                args: Vec::new(),
                env: Default::default(),
            },
        )
        .unwrap();
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

/// The project's MCP servers outlive the turn: the second turn calls the same process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_are_started_once_for_two_turns() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    let log = s._dir.path().join("mcp-starts.log");
    let command = mcp_binary::server_binary().to_string_lossy().into_owned();
    let env = [(
        "MCP_TEST_START_LOG".to_string(),
        log.to_string_lossy().into_owned(),
    )];
    s.engine
        .store()
        .add_mcp_server(
            "testsrv",
            tandem_core::store::McpTransport::Stdio {
                command,
                args: Vec::new(),
                env: env.into_iter().collect(),
            },
        )
        .unwrap();
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
    }
    let starts = std::fs::read_to_string(&log).unwrap();
    assert_eq!(starts.lines().count(), 1, "{starts}");
}
