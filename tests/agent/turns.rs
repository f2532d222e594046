//! An agent turn as a whole: its step limit, Plan mode, the window across many steps, the
//! check it hears, a mentioned file up front.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_limit_ends_the_turn() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    s.engine.store().set_setting("agent.max_steps", &2).unwrap();
    let read = || ollama_tool_call("list_files", json!({}));
    s.script("/api/chat", vec![read(), read(), read()]);
    let (outcome, _) = s
        .turn(ChatMode::Agent, "loop", SendOptions::default(), &[], false)
        .await;
    assert_eq!(outcome.status, MessageStatus::Complete);
    assert!(
        outcome.content.contains("Stopped after 2 tool steps"),
        "{}",
        outcome.content
    );
    assert_eq!(s.steps(outcome.message_id).len(), 2);
    assert_eq!(s.chat_requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_only_reads_and_ends_with_a_plan() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("write_file", json!({"path": "a.txt", "content": "a"})),
            text("1. **Goal** — greet.\n2. **Steps** — add `src/greet.rs`."),
        ],
    );
    let (outcome, asked) = s
        .turn(
            ChatMode::Plan,
            "plan a greeting",
            SendOptions::default(),
            &[],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 0);
    assert!(outcome.content.contains("**Goal**"));
    let steps = s.steps(outcome.message_id);
    assert_eq!(steps[0].decision, Some(StepDecision::Denied));
    let message = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(message.approval_state, None, "a plan proposes nothing");
    let tools = s.chat_requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<_> = tools
        .iter()
        .map(|t| t["function"]["name"].clone())
        .collect();
    assert!(names.contains(&json!("read_file")));
    assert!(!names.contains(&json!("write_file")) && !names.contains(&json!("run_shell")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_long_turn_fits_the_window_and_num_ctx_follows_it() {
    // A 32,768-token model (the setup's provider) reads four files of ~16,000 tokens each
    // through the text protocol: together four times what the window can hold beside a reply.
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("text");
    for name in ["a", "b", "c", "d"] {
        let text: String = (0..1500)
            .map(|i| format!("def {name}_{i:04}(x): return x * {i}  # a line\n"))
            .collect();
        std::fs::write(s.root.join(format!("{name}.py")), text).unwrap();
    }
    let read = |name: &str| {
        text(&format!(
            "TOOL_CALL {{\"name\": \"read_file\", \"arguments\": {{\"path\": \"{name}.py\"}}}}"
        ))
    };
    s.script(
        "/api/chat",
        vec![
            text("PLAN {\"steps\": [\"Read the four files\"]}"),
            read("a"),
            read("b"),
            read("c"),
            read("d"),
            text("STEP_DONE {\"index\": 1}"),
            text("FINAL {\"message\": \"Read them all.\"}"),
        ],
    );
    let (outcome, _) = s
        .turn(
            ChatMode::Agent,
            "read a.py, b.py, c.py and d.py",
            SendOptions::default(),
            &[],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(outcome.content, "Read them all.");

    let requests = s.chat_requests();
    assert_eq!(requests.len(), 7);
    let window = 32_768;
    let mut sizes = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let num_ctx = request.body["options"]["num_ctx"].as_u64().unwrap() as usize;
        let sent = sent_tokens(&request.body);
        // Each request is sized on its own: itself plus the reply's room, never over the window.
        assert!(num_ctx <= window, "request {i}: num_ctx {num_ctx}");
        assert!(
            sent + 8192 <= num_ctx,
            "request {i}: {sent} tokens sent with num_ctx {num_ctx}"
        );
        sizes.push(num_ctx);
    }
    // Sized for each request, not once per turn (it was 9,216 for all of them).
    assert!(
        sizes[2] > sizes[0],
        "num_ctx grows with the turn: {sizes:?}"
    );
    // What the model was told about the first file once it no longer fitted.
    let last = requests[6].body["messages"].as_array().unwrap();
    let texts: Vec<&str> = last.iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("read_file a.py: ") && t.contains("elided to fit")),
        "{texts:#?}"
    );
    // The person's prompt and the newest result went out whole.
    assert!(texts.contains(&"read a.py, b.py, c.py and d.py"));
    assert!(texts.iter().any(|t| t.contains("def d_1499(x)")));

    // The step card says what was elided.
    let steps = s.steps(outcome.message_id);
    let trimmed: Vec<_> = steps
        .iter()
        .filter(|s| s.kind == StepKind::Trimmed)
        .collect();
    assert!(!trimmed.is_empty(), "{steps:#?}");
    let said = trimmed[0].result.as_deref().unwrap();
    assert!(
        said.contains("read_file a.py") && said.contains("context window"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_turn_hears_its_failing_check_and_ends_with_edits_that_pass() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    s.set_check("! grep -rn BROKEN src");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call(
                "write_file",
                json!({"path": "src/main.rs", "content": "fn main() { BROKEN }\n"}),
            ),
            text("Done."),
            ollama_tool_call(
                "search_replace",
                json!({"path": "src/main.rs", "search": "BROKEN", "replace": "println!(\"ok\");"}),
            ),
            text("Fixed."),
        ],
    );
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "print ok",
            SendOptions::default(),
            &[Answer::Approve, Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 2);

    // The first final answer was checked and failed; the model was told and fixed it on top
    // of its earlier edit; the second check passed.
    assert_eq!(outcome.checks.len(), 2, "{:#?}", outcome.checks);
    assert!(!outcome.checks[0].passed && outcome.checks[0].exit_code == Some(1));
    assert_eq!(outcome.checks[0].problems[0].path, "src/main.rs");
    assert!(outcome.checks[1].passed, "{:#?}", outcome.checks[1]);
    assert_eq!((outcome.checks[0].round, outcome.checks[1].round), (1, 2));
    let requests = s.chat_requests();
    assert_eq!(requests.len(), 4);
    let told = requests[2].body["messages"].as_array().unwrap();
    let feedback = told.last().unwrap();
    assert_eq!(feedback["role"], "user");
    let feedback = feedback["content"].as_str().unwrap();
    assert!(feedback.contains("failed with exit code 1"), "{feedback}");
    assert!(feedback.contains("- src/main.rs:1: "), "{feedback}");
    assert!(
        feedback.contains("the user's files are unchanged"),
        "{feedback}"
    );
    let kinds: Vec<_> = s.steps(outcome.message_id).iter().map(|s| s.kind).collect();
    use StepKind::{Check, Tool};
    assert_eq!(kinds, [Tool, Check, Tool, Check]);

    // The proposal is the fixed file; the person's tree was never touched.
    let review = s.engine.review(outcome.message_id).unwrap();
    assert!(
        review
            .plan
            .unified_diff()
            .contains("+fn main() { println!(\"ok\"); }")
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(common::git(&s.root, &["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_protocol_agent_still_failing_its_check_is_not_auto_approved() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("text");
    s.set_check("! grep -rn BROKEN src");
    let store = s.engine.store();
    store.set_setting("chat.repair_rounds", &1).unwrap();
    store.set_setting("chat.auto_approve", &true).unwrap();
    let write = "TOOL_CALL {\"name\": \"write_file\", \"arguments\": {\"path\": \"src/main.rs\", \"content\": \"fn main() { BROKEN }\\n\"}}";
    s.script(
        "/api/chat",
        vec![
            text("PLAN {\"steps\": [\"Write main\"]}"),
            text(write),
            text("STEP_DONE {\"index\": 1}"),
            text("FINAL {\"message\": \"done\"}"),
            text(write),
            text("FINAL {\"message\": \"done again\"}"),
        ],
    );
    let (outcome, _) = s
        .turn(
            ChatMode::Agent,
            "break it",
            SendOptions::default(),
            &[Answer::Approve, Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(outcome.content, "done again");
    // One round back to the model, then the turn ends with the check still failing.
    assert_eq!(outcome.checks.len(), 2, "{:#?}", outcome.checks);
    assert!(outcome.checks.iter().all(|c| !c.passed));
    let told = s.chat_requests()[4].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let feedback = told.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(feedback.contains("send FINAL again"), "{feedback}");
    assert!(
        outcome.approval.is_none(),
        "a failing proposal waits for the person"
    );
    let message = store.message(outcome.message_id).unwrap();
    assert_eq!(message.approval_state, Some(ApprovalState::Pending));
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_mentioned_with_an_at_is_sent_to_the_agent_up_front() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![text("Nothing to do."), text("Nothing to do.")],
    );
    for prompt in ["what is in src/main.rs?", "what is in @src/main.rs?"] {
        let (outcome, _) = s
            .turn(ChatMode::Agent, prompt, SendOptions::default(), &[], false)
            .await;
        assert_complete(&outcome);
    }
    let requests = s.chat_requests();
    let sent = |i: usize| requests[i].body["messages"].to_string();
    // Named in passing: the agent gets the file list and reads what it needs.
    assert!(sent(0).contains("src/main.rs") && !sent(0).contains("fn main() {}"));
    // Put in with `@`: its content is there from the first request.
    assert!(sent(1).contains("fn main() {}"), "{}", sent(1));
}

/// A step refused as longer than the model's window, with the server's count: the turn ends
/// with the refusal and says the count was learnt; the next turn is sized by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_refused_as_too_long_teaches_the_servers_count_for_the_next_turn() {
    let s = setup(ProviderKind::Openai).await;
    s.tool_calling("native");
    let refusal = Reply::json(
        400,
        json!({"error": {
            "message": "This model's maximum context length is 32768 tokens. However, you \
                requested 38192 tokens (30000 in the messages, 8192 in the completion).",
            "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    );
    s.script("/v1/chat/completions", vec![refusal]);
    let (outcome, _) = s
        .turn(
            ChatMode::Agent,
            "look around",
            SendOptions::default(),
            &[],
            false,
        )
        .await;
    assert_eq!(outcome.status, MessageStatus::Error, "{}", outcome.content);
    let error = outcome.error.unwrap_or_default();
    assert!(
        error.contains("it counted 30000 prompt tokens") && error.contains("send again"),
        "{error}"
    );
    let provider = s.engine.store().provider_by_name("fake").unwrap().unwrap();
    let profile = (s.engine.store())
        .model_profile(provider.id, "test-model")
        .unwrap()
        .expect("learnt");
    assert!(profile.estimate_scale() > 1.5, "{profile:?}");
}
