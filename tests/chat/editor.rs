//! What the editor shows travels with the send: a file only open in a tab is packed ("open in
//! the editor"), and the selected lines go after the prompt, labelled with their place.

use tandem_core::chat::{EditorFocus, EditorSelection, SendOptions};
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ChatMode, MessageStatus};

use super::{send_and_wait, setup};
use crate::fake_provider::ollama_stream;

/// A file nothing but the editor points to: not mentioned, not committed since the import, no
/// word of the prompt in it, and last in path order behind more than the window holds.
const OPEN_ONLY: &str = "src/zz/open_only.rs";
/// Larger than what a file next in path order finds left of the window.
fn open_only_text() -> String {
    let quiet = "    // a quiet line of the ledger\n".repeat(200);
    format!("pub fn quokka_ledger() -> u32 {{\n    7\n{quiet}}}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_only_open_in_the_editor_is_packed_and_the_selection_is_sent() {
    let s = setup(ProviderKind::Ollama).await;
    let write = |rel: &str, text: &[u8]| {
        let path = s.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // Unrelated files first in path order, twice what the window holds.
    for i in 0..60 {
        let body = format!("pub fn unrelated_{i}() -> u32 {{ {i} }}\n").repeat(100);
        write(&format!("src/aaa/filler_{i:02}.rs"), body.as_bytes());
    }
    write(OPEN_ONLY, open_only_text().as_bytes());
    write(
        "src/zz/picked.rs",
        b"fn one() {}\nfn two() {}\nfn three() {}\n",
    );
    write("src/zz/picture.bin", b"\x89PNG\r\n\x1a\n\0\0\0binary");
    let prompt = "what does this do";

    // Without the editor, the file is not sent.
    let plain = s
        .service
        .preview(&s.project, prompt, &SendOptions::default())
        .await
        .unwrap();
    assert!(
        plain.included.iter().all(|f| f.path != OPEN_ONLY),
        "{plain:#?}"
    );
    assert!(!plain.files_listed.is_empty(), "the window is over-full");

    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["It counts."], std::time::Duration::ZERO),
    );
    let chat = s.chat(ChatMode::Ask);
    // The editor's tabs hold anything: what is not a project text file is passed over.
    let open = [
        OPEN_ONLY,
        "/etc/passwd",
        "../outside.rs",
        "src/zz/gone.rs",
        "src/zz/picture.bin",
        OPEN_ONLY,
    ];
    let options = SendOptions {
        editor: EditorFocus {
            open: open.map(String::from).to_vec(),
            // The buffer's text, an unsaved edit included.
            selection: Some(EditorSelection::new(
                "src/zz/picked.rs".into(),
                2,
                3,
                "fn two() { wombat_unsaved(); }\nfn three() {}",
            )),
        },
        ..SendOptions::default()
    };
    let outcome = send_and_wait(&s, chat, prompt, options).await;
    assert_eq!(outcome.status, MessageStatus::Complete, "{outcome:?}");
    let breakdown = outcome.breakdown.unwrap();
    let open_only = (breakdown.included.iter().find(|f| f.path == OPEN_ONLY))
        .unwrap_or_else(|| panic!("{OPEN_ONLY} not packed: {breakdown:#?}"));
    assert_eq!(open_only.why, "open in the editor", "{breakdown:#?}");
    let picked = breakdown
        .included
        .iter()
        .find(|f| f.path == "src/zz/picked.rs");
    assert!(
        picked.is_some_and(|f| f.why.starts_with("selected in the editor")),
        "{breakdown:#?}"
    );
    for ignored in ["src/zz/gone.rs", "src/zz/picture.bin", "/etc/passwd"] {
        assert!(
            breakdown.included.iter().all(|f| f.path != ignored),
            "{breakdown:#?}"
        );
    }
    let selection = breakdown.selection.as_ref().unwrap();
    assert_eq!(
        (
            selection.path.as_str(),
            selection.first_line,
            selection.last_line
        ),
        ("src/zz/picked.rs", 2, 3)
    );
    assert!(selection.tokens > 0 && breakdown.prompt > selection.tokens);

    // The request the provider received: the file in the codebase, the selection after the
    // prompt.
    let requests = s.chat_requests();
    let messages = requests[0].body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("quokka_ledger"), "{system}");
    let user = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(user.starts_with(prompt), "{user}");
    assert!(
        user.contains(
            "Selected in the editor: src/zz/picked.rs lines 2-3\n```rs\nfn two() { wombat_unsaved(); }\nfn three() {}\n```"
        ),
        "{user}"
    );
    // The selection went with this send; the prompt kept in the chat is the person's.
    let kept = s.engine.store().messages(chat).unwrap();
    assert_eq!(kept[0].content, prompt);
}
