//! The `tandem` binary end to end, as a script or another tool would drive it.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;

use std::path::Path;

use common::{Cli, git, repo_with};
use serde_json::Value;

impl Cli {
    fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(output.stdout.is_empty() || !args.contains(&"--json"));
        String::from_utf8(output.stderr).unwrap()
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn propose_diff_approve_log_undo_restore() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    repo_with(
        &root,
        &[("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n")],
    );
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let root_str = root.to_str().unwrap();

    let added = cli.json(&["project", "add", root_str]);
    let project_id = added["project_id"].as_i64().unwrap();
    // Adding again is idempotent.
    assert_eq!(
        cli.json(&["project", "add", root_str])["project_id"],
        project_id
    );

    let reply = dir.path().join("reply.md");
    write(
        &reply,
        "<tandem-search-replace path=\"src/main.rs\">\n<<<<<<< SEARCH\n    println!(\"hi\");\n=======\n    println!(\"hello\");\n>>>>>>> REPLACE\n</tandem-search-replace>\n<tandem-write path=\"README.md\"># Demo\n</tandem-write>\n<tandem-chat-summary>Say hello</tandem-chat-summary>",
    );
    let proposed = cli.json(&[
        "propose",
        "--project",
        &project_id.to_string(),
        "--response",
        reply.to_str().unwrap(),
        "--prompt",
        "say hello",
    ]);
    let message_id = proposed["message_id"].as_i64().unwrap();
    assert!(proposed["chat_id"].as_i64().is_some());
    let ops = proposed["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0]["op"], "search-replace");
    assert_eq!(ops[0]["path"], "src/main.rs");
    assert_eq!(ops[0]["status"], "ok");
    assert_eq!(
        (ops[0]["added"].as_i64(), ops[0]["removed"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(ops[1]["op"], "write");

    let diff = cli.run(&["diff", &message_id.to_string()]);
    let diff = String::from_utf8(diff.stdout).unwrap();
    assert!(
        diff.contains("-    println!(\"hi\");\n+    println!(\"hello\");"),
        "{diff}"
    );
    assert!(diff.contains("--- /dev/null\n+++ b/README.md"));

    let approved = cli.json(&["approve", &message_id.to_string()]);
    let commit = approved["commit"].as_str().unwrap().to_string();
    assert_eq!(commit.len(), 40);
    assert!(commit.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(git(&root, &["rev-parse", "HEAD"]).trim(), commit);
    assert_eq!(git(&root, &["status", "--porcelain"]), "");

    let log = cli.json(&["log", "--project", root_str]);
    let versions = log["versions"].as_array().unwrap();
    assert_eq!(versions[0]["hash"], commit.as_str());
    assert!(
        versions[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("[tandem] Say hello")
    );

    let undo = cli.json(&["undo", "--project", root_str]);
    assert_eq!(undo["reverted"], commit.as_str());
    assert!(!root.join("README.md").exists());

    let restored = cli.json(&["restore", "--project", root_str, &commit[..8]]);
    assert_eq!(restored["restored"], commit.as_str());
    assert!(root.join("README.md").exists());
    git(&root, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn approve_refuses_a_proposal_with_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    repo_with(&root, &[("a.txt", "a\n")]);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    cli.json(&["project", "add", root.to_str().unwrap()]);
    let reply = dir.path().join("reply.md");
    write(
        &reply,
        "<tandem-write path=\"b.txt\">b\n</tandem-write><tandem-delete path=\"missing.txt\"/>",
    );
    let proposed = cli.json(&[
        "propose",
        "--project",
        root.to_str().unwrap(),
        "--response",
        reply.to_str().unwrap(),
    ]);
    assert_eq!(proposed["operations"][1]["status"], "error");
    assert!(
        proposed["operations"][1]["error"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
    let id = proposed["message_id"].as_i64().unwrap().to_string();
    let stderr = cli.fails(&["--json", "approve", &id]);
    assert!(stderr.contains("missing.txt"), "{stderr}");
    assert!(!root.join("b.txt").exists());
    // Partial approval of the working file goes through.
    let approved = cli.json(&["approve", &id, "--only", "b.txt"]);
    assert!(approved["commit"].is_string());
    assert!(root.join("b.txt").exists());
}

#[test]
fn a_plain_folder_becomes_a_repository_and_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("plain");
    std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
    write(&root.join("index.js"), "console.log(1)\n");
    write(&root.join("node_modules/x/i.js"), "junk\n");
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let added = cli.json(&["project", "add", root.to_str().unwrap(), "--name", "Plain"]);
    assert_eq!(added["initialized_git"], true);
    assert_eq!(added["name"], "Plain");
    let files = git(&root, &["ls-files"]);
    assert_eq!(files, ".gitignore\nindex.js\n");
    assert_eq!(git(&root, &["rev-list", "--count", "HEAD"]).trim(), "1");

    assert!(
        cli.fails(&["project", "add", "/definitely/not/here"])
            .contains("not a folder")
    );
    assert!(
        cli.fails(&["log", "--project", "999"])
            .contains("no project")
    );
    assert!(
        cli.fails(&["approve", "12345"])
            .contains("message 12345 does not exist")
    );
}

#[test]
fn a_restore_says_what_it_left_alone() {
    // Version 1 tracked `.env`; later it became ignored and holds today's secret, and an
    // untracked secret-looking key sits in the tree. Restoring version 1 keeps both.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    repo_with(&root, &[("a.txt", "v0\n"), (".env", "TOKEN=old\n")]);
    let first = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    git(&root, &["rm", "-q", "--cached", ".env"]);
    write(&root.join(".gitignore"), ".env\n");
    write(&root.join("a.txt"), "v1\n");
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "ignore .env"]);
    write(&root.join(".env"), "TOKEN=today\n");
    write(&root.join("a.txt"), "edited, not committed\n");
    write(&root.join("id_rsa"), "-----BEGIN KEY-----\n");
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let root_str = root.to_str().unwrap();
    cli.json(&["project", "add", root_str]);
    let output = cli.run(&["restore", "--project", root_str, &first]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{text}");
    let notes: Vec<&str> = text.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 2, "{text}");
    assert!(notes[0].contains("left as it is on disk") && notes[0].ends_with(": .env"));
    assert!(notes[1].contains("looks like a secret") && notes[1].ends_with(": id_rsa"));
    assert_eq!(
        std::fs::read_to_string(root.join(".env")).unwrap(),
        "TOKEN=today\n"
    );
    assert!(root.join("id_rsa").exists());
}

#[test]
fn help_lists_the_commands() {
    let output = common::tandem().arg("--help").output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("propose") && text.contains("approve"),
        "{text}"
    );
}

#[test]
fn dependencies_are_installed_after_the_commit_and_failures_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("crate");
    repo_with(
        &root,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
            ),
            ("src/lib.rs", "\n"),
        ],
    );
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let root_str = root.to_str().unwrap();
    cli.json(&["project", "add", root_str]);
    let propose = |packages: &str, lib: &str| {
        let reply = dir.path().join("reply.md");
        write(
            &reply,
            &format!(
                "<tandem-write path=\"src/lib.rs\">{lib}\n</tandem-write>\n<tandem-add-dependency packages=\"{packages}\"></tandem-add-dependency>"
            ),
        );
        cli.json(&[
            "propose",
            "--project",
            root_str,
            "--response",
            reply.to_str().unwrap(),
        ])["message_id"]
            .as_i64()
            .unwrap()
            .to_string()
    };
    // Offline: `cargo add` resolves serde from the local registry cache the build filled.
    let run_offline = |args: &[&str]| {
        let output = common::tandem()
            .arg("--data-dir")
            .arg(&cli.data)
            .arg("--json")
            .args(args)
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };

    let id = propose("serde", "pub use serde;");
    let outcome = run_offline(&["approve", &id]);
    assert!(outcome["commit"].is_string());
    assert_eq!(outcome["install"]["success"], true, "{outcome}");
    assert_eq!(outcome["install"]["command"], "cargo add -- serde");
    assert!(outcome["install_commit"].is_string());
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("serde = "), "{manifest}");
    assert_eq!(
        git(&root, &["log", "-1", "--format=%s"]).trim(),
        "[tandem] Add dependencies: serde"
    );

    let id = propose("definitely-not-a-crate-xyz", "pub use serde as s;");
    let before: usize = git(&root, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap();
    let outcome = run_offline(&["approve", &id]);
    assert_eq!(outcome["install"]["success"], false);
    assert!(
        outcome["install"]["output"]
            .as_str()
            .unwrap()
            .contains("could not be found")
    );
    // The proposal's own commit stays; there is no dependency commit.
    assert!(outcome["commit"].is_string() && outcome["install_commit"].is_null());
    let after: usize = git(&root, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(after, before + 1);
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "pub use serde as s;\n"
    );
    assert!(
        std::fs::read_to_string(root.join("Cargo.toml"))
            .unwrap()
            .contains("serde")
    );
}

impl Cli {
    /// Runs without `--json`, expects success, returns stdout.
    fn text(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Expects exit code 1 (a value the app refused) and returns stderr.
    fn refused(&self, args: &[&str]) -> String {
        self.exits(1, args)
    }

    /// Expects exit code 2 (a flag's value clap refused) and returns stderr.
    fn misused(&self, args: &[&str]) -> String {
        self.exits(2, args)
    }

    fn exits(&self, code: i32, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(output.status.code(), Some(code), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?} printed on failure");
        String::from_utf8(output.stderr).unwrap()
    }
}

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

#[test]
fn search_finds_text_or_a_regex_in_tracked_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    repo_with(
        &root,
        &[
            (".gitignore", "build/\n"),
            (
                "src/main.rs",
                "fn main() {\n    let total = add(1, 2);\n}\n",
            ),
            (
                "src/lib.rs",
                "pub fn add(a: u32, b: u32) -> u32 { a + b }\n",
            ),
        ],
    );
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join("build/out.rs"), "add(1, 2)\n").unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let project = root.to_str().unwrap();
    cli.json(&["project", "add", project]);
    let found = cli.json(&["search", "--project", project, "add(1, 2)"]);
    let places: Vec<(String, i64)> = found["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_string(),
                m["line"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(places, [("src/main.rs".to_string(), 2)]);
    let regex = cli.json(&["search", "--project", project, "--regex", r"fn \w+\("]);
    assert_eq!(regex["matches"].as_array().unwrap().len(), 2);
    let text = cli.text(&[
        "search",
        "--project",
        project,
        "--glob",
        "lib.rs",
        "ADD",
        "-i",
    ]);
    assert_eq!(
        text,
        "src/lib.rs:1: pub fn add(a: u32, b: u32) -> u32 { a + b }\n"
    );
    let err = cli.fails(&["search", "--project", project, "--regex", "("]);
    assert!(err.contains("not a valid regular expression"), "{err}");
}

/// A chat's workspace from the terminal: `tandem run` works in it (the project untouched,
/// the exit code passed on), `workspace list` shows it, `workspace clean --chat` removes it,
/// and one whose chat is gone goes at the next start.
#[test]
fn run_in_a_chat_workspace_then_list_and_clean_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    repo_with(&root, &[("src/main.rs", "fn main() {}\n")]);
    let root = root.canonicalize().unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let added = cli.json(&["project", "add", root.to_str().unwrap()]);
    let project = added["project_id"].as_i64().unwrap().to_string();
    // A chat with a proposal waiting.
    let reply = dir.path().join("reply.md");
    write(
        &reply,
        "<tandem-write path=\"README.md\"># Demo\n</tandem-write>",
    );
    let proposed = cli.json(&[
        "propose",
        "--project",
        &project,
        "--response",
        reply.to_str().unwrap(),
        "--prompt",
        "a readme",
    ]);
    let chat_id = proposed["chat_id"].as_i64().unwrap();
    let chat = chat_id.to_string();

    let ran = cli.json(&[
        "run",
        "--chat",
        &chat,
        "--",
        "sh",
        "-c",
        "echo hi > made.txt; cat made.txt",
    ]);
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert_eq!(ran["stdout"], "hi\n");
    assert_eq!(ran["stderr"], "");
    assert_eq!(ran["timed_out"], false);
    assert!(ran["duration_ms"].as_u64().is_some());
    assert_eq!(ran["sandbox"]["confined"], true, "{ran}");
    // The project has no made.txt; the workspace's view has it (a second run reads it).
    assert!(!root.join("made.txt").exists());
    let again = cli.run(&["run", "--chat", &chat, "--", "cat made.txt"]);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(String::from_utf8_lossy(&again.stdout), "hi\n");
    let layer = dir.path().join("data/workspaces").join(&chat);
    assert!(
        layer.join("upper/made.txt").is_file() || layer.join("copy/made.txt").is_file(),
        "the layer holds the file"
    );
    assert!(!root.join("made.txt").exists());
    // The command's exit code is tandem's, its error output on stderr.
    let failed = cli.run(&["run", "--chat", &chat, "--", "echo oops >&2; exit 3"]);
    assert_eq!(failed.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&failed.stderr), "oops\n");

    // Without a command: the project's check command, once it has one.
    let none = cli.fails(&["run", "--chat", &chat]);
    assert!(none.contains("nothing to run"), "{none}");
    cli.json(&[
        "project",
        "config",
        "--project",
        &project,
        "--check-command",
        "test -f made.txt && echo checked",
    ]);
    let checked = cli.run(&["run", "--chat", &chat]);
    assert!(checked.status.success(), "{checked:?}");
    assert_eq!(String::from_utf8_lossy(&checked.stdout), "checked\n");

    let refused = cli.fails(&["run", "--chat", "9999", "--", "true"]);
    assert!(refused.contains("no chat 9999"), "{refused}");

    let listed = cli.json(&["workspace", "list"]);
    let workspaces = listed["workspaces"].as_array().unwrap();
    assert_eq!(workspaces.len(), 1, "{listed}");
    let w = &workspaces[0];
    assert_eq!(w["chat_id"], chat_id);
    assert_eq!(w["title"], proposed_title(&cli, &project, chat_id));
    assert_eq!(w["project"], root.to_str().unwrap());
    assert!(w["kind"] == "overlay" || w["kind"] == "copy", "{w}");
    assert!(w["bytes"].as_u64().unwrap() > 0, "{w}");
    assert_eq!(w["pending"], true);

    // Cleaning the stale ones keeps it: its proposal waits.
    let kept = cli.json(&["workspace", "clean"]);
    assert_eq!(kept["removed"], serde_json::json!([]));
    assert!(layer.exists());

    // One whose chat is gone is removed when tandem next starts.
    let orphan = dir.path().join("data/workspaces/9999");
    std::fs::create_dir_all(orphan.join("upper")).unwrap();
    write(&orphan.join("upper/left.txt"), "left behind");
    let listed = cli.json(&["workspace", "list"]);
    assert_eq!(
        listed["workspaces"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
    assert!(!orphan.exists());

    let cleaned = cli.json(&["workspace", "clean", "--chat", &chat]);
    assert_eq!(cleaned["removed"], serde_json::json!([chat_id]));
    assert!(cleaned["bytes_freed"].as_u64().unwrap() > 0);
    assert!(!layer.exists());
    let listed = cli.json(&["workspace", "list"]);
    assert_eq!(listed["workspaces"], serde_json::json!([]));
    // The proposal is still there to review; the project never changed.
    assert_eq!(common::git(&root, &["status", "--porcelain"]), "");

    // Once its proposal is decided, a chat's workspace is stale: the next start removes it.
    let again = cli.json(&["run", "--chat", &chat, "--", "touch again.txt"]);
    assert_eq!(again["exit_code"], 0, "{again}");
    assert!(layer.exists());
    let message = proposed["message_id"].as_i64().unwrap().to_string();
    cli.json(&["reject", &message]);
    let listed = cli.json(&["workspace", "list"]);
    assert_eq!(listed["workspaces"], serde_json::json!([]), "{listed}");
    assert!(!layer.exists());
    assert!(!root.join("again.txt").exists());
}

/// The title `tandem chats` shows for `chat_id`.
fn proposed_title(cli: &Cli, project: &str, chat_id: i64) -> Value {
    let chats = cli.json(&["chats", "--project", project]);
    let chats = chats["chats"].as_array().unwrap();
    chats
        .iter()
        .find(|c| c["id"] == chat_id)
        .map(|c| c["title"].clone())
        .unwrap()
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        data: dir.path().join("data"),
    };
    // `tandem project list --json | head -0`: the read end is gone before anything is written.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = cli
        .command(&["project", "list", "--json"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(141), "{stderr}");
}
