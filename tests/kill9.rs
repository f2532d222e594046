//! The real `tandem` binary killed with SIGKILL while it streams a reply, applies a 50-file
//! proposal, restores a version, undoes a change and runs an agent's tool calls; after each
//! kill the database passes SQLite's own integrity check and the next run must find (and
//! leave) everything whole:
//! - `git fsck` clean, and the working tree exactly HEAD's (`git status` empty, no folder
//!   HEAD does not have): a change is either wholly committed or not on disk at all;
//! - every prompt that reached the provider is in the database;
//! - no reply left "streaming";
//! - a proposal is approved exactly when its commit is in HEAD's history.
//!
//! Two ways to kill: at random points (seed printed; `KILL9_SEED=N` replays one), spread over
//! the time each operation takes when it is not killed, measured in the same run; and at
//! fail points (`kill_points`), where the binary kills itself at exactly one step of an
//! operation, so every in-between state is reached on every run and its outcome asserted.

#![cfg(unix)]
#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;
mod kill_points;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fake_provider::{FakeProvider, ollama_stream};
use serde_json::Value;
use tokio::process::{Child, Command};

const FILES: usize = 50;

struct Cli {
    data: PathBuf,
    root: PathBuf,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::from(common::tandem());
        command
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        command
    }

    fn root(&self) -> &str {
        self.root.to_str().unwrap()
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self
            .command(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .await
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Runs `args` to the end and returns how long it took.
    async fn timed(&self, args: &[&str]) -> Duration {
        let started = Instant::now();
        let output = self
            .command(args)
            .stderr(Stdio::piped())
            .output()
            .await
            .unwrap();
        let took = started.elapsed();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        took
    }

    /// Starts `args` and kills it with SIGKILL after `after`; true if it was still running.
    async fn kill_after(&self, args: &[&str], after: Duration) -> bool {
        let mut child: Child = self.command(args).spawn().unwrap();
        tokio::time::sleep(after).await;
        let running = child.try_wait().unwrap().is_none();
        // SIGKILL: no destructor, no signal handler, no flush runs.
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        running
    }

    fn landing_left(&self) -> bool {
        self.root.join(".git/tandem-landing").exists()
    }

    /// Runs `args` with the fail point `point` armed; the process must kill itself there.
    async fn killed_at(&self, point: &str, args: &[&str]) {
        use std::os::unix::process::ExitStatusExt;
        let status = self
            .command(args)
            .env(tandem_core::failpoint::VAR, point)
            .status()
            .await
            .unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "{args:?} never reached the fail point {point}: {status:?}"
        );
    }
}

/// SQLite's own check of the database file as the kill left it (before a restart settles
/// anything).
fn integrity(data: &Path, when: &str) {
    let conn = rusqlite::Connection::open(data.join(tandem_core::store::DB_FILE)).unwrap();
    let mut stmt = conn.prepare("PRAGMA integrity_check").unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, ["ok"], "{when}: the database is damaged");
}

/// Folders in the working tree that HEAD does not have (git shows no empty folder): what a
/// change left half-undone.
fn stray_folders(root: &Path) -> Vec<String> {
    let tracked = common::git(root, &["ls-tree", "-r", "-t", "--name-only", "HEAD"]);
    let tracked: std::collections::HashSet<&str> = tracked.lines().collect();
    let mut stray = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() && entry.file_name() != ".git" {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if !tracked.contains(rel.as_str()) {
                    stray.push(rel);
                }
                pending.push(path);
            }
        }
    }
    stray
}

/// xorshift64: reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn between(&mut self, low: Duration, high: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let span = (high - low).as_micros() as u64;
        low + Duration::from_micros(self.0 % span.max(1))
    }
}

fn git_status(root: &Path) -> String {
    common::git(root, &["status", "--porcelain", "--untracked-files=all"])
}

fn head(root: &Path) -> String {
    common::git(root, &["rev-parse", "HEAD"]).trim().to_string()
}

fn in_history(root: &Path, commit: &str) -> bool {
    std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", commit, "HEAD"])
        .current_dir(root)
        .status()
        .unwrap()
        .success()
}

/// Every invariant, after restarting the binary (which settles whatever a kill left); the
/// database is checked as the kill left it first.
async fn check(cli: &Cli, server: Option<&FakeProvider>, when: &str) -> Vec<Value> {
    integrity(&cli.data, when);
    let chats = cli.json(&["chats", "--project", cli.root()]).await;
    let mut messages = Vec::new();
    for chat in chats["chats"].as_array().unwrap() {
        let id = chat["id"].as_i64().unwrap().to_string();
        let listed = cli.json(&["messages", "--chat", &id]).await;
        messages.extend(listed["messages"].as_array().unwrap().iter().cloned());
    }

    let fsck = std::process::Command::new("git")
        .args(["fsck", "--no-progress", "--no-dangling"])
        .current_dir(&cli.root)
        .output()
        .unwrap();
    assert!(
        fsck.status.success() && fsck.stdout.is_empty(),
        "{when}: git fsck: {}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    assert_eq!(git_status(&cli.root), "", "{when}: the tree is not HEAD's");
    assert_eq!(
        stray_folders(&cli.root),
        Vec::<String>::new(),
        "{when}: folders HEAD does not have"
    );
    assert!(!cli.landing_left(), "{when}: the landing record stayed");

    for message in &messages {
        assert_ne!(message["status"], "streaming", "{when}: {message}");
        if let Some(commit) = message["commit_hash"].as_str()
            && message["approval_state"] == "approved"
        {
            assert!(in_history(&cli.root, commit), "{when}: {message}");
        }
        if message["approval_state"] == "pending" {
            // A pending proposal's commit, if one was being made, never landed.
            if let Some(commit) = message["commit_hash"].as_str() {
                assert!(!in_history(&cli.root, commit), "{when}: {message}");
            }
        }
        // An undone change's undo is in history.
        if let Some(undo) = message["reverted_by"].as_str() {
            assert!(in_history(&cli.root, undo), "{when}: {message}");
        }
    }
    if let Some(server) = server {
        for request in server.requests() {
            let body = request.body.to_string();
            let Some(prompt) = body
                .split("kill9 prompt ")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
            else {
                continue;
            };
            let prompt = format!("kill9 prompt {prompt}");
            assert!(
                messages
                    .iter()
                    .any(|m| m["role"] == "user" && m["content"] == prompt.as_str()),
                "{when}: the prompt {prompt:?} reached the provider but is gone"
            );
        }
    }
    messages
}

/// A reply writing all `FILES` files, each ~8 KB, marked with `round`, and one file in a
/// new folder (written last).
fn proposal(round: usize) -> String {
    let mut reply = format!("Round {round}.\n");
    for f in 0..FILES {
        let body: String = (0..200)
            .map(|line| format!("pub const R{round}_L{line}: u32 = {line}; // file {f}\n"))
            .collect();
        reply.push_str(&format!(
            "<tandem-write path=\"src/f{f:02}.rs\">\n{body}</tandem-write>\n"
        ));
    }
    reply.push_str(&format!(
        "<tandem-write path=\"{}\">\n// round {round}\n</tandem-write>\n",
        new_file(round)
    ));
    reply.push_str(&format!(
        "<tandem-chat-summary>Round {round}</tandem-chat-summary>\n"
    ));
    reply
}

/// The file `proposal(round)` adds, in a folder of its own.
fn new_file(round: usize) -> String {
    format!("gen/r{round}/new.rs")
}

/// A project of `FILES` files in `dir`, added to a data directory there, and the fake
/// provider added as `fake`.
async fn setup(dir: &Path) -> (Cli, FakeProvider) {
    let root = dir.join("project");
    let files: Vec<(String, String)> = (0..FILES)
        .map(|f| (format!("src/f{f:02}.rs"), format!("// file {f}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    common::repo_with(&root, &refs);
    let cli = Cli {
        data: dir.join("data"),
        root,
    };
    let server = FakeProvider::start().await;
    cli.json(&["project", "add", cli.root()]).await;
    let provider = common::fake_provider_args(&server.url());
    let provider: Vec<&str> = provider.iter().map(String::as_str).collect();
    cli.json(&provider).await;
    (cli, server)
}

/// Stores `proposal(round)` as a new chat's pending proposal; returns its message id.
async fn new_proposal(cli: &Cli, dir: &Path, round: usize) -> String {
    let file = dir.join(format!("reply-{round}.txt"));
    std::fs::write(&file, proposal(round)).unwrap();
    let out = cli
        .json(&[
            "propose",
            "--project",
            cli.root(),
            "--response",
            file.to_str().unwrap(),
            "--prompt",
            &format!("round {round}"),
        ])
        .await;
    out["message_id"].as_i64().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_points_nothing_is_lost_or_half_done() {
    let seed = std::env::var("KILL9_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("KILL9_SEED={seed}");
    let mut rng = Rng(seed);

    let dir = tempfile::tempdir().unwrap();
    let (cli, server) = setup(dir.path()).await;

    // 1. Streaming: a reply of ~1.2 s, killed anywhere from start-up to its end.
    let pieces: Vec<String> = proposal(0)
        .as_bytes()
        .chunks(8_000)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let delay = Duration::from_millis(1200) / pieces.len() as u32;
    let mut running = 0;
    for round in 0..6 {
        server.push("POST", "/api/chat", ollama_stream(&pieces, delay));
        let prompt = format!("kill9 prompt {round}");
        let after = rng.between(Duration::from_millis(20), Duration::from_millis(1600));
        let args = [
            "chat",
            "--project",
            cli.root(),
            "--provider",
            "fake",
            &prompt,
        ];
        running += usize::from(cli.kill_after(&args, after).await);
        check(
            &cli,
            Some(&server),
            &format!("stream round {round}, killed at {after:?}"),
        )
        .await;
    }
    eprintln!("stream: {running} of 6 kills hit a running process");

    // 2. Applying a 50-file proposal: first one approved unkilled to measure how long it takes.
    let new_proposal = async |round: usize| new_proposal(&cli, dir.path(), round).await;
    let id = new_proposal(1).await;
    let full = cli.timed(&["approve", &id]).await;
    check(&cli, None, "apply, not killed").await;
    let mut round = 2;
    let mut id = new_proposal(round).await;
    let (mut mid_landing, mut landed) = (0, 0);
    for kill in 0..10 {
        let before = head(&cli.root);
        let after = rng.between(full / 5, full + full / 5);
        cli.kill_after(&["approve", &id], after).await;
        mid_landing += usize::from(cli.landing_left());
        let when = format!("apply kill {kill}, at {after:?} of {full:?}");
        let messages = check(&cli, None, &when).await;
        let message = messages
            .iter()
            .find(|m| m["id"].as_i64().unwrap().to_string() == id)
            .unwrap();
        let marker = format!("R{round}_L0");
        let on_disk = std::fs::read_to_string(cli.root.join("src/f00.rs")).unwrap();
        if message["approval_state"] == "approved" {
            landed += 1;
            assert_ne!(head(&cli.root), before, "{when}");
            assert!(on_disk.contains(&marker), "{when}");
            round += 1;
            id = new_proposal(round).await;
        } else {
            assert_eq!(message["approval_state"], "pending", "{when}");
            assert_eq!(head(&cli.root), before, "{when}");
            assert!(!on_disk.contains(&marker), "{when}");
        }
    }
    eprintln!("apply: {landed} of 10 kills after the commit, {mid_landing} during the writes");

    // 3. Restoring the previous version, back and forth.
    let previous = common::git(&cli.root, &["rev-parse", "HEAD~1"]);
    let full = cli
        .timed(&["restore", "--project", cli.root(), previous.trim()])
        .await;
    check(&cli, None, "restore, not killed").await;
    let mut mid_landing = 0;
    for kill in 0..8 {
        let before = head(&cli.root);
        let tree_before = common::git(&cli.root, &["rev-parse", "HEAD^{tree}"]);
        let target = common::git(&cli.root, &["rev-parse", "HEAD~1"]);
        let target_tree = common::git(&cli.root, &["rev-parse", "HEAD~1^{tree}"]);
        let after = rng.between(full / 5, full + full / 5);
        cli.kill_after(&["restore", "--project", cli.root(), target.trim()], after)
            .await;
        mid_landing += usize::from(cli.landing_left());
        let when = format!("restore kill {kill}, at {after:?} of {full:?}");
        check(&cli, None, &when).await;
        let tree = common::git(&cli.root, &["rev-parse", "HEAD^{tree}"]);
        if head(&cli.root) == before {
            assert_eq!(tree, tree_before, "{when}");
        } else {
            assert_eq!(tree, target_tree, "{when}: a restore landed half-way");
        }
    }
    eprintln!("restore: {mid_landing} of 8 kills during the checkout");
}
