//! Settings from the command line: global ones, a project's, the suggested check, rules per mode.

use super::*;

#[test]
fn global_settings_are_set_checked_read_back_and_unset() {
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let get = |key: &str| cli.json(&["config", "get", key]);
    assert_eq!(
        get("agent.tool_calling"),
        serde_json::json!({
            "key": "agent.tool_calling",
            "value": null,
            "default": "auto",
            "about": "how Agent mode calls tools: auto (as the model's check-up found), native, text",
        })
    );
    assert_eq!(
        cli.text(&["config", "get", "agent.tool_calling"]),
        "agent.tool_calling  auto (default)\n"
    );
    let set = cli.json(&["config", "set", "agent.tool_calling", "native"]);
    assert_eq!(set["value"], "native");
    assert_eq!(set["default"], "auto");
    // Read back by a new process, as text and as JSON.
    assert_eq!(
        cli.text(&["config", "get", "agent.tool_calling"]),
        "agent.tool_calling  native\n"
    );
    assert_eq!(get("agent.tool_calling")["value"], "native");

    // A value the key does not take: exit code 1, the allowed values named, nothing changed.
    let err = cli.refused(&["config", "set", "agent.tool_calling", "sometimes"]);
    assert_eq!(
        err,
        "error: agent.tool_calling must be one of auto, native, text\n"
    );
    assert_eq!(get("agent.tool_calling")["value"], "native");
    assert_eq!(get("agent.max_steps")["default"], 25);
    assert_eq!(
        cli.json(&["config", "set", "agent.max_steps", "40"])["value"],
        40
    );
    for bad in ["0", "-3", "many"] {
        let err = cli.refused(&["config", "set", "agent.max_steps", bad]);
        assert_eq!(
            err,
            "error: agent.max_steps must be a whole number of at least 1\n"
        );
    }
    assert_eq!(get("agent.max_steps")["value"], 40);
    assert_eq!(
        cli.json(&["config", "set", "chat.auto_approve", "true"])["value"],
        true
    );
    assert_eq!(
        cli.json(&["config", "set", "chat.repair_rounds", "0"])["value"],
        0
    );
    assert_eq!(
        cli.json(&[
            "config",
            "set",
            "agent.sandbox_readable",
            "/opt/sdk, ~/tools"
        ])["value"],
        serde_json::json!(["/opt/sdk", "~/tools"])
    );
    let err = cli.refused(&["config", "set", "agent.sandbox_readable", "tools"]);
    assert!(
        err.contains(r#""tools" is neither absolute nor under ~/"#),
        "{err}"
    );
    // The policy as JSON, read back whole; a misspelt field is refused.
    let policy = cli.json(&[
        "config",
        "set",
        "agent.policy",
        r#"{"allow": ["cargo test*"], "auto_approve_up_to": "medium"}"#,
    ]);
    assert_eq!(
        policy["value"],
        serde_json::json!({"allow": ["cargo test*"], "ask": [], "deny": [], "auto_approve_up_to": "medium"})
    );
    let err = cli.refused(&["config", "set", "agent.policy", r#"{"alow": ["ls"]}"#]);
    assert_eq!(
        err,
        "error: agent.policy: no field \"alow\"; the fields are allow, ask, auto_approve_up_to, deny\n"
    );
    assert_eq!(get("agent.policy")["value"]["allow"][0], "cargo test*");
    // The default provider must exist (the local one is added on first run).
    let err = cli.refused(&["config", "set", "chat.default_provider", "nosuch"]);
    assert!(
        err.starts_with("error: no provider named \"nosuch\""),
        "{err}"
    );
    assert_eq!(get("chat.default_provider")["value"], Value::Null);
    assert_eq!(
        cli.json(&["config", "set", "chat.default_provider", "ollama"])["value"],
        "ollama"
    );

    // Unknown keys: the close ones, else all of them.
    let err = cli.refused(&["config", "get", "agent.tool_call"]);
    assert_eq!(
        err,
        "error: no setting named \"agent.tool_call\"; did you mean: agent.tool_calling\n"
    );
    let err = cli.refused(&["config", "set", "nonsense.zzz", "1"]);
    assert!(
        err.starts_with(
            "error: no setting named \"nonsense.zzz\"; the keys are: chat.default_provider, "
        ),
        "{err}"
    );

    // Every key, in the table's order, with what is saved.
    let all = cli.json(&["config", "list"]);
    let settings = all["settings"].as_array().unwrap();
    let keys: Vec<&str> = settings
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "chat.default_provider",
            "chat.default_model",
            "chat.history_turns",
            "chat.auto_approve",
            "chat.generate_titles",
            "chat.repair_rounds",
            "llm.idle_timeout_secs",
            "agent.tool_calling",
            "agent.max_steps",
            "agent.shell_timeout_secs",
            "agent.sandbox_readable",
            "agent.sandbox_env",
            "agent.limits",
            "agent.policy",
            "gateway.settings",
            "checks.timeout_secs",
            "checks.scratch_dir",
            "usage.prices",
        ]
    );
    let value = |key: &str| settings.iter().find(|s| s["key"] == key).unwrap()["value"].clone();
    assert_eq!(value("agent.tool_calling"), "native");

    // The container's limits and variables: partial limits keep the other defaults; a
    // variable named like a secret is refused.
    let limits = cli.json(&["config", "set", "agent.limits", r#"{"processes": 64}"#]);
    assert_eq!(limits["value"]["processes"], 64);
    assert_eq!(limits["value"]["memory_mb"], 8192);
    let err = cli.refused(&["config", "set", "agent.limits", r#"{"procs": 1}"#]);
    assert!(err.contains("unknown field `procs`"), "{err}");
    let env = cli.json(&[
        "config",
        "set",
        "agent.sandbox_env",
        "MY_TOOL_HOME, JAVA_OPTS",
    ]);
    assert_eq!(
        env["value"],
        serde_json::json!(["MY_TOOL_HOME", "JAVA_OPTS"])
    );
    let err = cli.refused(&["config", "set", "agent.sandbox_env", "GITHUB_TOKEN"]);
    assert!(err.contains("looks like a secret"), "{err}");
    assert_eq!(value("chat.history_turns"), Value::Null);
    let text = cli.text(&["config", "list"]);
    // Each line is the key, padded to the longest one, then its value.
    let line = |key: &str| text.lines().find(|l| l.starts_with(key)).unwrap();
    assert_eq!(
        line("agent.tool_calling"),
        "agent.tool_calling        native"
    );
    assert_eq!(
        line("chat.history_turns"),
        "chat.history_turns        10 (default)"
    );
    assert_eq!(
        line("checks.scratch_dir"),
        "checks.scratch_dir        (not set)"
    );
    assert_eq!(text.lines().count(), 18);

    // Unset: the default applies again.
    let unset = cli.json(&["config", "unset", "agent.tool_calling"]);
    assert_eq!(unset["value"], Value::Null);
    assert_eq!(
        cli.text(&["config", "get", "agent.tool_calling"]),
        "agent.tool_calling  auto (default)\n"
    );
    assert_eq!(get("agent.max_steps")["value"], 40, "other keys are kept");
}

#[test]
fn project_settings_from_the_command_line_with_a_suggested_check() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    repo_with(&root, &[("Cargo.toml", "[package]\nname = \"app\"\n")]);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let project = root.to_str().unwrap();
    let id = cli.json(&["project", "add", project])["project_id"]
        .as_i64()
        .unwrap()
        .to_string();
    let show = |args: &[&str]| {
        let mut all = vec!["project", "config", "--project", project];
        all.extend_from_slice(args);
        cli.text(&all)
    };
    assert_eq!(
        show(&[]),
        format!(
            "project: app ({project})\ncheck command: (none; suggested: cargo check)\n\
             trust: scoped\nauto-approve: default (false)\ninclude: (all files)\nexclude: (none)\n\
             rules per mode: (none)\nCLI agents without their sandbox: no\n"
        )
    );
    let shown = cli.json(&["project", "config", "--project", &id]);
    assert_eq!(shown["check_command"], Value::Null);
    assert_eq!(shown["suggested_check_command"], "cargo check");
    assert_eq!(shown["trust"], "scoped");
    assert_eq!(shown["auto_approve"], Value::Null);

    let set = cli.json(&[
        "project",
        "config",
        "--project",
        project,
        "--check-command",
        " cargo test --no-run ",
        "--trust",
        "read_only",
        "--auto-approve",
        "true",
        "--include",
        "src/**",
        "--include",
        "Cargo.toml",
        "--exclude",
        "fixtures/**",
    ]);
    assert_eq!(
        set,
        serde_json::json!({
            "project_id": id.parse::<i64>().unwrap(),
            "path": project,
            "check_command": "cargo test --no-run",
            "suggested_check_command": null,
            "trust": "read_only",
            "auto_approve": true,
            "context_include": ["src/**", "Cargo.toml"],
            "context_exclude": ["fixtures/**"],
            "mode_rules": {},
            "cli_agent_bypass": false,
        })
    );
    // Read back by a new process.
    let expected = format!(
        "project: app ({project})\ncheck command: cargo test --no-run\ntrust: read_only\n\
         auto-approve: true\ninclude: src/**, Cargo.toml\nexclude: fixtures/**\n\
         rules per mode: (none)\nCLI agents without their sandbox: no\n"
    );
    assert_eq!(show(&[]), expected);

    // Refused, each leaving the settings as they were.
    let err = cli.refused(&[
        "project",
        "config",
        "--project",
        project,
        "--check-command",
        "",
    ]);
    assert_eq!(
        err,
        "error: --check-command is empty; use --no-check-command to remove the check command\n"
    );
    let err = cli.misused(&[
        "project",
        "config",
        "--project",
        project,
        "--trust",
        "maybe",
    ]);
    assert!(
        err.contains("trust is read_only, scoped or trusted"),
        "{err}"
    );
    let err = cli.misused(&[
        "project",
        "config",
        "--project",
        project,
        "--auto-approve",
        "yes",
    ]);
    assert!(
        err.contains("auto-approve is true, false or default"),
        "{err}"
    );
    let err = cli.refused(&[
        "project",
        "config",
        "--project",
        project,
        "--exclude",
        "a[b",
    ]);
    assert!(
        err.starts_with("error: the exclude glob \"a[b\" is invalid"),
        "{err}"
    );
    assert_eq!(show(&[]), expected);

    // Cleared: the suggestion and the global auto-approve come back.
    cli.json(&["config", "set", "chat.auto_approve", "true"]);
    let cleared = cli.json(&[
        "project",
        "config",
        "--project",
        project,
        "--no-check-command",
        "--auto-approve",
        "default",
        "--no-include",
        "--trust",
        "trusted",
    ]);
    assert_eq!(cleared["check_command"], Value::Null);
    assert_eq!(cleared["suggested_check_command"], "cargo check");
    assert_eq!(cleared["auto_approve"], Value::Null);
    assert_eq!(cleared["trust"], "trusted");
    assert_eq!(cleared["context_include"], serde_json::json!([]));
    assert_eq!(
        cleared["context_exclude"],
        serde_json::json!(["fixtures/**"])
    );
    assert_eq!(
        show(&[]),
        format!(
            "project: app ({project})\ncheck command: (none; suggested: cargo check)\n\
             trust: trusted\nauto-approve: default (true)\ninclude: (all files)\n\
             exclude: fixtures/**\nrules per mode: (none)\nCLI agents without their sandbox: no\n"
        )
    );
}

#[test]
fn the_suggested_check_follows_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    for (name, files, suggested) in [
        (
            "py",
            &[("tool.py", "print(1)\n")][..],
            Some("python3 -m compileall -q ."),
        ),
        ("go", &[("go.mod", "module x\n")][..], Some("go vet ./...")),
        (
            "ts",
            &[("tsconfig.json", "{}\n")][..],
            Some("npx --no-install tsc --noEmit"),
        ),
        ("plain", &[("notes.txt", "hi\n")][..], None),
    ] {
        let root = dir.path().join(name);
        repo_with(&root, files);
        let path = root.to_str().unwrap();
        cli.json(&["project", "add", path]);
        let shown = cli.json(&["project", "config", "--project", path]);
        assert_eq!(
            shown["suggested_check_command"].as_str(),
            suggested,
            "{name}"
        );
    }
    let text = cli.text(&[
        "project",
        "config",
        "--project",
        dir.path().join("plain").to_str().unwrap(),
    ]);
    assert!(text.contains("\ncheck command: (none)\n"), "{text}");
}

#[test]
fn rules_per_mode_and_a_starter_rules_file_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    repo_with(&root, &[("src/main.rs", "fn main() {}\n")]);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let project = root.to_str().unwrap();
    cli.json(&["project", "add", project]);
    let rules = dir.path().join("security.md");
    std::fs::write(&rules, "Check every SQL query.\nCheck file paths.\n").unwrap();
    let set = cli.json(&[
        "project",
        "config",
        "--project",
        project,
        "--rules",
        "security",
        "--rules-file",
        rules.to_str().unwrap(),
    ]);
    assert_eq!(
        set["mode_rules"]["security"],
        "Check every SQL query.\nCheck file paths.\n"
    );
    let text = cli.text(&["project", "config", "--project", project]);
    assert!(
        text.contains("rules per mode: security (2 lines)"),
        "{text}"
    );
    let err = cli.fails(&[
        "project",
        "config",
        "--project",
        project,
        "--rules",
        "review",
        "--rules-file",
        rules.to_str().unwrap(),
    ]);
    assert!(err.contains("\"review\" is not a mode"), "{err}");
    let removed = cli.json(&[
        "project",
        "config",
        "--project",
        project,
        "--no-rules",
        "security",
    ]);
    assert_eq!(removed["mode_rules"], serde_json::json!({}));

    // A starter AI_RULES.md, committed; a second one is refused and the file is kept.
    cli.json(&["project", "config", "--project", project, "--starter-rules"]);
    let written = std::fs::read_to_string(root.join("AI_RULES.md")).unwrap();
    assert!(written.starts_with("# Rules for AI assistants"));
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    assert!(git(&root, &["log", "--format=%s", "-1"]).contains("AI_RULES.md"));
    std::fs::write(root.join("AI_RULES.md"), "mine\n").unwrap();
    let again = cli.fails(&["project", "config", "--project", project, "--starter-rules"]);
    assert!(again.contains("exists already"), "{again}");
    assert_eq!(
        std::fs::read_to_string(root.join("AI_RULES.md")).unwrap(),
        "mine\n"
    );
}
