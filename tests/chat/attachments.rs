//! Attachment bytes live in the data directory (`attachments/<git blob hash>`, once per
//! content); the bytes no message refers to any more go: when a chat is deleted, when a prompt
//! is edited away, and at start-up for what a crash left behind.

use std::path::Path;
use std::sync::Arc;

use tandem_core::chat::SendOptions;
use tandem_core::chat::attachments::Attach;
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ChatMode, MessageStatus};

use super::{BOUND, setup};
use crate::fake_provider::ollama_stream;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\na tiny picture";

fn attach(name: &str, bytes: &[u8]) -> Attach {
    Attach {
        name: name.into(),
        bytes: bytes.to_vec(),
    }
}

/// The file names under `data/attachments`, sorted (none when the folder is missing).
fn kept(data: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(data.join("attachments")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn hash(bytes: &[u8]) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
        .unwrap()
        .to_string()
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_no_message_refers_to_are_removed() {
    let s = setup(ProviderKind::Ollama).await;
    let data = s.engine.data_dir().unwrap().to_path_buf();
    for _ in 0..4 {
        s.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&["Seen."], std::time::Duration::ZERO),
        );
    }
    let send = |chat: i64, files: Vec<Attach>| {
        let service = Arc::clone(&s.service);
        async move {
            let options = SendOptions {
                attachments: files,
                ..SendOptions::default()
            };
            let handle = service.send(chat, "look", options).await.unwrap();
            let outcome = tokio::time::timeout(BOUND, handle.outcome)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(outcome.status, MessageStatus::Complete);
        }
    };
    let notes = b"The footer should be blue.\n";
    let other = b"Another note.\n";
    let (a, b) = (s.chat(ChatMode::Ask), s.chat(ChatMode::Ask));
    send(a, vec![attach("shot.png", PNG), attach("notes.md", notes)]).await;
    // The same notes in another chat are kept once.
    send(
        b,
        vec![attach("notes.md", notes), attach("other.md", other)],
    )
    .await;
    assert_eq!(
        kept(&data),
        sorted(vec![hash(PNG), hash(notes), hash(other)])
    );

    // Chat a's prompt is edited: the new one has no attachments, so its picture goes, and
    // the notes stay for chat b.
    let edited = s
        .service
        .redo(a, Some("never mind"), SendOptions::default())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, edited.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, MessageStatus::Complete);
    assert_eq!(kept(&data), sorted(vec![hash(notes), hash(other)]));

    // Deleting chat b (through the application layer, as the window and the CLI do) takes
    // the rest.
    let app = tandem_core::app::App::with_engine(
        Arc::clone(&s.engine),
        data.clone(),
        &crate::common::environment(),
    );
    app.delete_chat(b).unwrap();
    assert_eq!(kept(&data), Vec::<String>::new());

    // A crash between keeping the bytes and recording them, or mid-write, leaves files no
    // row names: the next start removes them, and keeps what a message still has.
    send(a, vec![attach("shot.png", PNG)]).await;
    let attachments = data.join("attachments");
    std::fs::write(attachments.join(hash(b"orphan")), "orphan").unwrap();
    std::fs::write(attachments.join(".tandem-half.tmp"), "half").unwrap();
    drop(app);
    let reopened = tandem_core::Engine::open(Some(&data)).unwrap();
    assert_eq!(kept(&data), [hash(PNG)]);
    // And the one kept is still read back with its message.
    let messages = reopened.store().messages(a).unwrap();
    let prompt = messages.iter().rfind(|m| m.content == "look").unwrap();
    let stored = reopened.store().attachments(prompt.id).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(std::fs::read(data.join(&stored[0].stored)).unwrap(), PNG);
}
