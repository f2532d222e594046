//! Migrations against real files: data seeded at every version comes through to the newest, and
//! a database from a newer Tandem is refused and left untouched.

use super::*;

/// Rows written at schema `version` by what that version added (each block uses only the
/// tables and columns that exist at its version; later blocks run at later versions).
const SEEDS: &[(usize, &str)] = &[
    (
        1,
        "INSERT INTO projects (id, name, path, settings, created_at, updated_at)
             VALUES (1, 'p', '/tmp/p', '{\"check_command\": \"make check\"}', 1, 1);
         INSERT INTO chats (id, project_id, title, mode, initial_commit, created_at, updated_at)
             VALUES (1, 1, 't', 'plan', 'abc123', 1, 1);
         INSERT INTO messages (id, chat_id, role, content, status, created_at, updated_at)
             VALUES (1, 1, 'assistant', 'partial reply', 'streaming', 1, 1);
         INSERT INTO settings (key, value) VALUES ('theme', '\"dark\"');",
    ),
    (
        2,
        "INSERT INTO providers (name, kind, base_url, created_at, updated_at)
             VALUES ('local', 'ollama', 'http://localhost:11434', 1, 1);
         INSERT INTO model_profiles (provider_id, model, context_length, supports_tools, updated_at)
             VALUES (1, 'llama', 8192, 1, 1);
         INSERT INTO prompts (id, title, content, created_at, updated_at)
             VALUES (1, 'review', 'first', 1, 1), (2, 'review', 'second', 1, 1);
         INSERT INTO usage_events (message_id, provider, model, input_tokens, output_tokens, created_at)
             VALUES (1, 'local', 'llama', 3, 4, 1);",
    ),
    (
        3,
        "INSERT INTO messages (id, chat_id, role, content, status, approval_state, commit_hash,
                 plan_base, reverted_by, created_at, updated_at)
             VALUES (2, 1, 'assistant', 'done', 'complete', 'approved', 'c0ffee',
                 '{\"src/a.rs\": \"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\", \"new.rs\": null}',
                 'dead00', 2, 2);",
    ),
    // The streaming reply had more text in parts when the process died.
    (
        4,
        "INSERT INTO message_parts (message_id, seq, text) VALUES (1, 0, ' and more'), (1, 1, '!');",
    ),
    (
        5,
        "INSERT INTO agent_steps (message_id, seq, kind, tool, call_id, arguments, risk, decision,
                 result, exit_code, is_error, duration_ms, created_at)
             VALUES (2, 0, 'tool', 'run_command', 'c1', '{\"command\": \"ls\"}', 'low', 'allowed',
                 'a.rs', 0, 0, 12, 2);
         INSERT INTO mcp_servers (name, transport, command, args, env, created_at)
             VALUES ('files', 'stdio', 'mcp-files', '[\"--root\", \".\"]', '{}', 2);
         INSERT INTO approval_requests (kind, client, fingerprint, payload, risk, created_at)
             VALUES ('evaluation', 'executor', 'fp1', '{\"command\": \"rm -rf build\"}', 'high', 2);",
    ),
    (
        6,
        "INSERT INTO agent_steps (message_id, seq, kind, tool, call_id, result, is_error, created_at, sandbox)
             VALUES (2, 1, 'tool', 'run_shell', 'c2', 'ok', 0, 3, '{\"enforced\": true}');",
    ),
    (
        7,
        "INSERT INTO agent_steps (message_id, seq, kind, result, is_error, created_at)
             VALUES (2, 2, 'trimmed', '1 result elided', 0, 4), (2, 3, 'check', 'passed', 0, 4);",
    ),
    (
        8,
        "INSERT INTO messages (id, chat_id, role, content, status, approval_state, approval_note,
                 created_at, updated_at)
             VALUES (3, 1, 'assistant', 'half', 'complete', 'approved',
                 '{\"hunks_applied\": 1, \"hunks_total\": 2, \"left_out\": [{\"path\": \"b.rs\", \"whole\": true, \"hunks\": []}], \"reason\": \"later\"}',
                 5, 5);",
    ),
    (
        9,
        "INSERT INTO model_profiles (provider_id, model, context_length, checked_at, tools_probe,
                 context_source, context_override, temperature, max_output_tokens, edit_blocks,
                 edit_failures, updated_at)
             VALUES (1, 'qwen', 32768, 9, 1, '/api/show', 16384, 0.5, 2048, 10, 3, 9);",
    ),
    (
        10,
        "INSERT INTO chat_summaries (chat_id, up_to_message_id, turns, content, model, created_at)
             VALUES (1, 2, 1, 'They talked.', 'llama', 10);",
    ),
    (
        11,
        "INSERT INTO chats (id, project_id, title, mode, created_at, updated_at, archived_at,
                 provider_id, model)
             VALUES (2, 1, 'audit', 'security', 11, 11, 12, 1, 'qwen');
         INSERT INTO messages (id, chat_id, role, content, created_at, updated_at)
             VALUES (4, 2, 'user', 'look', 11, 11);
         INSERT INTO attachments (message_id, kind, name, mime, bytes, stored, created_at)
             VALUES (4, 'image', 'shot.png', 'image/png', 3, 'attachments/abc', 11);
         INSERT INTO usage_events (message_id, provider, model, input_tokens, output_tokens,
                 created_at, project_id)
             VALUES (4, 'local', 'qwen', 5, 6, 11, 1);",
    ),
    (
        12,
        "INSERT INTO providers (name, kind, base_url, created_at, updated_at)
             VALUES ('codex', 'codex', 'codex', 12, 12);",
    ),
    (
        13,
        "INSERT INTO model_profiles (provider_id, model, reasoning_effort, updated_at)
             VALUES (1, 'thinker', 'high', 13);",
    ),
    (
        14,
        "INSERT INTO mcp_servers (name, transport, url, headers, created_at)
             VALUES ('remote', 'sse', 'https://mcp.example/sse', '{\"Authorization\": \"Bearer t\"}', 14);",
    ),
    (15, "UPDATE messages SET undoing = 'beef15' WHERE id = 2;"),
    (
        16,
        "UPDATE model_profiles SET token_ratio = 1.25 WHERE provider_id = 1 AND model = 'qwen';",
    ),
];

/// A database at schema `version` holding the rows of every version up to it, each block
/// written while the schema was at its own version (migrated one version at a time).
fn seed_up_to(conn: &mut Connection, version: usize) {
    // As the store migrates: foreign keys off (a rebuilt table's drop must not cascade).
    let migrate = |conn: &mut Connection, to: usize| {
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        migrations().to_version(conn, to).unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
    };
    for (at, sql) in SEEDS.iter().filter(|(at, _)| *at <= version) {
        migrate(conn, *at);
        conn.execute_batch(sql)
            .unwrap_or_else(|e| panic!("seed of v{at}: {e}"));
    }
    migrate(conn, version);
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
    let project = store.project(1).unwrap();
    assert_eq!(
        project.settings.check_command.as_deref(),
        Some("make check")
    );
    let chat = store.chat(1).unwrap();
    assert_eq!(
        (chat.mode, chat.initial_commit.as_deref()),
        (ChatMode::Plan, Some("abc123"))
    );
    if version >= 2 {
        let providers = store.providers().unwrap();
        assert_eq!(providers[0].name, "local");
        // The providers table was rebuilt (v12) with its ids: profiles still point at it, and
        // CLI agents can be added.
        let id = providers[0].id;
        let llama = store.model_profile(id, "llama").unwrap().expect("kept");
        assert_eq!(
            (llama.info.context_length, llama.info.supports_tools),
            (Some(8192), true)
        );
        if version < 12 {
            assert_eq!(providers.len(), 1, "from v{version}");
            store
                .insert_provider(
                    "codex",
                    tandem_core::llm::ProviderKind::Codex,
                    "codex",
                    None,
                    &Default::default(),
                )
                .unwrap();
        }
        assert_eq!(store.provider(id).unwrap().name, "local");
        // v11 made prompt names unique: the later duplicate was renamed, not dropped.
        let prompts = store.prompts().unwrap();
        let names: Vec<(&str, &str)> = prompts
            .iter()
            .map(|p| (p.name.as_str(), p.text.as_str()))
            .collect();
        assert!(names.contains(&("review", "first")), "{names:?}");
        assert!(names.contains(&("review (2)", "second")), "{names:?}");
        // v11 gave each usage event its project.
        let used = store.usage_by_model(Some(1)).unwrap();
        let llama = used.iter().find(|u| u.model == "llama").expect("{used:?}");
        assert_eq!((llama.input_tokens, llama.output_tokens), (3, 4));
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
        assert_eq!(steps[0].tool.as_deref(), Some("run_command"));
        assert_eq!(steps[0].exit_code, Some(0));
        assert_eq!(steps[0].arguments, Some(json!({"command": "ls"})));
        let servers = store.mcp_servers().unwrap();
        assert_eq!(servers[0].name, "files");
        assert_eq!(
            servers[0].transport,
            McpTransport::Stdio {
                command: "mcp-files".into(),
                args: vec!["--root".into(), ".".into()],
                env: Default::default(),
            }
        );
        let requests = store.pending_approval_requests().unwrap();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].fingerprint, "fp1");
        let kinds: Vec<StepKind> = steps.iter().map(|s| s.kind).collect();
        let expected: &[StepKind] = match version {
            5 => &[StepKind::Tool],
            6 => &[StepKind::Tool, StepKind::Tool],
            _ => &[
                StepKind::Tool,
                StepKind::Tool,
                StepKind::Trimmed,
                StepKind::Check,
            ],
        };
        assert_eq!(kinds, expected, "from v{version}");
        if version >= 6 {
            assert_eq!(steps[1].sandbox, Some(json!({"enforced": true})));
        }
    }
    if version >= 8 {
        let note = store.message(3).unwrap().approval_note.expect("note kept");
        assert_eq!((note.hunks_applied, note.hunks_total), (1, 2));
        assert_eq!(note.left_out[0].path, "b.rs");
        assert_eq!(note.reason.as_deref(), Some("later"));
    }
    if version >= 9 {
        let qwen = store.model_profile(1, "qwen").unwrap().expect("kept");
        assert_eq!(qwen.checked_at, Some(9));
        assert_eq!(qwen.tools_probe, Some(true));
        assert_eq!(qwen.info.context_source.as_deref(), Some("/api/show"));
        assert_eq!(qwen.context_length(), Some(16384));
        assert_eq!(qwen.settings.temperature, Some(0.5));
        assert_eq!(qwen.settings.max_output_tokens, Some(2048));
        assert_eq!((qwen.edit_blocks, qwen.edit_failures), (10, 3));
        let ratio = if version >= 16 { Some(1.25) } else { None };
        assert_eq!(qwen.token_ratio, ratio, "from v{version}");
    }
    if version >= 10 {
        let summary = store.latest_chat_summary(1).unwrap().expect("kept");
        assert_eq!(
            (
                summary.up_to_message_id,
                summary.turns,
                summary.content.as_str()
            ),
            (2, 1, "They talked.")
        );
    }
    if version >= 11 {
        let audit = store.chat(2).unwrap();
        assert_eq!(audit.mode, ChatMode::Security);
        assert_eq!(audit.archived_at, Some(12));
        assert_eq!(
            (audit.provider_id, audit.model.as_deref()),
            (Some(1), Some("qwen"))
        );
        let attached = store.attachments(4).unwrap();
        assert_eq!(attached.len(), 1);
        assert_eq!(
            (attached[0].kind, attached[0].stored.as_str()),
            (AttachmentKind::Image, "attachments/abc")
        );
    }
    if version >= 12 {
        let codex = store.providers().unwrap();
        assert!(
            codex
                .iter()
                .any(|p| p.kind == tandem_core::llm::ProviderKind::Codex),
            "{codex:?}"
        );
    }
    if version >= 13 {
        let thinker = store.model_profile(1, "thinker").unwrap().expect("kept");
        assert_eq!(
            thinker.settings.reasoning_effort,
            Some(tandem_core::llm::ReasoningEffort::High)
        );
    }
    if version >= 14 {
        let remote = store.mcp_server_by_name("remote").unwrap().expect("kept");
        let McpTransport::Sse { url, headers } = remote.transport else {
            panic!("{remote:?}");
        };
        assert_eq!(url, "https://mcp.example/sse");
        assert_eq!(headers["Authorization"], "Bearer t");
    }
    if version >= 15 {
        // An undo a killed process left in flight, for the engine to settle from git.
        assert_eq!(store.undoing(None).unwrap(), [(1, 2, "beef15".to_string())]);
    } else {
        assert!(store.undoing(None).unwrap().is_empty());
    }
}

#[test]
fn migrates_from_every_earlier_version_to_the_latest() {
    let latest = MIGRATIONS.len();
    // A new migration needs rows of its own here.
    let seeded: Vec<usize> = SEEDS.iter().map(|(at, _)| *at).collect();
    assert_eq!(
        seeded,
        (1..=latest).collect::<Vec<_>>(),
        "a seed per version"
    );
    let fresh_schema = {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).unwrap();
        drop(store);
        let conn = Connection::open(dir.path().join("tandem.db")).unwrap();
        schema(&conn)
    };
    // From every version, the latest included (nothing to migrate: the seeds still read).
    for from in 0..=latest {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tandem.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            configure(&conn).unwrap();
            seed_up_to(&mut conn, from);
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

/// Every file in `dir` with its bytes and modification time.
fn files_in(dir: &std::path::Path) -> Vec<(String, Vec<u8>, std::time::SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap(), modified)
        })
        .collect();
    files.sort();
    files
}

/// How a newer Tandem may have left its database.
#[derive(Debug, Clone, Copy)]
enum Left {
    /// Closed cleanly in WAL mode (as Tandem writes it): no -wal or -shm beside it.
    Wal,
    /// In rollback-journal mode: opening it the way Tandem does would switch it to WAL.
    Journal,
    /// Still open, or crashed: the newer schema is only in the -wal so far.
    InWal,
}

#[test]
fn a_database_from_a_newer_tandem_is_refused_and_left_untouched() {
    let newer = MIGRATIONS.len() as i64 + 3;
    let left_by_newer = [Left::Wal, Left::Journal, Left::InWal].map(|left| {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open_dir(dir.path()).unwrap());
        let conn = Connection::open(dir.path().join("tandem.db")).unwrap();
        match left {
            Left::Wal => {}
            Left::Journal => {
                conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
            }
            Left::InWal => {
                // Nothing reaches the main file: no checkpoint, not even at close.
                conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
                conn.set_db_config(
                    rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                    true,
                )
                .unwrap();
            }
        }
        conn.execute_batch(&format!(
            "CREATE TABLE from_the_future (x); PRAGMA user_version = {newer};"
        ))
        .unwrap();
        drop(conn);
        let before = files_in(dir.path());
        let names: Vec<&str> = before.iter().map(|(n, ..)| n.as_str()).collect();
        match left {
            Left::InWal => assert!(names.contains(&"tandem.db-wal"), "{names:?}"),
            _ => assert_eq!(names, ["tandem.db"], "{left:?}"),
        }
        (left, dir, before)
    });
    // A second apart, so a rewrite would show in the mtime even on coarse clocks.
    std::thread::sleep(std::time::Duration::from_millis(1100));

    for (left, dir, before) in left_by_newer {
        let path = dir.path().join("tandem.db");
        let refused = Store::open_dir(dir.path()).err().expect("refused");
        let message = refused.to_string();
        for part in [
            "newer Tandem",
            &format!("schema version {newer}"),
            &format!("up to {}", MIGRATIONS.len()),
            &path.display().to_string(),
        ] {
            assert!(message.contains(part), "{left:?}: {message}");
        }
        let after = files_in(dir.path());
        match left {
            // SQLite rebuilds its shared-memory index (-shm) to read the -wal; the database
            // and the -wal, where the data is, stay as they were.
            Left::InWal => {
                let data = |files: &[(String, Vec<u8>, std::time::SystemTime)]| {
                    files
                        .iter()
                        .filter(|(n, ..)| !n.ends_with("-shm"))
                        .cloned()
                        .collect::<Vec<_>>()
                };
                assert!(data(&after) == data(&before), "{left:?}: changed");
            }
            _ => assert!(after == before, "{left:?}: files changed or appeared"),
        }
    }
}
