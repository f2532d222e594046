//! Proposals and versions from the command line: propose, diff, approve, log, undo, restore,
//! and what each refuses or leaves alone.

use super::*;

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
    // The text log names each file as it is (it once lower-cased the whole line).
    let text = cli.text(&["log", "--project", root_str]);
    assert!(text.contains("added README.md\n"), "{text}");

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
    // A project's name finds it (from any folder), unless two projects share it.
    let log = cli.json(&["log", "--project", "Plain"]);
    assert_eq!(log["versions"].as_array().map(Vec::len), Some(1), "{log}");
    let twin = dir.path().join("twin");
    std::fs::create_dir_all(&twin).unwrap();
    write(&twin.join("a.txt"), "a\n");
    cli.json(&["project", "add", twin.to_str().unwrap(), "--name", "Plain"]);
    let ambiguous = cli.fails(&["log", "--project", "Plain"]);
    assert!(
        ambiguous.contains("more than one project is named \"Plain\""),
        "{ambiguous}"
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

/// What a model wrote reaches the person's terminal through `tandem propose` and `tandem diff`:
/// printed raw, an escape sequence in it acts there (OSC 52 sets the clipboard the person
/// pastes from next, others retitle the window or hide text) and a bidi override reorders
/// what follows. Text output shows them escaped, keeping tabs and line ends (CRLF too); JSON
/// carries the exact text.
#[test]
fn a_proposal_cannot_drive_the_terminal_it_is_reviewed_in() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    repo_with(&root, &[("a.txt", "a\n")]);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let project = cli.json(&["project", "add", root.to_str().unwrap()])["project_id"]
        .as_i64()
        .unwrap()
        .to_string();
    let reply = dir.path().join("reply.md");
    let hostile = "\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}copied\u{1b}[2J\tx = 1\r\ny\rz \u{202e}evil";
    write(
        &reply,
        &format!(
            "<tandem-write path=\"b.txt\">{hostile}\n</tandem-write>\n<tandem-chat-summary>sum\u{1b}]0;title\u{7}</tandem-chat-summary>"
        ),
    );
    let proposed = cli.run(&[
        "propose",
        "--project",
        &project,
        "--response",
        reply.to_str().unwrap(),
    ]);
    assert!(proposed.status.success(), "{proposed:?}");
    let message = String::from_utf8(proposed.stdout).unwrap();
    let id = message.split_whitespace().nth(1).unwrap().to_string();
    let diff = cli.run(&["diff", &id]);
    assert!(diff.status.success(), "{diff:?}");
    for (what, text) in [
        ("propose", message),
        ("diff", String::from_utf8(diff.stdout).unwrap()),
    ] {
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\u{202e}']),
            "{what} printed it raw: {text:?}"
        );
        assert!(text.contains("\\x1b"), "{what}: {text:?}");
    }
    let diff = String::from_utf8(cli.run(&["diff", &id]).stdout).unwrap();
    // The code keeps its shape: a tab stays a tab.
    assert!(diff.contains("\\x1b[2J\tx = 1\n"), "{diff:?}");
    assert!(diff.contains("+z \\u{202e}evil"), "{diff:?}");
    let json = cli.json(&["diff", &id]);
    let exact = json["diff"].as_str().unwrap();
    assert!(
        exact.contains("\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}copied") && exact.contains("\u{202e}evil"),
        "{json}"
    );
}
