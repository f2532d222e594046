//! `tandem chat` and friends from the command line, against the fake provider server.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod cli_agents;
mod common;
#[path = "cli_chat/editor.rs"]
mod editor;
mod fake_provider;
#[path = "cli_chat/seal.rs"]
mod seal;

use std::process::Stdio;
use std::time::Duration;

use fake_provider::{FakeProvider, ollama_stream};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

struct Cli {
    data: std::path::PathBuf,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::from(common::tandem());
        command
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .stdin(Stdio::null());
        command
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.command(&all).output().await.unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert_eq!(stdout.trim().lines().count(), 1, "{stdout}");
        serde_json::from_str(&stdout).unwrap()
    }

    /// Runs `args` with `input` on its standard input (a key, as a person pipes it).
    async fn with_stdin(&self, args: &[&str], input: &str) -> std::process::Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use tokio::io::AsyncWriteExt;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.as_bytes()).await.unwrap();
        }
        child.wait_with_output().await.unwrap()
    }
}

async fn setup() -> (tempfile::TempDir, std::path::PathBuf, Cli, FakeProvider) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    common::repo_with(&root, &[("src/lib.rs", "pub fn one() -> u32 { 1 }\n")]);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let server = FakeProvider::start().await;
    cli.json(&["project", "add", root.to_str().unwrap()]).await;
    let provider = common::fake_provider_args(&server.url());
    let provider: Vec<&str> = provider.iter().map(String::as_str).collect();
    cli.json(&provider).await;
    (dir, root, cli, server)
}

/// `tandem context --json` names every file it packed, with its tokens, how it is sent and why:
/// the `@`-mentioned file first ("mentioned"), then what fits ("room left").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_json_lists_each_included_file_with_how_and_why() {
    let (_dir, root, cli, _server) = setup().await;
    std::fs::write(root.join("src/zeta.rs"), "pub fn zeta() -> u32 { 26 }\n").unwrap();
    let root_str = root.to_str().unwrap();
    let context = cli
        .json(&[
            "context",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--prompt",
            "change @src/zeta.rs",
        ])
        .await;
    let b = &context["breakdown"];
    let included = b["included"].as_array().unwrap();
    assert_eq!(included.len(), 2, "{b}");
    assert_eq!(b["files_included"], 2);
    assert_eq!(included[0]["path"], "src/zeta.rs");
    assert_eq!(included[0]["as"], "whole");
    assert_eq!(included[0]["why"], "mentioned");
    assert_eq!(included[1]["path"], "src/lib.rs");
    assert_eq!(included[1]["as"], "whole");
    assert!(!included[1]["why"].as_str().unwrap().is_empty(), "{b}");
    // The tokens are the file's, as the codebase section counts them.
    let tokens: u64 = included.iter().map(|f| f["tokens"].as_u64().unwrap()).sum();
    assert!(
        tokens > 0 && tokens < b["codebase"].as_u64().unwrap(),
        "{b}"
    );
}

/// The prompt's words find the file that defines them, sent whole; what it uses comes next,
/// and a file too big to send whole goes as its map (definitions with line numbers); each
/// says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_ranks_the_prompts_files_first_and_maps_what_does_not_fit() {
    let (_dir, root, cli, _server) = setup().await;
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // Unrelated files first in path order, enough to fill the window many times over.
    for i in 0..40 {
        let body = format!("pub fn unrelated_{i}() -> u32 {{ {i} }}\n").repeat(60);
        write(&format!("src/aaa/filler_{i:02}.rs"), &body);
    }
    write(
        "src/zz/parser.rs",
        "use crate::zz::lexer::tokenize;\npub fn parse_expression(text: &str) -> u32 {\n    tokenize(text) + evaluate_tree(text)\n}\n",
    );
    write(
        "src/zz/lexer.rs",
        "pub fn tokenize(text: &str) -> u32 { text.len() as u32 }\n",
    );
    let body = "    let x = x + 1;\n".repeat(12);
    let tree: String =
        std::iter::once("pub fn evaluate_tree(text: &str) -> u32 { 1 }\n".to_string())
            .chain(
                (0..150).map(|i| format!("pub fn tree_helper_{i}(x: u32) -> u32 {{\n{body}}}\n")),
            )
            .collect();
    write("src/zz/tree.rs", &tree);
    let root_str = root.to_str().unwrap();
    let context = cli
        .json(&[
            "context",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--prompt",
            "parse_expression gives the wrong answer",
        ])
        .await;
    let included = context["breakdown"]["included"].as_array().unwrap();
    let find = |path: &str| {
        (included.iter().find(|f| f["path"] == path))
            .unwrap_or_else(|| panic!("{path} not included: {included:#?}"))
    };
    assert_eq!(included[0]["path"], "src/zz/parser.rs", "{included:#?}");
    assert_eq!(included[0]["as"], "whole");
    assert!(
        included[0]["why"]
            .as_str()
            .unwrap()
            .starts_with("matches: parse"),
        "{included:#?}"
    );
    let lexer = find("src/zz/lexer.rs");
    assert_eq!(lexer["as"], "whole");
    assert_eq!(lexer["why"], "defines `tokenize` used by src/zz/parser.rs");
    let tree = find("src/zz/tree.rs");
    assert_eq!(tree["as"], "map", "{included:#?}");
    assert_eq!(
        tree["why"],
        "defines `evaluate_tree` used by src/zz/parser.rs"
    );
    // The map is a fraction of the file.
    let whole = tandem_core::tokens::estimate(
        &std::fs::read_to_string(root.join("src/zz/tree.rs")).unwrap(),
    );
    assert!(
        tree["tokens"].as_u64().unwrap() * 5 < whole as u64,
        "{tree} of {whole}"
    );
}

/// `project add` builds the code index in the data directory; every later process uses it
/// and reads only what changed: a function written after the import is found by the next
/// `context`, and one deleted is no longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_built_at_import_follows_the_files_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    // Names without digits (the words of an identifier drop trailing digits): `zqaa` ...
    let name = |i: u8| format!("zq{}{}", (b'a' + i / 26) as char, (b'a' + i % 26) as char);
    let files: Vec<(String, String)> = (0..30)
        .map(|i| {
            let text = format!("pub fn filler_{}() -> u32 {{ {i} }}\n", name(i)).repeat(40);
            (format!("src/a/f{i:02}.rs"), text)
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    common::repo_with(&root, &files);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let root_str = root.to_str().unwrap();
    let added = cli.json(&["project", "add", root_str]).await;
    assert_eq!(added["indexed_files"], 30, "{added}");
    let server = FakeProvider::start().await;
    let provider = common::fake_provider_args(&server.url());
    let provider: Vec<&str> = provider.iter().map(String::as_str).collect();
    cli.json(&provider).await;
    let first = |prompt: &'static str| {
        let cli = &cli;
        async move {
            let args = [
                "context",
                "--project",
                root_str,
                "--provider",
                "fake",
                "--prompt",
                prompt,
            ];
            let context = cli.json(&args).await;
            context["breakdown"]["included"][0].clone()
        }
    };
    let top = first("filler_zqar is wrong").await;
    assert_eq!(top["path"], "src/a/f17.rs", "{top}");

    std::fs::write(
        root.join("src/a/f03.rs"),
        "pub fn quaternion_slerp() -> u32 { 3 }\n",
    )
    .unwrap();
    let top = first("quaternion_slerp overshoots").await;
    assert_eq!(top["path"], "src/a/f03.rs", "{top}");
    assert!(
        top["why"].as_str().unwrap().starts_with("matches: "),
        "{top}"
    );

    std::fs::remove_file(root.join("src/a/f17.rs")).unwrap();
    let top = first("filler_zqar is wrong").await;
    assert_ne!(top["path"], "src/a/f17.rs", "{top}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_json_then_show_chats_messages_and_context() {
    let (_dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    // The default Ollama provider exists from the first run; ours was added after it.
    let providers = cli.json(&["provider", "list"]).await;
    let names: Vec<&str> = providers["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ollama", "fake"]);

    let reply = [
        "Adding two.\n",
        "<tandem-write path=\"src/two.rs\">pub fn two() -> u32 { 2 }\n</tandem-write>\n",
        "<tandem-chat-summary>Add two</tandem-chat-summary>",
    ];
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&reply, Duration::from_millis(5)),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "add two",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    assert_eq!(out["content"], reply.concat());
    assert_eq!(out["operations"][0]["op"], "write");
    assert_eq!(out["operations"][0]["path"], "src/two.rs");
    assert!(out.get("commit").is_none());
    let message_id = out["message_id"].as_i64().unwrap();
    let chat_id = out["chat_id"].as_i64().unwrap();

    let shown = cli.json(&["show", &message_id.to_string()]).await;
    assert_eq!(shown["role"], "assistant");
    assert_eq!(shown["status"], "complete");
    assert_eq!(shown["approval_state"], "pending");
    assert_eq!(shown["content"], reply.concat());

    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(chats["chats"][0]["id"], chat_id);
    assert_eq!(chats["chats"][0]["title"], "add two");
    let messages = cli
        .json(&["messages", "--chat", &chat_id.to_string()])
        .await;
    assert_eq!(messages["messages"].as_array().unwrap().len(), 2);

    let context = cli
        .json(&["context", "--project", root_str, "--provider", "fake"])
        .await;
    assert_eq!(context["breakdown"]["window"], 8192);
    assert_eq!(context["breakdown"]["files_included"], 1);
    // The text tells the window's story as the window's meter does: what is sent, what is
    // reserved for the reply, of what window, and their share of it.
    let b = &context["breakdown"];
    let n = |key: &str| b[key].as_u64().unwrap();
    let sent = n("system") + n("codebase") + n("history") + n("prompt");
    let percent = ((sent + n("reply_reserve")) as f64 * 100.0 / n("window") as f64).round();
    let text = cli
        .command(&["context", "--project", root_str, "--provider", "fake"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        format!(
            "{sent} sent + {} reserved for the reply, of {} tokens ({percent}%)",
            n("reply_reserve"),
            n("window")
        )
    );

    // --approve applies at once, in the same chat.
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(
            &["<tandem-write path=\"src/three.rs\">pub fn three() {}\n</tandem-write>"],
            Duration::ZERO,
        ),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--chat",
            &chat_id.to_string(),
            "--provider",
            "fake",
            "--approve",
            "add three",
        ])
        .await;
    let commit = out["commit"].as_str().unwrap();
    assert_eq!(common::git(&root, &["rev-parse", "HEAD"]).trim(), commit);
    assert!(root.join("src/three.rs").exists());
    assert!(
        !root.join("src/two.rs").exists(),
        "the first proposal still waits"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_and_keeps_the_partial_reply() {
    let (_dir, root, cli, server) = setup().await;
    let words: Vec<String> = (0..200).map(|i| format!("word{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&words, Duration::from_millis(30)),
    );
    let mut child = cli
        .command(&[
            "chat",
            "--project",
            root.to_str().unwrap(),
            "--provider",
            "fake",
            "talk",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Wait until the reply is visibly streaming, then interrupt.
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("word3 ") {
            let n = stdout.read(&mut buf).await.unwrap();
            assert!(n > 0, "stdout closed early");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap();
    let pid = child.id().unwrap().to_string();
    let status = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(exit.success(), "a cancelled chat is not a failure");
    let chats = cli
        .json(&["chats", "--project", root.to_str().unwrap()])
        .await;
    let chat_id = chats["chats"][0]["id"].as_i64().unwrap();
    let messages = cli
        .json(&["messages", "--chat", &chat_id.to_string()])
        .await;
    let reply = &messages["messages"][1];
    assert_eq!(reply["status"], "cancelled");
    let content = reply["content"].as_str().unwrap();
    assert!(content.starts_with("word0 word1 word2 word3 "), "{content}");
    assert!(!content.contains("word199"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_is_stored_outside_sqlite_and_sent_to_the_provider() {
    let (dir, root, cli, server) = setup().await;
    cli.json(&[
        "provider",
        "add",
        "--name",
        "cloud",
        "--kind",
        "openai",
        "--base-url",
        &format!("{}/v1", server.url()),
        "--api-key-env",
        "TANDEM_TEST_UNSET_KEY",
        "--default-model",
        "gpt-test",
    ])
    .await;
    let set_key = ["--json", "provider", "set-key", "cloud"];
    let output = cli.with_stdin(&set_key, "sk-test-secret-123\n").await;
    assert!(output.status.success());
    let stored: Value = serde_json::from_slice(&output.stdout).unwrap();
    // Tests never use the machine's keychain: the 0600 file is used, and said so.
    let path = stored["stored"]["File"].as_str().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let why = stored["keychain_unavailable"].as_str().unwrap();
        assert!(why.contains("TANDEM_KEYCHAIN=off"), "{why}");
    }
    server.push(
        "POST",
        "/v1/chat/completions",
        fake_provider::openai_stream(&["hello"], Duration::ZERO),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root.to_str().unwrap(),
            "--provider",
            "cloud",
            "hi",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-test-secret-123")
    );
    // The key is nowhere in the database files.
    for entry in std::fs::read_dir(dir.path().join("data")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("tandem.db")
        {
            let bytes = std::fs::read(&path).unwrap();
            let found = bytes.windows(18).any(|w| w == b"sk-test-secret-123");
            assert!(!found, "key found in {}", path.display());
        }
    }

    // A second key: kept after the first; a quota error on one moves to the next.
    let add_key = ["--json", "provider", "set-key", "cloud", "--add"];
    let output = cli.with_stdin(&add_key, "sk-second-key-456\n").await;
    assert!(output.status.success());
    let keys = cli.json(&["provider", "keys", "cloud"]).await;
    let listed = keys["keys"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{keys}");
    assert_eq!(listed[0]["in_use"], true);
    assert_eq!(listed[0]["source"], "stored");
    let shown = keys.to_string();
    assert!(
        !shown.contains("sk-test") && !shown.contains("sk-second"),
        "{shown}"
    );
    let quota = serde_json::json!({"error": {"message": "You exceeded your current quota"}});
    server.push(
        "POST",
        "/v1/chat/completions",
        fake_provider::Reply::json(429, quota),
    );
    server.push(
        "POST",
        "/v1/chat/completions",
        fake_provider::openai_stream(&["from the second"], Duration::ZERO),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root.to_str().unwrap(),
            "--provider",
            "cloud",
            "hi",
        ])
        .await;
    assert_eq!(out["content"], "from the second", "{out}");
    let sent: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(
        sent[sent.len() - 2..],
        ["Bearer sk-test-secret-123", "Bearer sk-second-key-456"]
    );
    // Removed by its fingerprint: the other stays.
    let first = listed[0]["fingerprint"].as_str().unwrap();
    cli.json(&["provider", "remove-key", "cloud", first]).await;
    let keys = cli.json(&["provider", "keys", "cloud"]).await;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
    assert_eq!(keys["keys"][0]["fingerprint"], listed[1]["fingerprint"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_mode_streams_steps_and_reports_them_in_json() {
    let (_dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    tandem_core::store::Store::open_dir(&cli.data)
        .unwrap()
        .set_setting("agent.tool_calling", "native")
        .unwrap();
    let script = |server: &FakeProvider| {
        server.push(
            "POST",
            "/api/chat",
            fake_provider::ollama_tool_call("read_file", serde_json::json!({"path": "src/lib.rs"})),
        );
        server.push(
            "POST",
            "/api/chat",
            fake_provider::ollama_tool_call(
                "run_shell",
                serde_json::json!({"command": "echo ran > ran.txt"}),
            ),
        );
        server.push(
            "POST",
            "/api/chat",
            ollama_stream(&["Checked."], Duration::from_millis(5)),
        );
    };

    // No answer on the terminal (stdin is empty): the medium-risk command is rejected.
    script(&server);
    let args = [
        "chat",
        "--project",
        root_str,
        "--provider",
        "fake",
        "--mode",
        "agent",
    ];
    let out = cli.json(&[&args[..], &["look"]].concat()).await;
    assert_eq!(out["status"], "complete", "{out}");
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{out}");
    assert_eq!(steps[0]["tool"], "read_file");
    assert_eq!(steps[0]["decision"], "allowed");
    assert_eq!(steps[1]["tool"], "run_shell");
    assert_eq!(steps[1]["decision"], "rejected");
    assert!(steps[1].get("exit_code").is_none());
    assert!(!root.join("ran.txt").exists());

    // Pre-approved up to high risk, the command runs; the plain output streams each step.
    script(&server);
    let output = cli
        .command(&[&args[..], &["--allow-risk", "high", "look"]].concat())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("[read_file]") && stdout.contains("-> allowed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[run_shell]") && stdout.contains("exit 0"),
        "{stdout}"
    );
    assert!(stdout.contains("Checked."), "{stdout}");
    // The command ran in the chat's workspace: its file joined the proposal, the person's
    // tree has none yet.
    assert!(!root.join("ran.txt").exists());
    assert_eq!(
        std::fs::read_to_string(in_workspace(&cli.data, "ran.txt")).unwrap(),
        "ran\n"
    );

    // `--json` says what confined the command: the protections and what the kernel lacked.
    script(&server);
    let out = cli
        .json(&[&args[..], &["--allow-risk", "high", "look"]].concat())
        .await;
    let sandbox = &out["steps"][1]["sandbox"];
    match sandbox["confined"].as_bool() {
        Some(true) => {
            assert!(sandbox["landlock_abi"].as_i64().unwrap() > 0, "{out}");
            assert!(sandbox["writes"].as_bool().unwrap(), "{out}");
            assert!(sandbox["gaps"].is_array(), "{out}");
        }
        _ => assert!(sandbox["unavailable"].is_string(), "{out}"),
    }
    assert!(out["steps"][0].get("sandbox").is_none(), "{out}");
}

/// The file `name` as the chats' workspaces hold it (the layer of an overlay keeps what
/// commands wrote), found below the data directory.
fn in_workspace(data: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut dirs = vec![data.join("workspaces")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == name) && path.is_file() {
                return path;
            }
            if path.is_dir() {
                dirs.push(path);
            }
        }
    }
    panic!("no {name} in any workspace below {}", data.display());
}

/// A pseudo-terminal: (the end the test types into, the end the CLI reads as its terminal).
#[cfg(unix)]
#[allow(unsafe_code)]
fn pty() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty(3) writes the two descriptors it opens into the two ints; the name,
    // termios and window-size arguments may be null (defaults, no name wanted).
    let made = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(made, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

/// On a terminal, an approval is answered only by what is typed once the question is shown:
/// a `y` already waiting in the terminal's input (typed ahead, or injected) is thrown away.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_typed_before_an_approval_question_do_not_answer_it() {
    use std::io::Write;
    let (_dir, root, cli, server) = setup().await;
    tandem_core::store::Store::open_dir(&cli.data)
        .unwrap()
        .set_setting("agent.tool_calling", "native")
        .unwrap();
    server.push(
        "POST",
        "/api/chat",
        fake_provider::ollama_tool_call(
            "run_shell",
            serde_json::json!({"command": "echo ran > ran.txt"}),
        ),
    );
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Done."], Duration::from_millis(5)),
    );
    let (mut keys, terminal) = pty();
    keys.write_all(b"y\n").unwrap();
    let mut child = cli
        .command(&[
            "--json",
            "chat",
            "--project",
            root.to_str().unwrap(),
            "--provider",
            "fake",
            "--mode",
            "agent",
            "look",
        ])
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("Allow the agent to") {
            let n = stderr.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "stderr closed before the question: {:?}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap();
    // The answer typed after the question. (Had the `y` answered, the CLI may be gone.)
    let _ = keys.write_all(b"n\n");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let out: Value = serde_json::from_str(stdout.trim()).unwrap();
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps[0]["tool"], "run_shell", "{out}");
    assert_eq!(steps[0]["decision"], "rejected", "{out}");
    assert!(!root.join("ran.txt").exists());
}

/// The real binary's agent command gets an environment without the app's secrets or shell
/// hijacks, whatever the person's shell exported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_commands_never_see_the_apps_secrets_or_shell_hijacks() {
    let (_dir, root, cli, server) = setup().await;
    tandem_core::store::Store::open_dir(&cli.data)
        .unwrap()
        .set_setting("agent.tool_calling", "native")
        .unwrap();
    server.push(
        "POST",
        "/api/chat",
        fake_provider::ollama_tool_call(
            "run_shell",
            serde_json::json!({"command": "env > env.txt"}),
        ),
    );
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Listed."], Duration::from_millis(5)),
    );
    let root_str = root.to_str().unwrap();
    let args = [
        "chat",
        "--project",
        root_str,
        "--provider",
        "fake",
        "--mode",
        "agent",
        "--allow-risk",
        "high",
        "list the environment",
    ];
    let output = cli
        .command(&args)
        .env("OPENAI_API_KEY", "sk-decoy-openai")
        .env("GITHUB_TOKEN", "ghp-decoy")
        .env("BASH_ENV", "/tmp/decoy-bash-env")
        .env("CDPATH", "/tmp")
        .env("BASH_FUNC_ls%%", "() { echo decoy; }")
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let env = std::fs::read_to_string(in_workspace(&cli.data, "env.txt")).unwrap();
    assert!(env.contains("PATH="), "{env}");
    for gone in [
        "decoy",
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "BASH_ENV",
        "CDPATH",
        "BASH_FUNC",
    ] {
        assert!(!env.contains(gone), "{gone} reached the command:\n{env}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_prompts_and_at_mentions_archive_and_search() {
    let (dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    let text_file = dir.path().join("explain.txt");
    std::fs::write(&text_file, "Explain what this code does, briefly.\n").unwrap();
    let saved = cli
        .json(&[
            "prompt",
            "add",
            "--name",
            "explain",
            "--text-file",
            text_file.to_str().unwrap(),
        ])
        .await;
    assert_eq!(saved["prompt"]["name"], "explain");
    let listed = cli.json(&["prompt", "list"]).await;
    assert_eq!(listed["prompts"][0]["name"], "explain");

    // `@prompt:NAME` is expanded before it is stored and sent; `@path` puts the file first.
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["It returns one."], Duration::ZERO),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            "@prompt:explain See @src/lib.rs.",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let chat_id = out["chat_id"].as_i64().unwrap().to_string();
    let request = server.requests().pop().unwrap();
    let messages = request.body["messages"].as_array().unwrap();
    let sent = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        sent.contains("Explain what this code does, briefly. See @src/lib.rs."),
        "{sent}"
    );
    let whole = request.raw_body.clone();
    assert!(whole.contains("pub fn one() -> u32 { 1 }"), "{whole}");

    // An unknown prompt: a clear error, nothing stored, nothing sent.
    let before = server.requests().len();
    let failed = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--chat",
            &chat_id,
            "@prompt:nope hi",
        ])
        .output()
        .await
        .unwrap();
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("no saved prompt named \"nope\""),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), before);
    let messages = cli.json(&["messages", "--chat", &chat_id]).await;
    assert_eq!(messages["messages"].as_array().unwrap().len(), 2);

    // The chat remembers its model: the next turn, named by chat only, uses it again.
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(chats["chats"][0]["model"], "tiny");
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Again."], Duration::ZERO),
    );
    let again = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--chat",
            &chat_id,
            "and again",
        ])
        .await;
    assert_eq!(again["status"], "complete");
    assert_eq!(server.requests().pop().unwrap().body["model"], "tiny");

    // Archived chats leave the list, stay searchable, and come back.
    cli.json(&["archive", "--chat", &chat_id]).await;
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert!(chats["chats"].as_array().unwrap().is_empty());
    let archived = cli
        .json(&["chats", "--project", root_str, "--archived"])
        .await;
    assert_eq!(archived["chats"][0]["id"].to_string(), chat_id);
    let hits = cli
        .json(&["search-chats", "--project", root_str, "RETURNS ONE"])
        .await;
    let hits = hits["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["snippet"], "It returns one.");
    assert_eq!(hits[0]["role"], "assistant");
    cli.json(&["archive", "--chat", &chat_id, "--undo"]).await;
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(chats["chats"].as_array().unwrap().len(), 1);

    cli.json(&["prompt", "remove", "explain"]).await;
    assert!(
        cli.json(&["prompt", "list"]).await["prompts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_totals_per_model_with_cost_from_the_price_table() {
    let (dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    let empty = cli.json(&["usage"]).await;
    assert!(empty["models"].as_array().unwrap().is_empty());
    assert_eq!(empty["cost"], Value::Null);
    for prompt in ["one", "two"] {
        server.push("POST", "/api/chat", ollama_stream(&["ok"], Duration::ZERO));
        cli.json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            prompt,
        ])
        .await;
    }
    // A second project's usage is counted apart.
    let other = dir.path().join("other");
    common::repo_with(&other, &[("a.txt", "a\n")]);
    cli.json(&["project", "add", other.to_str().unwrap()]).await;
    server.push("POST", "/api/chat", ollama_stream(&["ok"], Duration::ZERO));
    let other = other.to_str().unwrap();
    cli.json(&[
        "chat",
        "--project",
        other,
        "--provider",
        "fake",
        "--mode",
        "ask",
        "three",
    ])
    .await;

    let (input, output) = (
        fake_provider::INPUT_TOKENS as i64,
        fake_provider::OUTPUT_TOKENS as i64,
    );
    let usage = cli.json(&["usage", "--project", root_str]).await;
    let models = usage["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{usage}");
    assert_eq!(models[0]["provider"], "fake");
    assert_eq!(models[0]["model"], "tiny");
    assert_eq!(models[0]["input_tokens"], 2 * input);
    assert_eq!(models[0]["output_tokens"], 2 * output);
    assert_eq!(models[0]["replies"], 2);
    assert_eq!(models[0]["cost"], Value::Null, "no price for it yet");
    assert_eq!(usage["days"].as_array().unwrap().len(), 1);
    let all = cli.json(&["usage"]).await;
    assert_eq!(all["input_tokens"], 3 * input);

    cli.json(&[
        "config",
        "set",
        "usage.prices",
        r#"{"fake/tiny": {"input_per_mtok": 1000000, "output_per_mtok": 2000000}}"#,
    ])
    .await;
    let priced = cli.json(&["usage", "--project", root_str]).await;
    let expected = (2 * input + 2 * 2 * output) as f64;
    assert_eq!(priced["models"][0]["cost"].as_f64(), Some(expected));
    assert_eq!(priced["cost"].as_f64(), Some(expected));
    // A price table with a misspelt field is refused, not half-used.
    let refused = cli
        .command(&["config", "set", "usage.prices", r#"{"tiny": {"input": 1}}"#])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_mode_reviews_with_the_rules_and_last_change_and_reports_findings() {
    let (_dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    std::fs::write(
        root.join("SECURITY_RULES.md"),
        "Every SQL query uses bound parameters.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/db.rs"),
        "pub fn find(id: &str) -> String { format!(\"SELECT * FROM t WHERE id = {id}\") }\n",
    )
    .unwrap();
    common::git(&root, &["add", "-A"]);
    common::git(&root, &["commit", "-qm", "add the db query"]);
    let reply = "One problem.\n\
        <tandem-security-finding title=\"Verbose errors\" level=\"low\">Errors echo input.</tandem-security-finding>\n\
        <tandem-security-finding title=\"SQL injection\" level=\"critical\" path=\"src/db.rs\" lines=\"1\">\
        The id is formatted into the query; bind it.</tandem-security-finding>\n\
        <tandem-write path=\"src/db.rs\">not applied in this mode</tandem-write>";
    server.push("POST", "/api/chat", ollama_stream(&[reply], Duration::ZERO));
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "security",
            "review the last change",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let findings = out["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2);
    assert_eq!(findings[0]["title"], "SQL injection");
    assert_eq!(findings[0]["level"], "critical");
    assert_eq!(findings[0]["path"], "src/db.rs");
    assert_eq!(
        findings[0]["description"],
        "The id is formatted into the query; bind it."
    );
    assert_eq!(findings[1]["level"], "low");

    // The model had the rules and the last change; the reply proposes nothing.
    let request = server.requests().pop().unwrap();
    let system = request.body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<tandem-security-finding"), "{system}");
    assert!(system.contains("Every SQL query uses bound parameters."));
    assert!(system.contains("\"add the db query\""), "{system}");
    assert!(system.contains("+pub fn find(id: &str)"), "{system}");
    let shown = cli
        .json(&["show", &out["message_id"].as_i64().unwrap().to_string()])
        .await;
    assert_eq!(shown["approval_state"], Value::Null);
    assert!(
        std::fs::read_to_string(root.join("src/db.rs"))
            .unwrap()
            .contains("SELECT"),
        "nothing was written"
    );

    // Fix finding 1 (the most severe, as listed): Build mode, in the same chat.
    let chat = out["chat_id"].as_i64().unwrap().to_string();
    let fix = |extra: &[&str]| {
        let mut args = vec!["chat", "--project", root_str, "--chat", &chat];
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let refused = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = common::tandem()
            .arg("--data-dir")
            .arg(&cli.data)
            .args(&args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let said = refused(fix(&["--fix-finding", "3"]));
    assert!(said.contains("2 findings"), "{said}");
    let said = refused(fix(&["--fix-problems"]));
    assert!(said.contains("no check has run"), "{said}");
    // A follow-up is instead of a prompt, and needs its chat.
    let said = refused(fix(&["--fix-problems", "a prompt too"]));
    assert!(said.contains("cannot be used with"), "{said}");
    let said = refused(
        ["chat", "--project", root_str, "--fix-finding", "1"]
            .map(String::from)
            .to_vec(),
    );
    assert!(said.contains("--chat"), "{said}");
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Bound."], Duration::ZERO),
    );
    let args = fix(&["--fix-finding", "1"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let fixed = cli.json(&args).await;
    assert_eq!(fixed["chat_id"], out["chat_id"]);
    let request = server.requests().pop().unwrap();
    let messages = request.body["messages"].as_array().unwrap();
    let prompt = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        prompt.starts_with(
            "Fix this critical security finding in src/db.rs (lines 1): SQL injection"
        ),
        "{prompt}"
    );
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(chats["chats"][0]["mode"], "build", "{chats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attached_images_and_files_go_with_the_prompt_and_a_model_without_vision_is_refused() {
    let (dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    let shot = dir.path().join("shot.png");
    std::fs::write(&shot, b"\x89PNG\r\n\x1a\na tiny picture").unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "The footer should be blue.\n").unwrap();
    let blob = dir.path().join("blob.bin");
    std::fs::write(&blob, [0u8, 1, 2, 255]).unwrap();

    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["I see it."], Duration::ZERO),
    );
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            "--attach",
            shot.to_str().unwrap(),
            "--attach",
            notes.to_str().unwrap(),
            "what is this?",
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let chat = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .unwrap();
    let user = chat.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(user["images"].as_array().unwrap().len(), 1);
    let text = user["content"].as_str().unwrap();
    assert!(text.starts_with("what is this?"), "{text}");
    assert!(
        text.contains("Attached file notes.txt:\n```\nThe footer should be blue.\n```"),
        "{text}"
    );
    // The bytes live in the data directory, not in SQLite; the stored prompt is as typed.
    let kept: Vec<_> = std::fs::read_dir(cli.data.join("attachments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 2);
    let messages = cli
        .json(&["messages", "--chat", &out["chat_id"].to_string()])
        .await;
    assert_eq!(messages["messages"][0]["content"], "what is this?");

    // Not an image nor text: refused before anything is created or sent.
    let before = server.requests().len();
    let refused = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--attach",
            blob.to_str().unwrap(),
            "look",
        ])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("neither text nor a PNG"), "{stderr}");
    assert_eq!(server.requests().len(), before);

    // A model whose server says it has no vision: a clear refusal, no chat request.
    server.push(
        "POST",
        "/api/show",
        fake_provider::Reply::json(
            200,
            serde_json::json!({"capabilities": ["completion"],
                               "model_info": {"llama.context_length": 8192}}),
        ),
    );
    let refused = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--model",
            "text-only",
            "--attach",
            shot.to_str().unwrap(),
            "look",
        ])
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("text-only does not take images"),
        "{stderr}"
    );
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.path == "/api/chat")
            .count()
            == 1
    );
    let chats = cli.json(&["chats", "--project", root_str]).await;
    assert_eq!(
        chats["chats"].as_array().unwrap().len(),
        1,
        "no empty chat left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_mentioned_with_an_at_is_fetched_and_sent_with_the_prompt() {
    let (_dir, root, cli, server) = setup().await;
    let root_str = root.to_str().unwrap();
    server.push(
        "GET",
        "/guide",
        fake_provider::Reply::Raw {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html><body><h2>Style</h2><p>Tabs, not spaces.</p></body></html>".to_vec(),
        },
    );
    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Noted."], Duration::ZERO),
    );
    let url = format!("{}/guide", server.url());
    let prompt = format!("follow @{url}.");
    let out = cli
        .json(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--mode",
            "ask",
            &prompt,
        ])
        .await;
    assert_eq!(out["status"], "complete");
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .unwrap();
    let sent = request.body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sent.starts_with(&prompt), "{sent}");
    assert!(sent.contains(&format!("The web page {url}:")), "{sent}");
    assert!(
        sent.contains("Tabs, not spaces.") && !sent.contains("<p>"),
        "{sent}"
    );

    // A page that cannot be fetched: a clear error, and nothing sent.
    let before = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/chat")
        .count();
    let missing = format!("look at @{}/missing", server.url());
    let failed = cli
        .command(&[
            "chat",
            "--project",
            root_str,
            "--provider",
            "fake",
            &missing,
        ])
        .output()
        .await
        .unwrap();
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("/missing answered HTTP 404"), "{stderr}");
    let after = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/chat")
        .count();
    assert_eq!(before, after);
}

/// A model whose server counts more tokens than Tandem estimates: both lines of `tandem
/// context` say how much of the window is kept free for it, and `--json` gives it as
/// `breakdown.margin`, with the sent estimate times the ratio within the room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_says_what_is_kept_free_for_a_model_that_counts_more() {
    let (_dir, root, cli, _server) = setup().await;
    let root_str = root.to_str().unwrap();
    let args = ["context", "--project", root_str, "--provider", "fake"];
    assert_eq!(cli.json(&args).await["breakdown"]["margin"], 0);
    // What the replies of the fake's model taught: 1.5 tokens counted per token estimated.
    let db = rusqlite::Connection::open(cli.data.join("tandem.db")).unwrap();
    db.execute(
        "INSERT INTO model_profiles (provider_id, model, updated_at, token_ratio)
             SELECT id, 'tiny', 0, 1.5 FROM providers WHERE name = 'fake'",
        [],
    )
    .unwrap();
    drop(db);
    let b = cli.json(&args).await["breakdown"].clone();
    let n = |key: &str| b[key].as_u64().unwrap();
    let room = n("window") - n("reply_reserve");
    assert_eq!(n("margin"), room - room * 2 / 3, "{b}");
    let sent = n("system") + n("codebase") + n("history") + n("prompt");
    assert!(sent * 3 / 2 <= room, "{b}");
    let text = cli.command(&args).output().await.unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let mut lines = text.lines();
    let meter = lines.next().unwrap();
    assert!(
        meter.contains(&format!("+ {} kept free", n("margin"))),
        "{meter}"
    );
    let parts = lines.next().unwrap();
    assert!(
        parts.contains(&format!("{} kept free", n("margin"))),
        "{parts}"
    );
}
