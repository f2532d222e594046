//! `tandem chat` turns and what they leave: JSON output, Ctrl+C, stored keys, usage, security
//! mode.

use super::*;

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
    // Wait until the reply is visibly streaming, then interrupt.
    interrupt_once_printed(&mut child, "word3 ", Duration::from_secs(20)).await;
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
