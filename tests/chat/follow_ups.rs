//! The turns that follow from what a chat holds, started through the application layer as the
//! window and the CLI start them: each refuses what is not there, and sends its prompt in its
//! own mode; a new chat whose first send fails is gone again.

use std::sync::Arc;
use std::time::Duration;

use tandem_core::app::{App, AppEvent, AppEvents};
use tandem_core::chat::SendOptions;
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ChatMode, MessageStatus};

use super::{BOUND, setup};
use crate::fake_provider::ollama_stream;

const REVIEW: &str = "Two problems.\n\
<tandem-security-finding title=\"Verbose errors\" level=\"low\">Errors echo the input.</tandem-security-finding>\n\
<tandem-security-finding title=\"SQL injection\" level=\"critical\" path=\"src/main.rs\" lines=\"1\">Bind the id.</tandem-security-finding>";

/// The projects whose chats the app said changed, until it has said nothing for a while.
async fn chats_changed(events: &mut AppEvents) -> Vec<i64> {
    let mut projects = Vec::new();
    while let Ok(event) = tokio::time::timeout(Duration::from_millis(300), events.recv()).await {
        if let Ok(AppEvent::ChatsChanged { project_id }) = event {
            projects.push(project_id);
        }
    }
    projects
}

fn last_prompt(s: &super::Setup) -> String {
    let requests = s.server.requests();
    let chat = requests
        .iter()
        .rev()
        .find(|r| r.path == "/api/chat")
        .unwrap();
    let messages = chat.body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_ups_refuse_what_is_not_there_and_send_in_their_own_mode() {
    let s = setup(ProviderKind::Ollama).await;
    let data = s._dir.path().join("data");
    let app = App::with_engine(Arc::clone(&s.engine), data, &crate::common::environment());
    let chat = app.new_chat(s.project.id, ChatMode::Security).unwrap();

    // Nothing to follow from yet: each says so, and nothing is sent.
    let none = |e: tandem_core::app::AppError| e.to_string();
    let err = none(
        app.fix_problems(chat.id, SendOptions::default())
            .await
            .err()
            .unwrap(),
    );
    assert!(err.contains("no check has run"), "{err}");
    let err = none(
        app.fix_finding(chat.id, 0, SendOptions::default())
            .await
            .err()
            .unwrap(),
    );
    assert!(err.contains("no security findings"), "{err}");

    // A security review with two findings.
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[REVIEW], Duration::from_millis(2)),
    );
    let review = app
        .send(chat.id, None, "review the project", SendOptions::default())
        .await
        .unwrap();
    let user_message = review.user.as_ref().unwrap().id;
    let outcome = tokio::time::timeout(BOUND, review.finish())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.status, MessageStatus::Complete);

    // A person's message holds no plan; a finding past the last is refused by its number.
    let err = none(
        app.implement_plan(user_message, SendOptions::default())
            .await
            .err()
            .unwrap(),
    );
    assert!(err.contains("holds no plan"), "{err}");
    let err = none(
        app.fix_finding(chat.id, 2, SendOptions::default())
            .await
            .err()
            .unwrap(),
    );
    assert!(
        err.contains("2 findings") && err.contains("number 3"),
        "{err}"
    );
    assert_eq!(
        app.chat(chat.id).unwrap().mode,
        ChatMode::Security,
        "refusals change nothing"
    );

    // Most severe first: finding 0 is the critical one; the fix goes in Build mode.
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Fixed."], Duration::from_millis(2)),
    );
    let mut events = app.subscribe();
    let fix = app
        .fix_finding(chat.id, 0, SendOptions::default())
        .await
        .unwrap();
    // The switch to Build mode is told on the app's stream, with the turn's events, and so is
    // the turn's end (the chat moved up the list) before its outcome is handed over.
    let mut told = chats_changed(&mut events).await;
    tokio::time::timeout(BOUND, fix.finish())
        .await
        .unwrap()
        .unwrap();
    told.extend(chats_changed(&mut events).await);
    assert_eq!(told, [s.project.id, s.project.id]);
    assert_eq!(app.chat(chat.id).unwrap().mode, ChatMode::Build);
    let prompt = last_prompt(&s);
    assert!(
        prompt.starts_with(
            "Fix this critical security finding in src/main.rs (lines 1): SQL injection"
        ),
        "{prompt}"
    );

    // The review's reply is a plan too, as far as its text goes: implemented in Agent mode.
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Done."], Duration::from_millis(2)),
    );
    let plan = app
        .implement_plan(outcome.message_id, SendOptions::default())
        .await
        .unwrap();
    tokio::time::timeout(BOUND, plan.finish())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(app.chat(chat.id).unwrap().mode, ChatMode::Agent);
    assert!(last_prompt(&s).starts_with("Implement this plan:\n\nTwo problems."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_chat_whose_first_send_fails_is_gone_again() {
    let s = setup(ProviderKind::Ollama).await;
    let data = s._dir.path().join("data");
    let app = App::with_engine(Arc::clone(&s.engine), data, &crate::common::environment());
    let before = app.chats(s.project.id).unwrap().len();
    let mut events = app.subscribe();
    let new = app.start_chat(s.project.id, ChatMode::Build).unwrap();
    assert_eq!(app.chats(s.project.id).unwrap().len(), before + 1);
    let options = SendOptions {
        provider: Some("no-such-provider".into()),
        ..SendOptions::default()
    };
    let err = new.send("hello", options).await.err().unwrap().to_string();
    assert!(err.contains("no-such-provider"), "{err}");
    assert_eq!(
        app.chats(s.project.id).unwrap().len(),
        before,
        "no empty chat left"
    );
    // Every front-end was told, twice: the chat made, and gone again.
    let id = s.project.id;
    assert_eq!(chats_changed(&mut events).await, [id, id]);

    // Sent: the chat stays.
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Hi."], Duration::from_millis(2)),
    );
    let new = app.start_chat(s.project.id, ChatMode::Ask).unwrap();
    let id = new.chat.id;
    let started = new.send("hello", SendOptions::default()).await.unwrap();
    tokio::time::timeout(BOUND, started.finish())
        .await
        .unwrap()
        .unwrap();
    assert!(app.chats(s.project.id).unwrap().iter().any(|c| c.id == id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_proposal_auto_approve_lands_says_its_chat_and_project_changed() {
    let s = setup(ProviderKind::Ollama).await;
    let data = s._dir.path().join("data");
    let app = App::with_engine(Arc::clone(&s.engine), data, &crate::common::environment());
    let reply = "<tandem-write path=\"notes.txt\" description=\"notes\">\nhi\n</tandem-write>\n";
    s.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[reply], Duration::from_millis(2)),
    );
    let chat = app.new_chat(s.project.id, ChatMode::Build).unwrap();
    let mut events = app.subscribe();
    let options = SendOptions {
        auto_approve: Some(true),
        ..SendOptions::default()
    };
    let started = app
        .send(chat.id, None, "write notes", options)
        .await
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, started.finish())
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.approval.unwrap().commit.is_some());
    // Told before the outcome was handed over: the chat changed (its reply as it ended), it
    // moved in the list, the tree and history changed.
    let mut told = Vec::new();
    let quiet = Duration::from_millis(300);
    while let Ok(Ok(event)) = tokio::time::timeout(quiet, events.recv()).await {
        if !matches!(event, AppEvent::Chat(_)) {
            told.push(format!("{event:?}"));
        }
    }
    let id = s.project.id;
    assert_eq!(
        told,
        [
            format!("ChatChanged {{ chat_id: {} }}", chat.id),
            format!("ChatsChanged {{ project_id: {id} }}"),
            format!("ProjectChanged {{ project_id: {id} }}")
        ]
    );
}
