//! The code-index tools through a real turn: the model asks `find_definitions` and reads back
//! the file and line; after it writes a new file in its workspace the tool finds the new
//! function there, and after it deletes a file that file's definitions are gone — while the
//! person's tree (what the index is of) is unchanged.

use serde_json::json;
use tandem_core::agent::runner::Answer;
use tandem_core::chat::SendOptions;
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ChatMode, StepKind};

use super::{assert_complete, setup, text};
use crate::fake_provider::ollama_tool_call;

const SHAPES: &str = "// Shapes.\n\npub fn area(w: u32, h: u32) -> u32 {\n    w * h\n}\n";
const EXTRA: &str = "use crate::shapes::area;\n\npub fn perimeter(w: u32) -> u32 {\n    w * 4\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_definitions_names_the_file_and_line_and_follows_the_workspace() {
    let s = setup(ProviderKind::Ollama).await;
    s.tool_calling("native");
    std::fs::write(s.root.join("src/shapes.rs"), SHAPES).unwrap();
    crate::common::git(&s.root, &["add", "-A"]);
    crate::common::git(&s.root, &["commit", "-qm", "shapes"]);
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("find_definitions", json!({"name": "area"})),
            ollama_tool_call(
                "write_file",
                json!({"path": "src/extra.rs", "content": EXTRA}),
            ),
            ollama_tool_call("find_definitions", json!({"name": "perimeter"})),
            ollama_tool_call("delete_file", json!({"path": "src/shapes.rs"})),
            ollama_tool_call("find_definitions", json!({"name": "area"})),
            text("Done."),
        ],
    );
    let (outcome, asked) = s
        .turn(
            ChatMode::Agent,
            "where is area?",
            SendOptions::default(),
            &[Answer::Approve, Answer::Approve],
            false,
        )
        .await;
    assert_complete(&outcome);
    assert_eq!(asked, 2, "the lookups are reads, never asked about");

    let steps: Vec<_> = (s.steps(outcome.message_id).into_iter())
        .filter(|st| st.kind == StepKind::Tool)
        .collect();
    let result = |i: usize| steps[i].result.clone().unwrap_or_default();
    assert_eq!(steps[0].tool.as_deref(), Some("find_definitions"));
    assert!(!steps[0].is_error, "{}", result(0));
    assert!(
        result(0).contains("src/shapes.rs:3 function pub fn area(w: u32, h: u32) -> u32 {"),
        "{}",
        result(0)
    );
    // The new file exists only in the workspace, and is found there.
    assert!(
        result(2).contains("src/extra.rs:3 function pub fn perimeter(w: u32) -> u32 {"),
        "{}",
        result(2)
    );
    assert!(!s.root.join("src/extra.rs").exists());
    // The deleted file is gone from the answers, though the person still has it.
    assert!(!result(4).contains("src/shapes.rs"), "{}", result(4));
    assert!(
        result(4).contains("No definition of `area`"),
        "{}",
        result(4)
    );
    assert!(s.root.join("src/shapes.rs").exists());

    // What the model received: the tool message after its call.
    let requests = s.chat_requests();
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["function"]["name"] == "find_definitions")
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    let reply = messages.last().unwrap();
    assert_eq!(reply["role"], "tool");
    assert_eq!(reply["tool_name"], "find_definitions");
    assert!(
        reply["content"]
            .as_str()
            .unwrap()
            .contains("src/shapes.rs:3 function"),
        "{reply}"
    );
}
