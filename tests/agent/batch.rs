//! Several tool calls in one reply (native tool calling): whatever happens to each call — run,
//! approved, rejected, cut off by a cancel or by the step limit — every call id gets its
//! result, in the next request to the model and in the recorded steps.

use serde_json::{Value, json};
use tandem_core::agent::runner::Answer;
use tandem_core::chat::SendOptions;
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ChatMode, MessageStatus, StepDecision, StepKind};

use super::{PAUSE, assert_complete, chunks, setup};
use crate::fake_provider::{self, Reply, sse_event};

const COMPLETIONS: &str = "/v1/chat/completions";

/// One OpenAI chat-completions chunk carrying `tool_calls` fragments.
fn fragments(fragments: Value, finish: Value) -> Vec<u8> {
    sse_event(
        None,
        &json!({"id": "x", "object": "chat.completion.chunk", "model": "fake-model",
                "choices": [{"index": 0, "delta": {"tool_calls": fragments}, "finish_reason": finish}]}),
    )
}

/// An OpenAI reply calling each of `calls` (id, tool, arguments), one after the other: each
/// call's id and name in a first fragment, its arguments in a second.
fn openai_calls(calls: &[(&str, &str, Value)]) -> Reply {
    let mut pieces = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        pieces.push(fragments(
            json!([{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]),
            Value::Null,
        ));
        pieces.push(fragments(
            json!([{"index": index, "function": {"arguments": arguments.to_string()}}]),
            Value::Null,
        ));
    }
    pieces.push(fragments(json!([]), json!("tool_calls")));
    pieces.push(b"data: [DONE]\n\n".to_vec());
    chunks("text/event-stream", pieces)
}

/// The `tool_calls` ids of the last assistant message of a request, and the `tool_call_id`
/// and content of each tool message after it.
fn calls_and_results(body: &Value) -> (Vec<String>, Vec<(String, String)>) {
    let messages = body["messages"].as_array().unwrap();
    let at = messages
        .iter()
        .rposition(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .expect("an assistant message with tool calls");
    let ids = messages[at]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let results = messages[at + 1..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let id = m["tool_call_id"].as_str().unwrap().to_string();
            (id, m["content"].as_str().unwrap().to_string())
        })
        .collect();
    (ids, results)
}

/// The recorded tool steps by call id: (call id, decision, result).
fn tool_steps(
    steps: &[tandem_core::store::AgentStep],
) -> Vec<(String, Option<StepDecision>, String)> {
    steps
        .iter()
        .filter(|s| s.kind == StepKind::Tool)
        .map(|s| {
            (
                s.call_id.clone().unwrap_or_default(),
                s.decision,
                s.result.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_deltas_of_two_calls_run_both_and_answer_each_id() {
    let s = setup(ProviderKind::Openai).await;
    s.tool_calling("native");
    // Call 0 starts, call 1 starts, then their arguments arrive interleaved, some in one chunk.
    let interleaved = chunks(
        "text/event-stream",
        vec![
            fragments(
                json!([{"index": 0, "id": "c1", "type": "function",
                        "function": {"name": "read_file", "arguments": "{\"pa"}}]),
                Value::Null,
            ),
            fragments(
                json!([{"index": 1, "id": "c2", "type": "function",
                        "function": {"name": "grep", "arguments": "{\"pat"}}]),
                Value::Null,
            ),
            fragments(
                json!([{"index": 0, "function": {"arguments": "th\": \"src/"}},
                       {"index": 1, "function": {"arguments": "tern\": \"Always"}}]),
                Value::Null,
            ),
            fragments(
                json!([{"index": 1, "function": {"arguments": " use\"}"}}]),
                Value::Null,
            ),
            fragments(
                json!([{"index": 0, "function": {"arguments": "main.rs\"}"}}]),
                json!("tool_calls"),
            ),
            b"data: [DONE]\n\n".to_vec(),
        ],
    );
    s.script(
        COMPLETIONS,
        vec![
            interleaved,
            fake_provider::openai_stream(&["Read both."], PAUSE),
        ],
    );
    let (outcome, asked) = s
        .turn(ChatMode::Agent, "look", SendOptions::default(), &[], false)
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 0, "reading and searching are not asked about");

    let requests = s.chat_requests();
    assert_eq!(requests.len(), 2);
    let (ids, results) = calls_and_results(&requests[1].body);
    assert_eq!(ids, ["c1", "c2"]);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let assistant = messages.iter().rfind(|m| m["role"] == "assistant").unwrap();
    let arguments: Vec<Value> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        arguments,
        [
            json!({"path": "src/main.rs"}),
            json!({"pattern": "Always use"})
        ],
        "each call's fragments joined in its own arguments"
    );
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "c1");
    assert!(results[0].1.contains("fn main() {}"), "{results:?}");
    assert_eq!(results[1].0, "c2");
    assert!(results[1].1.contains("AI_RULES.md"), "{results:?}");

    let steps = tool_steps(&s.steps(outcome.message_id));
    let ran: Vec<_> = steps.iter().map(|(id, d, _)| (id.as_str(), *d)).collect();
    assert_eq!(
        ran,
        [
            ("c1", Some(StepDecision::Allowed)),
            ("c2", Some(StepDecision::Allowed))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_approved_and_one_rejected_in_a_batch_both_answered() {
    let s = setup(ProviderKind::Openai).await;
    s.tool_calling("native");
    s.script(
        COMPLETIONS,
        vec![
            openai_calls(&[
                (
                    "c1",
                    "write_file",
                    json!({"path": "a.txt", "content": "a\n"}),
                ),
                (
                    "c2",
                    "write_file",
                    json!({"path": "b.txt", "content": "b\n"}),
                ),
            ]),
            fake_provider::openai_stream(&["Wrote a only."], PAUSE),
        ],
    );
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "write a and b",
            SendOptions::default(),
            &[Answer::Approve, Answer::Reject],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 2);

    let requests = s.chat_requests();
    assert_eq!(requests.len(), 2);
    let (ids, results) = calls_and_results(&requests[1].body);
    assert_eq!(ids, ["c1", "c2"]);
    let answered: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(answered, ["c1", "c2"]);
    assert!(!results[0].1.contains("rejected"), "{results:?}");
    assert!(results[1].1.contains("rejected"), "{results:?}");

    let steps = tool_steps(&s.steps(outcome.message_id));
    let decided: Vec<_> = steps.iter().map(|(id, d, _)| (id.as_str(), *d)).collect();
    assert_eq!(
        decided,
        [
            ("c1", Some(StepDecision::Approved)),
            ("c2", Some(StepDecision::Rejected))
        ]
    );
    // Only the approved call's file is proposed.
    let review = s.engine.review(outcome.message_id).unwrap();
    let paths: Vec<_> = review.plan.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(paths, ["a.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_batch_still_answers_every_call() {
    let s = setup(ProviderKind::Openai).await;
    s.tool_calling("native");
    s.script(
        COMPLETIONS,
        vec![openai_calls(&[
            ("c1", "read_file", json!({"path": "src/main.rs"})),
            ("c2", "delete_file", json!({"path": "src/main.rs"})),
            ("c3", "read_file", json!({"path": "AI_RULES.md"})),
        ])],
    );
    // The delete is asked about; the person cancels the turn instead of answering.
    let (outcome, asked) = s
        .turn(ChatMode::Agent, "tidy", SendOptions::default(), &[], true)
        .await;
    assert_eq!(asked, 1);
    assert_eq!(outcome.status, MessageStatus::Cancelled);
    assert!(s.root.join("src/main.rs").exists());

    let steps = tool_steps(&s.steps(outcome.message_id));
    let ids: Vec<&str> = steps.iter().map(|(id, ..)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["c1", "c2", "c3"],
        "a result for every call: {steps:?}"
    );
    assert_eq!(steps[0].1, Some(StepDecision::Allowed));
    assert!(
        steps[0].2.contains("fn main() {}"),
        "the read before is kept"
    );
    for (id, decision, result) in &steps[1..] {
        assert_eq!(*decision, Some(StepDecision::Cancelled), "{id}");
        assert!(result.contains("cancelled"), "{id}: {result}");
    }
    assert_eq!(s.chat_requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_limit_mid_batch_still_answers_every_call() {
    let s = setup(ProviderKind::Openai).await;
    s.tool_calling("native");
    s.engine.store().set_setting("agent.max_steps", &2).unwrap();
    s.script(
        COMPLETIONS,
        vec![openai_calls(&[
            ("c1", "read_file", json!({"path": "src/main.rs"})),
            ("c2", "read_file", json!({"path": "AI_RULES.md"})),
            ("c3", "list_files", json!({})),
        ])],
    );
    let (outcome, _) = s
        .turn(ChatMode::Agent, "read", SendOptions::default(), &[], false)
        .await;
    assert_complete(&outcome);
    assert!(
        outcome.content.contains("Stopped after 2 tool steps"),
        "{}",
        outcome.content
    );
    let steps = tool_steps(&s.steps(outcome.message_id));
    let ids: Vec<&str> = steps.iter().map(|(id, ..)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["c1", "c2", "c3"],
        "a result for every call: {steps:?}"
    );
    assert!(steps[1].2.contains("Always use tabs."), "{steps:?}");
    assert!(steps[2].2.contains("step limit"), "{steps:?}");
    assert_eq!(s.chat_requests().len(), 1);
}
