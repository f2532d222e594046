//! The repair loop: failed edits and failing checks go back to the model, for a number of
//! rounds, before a proposal (or auto-approve) is made.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_block_that_matches_nowhere_goes_back_and_the_fix_becomes_the_proposal() {
    let s = setup(ProviderKind::Ollama).await;
    let wrong = search_replace("fn main() { }", "fn main() { println!(\"hi\"); }");
    let right = search_replace("fn main() {}", "fn main() { println!(\"hi\"); }");
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&wrong], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&right], Duration::ZERO),
    );
    let (outcome, events) = build_turn(&s, "print hi").await;
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );

    // The corrected reply is the reply and the proposal; nothing was applied.
    assert_eq!(outcome.content, right);
    let plan = outcome.plan.unwrap();
    assert_eq!(plan.errors().count(), 0, "{:?}", plan.operations);
    assert!(plan.is_proposal());
    let saved = s.engine.store().message(outcome.message_id).unwrap();
    assert_eq!(saved.content, right);
    assert_eq!(saved.approval_state, Some(ApprovalState::Pending));
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );

    // The model heard the error with the nearest lines, after its own failed reply.
    let requests = s.chat_requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["content"], wrong.trim());
    let feedback = messages[n - 1]["content"].as_str().unwrap();
    assert!(feedback.contains("- src/main.rs: "), "{feedback}");
    assert!(
        feedback.contains("fn main() {}"),
        "nearest lines: {feedback}"
    );
    assert!(feedback.contains("complete reply again"), "{feedback}");

    // The round is kept: its errors and the reply that failed.
    let steps = s.engine.store().agent_steps(outcome.message_id).unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].kind, tandem_core::store::StepKind::Repair);
    assert_eq!(steps[0].result.as_deref(), Some(wrong.as_str()));
    let arguments = steps[0].arguments.clone().unwrap();
    assert_eq!(arguments["round"], 1);
    assert_eq!(arguments["errors"][0]["path"], "src/main.rs");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEventKind::Retrying { round: 1 }))
    );

    // Approving applies the corrected edit.
    s.engine.approve(outcome.message_id, None).unwrap();
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() { println!(\"hi\"); }\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_rounds_stop_at_the_setting_and_zero_turns_them_off() {
    let s = setup(ProviderKind::Ollama).await;
    let wrong = search_replace("no such line", "x");
    s.engine
        .store()
        .set_setting("chat.repair_rounds", &1)
        .unwrap();
    for _ in 0..2 {
        s.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&[&wrong], Duration::ZERO),
        );
    }
    let (outcome, _) = build_turn(&s, "change it").await;
    assert_eq!(outcome.status, MessageStatus::Complete);
    assert_eq!(
        s.chat_requests().len(),
        2,
        "one repair round, then the failure stands"
    );
    assert_eq!(outcome.plan.unwrap().errors().count(), 1);
    let steps = s.engine.store().agent_steps(outcome.message_id).unwrap();
    assert_eq!(steps.len(), 1);

    s.engine
        .store()
        .set_setting("chat.repair_rounds", &0)
        .unwrap();
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&wrong], Duration::ZERO),
    );
    let (outcome, events) = build_turn(&s, "change it again").await;
    assert_eq!(s.chat_requests().len(), 3, "no repair round");
    assert_eq!(outcome.plan.unwrap().errors().count(), 1);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ChatEventKind::Retrying { .. }))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_waits_for_the_repaired_reply() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("chat.auto_approve", &true)
        .unwrap();
    let wrong = search_replace("fn main() { }", "fn main() { todo!() }");
    let right = search_replace("fn main() {}", "fn main() { todo!() }");
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&wrong], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&right], Duration::ZERO),
    );
    let (outcome, _) = build_turn(&s, "todo").await;
    assert!(outcome.approval.is_some(), "{:?}", outcome.approve_error);
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() { todo!() }\n"
    );
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_goes_back_and_the_fixed_proposal_passes_in_a_scratch_copy() {
    let s = setup(ProviderKind::Ollama).await;
    // Fails, naming the place, while any source file says BROKEN.
    s.set_check("! grep -rn BROKEN src");
    let broken = write_main("BROKEN");
    let fixed = write_main("println!(\"ok\")");
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&broken], Duration::ZERO),
    );
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[&fixed], Duration::ZERO),
    );
    let (outcome, _) = build_turn(&s, "print ok").await;
    assert_eq!(
        outcome.status,
        MessageStatus::Complete,
        "{:?}",
        outcome.error
    );

    // Round 1 failed with a parsed problem, round 2 passed.
    assert_eq!(outcome.checks.len(), 2, "{:#?}", outcome.checks);
    let first = &outcome.checks[0];
    assert!(!first.passed && first.exit_code == Some(1), "{first:#?}");
    assert_eq!(first.round, 1);
    assert_eq!(first.problems.len(), 1, "{first:#?}");
    assert_eq!(first.problems[0].path, "src/main.rs");
    assert_eq!(first.problems[0].line, 1);
    assert!(outcome.checks[1].passed, "{:#?}", outcome.checks[1]);
    assert_eq!(outcome.checks[1].round, 2);

    // The model was told, with the place and the output.
    let requests = s.chat_requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let feedback = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        feedback.contains("`! grep -rn BROKEN src` failed with exit code 1"),
        "{feedback}"
    );
    assert!(feedback.contains("- src/main.rs:1: "), "{feedback}");

    // The fixed reply is the proposal; the person's tree was never touched.
    assert_eq!(outcome.content, fixed);
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
    let kinds: Vec<_> = s
        .engine
        .store()
        .agent_steps(outcome.message_id)
        .unwrap()
        .iter()
        .map(|s| s.kind)
        .collect();
    use tandem_core::store::StepKind::{Check, Repair};
    assert_eq!(kinds, [Check, Repair, Check]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_still_failing_after_the_rounds_blocks_auto_approve() {
    let s = setup(ProviderKind::Ollama).await;
    s.set_check("! grep -rn BROKEN src");
    let store = s.engine.store();
    store.set_setting("chat.repair_rounds", &1).unwrap();
    store.set_setting("chat.auto_approve", &true).unwrap();
    let broken = write_main("BROKEN");
    for _ in 0..2 {
        s.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&[&broken], Duration::ZERO),
        );
    }
    let (outcome, _) = build_turn(&s, "break it").await;
    assert_eq!(outcome.checks.len(), 2);
    assert!(outcome.checks.iter().all(|c| !c.passed));
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
async fn a_model_whose_search_blocks_keep_failing_is_asked_for_whole_files() {
    let s = setup(ProviderKind::Ollama).await;
    s.engine
        .store()
        .set_setting("chat.repair_rounds", &0)
        .unwrap();
    let two_wrong = format!(
        "{}{}",
        search_replace("nothing like this", "x"),
        search_replace("nor this", "y")
    );
    let fine = search_replace("fn main() {}", "fn main() { }");
    for reply in [&two_wrong, &fine, &two_wrong, &fine] {
        s.server
            .push("POST", "/api/chat", ollama_stream(&[reply], Duration::ZERO));
    }
    let system = |i: usize| {
        s.chat_requests()[i].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // 2 of 2 blocks failed: too few to judge.
    build_turn(&s, "one").await;
    build_turn(&s, "two").await;
    assert!(!system(1).contains("write the whole new file"));
    // 4 of 5 failed: from now on, whole files for small files.
    build_turn(&s, "three").await;
    build_turn(&s, "four").await;
    assert!(
        system(3).contains("write the whole new file"),
        "{}",
        system(3)
    );
    let profile = s.service.model_profile(None, None).await.unwrap();
    assert_eq!((profile.edit_blocks, profile.edit_failures), (6, 4));
}
