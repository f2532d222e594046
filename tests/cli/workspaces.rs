//! Searching the project and running in a chat's workspace from the command line.

use super::*;

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

/// The project at `root` added to a Tandem whose data is under `dir`, and a chat of it with a
/// proposal waiting (a README): the CLI, the project's id and what `propose` answered.
fn chat_with_a_proposal(
    dir: &std::path::Path,
    root: &std::path::Path,
) -> (Cli, String, serde_json::Value) {
    let cli = Cli {
        data: dir.join("data"),
    };
    let added = cli.json(&["project", "add", root.to_str().unwrap()]);
    let project = added["project_id"].as_i64().unwrap().to_string();
    let reply = dir.join("reply.md");
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
    (cli, project, proposed)
}

/// A run in a Build chat's workspace sees its pending proposal as the review shows it (the
/// newest reply's, what it cannot hold said with why), while the project stays as it was; a
/// file the workspace changed itself keeps its own version, and the run says so.
#[test]
fn a_run_in_a_build_chat_sees_its_pending_proposal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    repo_with(&root, &[("src/main.rs", "fn main() {}\n")]);
    let root = root.canonicalize().unwrap();
    let (cli, project, proposed) = chat_with_a_proposal(dir.path(), &root);
    let chat = proposed["chat_id"].as_i64().unwrap().to_string();
    let first = proposed["message_id"].as_i64().unwrap();

    let ran = cli.json(&["run", "--chat", &chat, "--", "cat README.md"]);
    assert_eq!(ran["stdout"], "# Demo\n", "{ran}");
    assert_eq!(ran["proposal"]["message_id"], first, "{ran}");
    assert_eq!(ran["proposal"]["written"], serde_json::json!(["README.md"]));
    assert_eq!(ran["proposal"]["left_out"], serde_json::json!([]));
    let own = cli.run(&["run", "--chat", &chat, "--", "echo mine > notes.txt"]);
    assert!(own.status.success(), "{own:?}");

    // A newer reply in the chat: its README, and an edit that cannot be made.
    let reply = dir.path().join("reply2.md");
    write(
        &reply,
        "<tandem-write path=\"README.md\"># Demo 2\n</tandem-write>\n\
         <tandem-search-replace path=\"src/main.rs\">\n<<<<<<< SEARCH\nfn absent() {}\n\
         =======\nfn present() {}\n>>>>>>> REPLACE\n</tandem-search-replace>\n",
    );
    let second = cli.json(&[
        "propose",
        "--project",
        &project,
        "--chat",
        &chat,
        "--response",
        reply.to_str().unwrap(),
    ]);
    let second = second["message_id"].as_i64().unwrap();
    let ran = cli.json(&[
        "run",
        "--chat",
        &chat,
        "--",
        "cat README.md notes.txt src/main.rs",
    ]);
    assert_eq!(ran["stdout"], "# Demo 2\nmine\nfn main() {}\n", "{ran}");
    assert_eq!(ran["proposal"]["message_id"], second, "{ran}");
    assert_eq!(ran["proposal"]["written"], serde_json::json!(["README.md"]));
    let left_out = ran["proposal"]["left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 1, "{ran}");
    assert_eq!(left_out[0]["path"], "src/main.rs");
    assert!(!left_out[0]["reason"].as_str().unwrap().is_empty());

    // The workspace's own README wins over the proposal's, and the run says so.
    let own = cli.run(&["run", "--chat", &chat, "--", "echo changed > README.md"]);
    assert!(own.status.success(), "{own:?}");
    let ran = cli.run(&["run", "--chat", &chat, "--", "cat README.md"]);
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "changed\n");
    let said = String::from_utf8_lossy(&ran.stderr);
    assert!(
        said.contains("tandem: README.md: the workspace's own version ran, not the proposal's"),
        "{said}"
    );
    assert!(
        said.contains("tandem: src/main.rs: not in the run ("),
        "{said}"
    );
    assert!(!root.join("README.md").exists());
    assert_eq!(common::git(&root, &["status", "--porcelain"]), "");
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
    let (cli, project, proposed) = chat_with_a_proposal(dir.path(), &root);
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

/// What `tandem run` runs in a chat's workspace never sees the project's secrets that git
/// does not track: not by name, glob, recursive search or link, and it cannot write them.
#[test]
fn a_chat_workspace_holds_no_untracked_secret() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    repo_with(&root, &[("src/main.rs", "fn main() {}\n")]);
    let root = root.canonicalize().unwrap();
    write(&root.join(".env"), "API_TOKEN=NEVER-IN-THE-WORKSPACE\n");
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    write(&root.join("deploy/key.pem"), "NEVER-IN-THE-WORKSPACE\n");
    let (cli, _, proposed) = chat_with_a_proposal(dir.path(), &root);
    let chat = proposed["chat_id"].as_i64().unwrap().to_string();
    // The command's exit code is the last `cat`'s.
    let ran = cli.json(&[
        "run",
        "--chat",
        &chat,
        "--",
        "cat .env deploy/*; grep -r NEVER . ; ln -s .env e; cat e; echo x > .env; cat src/main.rs",
    ]);
    let seen = format!("{}{}", ran["stdout"], ran["stderr"]);
    assert!(!seen.contains("NEVER"), "{ran}");
    // The rest of the project is there, and its secrets unchanged.
    assert!(seen.contains("fn main"), "{ran}");
    assert_eq!(
        std::fs::read_to_string(root.join(".env")).unwrap(),
        "API_TOKEN=NEVER-IN-THE-WORKSPACE\n"
    );
}
