//! MCP servers as agent tools, end to end: records in a real SQLite store, the real rmcp client,
//! and a real stdio server process (the example `mcp_test_server`, tests/mcp_server/server.rs).
//! `survive.rs`: HTTP headers, the legacy SSE transport (against `fake_http.rs`, a
//! fake speaking the real formats), restarts, process groups, the per-project pool, the CLI.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "../common/mod.rs"]
mod common;
#[path = "../mcp_server/marks.rs"]
mod marks;
#[path = "../mcp_server/binary.rs"]
mod mcp_binary;

mod fake_http;
mod survive;

use mcp_binary::server_binary;
use serde_json::json;
use tandem_core::agent::mcp::{CallFailure, MAX_OUTPUT_CHARS, McpError, McpHub, McpTool, World};
use tandem_core::store::{McpServerRecord, McpTransport, Store};
use tokio_util::sync::CancellationToken;

const CONNECT: Duration = Duration::from_secs(20);

fn test_server(env: &[(&str, &str)]) -> McpTransport {
    McpTransport::Stdio {
        command: server_binary().to_string_lossy().into_owned(),
        args: Vec::new(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// A store on a real database file, holding the given servers.
fn store_with(servers: &[(&str, McpTransport)]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_file(&dir.path().join("tandem.db")).unwrap();
    for (name, transport) in servers {
        store.add_mcp_server(name, transport.clone()).unwrap();
    }
    (dir, store)
}

fn records(store: &Store) -> Vec<McpServerRecord> {
    store.mcp_servers().unwrap()
}

/// A scratch folder for stdio servers to work in: their world (the agent's container shows
/// it read-write at its own path, and no other file of this machine's but the system's).
fn folder() -> (tempfile::TempDir, World) {
    let dir = tempfile::tempdir().unwrap();
    let world = World::folder(dir.path().canonicalize().unwrap());
    (dir, world)
}

/// The test server, connected in a scratch folder (kept as long as the hub is used).
async fn connect_one() -> (McpHub, tempfile::TempDir) {
    let (_dir, store) = store_with(&[("test", test_server(&[]))]);
    let (folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(errors.is_empty(), "{errors:?}");
    (hub, folder)
}

/// A successful call's text.
async fn call(hub: &McpHub, name: &str, args: serde_json::Value) -> String {
    let output = hub
        .call(name, args, CancellationToken::new())
        .await
        .unwrap();
    assert!(!output.is_error, "{name}: {}", output.text);
    output.text
}

async fn call_err(hub: &McpHub, name: &str, args: serde_json::Value) -> McpError {
    let result = hub.call(name, args, CancellationToken::new()).await;
    result.unwrap_err()
}

fn stdio(command: &str, args: &[&str]) -> McpTransport {
    let args = args.iter().map(|a| a.to_string()).collect();
    McpTransport::Stdio {
        command: command.into(),
        args,
        env: BTreeMap::new(),
    }
}

/// An upper bound far from what the test tells apart (a call that would take 30 s, a server
/// that never answers), so a loaded 2-core machine cannot make it flake.
fn assert_within(started: Instant, limit: Duration) {
    let elapsed = started.elapsed();
    assert!(elapsed < limit, "took {elapsed:?}, more than {limit:?}");
}

#[tokio::test]
async fn tools_are_namespaced_with_schemas_and_callable_by_either_name() {
    let (hub, _folder) = connect_one().await;
    let mut names: Vec<String> = hub.tools().iter().map(McpTool::qualified).collect();
    names.sort();
    let expected = [
        "add",
        "big",
        "connect",
        "crash",
        "echo",
        "env",
        "fail",
        "picture",
        "read_file",
        "reject",
        "slow",
        "spawn_sleeper",
        "write_file",
    ];
    assert_eq!(names, expected.map(|t| format!("test/{t}")));

    let echo = hub.resolve_wire_name("test__echo").unwrap();
    assert_eq!(echo.description, "Returns its text unchanged");
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
    let spec = echo.spec();
    assert_eq!(spec.name, "test__echo");
    assert_eq!(spec.parameters["type"], "object");
    assert!(
        spec.parameters.get("$schema").is_none(),
        "{}",
        spec.parameters
    );
    assert!(hub.resolve_wire_name("test/echo").is_none());

    assert_eq!(
        call(&hub, "test/echo", json!({"text": "héllo"})).await,
        "héllo"
    );
    assert_eq!(
        call(&hub, "test__add", json!({"a": 2, "b": 40})).await,
        "42"
    );
    let picture = call(&hub, "test/picture", json!(null)).await;
    assert_eq!(picture, "a picture:\n[image image/png, 12 bytes of base64]");
    hub.shutdown().await;
}

#[tokio::test]
async fn tool_errors_and_protocol_errors_are_told_apart() {
    let (hub, _folder) = connect_one().await;
    let cancel = CancellationToken::new;

    let failed = hub.call("test/fail", json!({}), cancel()).await.unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.text, "this tool always fails");

    // rmcp servers answer bad arguments in-band, as a tool error the model can read.
    let missing = hub
        .call("test/add", json!({"a": 1}), cancel())
        .await
        .unwrap();
    assert!(missing.is_error);
    assert!(
        missing.text.contains("missing field `b`"),
        "{}",
        missing.text
    );

    let err = call_err(&hub, "test/reject", json!({})).await;
    let McpError::Call {
        server,
        tool,
        failure: CallFailure::Rejected { code, message },
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(
        (server.as_str(), tool.as_str(), *code),
        ("test", "reject", -32603)
    );
    assert_eq!(message, "the server broke");

    let err = call_err(&hub, "test/add", json!([1, 2])).await;
    assert!(
        matches!(
            err,
            McpError::Call {
                failure: CallFailure::BadArguments,
                ..
            }
        ),
        "{err:?}"
    );

    let err = call_err(&hub, "test/nope", json!({})).await;
    assert!(
        matches!(&err, McpError::UnknownTool { name } if name == "test/nope"),
        "{err:?}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_slow_call_returns_at_once_and_the_server_keeps_working() {
    let (hub, _folder) = connect_one().await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = hub
        .call("test/slow", json!({"ms": 30_000}), cancel)
        .await
        .unwrap_err();
    assert_within(started, Duration::from_secs(10));
    assert!(
        matches!(&err, McpError::Cancelled { server, tool } if server == "test" && tool == "slow")
    );
    assert!(err.to_string().contains("test"), "{err}");

    assert_eq!(
        call(&hub, "test/echo", json!({"text": "still here"})).await,
        "still here"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_past_its_time_limit_times_out() {
    let (hub, _folder) = connect_one().await;
    let hub = hub.with_call_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = hub
        .call("test/slow", json!({"ms": 30_000}), CancellationToken::new())
        .await;
    assert!(matches!(err, Err(McpError::Timeout { .. })), "{err:?}");
    assert_within(started, Duration::from_secs(10));
    assert_eq!(
        call(&hub, "test/slow", json!({"ms": 10})).await,
        "slept 10 ms"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_crashing_mid_call_is_a_connection_failure_then_restarts() {
    let (hub, _folder) = connect_one().await;
    let err = call_err(&hub, "test/crash", json!({})).await;
    let McpError::Call {
        server,
        failure: CallFailure::Connection { stderr, .. },
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(server, "test");
    assert!(stderr.contains("crashing on purpose"), "{stderr:?}");
    // The next call starts the server again instead of failing or hanging.
    assert_eq!(call(&hub, "test/echo", json!({"text": "x"})).await, "x");
    assert_eq!(hub.server_starts("test").await, 2);
    hub.shutdown().await;
}

#[tokio::test]
async fn output_is_capped_with_a_notice() {
    let (hub, _folder) = connect_one().await;
    let exact = call(&hub, "test/big", json!({"n": MAX_OUTPUT_CHARS})).await;
    assert_eq!(exact, "x".repeat(MAX_OUTPUT_CHARS));

    let big = call(&hub, "test/big", json!({"n": 100_000})).await;
    assert!(
        big.chars().count() <= MAX_OUTPUT_CHARS,
        "{}",
        big.chars().count()
    );
    assert!(big.starts_with(&"x".repeat(10_000)));
    let kept = MAX_OUTPUT_CHARS - 120;
    let note = format!(
        "[output cut: {} of 100000 characters left out, the first {kept} are shown]",
        100_000 - kept
    );
    assert!(big.ends_with(&note), "{}", &big[big.len() - 100..]);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_missing_command_is_reported_and_the_other_servers_still_connect() {
    let ghost = stdio("/nonexistent/mcp-server-ghost", &[]);
    let (_dir, store) = store_with(&[
        ("ghost", ghost),
        ("test", test_server(&[])),
        ("off", test_server(&[])),
    ]);
    let off = store.mcp_server_by_name("off").unwrap().unwrap();
    store.set_mcp_server_enabled(off.id, false).unwrap();

    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    let McpError::Spawn {
        server,
        command,
        source,
    } = &errors[0]
    else {
        panic!("{errors:?}");
    };
    assert_eq!(
        (server.as_str(), command.as_str()),
        ("ghost", "/nonexistent/mcp-server-ghost")
    );
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let message = errors[0].to_string();
    assert!(
        message.contains("ghost") && message.contains("/nonexistent"),
        "{message}"
    );

    // The disabled server was not started; the working one serves.
    assert!(hub.tools().iter().all(|t| t.server == "test"));
    assert!(hub.server_pid("off").await.is_none() && hub.server_pid("ghost").await.is_none());
    assert_eq!(call(&hub, "test/echo", json!({"text": "ok"})).await, "ok");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_at_start_is_reported_with_its_stderr() {
    let crash = stdio("sh", &["-c", "echo 'missing module foo' >&2; exit 3"]);
    let (_dir, store) = store_with(&[("crash", crash)]);
    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(hub.tools().is_empty());
    let [McpError::Handshake { server, stderr, .. }] = errors.as_slice() else {
        panic!("{errors:?}");
    };
    assert_eq!(server, "crash");
    assert_eq!(stderr.trim(), "missing module foo");
    assert!(errors[0].to_string().contains("missing module foo"));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_quickly() {
    let mark = marks::mark();
    let mute = McpTransport::Stdio {
        command: "sleep".into(),
        args: vec!["30".into()],
        env: BTreeMap::from([("MARK".to_string(), mark.clone())]),
    };
    let (_dir, store) = store_with(&[("mute", mute), ("test", test_server(&[]))]);
    let (_folder, world) = folder();
    // The positive control: the mute server is seen running while it is waited for.
    let watch = mark.clone();
    let seen = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(3);
        while marks::marked(&watch).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        !marks::marked(&watch).is_empty()
    });
    let started = Instant::now();
    let (hub, errors) = McpHub::connect(&records(&store), &world, Duration::from_secs(4)).await;
    assert_within(started, Duration::from_secs(15));
    assert!(
        matches!(&errors[..], [McpError::Handshake { server, reason, .. }]
            if server == "mute" && reason.contains("no answer")),
        "{errors:?}"
    );
    assert!(!hub.tools().is_empty(), "the test server connected in time");
    hub.shutdown().await;
    assert!(
        seen.join().unwrap(),
        "the mute server was never seen running"
    );
    // The server that timed out was killed, not left running.
    let left = marks::survivors(&mark, Duration::from_secs(3));
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn an_unreachable_http_server_is_reported() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = McpTransport::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: BTreeMap::new(),
    };
    let (_dir, store) = store_with(&[("web", http)]);
    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(hub.tools().is_empty());
    assert!(
        matches!(&errors[..], [McpError::Handshake { server, .. }] if server == "web"),
        "{errors:?}"
    );
}

#[tokio::test]
async fn the_server_gets_the_record_env_and_forwarded_variables() {
    let (_dir, store) = store_with(&[(
        "test",
        test_server(&[
            ("MODE", "fast"),
            ("FROM_PARENT", "${PATH}"),
            ("GONE", "${TANDEM_NOT_SET_X}"),
        ]),
    )]);
    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(errors.is_empty(), "{errors:?}");
    let env = |name: &'static str| call(&hub, "test/env", json!({ "name": name }));
    assert_eq!(env("MODE").await, "fast");
    assert_eq!(env("FROM_PARENT").await, std::env::var("PATH").unwrap());
    assert_eq!(env("GONE").await, "<unset>");
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_the_server_process() {
    let (hub, _folder) = connect_one().await;
    let pid = hub.server_pid("test").await.unwrap();
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists(), "the server runs as {pid}");
    let started = Instant::now();
    hub.shutdown().await;
    // Shutdown does not hang on the server (the bound is loose: CI machines are slow).
    assert_within(started, Duration::from_secs(10));
    // Gone, not a zombie: the child was reaped.
    assert!(!proc_dir.exists(), "process {pid} outlived shutdown");
}

/// A stdio server runs in the agent's container, in its world: it writes there, and reaches
/// neither a decoy credential beside it nor a listener on this machine's loopback (each
/// attack's positive control: the test itself reaches both).
#[tokio::test]
async fn a_stdio_server_runs_in_its_world_and_reaches_nothing_else() {
    if !common::container_here() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let decoy = outside.path().join("id_rsa");
    std::fs::write(&decoy, "DECOY-SECRET").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert_eq!(std::fs::read_to_string(&decoy).unwrap(), "DECOY-SECRET");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());

    let (_db, store) = store_with(&[("test", test_server(&[]))]);
    let (folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(errors.is_empty(), "{errors:?}");
    let wrote = call(
        &hub,
        "test/write_file",
        json!({"path": "out.txt", "text": "hi"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(folder.path().join("out.txt")).unwrap(),
        "hi"
    );
    assert!(wrote.ends_with("out.txt"), "{wrote}");
    let path = decoy.to_string_lossy();
    let read = hub.call(
        "test/read_file",
        json!({ "path": path }),
        CancellationToken::new(),
    );
    let read = read.await.unwrap();
    assert!(read.is_error && !read.text.contains("DECOY"), "{read:?}");
    let connected = call(&hub, "test/connect", json!({ "port": port })).await;
    assert!(connected.starts_with("refused"), "{connected}");
    hub.shutdown().await;
}

/// The agent runs turns on spawned tasks, so the hub's futures must be `Send`.
#[test]
fn hub_futures_can_be_spawned() {
    fn spawnable<F: std::future::Future + Send + 'static>(_: F) {}
    let world = || World::folder("/");
    spawnable(async move { McpHub::connect(&[], &world(), CONNECT).await });
    spawnable(async move {
        let (hub, _) = McpHub::connect(&[], &world(), CONNECT).await;
        let _ = hub.call("a/b", json!({}), CancellationToken::new()).await;
        hub.shutdown().await;
    });
    spawnable(async move {
        let pool = tandem_core::agent::mcp::McpPool::new();
        let (hub, _) = pool.hub(1, 2, &world(), &[]).await;
        let _ = hub.call("a/b", json!({}), CancellationToken::new()).await;
        pool.close_chat(2).await;
        pool.close_project(1).await;
        pool.close_all().await;
    });
}

#[test]
fn wire_names_always_fit_provider_rules_and_stay_distinct() {
    let tool = |server: &str, name: &str| McpTool {
        server: server.into(),
        name: name.into(),
        description: String::new(),
        input_schema: json!({}),
    };
    let valid = |w: &str| {
        (1..=64).contains(&w.len())
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    assert_eq!(tool("fs", "read_file").wire_name(), "fs__read_file");
    let dotted = tool("fs", "read.file").wire_name();
    let unicode = tool("fs", "lire_fichier_é").wire_name();
    let long = tool(&"s".repeat(32), &"t".repeat(100)).wire_name();
    let long2 = tool(&"s".repeat(32), &format!("{}u", "t".repeat(99))).wire_name();
    for wire in [&dotted, &unicode, &long, &long2] {
        assert!(valid(wire), "{wire}");
    }
    assert_ne!(dotted, tool("fs", "read_file").wire_name());
    assert_ne!(long, long2);
    assert_eq!(dotted, tool("fs", "read.file").wire_name(), "stable");
    assert_eq!(tool("fs", "read.file").qualified(), "fs/read.file");

    // A schema-less tool is still offered as taking an object.
    let spec = tool("fs", "x").spec();
    assert_eq!(spec.parameters, json!({"type": "object"}));
    assert!(spec.description.contains("fs"));
}
