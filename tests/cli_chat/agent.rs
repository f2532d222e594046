//! `tandem chat --mode agent`: steps in JSON, questions on the terminal, and commands that
//! never see the app's secrets.

use super::*;

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
