//! The SQLite store against real database files: migrations from every version, pragmas,
//! cascades and crash recovery.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

use rusqlite::Connection;
use tandem::store::{
    ApprovalState, ChatMode, MIGRATIONS, MessageStatus, NewMessage, ProjectSettings, Role, Store,
    configure, migrations,
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

/// Rows written at an old schema version, using only what that version has.
fn seed(conn: &Connection, version: usize) {
    if version >= 1 {
        conn.execute_batch(
            "INSERT INTO projects (id, name, path, created_at, updated_at) VALUES (1, 'p', '/tmp/p', 1, 1);
             INSERT INTO chats (id, project_id, title, created_at, updated_at) VALUES (1, 1, 't', 1, 1);
             INSERT INTO messages (id, chat_id, role, content, status, created_at, updated_at)
                 VALUES (1, 1, 'assistant', 'partial reply', 'streaming', 1, 1);
             INSERT INTO settings (key, value) VALUES ('theme', '\"dark\"');",
        )
        .unwrap();
    }
    if version >= 2 {
        conn.execute_batch(
            "INSERT INTO providers (name, kind, base_url, created_at, updated_at)
                 VALUES ('local', 'ollama', 'http://localhost:11434', 1, 1);
             INSERT INTO usage_events (message_id, input_tokens, output_tokens, created_at) VALUES (1, 3, 4, 1);",
        )
        .unwrap();
    }
    if version >= 3 {
        conn.execute_batch(
            "INSERT INTO messages (id, chat_id, role, content, status, approval_state, commit_hash,
                     plan_base, reverted_by, created_at, updated_at)
                 VALUES (2, 1, 'assistant', 'done', 'complete', 'approved', 'c0ffee',
                     '{\"src/a.rs\": \"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\", \"new.rs\": null}',
                     'dead00', 2, 2);",
        )
        .unwrap();
    }
    if version >= 4 {
        // The streaming reply had more text in parts when the process died.
        conn.execute_batch(
            "INSERT INTO message_parts (message_id, seq, text) VALUES (1, 0, ' and more'), (1, 1, '!');",
        )
        .unwrap();
    }
    if version >= 5 {
        conn.execute_batch(
            "INSERT INTO agent_steps (message_id, seq, kind, tool, call_id, arguments, risk, decision,
                     result, exit_code, is_error, duration_ms, created_at)
                 VALUES (2, 0, 'tool', 'run_command', 'c1', '{\"command\": \"ls\"}', 'low', 'allowed',
                     'a.rs', 0, 0, 12, 2);
             INSERT INTO mcp_servers (name, transport, command, args, env, created_at)
                 VALUES ('files', 'stdio', 'mcp-files', '[\"--root\", \".\"]', '{}', 2);
             INSERT INTO approval_requests (kind, client, fingerprint, payload, risk, created_at)
                 VALUES ('evaluation', 'executor', 'fp1', '{\"command\": \"rm -rf build\"}', 'high', 2);",
        )
        .unwrap();
    }
}

/// What `seed` wrote at `version`, read back through the store after migrating to the latest.
fn check_seeded(store: &Store, version: usize) {
    let expected = if version >= 4 {
        "partial reply and more!"
    } else {
        "partial reply"
    };
    // The reply that was streaming is now interrupted, its text (parts included) kept.
    let message = store.message(1).unwrap();
    assert_eq!(
        message.status,
        MessageStatus::Interrupted,
        "from v{version}"
    );
    assert_eq!(message.content, expected, "from v{version}");
    assert_eq!(
        store.setting::<String>("theme").unwrap().as_deref(),
        Some("dark")
    );
    assert_eq!(store.recovered_interrupted(), 1);
    if version >= 2 {
        let providers = store.providers().unwrap();
        assert_eq!(providers.len(), 1, "from v{version}");
        assert_eq!(providers[0].name, "local");
        // The providers table was rebuilt (v12) with its ids: profiles still point at it, and
        // CLI agents can be added.
        let id = providers[0].id;
        store
            .insert_provider(
                "codex",
                tandem::llm::ProviderKind::Codex,
                "codex",
                None,
                &Default::default(),
            )
            .unwrap();
        assert_eq!(store.provider(id).unwrap().name, "local");
    }
    if version >= 3 {
        let approved = store.message(2).unwrap();
        assert_eq!(approved.approval_state, Some(ApprovalState::Approved));
        assert_eq!(approved.commit_hash.as_deref(), Some("c0ffee"));
        assert_eq!(approved.reverted_by.as_deref(), Some("dead00"));
        let base = approved.plan_base.expect("plan base kept");
        assert_eq!(base.len(), 2, "{base:?}");
    }
    if version >= 5 {
        let steps = store.agent_steps(2).unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].tool.as_deref(), Some("run_command"));
        assert_eq!(steps[0].exit_code, Some(0));
        let servers = store.mcp_servers().unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].name, "files");
        let requests = store.pending_approval_requests().unwrap();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].fingerprint, "fp1");
    }
}

#[test]
fn migrates_from_every_earlier_version_to_the_latest() {
    let latest = MIGRATIONS.len();
    let fresh_schema = {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).unwrap();
        drop(store);
        let conn = Connection::open(dir.path().join("tandem.db")).unwrap();
        schema(&conn)
    };
    for from in 0..latest {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tandem.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            configure(&conn).unwrap();
            migrations().to_version(&mut conn, from).unwrap();
            seed(&conn, from);
        }
        let store = Store::open_file(&path).unwrap();
        if from >= 1 {
            check_seeded(&store, from);
        }
        drop(store);
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, latest as i64);
        assert_eq!(
            schema(&conn),
            fresh_schema,
            "schema after migrating from v{from}"
        );
        let problems: i64 = conn
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(problems, 0);
    }
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
    let mut base = tandem::store::PlanBase::new();
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
