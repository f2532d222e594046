//! CLI agents as providers: fake `codex` and `claude` executables on PATH replay recorded
//! JSON-line sessions (`fake-agent.sh`), and `tandem chat --provider` runs them in a scratch
//! copy of the project, in the kernel sandbox.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use super::{Cli, common, interrupt_once_printed};

struct Agents {
    _dir: tempfile::TempDir,
    root: PathBuf,
    cli: Cli,
    home: PathBuf,
    bin: PathBuf,
}

impl Agents {
    /// A project, a data dir, a home with the agents' state dirs, and the fakes on PATH.
    fn new() -> Agents {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        common::repo_with(&root, &[("src/lib.rs", "pub fn one() -> u32 { 1 }\n")]);
        let home = dir.path().join("home");
        let bin = dir.path().join("bin");
        for state in [".codex", ".claude"] {
            std::fs::create_dir_all(home.join(state)).unwrap();
        }
        std::fs::create_dir_all(&bin).unwrap();
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli_chat/fake-agent.sh");
        for name in ["codex", "claude"] {
            std::fs::copy(&fake, bin.join(name)).unwrap();
        }
        let cli = Cli {
            data: dir.path().join("data"),
        };
        Agents {
            _dir: dir,
            root,
            cli,
            home,
            bin,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.cli.command(args);
        let path = std::env::var("PATH").unwrap_or_default();
        command
            .env("HOME", &self.home)
            .env("PATH", format!("{}:{path}", self.bin.display()))
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR");
        command
    }

    /// Runs `tandem --json ARGS`; the output line and whether it succeeded.
    async fn run(&self, args: &[&str]) -> (Value, bool, String) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.command(&all).output().await.unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let last = stdout.trim().lines().last().unwrap_or("null").to_string();
        let value = serde_json::from_str(&last).unwrap_or(Value::Null);
        (value, output.status.success(), stderr)
    }

    async fn ok(&self, args: &[&str]) -> Value {
        let (value, ok, stderr) = self.run(args).await;
        assert!(ok, "{args:?}: {stderr}");
        value
    }

    /// The session the fake `agent` replays next.
    fn session(&self, agent: &str, lines: &[&str]) {
        std::fs::write(
            self.state(agent).join("session.jsonl"),
            lines.join("\n") + "\n",
        )
        .unwrap();
    }

    fn state(&self, agent: &str) -> PathBuf {
        self.home.join(match agent {
            "claude" => ".claude",
            _ => ".codex",
        })
    }

    fn recorded(&self, agent: &str, what: &str) -> String {
        std::fs::read_to_string(self.state(agent).join(what)).unwrap_or_default()
    }

    async fn add(&self, name: &str, kind: &str) -> Value {
        self.ok(&["project", "add", self.root.to_str().unwrap()])
            .await;
        self.ok(&["provider", "add", "--name", name, "--kind", kind])
            .await
    }

    async fn chat(&self, provider: &str, prompt: &str) -> (Value, bool, String) {
        self.run(&[
            "chat",
            "--project",
            self.root.to_str().unwrap(),
            "--provider",
            provider,
            prompt,
        ])
        .await
    }
}

const CODEX_EDITS: &[&str] = &[
    r#"{"type":"thread.started","thread_id":"0199-thread"}"#,
    r#"{"type":"turn.started"}"#,
    r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading lib.rs**"}}"#,
    r#"{"type":"item.started","item":{"id":"item_1","type":"todo_list","items":[{"text":"Add two","completed":false},{"text":"Run the tests","completed":false}]}}"#,
    r#"{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"bash -lc 'cat src/lib.rs'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"bash -lc 'cat src/lib.rs'","aggregated_output":"pub fn one() -> u32 { 1 }\n","exit_code":0,"status":"completed"}}"#,
    "#write src/lib.rs pub fn one() -> u32 { 1 }",
    "#write src/two.rs pub fn two() -> u32 { 2 }",
    r#"{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"src/two.rs","kind":"add"}],"status":"completed"}}"#,
    r#"{"type":"item.updated","item":{"id":"item_1","type":"todo_list","items":[{"text":"Add two","completed":true},{"text":"Run the tests","completed":false}]}}"#,
    r#"{"type":"item.completed","item":{"id":"item_4","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"error: could not compile\n","exit_code":101,"status":"failed"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_5","type":"agent_message","text":"Added `two` in src/two.rs."}}"#,
    "#last Added `two` in src/two.rs.",
    r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":345}}"#,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_logs_in_works_in_the_workspace_and_its_edits_become_a_proposal() {
    let agents = Agents::new();
    // Added while logged out: said at once.
    let added = agents.add("codex", "codex").await;
    assert_eq!(added["status"]["state"], "logged_out", "{added}");
    assert_eq!(added["provider"]["base_url"], "codex");
    let (status, ok, _) = agents.run(&["provider", "status", "codex"]).await;
    assert!(ok && status["ready"] == false, "{status}");
    // The device login: its link and code are shown (colour codes stripped).
    let output = agents
        .command(&["provider", "login", "codex"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("Open https://auth.example.test/device\n"),
        "{said}"
    );
    assert!(said.contains("ABCD-1234"), "{said}");
    let status = agents.ok(&["provider", "status", "codex"]).await;
    assert_eq!(status["status"]["state"], "logged_in");

    agents.session("codex", CODEX_EDITS);
    let (out, ok, stderr) = agents.chat("codex", "add two").await;
    assert!(ok, "{stderr}\n{out}");
    assert_eq!(out["status"], "complete", "{out}");
    let content = out["content"].as_str().unwrap();
    assert!(
        content.contains("<think>**Reading lib.rs**</think>"),
        "{content}"
    );
    assert!(content.ends_with("Added `two` in src/two.rs."), "{content}");
    assert_eq!(
        content.matches("Added `two`").count(),
        1,
        "the last message is not repeated: {content}"
    );
    assert_eq!(out["usage"]["input_tokens"], 1200);
    assert_eq!(out["usage"]["output_tokens"], 345);
    // Its commands are step cards with their exit codes, then what it changed.
    let steps = out["steps"].as_array().expect("steps");
    let tools: Vec<&str> = steps.iter().map(|s| s["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["run_shell", "file_change", "run_shell", "write_file"],
        "{out}"
    );
    assert_eq!(steps[0]["exit_code"], 0);
    assert_eq!(steps[0]["decision"], "allowed");
    assert_eq!(steps[2]["exit_code"], 101);
    assert_eq!(steps[2]["is_error"], true);
    // Only what changed is proposed (src/lib.rs was rewritten with the same text).
    let operations = out["operations"].as_array().unwrap();
    assert_eq!(operations.len(), 1, "{out}");
    assert_eq!(operations[0]["op"], "write");
    assert_eq!(operations[0]["path"], "src/two.rs");
    // It ran in the chat's workspace, shown at the project's own path (no copy), with the
    // sandbox flag of scoped trust and its prompt on stdin; the tree stays as it was.
    let cwd = agents.recorded("codex", "cwd.txt");
    assert_eq!(
        Path::new(cwd.trim()),
        agents.root.canonicalize().unwrap(),
        "{cwd}"
    );
    assert!(
        !agents.root.join("src/two.rs").exists(),
        "nothing lands before approval"
    );
    let args = agents.recorded("codex", "args.txt");
    assert!(args.starts_with("exec\n--json\n"), "{args}");
    assert!(args.contains("--sandbox\nworkspace-write\n"), "{args}");
    assert!(!args.contains("--model"), "its own default model: {args}");
    assert_eq!(agents.recorded("codex", "prompt.txt"), "add two");

    // Approved like any proposal: a commit by Tandem.
    let id = out["message_id"].as_i64().unwrap().to_string();
    let approved = agents.ok(&["approve", &id]).await;
    assert!(approved["commit"].is_string(), "{approved}");
    assert_eq!(
        std::fs::read_to_string(agents.root.join("src/two.rs")).unwrap(),
        "pub fn two() -> u32 { 2 }\n"
    );
    assert_eq!(common::git(&agents.root, &["status", "--porcelain"]), "");

    // The next turn carries the conversation (it remembers nothing between runs).
    agents.session(
        "codex",
        &[
            r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Nothing to change."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":3}}"#,
        ],
    );
    let chat_id = out["chat_id"].as_i64().unwrap().to_string();
    let (next, ok, stderr) = agents
        .run(&[
            "chat",
            "--project",
            agents.root.to_str().unwrap(),
            "--chat",
            &chat_id,
            "--provider",
            "codex",
            "and three?",
        ])
        .await;
    assert!(ok, "{stderr}");
    assert_eq!(
        next["operations"],
        serde_json::json!([]),
        "no edits, no proposal"
    );
    let prompt = agents.recorded("codex", "prompt.txt");
    assert!(
        prompt.contains("add two") && prompt.contains("Added `two`"),
        "{prompt}"
    );
    assert!(prompt.ends_with("and three?"), "{prompt}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_errors_are_reported_with_what_it_said() {
    let agents = Agents::new();
    agents.add("codex", "codex").await;
    // The turn fails inside the agent.
    agents.session(
        "codex",
        &[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"Trying."}}"#,
            r#"{"type":"turn.failed","error":{"message":"You've hit your usage limit."}}"#,
            "#exit 1",
        ],
    );
    let (out, ok, _) = agents.chat("codex", "go").await;
    assert!(!ok);
    assert_eq!(out["status"], "error", "{out}");
    assert!(
        out["error"].as_str().unwrap().contains("usage limit"),
        "{out}"
    );
    assert!(out["content"].as_str().unwrap().contains("Trying."));
    // It dies without a word on stdout: its stderr says why.
    agents.session(
        "codex",
        &[
            "not json at all",
            "#stderr Error: model gpt-9 does not exist",
            "#exit 2",
        ],
    );
    let (out, ok, _) = agents.chat("codex", "go").await;
    assert!(!ok);
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains("Codex exited with code 2: Error: model gpt-9 does not exist"),
        "{error}"
    );
    // Retries it recovers from (as a real Codex prints them without network) are shown in
    // the trace once each, and the turn still completes.
    let retry = r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}"#;
    agents.session(
        "codex",
        &[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"turn.started"}"#,
            retry,
            retry,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"Back online."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}"#,
        ],
    );
    let (out, ok, _) = agents.chat("codex", "go").await;
    assert!(ok, "{out}");
    assert_eq!(out["status"], "complete", "{out}");
    let content = out["content"].as_str().unwrap();
    assert_eq!(
        content.matches("Reconnecting... 2/5").count(),
        1,
        "{content}"
    );
    assert!(content.ends_with("Back online."), "{content}");
    // Retries that end in a failed exit: the last one is the reason given.
    agents.session(
        "codex",
        &[
            retry,
            r#"{"type":"error","message":"Reconnecting... waiting for network (Connection failed)"}"#,
            "#stderr 2026-11-25T17:44:12Z ERROR codex_api: failed to connect",
            "#exit 1",
        ],
    );
    let (out, ok, _) = agents.chat("codex", "go").await;
    assert!(!ok);
    let error = out["error"].as_str().unwrap();
    assert_eq!(
        error, "Codex failed: Reconnecting... waiting for network (Connection failed)",
        "{out}"
    );
    // Not logged in (as a real Claude Code answers then): how to log in, named for this
    // provider.
    agents.add("claude", "claude-code").await;
    agents.session(
        "claude",
        &[
            r#"{"type":"system","subtype":"init","session_id":"s","model":"m","apiKeySource":"none"}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}"#,
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","usage":{"input_tokens":0,"output_tokens":0}}"#,
        ],
    );
    let (out, ok, _) = agents.chat("claude", "go").await;
    assert!(!ok);
    let error = out["error"].as_str().unwrap();
    assert!(
        error.starts_with("Not logged in · Please run /login — log in by running `claude`"),
        "{error}"
    );
    assert!(error.contains("tandem provider set-key claude"), "{error}");
    // Not installed: an actionable error, and nothing half-made.
    agents
        .ok(&[
            "provider",
            "add",
            "--name",
            "gone",
            "--kind",
            "codex",
            "--program",
            "/nonexistent/codex",
        ])
        .await;
    let (out, ok, stderr) = agents.chat("gone", "go").await;
    assert!(!ok);
    let error = out["error"].as_str().unwrap_or(&stderr).to_string();
    assert!(error.contains("npm install -g @openai/codex"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_kills_the_agent_and_everything_it_started() {
    let agents = Agents::new();
    agents.add("codex", "codex").await;
    // Found by its own duration: another suite's sleeping agent on this machine is not it.
    let sleep = format!("sleep {}", common::marker(41));
    agents.session(
        "codex",
        &[
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"Working on it"}}"#,
            &format!("#{sleep}"),
            r#"{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"never shown"}}"#,
        ],
    );
    let mut child = agents
        .command(&[
            "chat",
            "--project",
            agents.root.to_str().unwrap(),
            "--provider",
            "codex",
            "go",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    interrupt_once_printed(&mut child, "Working on it", Duration::from_secs(30)).await;
    // The agent and its `sleep` are gone.
    let sleeping = Command::new("pgrep")
        .args(["-f", &sleep])
        .output()
        .await
        .unwrap();
    assert!(
        sleeping.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&sleeping.stdout)
    );
    let chats = agents
        .ok(&["chats", "--project", agents.root.to_str().unwrap()])
        .await;
    let chat_id = chats["chats"][0]["id"].as_i64().unwrap().to_string();
    let messages = agents.ok(&["messages", "--chat", &chat_id]).await;
    let reply = &messages["messages"][1];
    assert_eq!(reply["status"], "cancelled");
    assert_eq!(reply["content"], "Working on it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_reads_the_same_way_and_full_trust_needs_a_confirmation() {
    let agents = Agents::new();
    let added = agents.add("claude", "claude-code").await;
    assert_eq!(added["provider"]["kind"], "claude-code");
    assert_eq!(added["status"]["state"], "unknown", "{added}");
    let root = agents.root.to_str().unwrap();
    agents
        .ok(&["project", "config", "--project", root, "--trust", "trusted"])
        .await;
    agents.session(
        "claude",
        &[
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Deleting the old file."},{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"rm src/lib.rs"}}]}}"#,
            "#delete src/lib.rs",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":"","is_error":false}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Removed src/lib.rs.","usage":{"input_tokens":40,"output_tokens":7}}"#,
        ],
    );
    // Full trust runs it without its own permissions: refused until confirmed.
    let (out, ok, _) = agents.chat("claude", "remove lib.rs").await;
    assert!(!ok);
    let error = out["error"].as_str().unwrap();
    assert!(error.contains("--allow-agent-bypass"), "{error}");
    assert_eq!(
        agents.recorded("claude", "args.txt"),
        "",
        "it never started"
    );
    agents
        .ok(&[
            "project",
            "config",
            "--project",
            root,
            "--allow-agent-bypass",
        ])
        .await;
    let (out, ok, stderr) = agents.chat("claude", "remove lib.rs").await;
    assert!(ok, "{stderr}\n{out}");
    let args = agents.recorded("claude", "args.txt");
    assert!(
        args.starts_with("-p\n--output-format\nstream-json\n--verbose\n"),
        "{args}"
    );
    assert!(args.contains("--dangerously-skip-permissions"), "{args}");
    assert_eq!(
        out["content"], "Deleting the old file.\n\nRemoved src/lib.rs.",
        "{out}"
    );
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps[0]["tool"], "run_shell");
    assert_eq!(steps[0]["arguments"]["command"], "rm src/lib.rs");
    assert_eq!(out["operations"][0]["op"], "delete");
    assert_eq!(out["operations"][0]["path"], "src/lib.rs");
    assert!(agents.root.join("src/lib.rs").exists());
    // Ask mode: read-only, whatever the trust.
    agents.session(
        "claude",
        &[r#"{"type":"result","subtype":"success","is_error":false,"result":"It returns 1."}"#],
    );
    let (out, ok, _) = agents
        .run(&[
            "chat",
            "--project",
            root,
            "--provider",
            "claude",
            "--mode",
            "ask",
            "what does one do?",
        ])
        .await;
    assert!(ok, "{out}");
    assert_eq!(out["content"], "It returns 1.");
    assert!(
        agents
            .recorded("claude", "args.txt")
            .contains("--permission-mode\nplan")
    );
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kernel_keeps_the_agent_in_its_workspace() {
    let agents = Agents::new();
    agents.add("codex", "codex").await;
    // A write by the project's absolute path lands in the workspace (proposed); a write
    // beside the project lands nowhere.
    let inside = agents.root.join("src/escaped.rs");
    let beside = agents.root.parent().unwrap().join("escaped.rs");
    let lines = [
        format!("#write {} pub fn escaped() {{}}", inside.display()),
        format!("#write {} pub fn escaped() {{}}", beside.display()),
    ];
    agents.session(
        "codex",
        &[
            &lines[0],
            &lines[1],
            r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Tried."}}"#,
        ],
    );
    let (out, ok, stderr) = agents.chat("codex", "escape").await;
    assert!(ok, "{stderr}\n{out}");
    assert!(!inside.exists(), "the person's tree was written");
    assert!(!beside.exists(), "a file beside the project was written");
    assert_eq!(out["operations"][0]["path"], "src/escaped.rs", "{out}");
    assert_eq!(out["operations"].as_array().map(Vec::len), Some(1), "{out}");
}

/// The agent's state directory is writable in its container (it must keep sessions and
/// refresh its login), and with it the agent's own configuration, which the person's next
/// run of the agent outside Tandem obeys: a command the agent ran for a prompt injected in
/// the project can set Codex's `notify` program (or an MCP server; Claude Code's hooks in
/// `~/.claude/settings.json`, its MCP servers in `~/.claude.json`) and so run anything on the
/// host later. Known gap: the state and the configuration share one directory and one file.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known gap: an agent's configuration lies in its writable state; run with --ignored"]
async fn the_agent_cannot_rewrite_its_own_configuration() {
    let agents = Agents::new();
    agents.add("codex", "codex").await;
    let config = agents.home.join(".codex/config.toml");
    std::fs::write(&config, "model = \"gpt-5\"\n").unwrap();
    let line = format!(
        "#write {} notify = [\"sh\", \"-c\", \"touch /tmp/pwned\"]",
        config.display()
    );
    agents.session(
        "codex",
        &[
            &line,
            r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Done."}}"#,
        ],
    );
    let (out, ok, stderr) = agents.chat("codex", "configure").await;
    assert!(ok, "{stderr}\n{out}");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "model = \"gpt-5\"\n",
        "the agent rewrote its configuration: {stderr}"
    );
}
