//! MCP that survives: headers for HTTP servers, the legacy SSE transport, a server killed
//! mid-session (unavailable, then restarted), the whole process group stopped, servers kept
//! by the pool (stdio ones per chat, remote ones per project), and the CLI's headers shown
//! masked.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_core::agent::mcp::{MAX_OUTPUT_CHARS, McpError, McpHub, McpPool, Timing, World};
use tandem_core::store::McpTransport;
use tokio_util::sync::CancellationToken;

use super::fake_http::FakeHttp;
use super::{CONNECT, call, folder, marks, records, store_with, test_server};

const TOKEN: &str = "Bearer sk-test-0123456789abcdef-SECRET";

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Polls `done` every 50 ms until it holds or `limit` passes; whether it held.
async fn eventually(limit: Duration, mut done: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Alive, and not a zombie (a killed orphan may wait to be reaped by init).
fn process_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(") ")
        .map(|(_, tail)| tail.split(' ').next());
    !matches!(state, Some(Some("Z" | "X")))
}

fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn start_count(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn http_headers_reach_the_server_with_every_request() {
    let fake = FakeHttp::start().await;
    let with = McpTransport::Http {
        url: fake.url("/mcp"),
        headers: headers(&[("Authorization", TOKEN), ("X-Team", "core")]),
    };
    let without = McpTransport::Http {
        url: fake.url("/mcp"),
        headers: BTreeMap::new(),
    };
    // Through the store: the headers survive the database (migration 014's column).
    let (_dir, store) = store_with(&[("web", with), ("anon", without)]);
    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(hub.resolve("web/whoami").is_some());

    assert_eq!(call(&hub, "web/whoami", json!({})).await, TOKEN);
    assert_eq!(call(&hub, "anon/whoami", json!({})).await, "<none>");

    let posts: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    let tokened = posts
        .iter()
        .filter(|r| r.headers.get("authorization").map(String::as_str) == Some(TOKEN))
        .collect::<Vec<_>>();
    // web's initialize, initialized, tools/list and tools/call; anon's none.
    assert!(tokened.len() >= 4, "{posts:?}");
    assert!(tokened.iter().all(|r| r.headers["x-team"] == "core"));
    assert_eq!(posts.len() - tokened.len(), tokened.len(), "{posts:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn the_legacy_sse_transport_lists_and_calls_tools() {
    let fake = FakeHttp::start().await;
    let sse = McpTransport::Sse {
        url: fake.url("/sse"),
        headers: headers(&[("Authorization", TOKEN)]),
    };
    let (_dir, store) = store_with(&[("legacy", sse)]);
    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(errors.is_empty(), "{errors:?}");
    let mut names: Vec<String> = hub.tools().iter().map(|t| t.qualified()).collect();
    names.sort();
    assert_eq!(names, ["legacy/big", "legacy/whoami"]);
    assert_eq!(call(&hub, "legacy/whoami", json!({})).await, TOKEN);

    // Oversized results are cut with a note, whatever the transport.
    let big = call(&hub, "legacy__big", json!({"n": 50_000})).await;
    assert!(big.chars().count() <= MAX_OUTPUT_CHARS);
    assert!(
        big.contains("characters left out"),
        "{}",
        &big[big.len() - 100..]
    );

    let seen = fake.seen();
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].path, "/sse");
    assert_eq!(seen[0].headers["accept"], "text/event-stream");
    let posts: Vec<_> = seen.iter().filter(|r| r.method == "POST").collect();
    assert!(posts.len() >= 4, "{seen:?}");
    for post in posts {
        assert_eq!(post.path, "/messages?sessionId=s1");
        assert_eq!(post.headers["authorization"], TOKEN);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn an_sse_url_that_is_not_an_event_stream_says_so() {
    let fake = FakeHttp::start().await;
    let wrong = McpTransport::Sse {
        url: fake.url("/nowhere"),
        headers: BTreeMap::new(),
    };
    let (_dir, store) = store_with(&[("legacy", wrong)]);
    let (_folder, world) = folder();
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(hub.tools().is_empty());
    let [McpError::Handshake { server, reason, .. }] = errors.as_slice() else {
        panic!("{errors:?}");
    };
    assert_eq!(server, "legacy");
    assert!(reason.contains("404"), "{reason}");
}

#[tokio::test]
async fn a_killed_server_is_unavailable_while_down_then_restarts() {
    // In the server's folder, the only one it can reach: named relative to it.
    let (dir, world) = folder();
    let (gate, log) = (dir.path().join("down"), dir.path().join("starts"));
    let env = [
        ("MCP_TEST_REFUSE_IF", "down"),
        ("MCP_TEST_START_LOG", "starts"),
    ];
    let (_db, store) = store_with(&[("test", test_server(&env))]);
    let (hub, errors) = McpHub::connect(&records(&store), &world, CONNECT).await;
    assert!(errors.is_empty(), "{errors:?}");
    let hub = hub.with_backoff(Duration::from_millis(500), Duration::from_millis(500));
    let first = hub.server_pid("test").await.unwrap();

    // Killed from outside, and it cannot come back for now.
    std::fs::write(&gate, "").unwrap();
    kill9(first);
    assert!(
        eventually(Duration::from_secs(15), async || hub
            .server_pid("test")
            .await
            .is_none())
        .await,
        "the hub never noticed the server died"
    );

    // Its tools stay offered; calling one is a tool error the model reads, not a failure.
    assert!(hub.resolve_wire_name("test__echo").is_some());
    let cancel = CancellationToken::new;
    let down = hub.call("test/echo", json!({"text": "hi"}), cancel()).await;
    let Err(McpError::Unavailable { server, reason }) = &down else {
        panic!("{down:?}");
    };
    assert_eq!(server, "test");
    assert!(reason.contains("refusing to start"), "{reason}");
    let told = down.unwrap_err().to_string();
    assert!(told.contains("unavailable"), "{told}");
    // Within the backoff: not even tried again.
    let again = hub.call("test/echo", json!({"text": "hi"}), cancel()).await;
    assert!(
        matches!(&again, Err(McpError::Unavailable { reason, .. }) if reason.contains("next restart attempt")),
        "{again:?}"
    );
    assert_eq!(
        hub.server_starts("test").await,
        2,
        "one start, one failed restart"
    );

    // Back up: after the backoff the next call restarts it.
    std::fs::remove_file(&gate).unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        call(&hub, "test/echo", json!({"text": "back"})).await,
        "back"
    );
    let second = hub.server_pid("test").await.unwrap();
    assert_ne!(first, second);
    assert_eq!(start_count(&log), 2);
    hub.shutdown().await;
}

#[tokio::test]
async fn stopping_a_server_kills_its_whole_process_group() {
    let mark = marks::mark();
    let (_dir, store) = store_with(&[("test", test_server(&[("MARK", &mark)]))]);
    let pool = McpPool::new();
    let (_folder, world) = folder();
    let (hub, errors) = pool.hub(7, 70, &world, &records(&store)).await;
    assert!(errors.is_empty(), "{errors:?}");
    let server = hub.server_pid("test").await.unwrap();
    call(&hub, "test/spawn_sleeper", json!({})).await;
    let running = marks::marked(&mark);
    assert!(
        running.iter().any(|p| p.starts_with("sleep")) && running.len() >= 2,
        "the server and its sleeper: {running:?}"
    );

    // The chat's turn ends: its servers stop.
    pool.close_chat(70).await;
    // The grandchild dies with the server, not only the server.
    let left = marks::survivors(&mark, Duration::from_secs(10));
    assert!(left.is_empty(), "outlived their server: {left:?}");
    assert!(!process_alive(server));
    // A turn still holding the hub is told the server was stopped; nothing restarts.
    let err = hub
        .call("test/echo", json!({"text": "x"}), CancellationToken::new())
        .await;
    assert!(
        matches!(&err, Err(McpError::Unavailable { reason, .. }) if reason.contains("stopped")),
        "{err:?}"
    );
    assert_eq!(hub.server_starts("test").await, 1);
}

/// A chat's stdio servers run for its turn: two hubs of one chat in one world share the
/// process; closing the chat (its turn ended) stops it, and its next turn starts it again.
/// Each chat has its own; closing a project stops its chats' servers.
#[tokio::test]
async fn the_pool_keeps_stdio_servers_per_chat_until_its_turn_ends() {
    // Each server logs its starts in its own folder, the only one it can write.
    let env = [("MCP_TEST_START_LOG", "starts")];
    let (_db, store) = store_with(&[("test", test_server(&env))]);
    let pool = McpPool::with_timing(Timing {
        connect: CONNECT,
        ..Timing::default()
    });
    let (one, world1) = folder();
    let (two, world2) = folder();
    let starts = |dir: &tempfile::TempDir| start_count(&dir.path().join("starts"));

    // Two hubs of chat 1 (project 1): one start, the same process.
    let (turn1, errors) = pool.hub(1, 1, &world1, &records(&store)).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(call(&turn1, "test/echo", json!({"text": "1"})).await, "1");
    let pid = turn1.server_pid("test").await.unwrap();
    turn1.shutdown().await; // a hub's end leaves the pool's servers running
    let (again, _) = pool.hub(1, 1, &world1, &records(&store)).await;
    assert_eq!(again.server_pid("test").await, Some(pid));
    assert_eq!(starts(&one), 1, "started once for both hubs");

    // Chat 2 of project 1 has its own, in its own world; closing it leaves chat 1's.
    let (other, _) = pool.hub(1, 2, &world2, &records(&store)).await;
    let other_pid = other.server_pid("test").await.unwrap();
    assert_ne!(other_pid, pid);
    assert_eq!(pool.chats().await, [1, 2]);
    pool.close_chat(2).await;
    assert!(!process_alive(other_pid));
    assert!(process_alive(pid));

    // The turn of chat 1 ends: its server stops; the next turn starts it again.
    pool.close_chat(1).await;
    assert!(!process_alive(pid));
    assert!(pool.chats().await.is_empty());
    let (turn2, _) = pool.hub(1, 1, &world1, &records(&store)).await;
    assert_eq!(call(&turn2, "test/echo", json!({"text": "2"})).await, "2");
    assert_eq!(starts(&one), 2);

    // Disabled: the next hub stops it and offers none of its tools.
    let pid2 = turn2.server_pid("test").await.unwrap();
    let id = store.mcp_server_by_name("test").unwrap().unwrap().id;
    store.set_mcp_server_enabled(id, false).unwrap();
    let (turn3, _) = pool.hub(1, 1, &world1, &records(&store)).await;
    assert!(turn3.tools().is_empty());
    assert!(!process_alive(pid2));
    // Enabled again: started again.
    store.set_mcp_server_enabled(id, true).unwrap();
    let (turn4, _) = pool.hub(1, 1, &world1, &records(&store)).await;
    assert_eq!(call(&turn4, "test/echo", json!({"text": "4"})).await, "4");
    assert_eq!(starts(&one), 3);

    // A chat of project 2: closing the project stops its chats' servers.
    let (three, world3) = folder();
    let (turn5, _) = pool.hub(2, 3, &world3, &records(&store)).await;
    let pid5 = turn5.server_pid("test").await.unwrap();
    assert_eq!(pool.projects().await, [1, 2]);
    pool.close_project(2).await;
    assert!(!process_alive(pid5));
    assert_eq!(starts(&three), 1);
    assert_eq!(pool.chats().await, [1]);

    // Removed (what Settings does between turns): retired without a turn.
    store.remove_mcp_server(id).unwrap();
    let pid4 = turn4.server_pid("test").await.unwrap();
    pool.retire(&records(&store)).await;
    assert!(!process_alive(pid4));
    pool.close_all().await;
    assert!(pool.projects().await.is_empty() && pool.chats().await.is_empty());
    drop(two);
}

/// A remote server is no process of Tandem's: it stays with the project, shared by its
/// chats, and a chat's turn ending leaves it connected.
#[tokio::test]
async fn the_pool_keeps_remote_servers_per_project_across_chats() {
    let fake = FakeHttp::start().await;
    let web = McpTransport::Http {
        url: fake.url("/mcp"),
        headers: BTreeMap::new(),
    };
    let (_db, store) = store_with(&[("web", web)]);
    let pool = McpPool::new();
    let posts = || fake.seen().iter().filter(|r| r.method == "POST").count();
    let world = World::folder("/");
    let (first, errors) = pool.hub(1, 1, &world, &records(&store)).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(first.resolve("web/whoami").is_some());
    let connected = posts();
    assert!(connected > 0);
    pool.close_chat(1).await;
    let (second, _) = pool.hub(1, 2, &world, &records(&store)).await;
    assert_eq!(posts(), connected, "the same connection: no new handshake");
    assert_eq!(call(&second, "web/whoami", json!({})).await, "<none>");
    assert_eq!(pool.projects().await, [1]);
    pool.close_all().await;
}

/// The CLI stores headers and never prints their values in full.
#[test]
fn the_cli_adds_headers_and_shows_them_masked() {
    let data = tempfile::tempdir().unwrap();
    let tandem = |args: &[&str]| {
        let out = crate::common::tandem()
            .arg("--data-dir")
            .arg(data.path())
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = tandem(&[
        "mcp",
        "add",
        "web",
        "--url",
        "https://mcp.example.com/mcp",
        "--header",
        &format!("Authorization: {TOKEN}"),
        "--header",
        "X-Team: core-team-name-long",
    ]);
    assert!(ok, "{text}");
    let (ok, sse) = tandem(&[
        "mcp",
        "add",
        "old",
        "--transport",
        "sse",
        "--url",
        "http://h/sse",
    ]);
    assert!(ok, "{sse}");
    let (ok, bad) = tandem(&[
        "mcp",
        "add",
        "x",
        "--url",
        "http://h/",
        "--header",
        "nocolon",
    ]);
    assert!(!ok && bad.contains("Name: value"), "{bad}");

    for args in [&["mcp", "list"][..], &["--json", "mcp", "list"]] {
        let (ok, list) = tandem(args);
        assert!(ok, "{list}");
        assert!(!list.contains("0123456789"), "a secret was printed: {list}");
        assert!(list.contains("Bearer ••••CRET"), "{list}");
        assert!(list.contains("web") && list.contains("old"), "{list}");
    }
    let (ok, text) = tandem(&["mcp", "disable", "web"]);
    assert!(ok, "{text}");
    let (_, list) = tandem(&["mcp", "list"]);
    assert!(list.contains("(disabled)"), "{list}");
    let (ok, text) = tandem(&["mcp", "remove", "old"]);
    assert!(ok, "{text}");
    let (_, list) = tandem(&["--json", "mcp", "list"]);
    let list: serde_json::Value = serde_json::from_str(list.trim()).unwrap();
    let servers = list["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["transport"], "http");
    assert_eq!(servers[0]["headers"]["Authorization"], "Bearer ••••CRET");
}
