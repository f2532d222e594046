//! The SQLite store against real database files: migrations from every version, pragmas,
//! cascades and crash recovery.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod migrations;

use rusqlite::Connection;
use serde_json::json;
use tandem_core::store::{
    ApprovalState, AttachmentKind, ChatMode, MIGRATIONS, McpTransport, MessageStatus, NewMessage,
    ProjectSettings, Role, StepKind, Store, configure, migrations,
};

fn tables(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn schema(conn: &Connection) -> Vec<(String, String)> {
    let mut stmt = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn the_schema_refuses_values_outside_the_enums() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open_dir(dir.path()).unwrap());
    let conn = Connection::open(dir.path().join("tandem.db")).unwrap();
    configure(&conn).unwrap();
    conn.execute_batch(
        "INSERT INTO projects (id, name, path, created_at, updated_at) VALUES (1, 'p', '/p', 1, 1);
         INSERT INTO chats (id, project_id, created_at, updated_at) VALUES (1, 1, 1, 1);",
    )
    .unwrap();
    let bad_status = conn.execute(
        "INSERT INTO messages (chat_id, role, status, created_at, updated_at) VALUES (1, 'user', 'bogus', 1, 1)",
        [],
    );
    assert!(bad_status.is_err());
    let orphan = conn.execute(
        "INSERT INTO messages (chat_id, role, created_at, updated_at) VALUES (42, 'user', 1, 1)",
        [],
    );
    assert!(orphan.is_err(), "foreign keys are enforced");
    assert!(
        conn.execute("INSERT INTO settings VALUES ('k', 'not json')", [])
            .is_err()
    );
}

#[test]
fn has_every_table_and_the_pragmas() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(&dir.path().join("nested/data")).unwrap();
    drop(store);
    let conn = Connection::open(dir.path().join("nested/data/tandem.db")).unwrap();
    let expected = [
        "chats",
        "messages",
        "model_profiles",
        "projects",
        "prompts",
        "providers",
        "settings",
        "usage_events",
    ];
    let names = tables(&conn);
    for table in expected {
        assert!(
            names.iter().any(|n| n == table),
            "missing {table}: {names:?}"
        );
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn deleting_a_project_cascades_to_chats_and_messages() {
    let store = Store::open_in_memory().unwrap();
    let project = store
        .insert_project("p", std::path::Path::new("/x/p"))
        .unwrap();
    let chat = store
        .create_chat(project.id, ChatMode::Build, Some("abc"))
        .unwrap();
    let message = store
        .insert_message(&NewMessage::new(chat.id, Role::User, "hello"))
        .unwrap();
    assert!(
        store
            .insert_project("dup", std::path::Path::new("/x/p"))
            .is_err()
    );
    store.delete_project(project.id).unwrap();
    assert!(store.chat(chat.id).is_err());
    assert!(store.message(message.id).is_err());
}

#[test]
fn messages_round_trip_with_review_state() {
    let store = Store::open_in_memory().unwrap();
    let project = store
        .insert_project("p", std::path::Path::new("/x/p"))
        .unwrap();
    let settings = ProjectSettings {
        context_include: vec!["src/**".into()],
        auto_approve: Some(true),
        ..ProjectSettings::default()
    };
    store
        .update_project_settings(project.id, &settings)
        .unwrap();
    assert_eq!(store.project(project.id).unwrap().settings, settings);
    let chat = store.create_chat(project.id, ChatMode::Ask, None).unwrap();
    let mut base = tandem_core::store::PlanBase::new();
    base.insert("a.txt".into(), Some("deadbeef".into()));
    base.insert("new.txt".into(), None);
    let msg = store
        .insert_message(&NewMessage {
            status: MessageStatus::Streaming,
            source_commit_hash: Some("f00"),
            model: Some("qwen"),
            plan_base: Some(&base),
            ..NewMessage::new(chat.id, Role::Assistant, "")
        })
        .unwrap();
    store.set_message_content(msg.id, "text").unwrap();
    store
        .set_message_status(msg.id, MessageStatus::Complete, None)
        .unwrap();
    store
        .set_approval(msg.id, ApprovalState::Approved, Some("c0ffee"))
        .unwrap();
    store.record_usage(msg.id, "local", "qwen", 10, 20).unwrap();
    let msg = store.message(msg.id).unwrap();
    assert_eq!(msg.content, "text");
    assert_eq!(msg.status, MessageStatus::Complete);
    assert_eq!(msg.approval_state, Some(ApprovalState::Approved));
    assert_eq!(msg.commit_hash.as_deref(), Some("c0ffee"));
    assert_eq!(msg.plan_base, Some(base));
    assert_eq!((msg.input_tokens, msg.output_tokens), (Some(10), Some(20)));
    assert_eq!(
        store
            .message_by_commit(project.id, "c0ffee")
            .unwrap()
            .map(|m| m.id),
        Some(msg.id)
    );
    assert_eq!(
        store
            .last_undoable_message(project.id)
            .unwrap()
            .map(|m| m.id),
        Some(msg.id)
    );
    assert!(
        store
            .set_message_status(9999, MessageStatus::Error, Some("x"))
            .is_err()
    );
}
