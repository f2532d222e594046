//! Kills at fail points: the binary kills itself (SIGKILL) at exactly one step of an
//! approval, a restore, an undo or an agent's tool call (`tandem_core::failpoint`), so every
//! in-between state is reached on every run. After each kill: the database passes its
//! integrity check, the next run's invariants hold (`check`), and the outcome is the one
//! that step implies: before HEAD moves, the tree and the proposal are as before the
//! operation (and it can be done again); once HEAD moved, the operation is whole and
//! recorded.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::fake_provider::{self, ollama_stream};
use super::{Cli, FILES, check, common, head, new_file, new_proposal, setup};

/// Whether a kill at a point leaves the operation done (HEAD moved) or undone.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Before,
    Landed,
}

use Outcome::{Before, Landed};

fn message<'m>(messages: &'m [Value], id: &str) -> &'m Value {
    messages
        .iter()
        .find(|m| m["id"].as_i64().unwrap().to_string() == id)
        .unwrap_or_else(|| panic!("message {id} is gone"))
}

fn tree(cli: &Cli) -> String {
    common::git(&cli.root, &["rev-parse", "HEAD^{tree}"])
}

fn holds_round(cli: &Cli, round: usize) -> bool {
    let text = std::fs::read_to_string(cli.root.join("src/f00.rs")).unwrap();
    text.contains(&format!("R{round}_L0"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_each_step_everything_is_whole_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (cli, server) = setup(dir.path()).await;
    let mut round = 0;

    // Approving: killed while writing the first, a middle and the last file (in a new
    // folder), before the files, and after HEAD moved.
    let last = format!("apply-after-files:{}", FILES + 1);
    let approvals = [
        ("apply-after-files:1", Before),
        ("apply-after-files:26", Before),
        (last.as_str(), Before),
        ("approve-before-landing", Before),
        ("approve-after-head", Landed),
        ("commit-before-record", Landed),
    ];
    for (point, outcome) in approvals {
        round += 1;
        let id = new_proposal(&cli, dir.path(), round).await;
        let before = head(&cli.root);
        cli.killed_at(point, &["approve", &id]).await;
        let when = format!("approve killed at {point}");
        let messages = check(&cli, None, &when).await;
        let proposal = message(&messages, &id);
        let landed = cli.root.join(new_file(round)).exists();
        match outcome {
            Landed => {
                assert_eq!(proposal["approval_state"], "approved", "{when}");
                assert_eq!(
                    proposal["commit_hash"].as_str(),
                    Some(head(&cli.root).as_str())
                );
                assert!(holds_round(&cli, round) && landed, "{when}");
            }
            Before => {
                assert_eq!(proposal["approval_state"], "pending", "{when}: {proposal}");
                assert_eq!(head(&cli.root), before, "{when}");
                assert!(!holds_round(&cli, round) && !landed, "{when}");
                // The proposal is as it was: approving it again lands it.
                cli.json(&["approve", &id]).await;
                assert!(holds_round(&cli, round), "{when}: approved again");
            }
        }
    }

    // Restoring the previous version: killed after the first and a middle file, and after
    // HEAD moved.
    for (point, outcome) in [
        ("mid-checkout:1", Before),
        ("mid-checkout:30", Before),
        ("land-after-head", Landed),
    ] {
        let (before, tree_before) = (head(&cli.root), tree(&cli));
        let target = common::git(&cli.root, &["rev-parse", "HEAD~1"]);
        let target_tree = common::git(&cli.root, &["rev-parse", "HEAD~1^{tree}"]);
        let args = ["restore", "--project", cli.root(), target.trim()];
        cli.killed_at(point, &args).await;
        let when = format!("restore killed at {point}");
        check(&cli, None, &when).await;
        match outcome {
            Landed => {
                assert_ne!(head(&cli.root), before, "{when}");
                assert_eq!(tree(&cli), target_tree, "{when}");
            }
            Before => {
                assert_eq!(head(&cli.root), before, "{when}");
                assert_eq!(tree(&cli), tree_before, "{when}");
            }
        }
    }

    // Undoing an approved change: killed mid-checkout, after HEAD moved, and once the undo
    // is committed but not yet recorded on its message.
    for (point, outcome) in [
        ("mid-checkout:5", Before),
        ("land-after-head", Landed),
        ("undo-before-record", Landed),
    ] {
        round += 1;
        let id = new_proposal(&cli, dir.path(), round).await;
        cli.json(&["approve", &id]).await;
        let before = head(&cli.root);
        let undo = ["undo", "--project", cli.root()];
        cli.killed_at(point, &undo).await;
        let when = format!("undo killed at {point}");
        let messages = check(&cli, None, &when).await;
        let undone = message(&messages, &id);
        match outcome {
            Landed => {
                assert_ne!(head(&cli.root), before, "{when}");
                assert!(!holds_round(&cli, round), "{when}");
                assert_eq!(
                    undone["reverted_by"].as_str(),
                    Some(head(&cli.root).as_str()),
                    "{when}: the undo is in history, its message does not say so: {undone}"
                );
            }
            Before => {
                assert_eq!(head(&cli.root), before, "{when}");
                assert!(holds_round(&cli, round), "{when}");
                assert!(undone["reverted_by"].is_null(), "{when}: {undone}");
                // Undoing again works, and is recorded.
                let out = cli.json(&undo).await;
                let messages = check(&cli, None, &when).await;
                let undone = message(&messages, &id);
                assert_eq!(undone["reverted_by"], out["commit"], "{when}: undone again");
            }
        }
    }

    agent_turn_killed_mid_tool_call(&cli, &server).await;
}

/// An agent's turn killed after its second tool call ran (a command that wrote a file in
/// the chat's workspace) and before that step was recorded: the project is untouched, the
/// reply is interrupted with its first step whole and the second absent, the workspace
/// (no proposal waiting in it) is gone at the next start, as documented, and the chat goes
/// on: its next turn completes.
async fn agent_turn_killed_mid_tool_call(cli: &Cli, server: &fake_provider::FakeProvider) {
    // The chat's workspace is an overlay in namespaces of its own.
    if !common::container_here() {
        return;
    }
    let store = || tandem_core::store::Store::open_dir(&cli.data).unwrap();
    store().set_setting("agent.tool_calling", "native").unwrap();
    server.push(
        "POST",
        "/api/chat",
        fake_provider::ollama_tool_call(
            "write_file",
            serde_json::json!({"path": "agent.txt", "content": "written by the agent\n"}),
        ),
    );
    server.push(
        "POST",
        "/api/chat",
        fake_provider::ollama_tool_call(
            "run_shell",
            serde_json::json!({"command": "echo ran > ran.txt"}),
        ),
    );
    let before = head(&cli.root);
    let turn = |chat: Option<&str>| {
        let mut args = vec![
            "chat",
            "--project",
            cli.root(),
            "--provider",
            "fake",
            "--mode",
            "agent",
            "--allow-risk",
            "high",
        ];
        if let Some(chat) = chat {
            args.extend(["--chat", chat]);
        }
        args.push("make the files");
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let args = turn(None);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cli.killed_at("agent-after-tool:2", &args).await;
    let when = "agent turn killed after its second tool call";
    let messages = check(cli, Some(server), when).await;
    assert_eq!(head(&cli.root), before, "{when}");
    for name in ["agent.txt", "ran.txt"] {
        assert!(
            !cli.root.join(name).exists(),
            "{when}: {name} is in the project"
        );
    }
    let chat = messages
        .iter()
        .find(|m| m["role"] == "user" && m["content"] == "make the files")
        .unwrap()["chat_id"]
        .as_i64()
        .unwrap();
    let replies: Vec<&Value> = messages
        .iter()
        .filter(|m| m["chat_id"] == chat && m["role"] == "assistant")
        .collect();
    assert_eq!(replies.len(), 1, "{when}: {replies:?}");
    assert_eq!(
        replies[0]["status"], "interrupted",
        "{when}: {}",
        replies[0]
    );
    let steps = store()
        .agent_steps(replies[0]["id"].as_i64().unwrap())
        .unwrap();
    let tools: Vec<Option<&str>> = steps.iter().map(|s| s.tool.as_deref()).collect();
    assert_eq!(tools, [Some("write_file")], "{when}: {steps:?}");
    let workspace = cli.data.join("workspaces").join(chat.to_string());
    assert!(!workspace.exists(), "{when}: the workspace stayed");

    server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Done."], Duration::from_millis(5)),
    );
    let args = turn(Some(&chat.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli.json(&args).await;
    assert_eq!(out["status"], "complete", "the turn after the kill: {out}");
    check(cli, Some(server), "the turn after the kill").await;
}

/// A change killed while git held its lock files (libgit2 writes the index and a branch
/// through `index.lock` and `refs/heads/NAME.lock`, renamed over them when done): the next
/// start removes the ones made since the change began, so the recovery, the next change
/// and the person's own `git` go on. A lock file that is not a cut-off change's (a `git`
/// of the person's at work) is left alone, and the change that meets it says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_killed_inside_gits_lock_files_does_not_lock_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let (cli, _server) = setup(dir.path()).await;
    let id = new_proposal(&cli, dir.path(), 1).await;
    cli.json(&["approve", &id]).await;
    let branch = common::git(&cli.root, &["symbolic-ref", "--short", "HEAD"]);
    let git = cli.root.join(".git");
    let left = [
        git.join("index.lock"),
        git.join("refs/heads")
            .join(format!("{}.lock", branch.trim())),
    ];

    // Killed mid-checkout, then the lock files a kill inside libgit2's writes leaves.
    let (before, tree_before) = (head(&cli.root), tree(&cli));
    let target = common::git(&cli.root, &["rev-parse", "HEAD~1"]);
    let restore = ["restore", "--project", cli.root(), target.trim()];
    cli.killed_at("mid-checkout:2", &restore).await;
    assert!(cli.landing_left());
    for path in &left {
        std::fs::write(path, "").unwrap();
    }
    let when = "restore killed inside git's lock files";
    check(&cli, None, when).await;
    assert_eq!(head(&cli.root), before, "{when}");
    assert_eq!(tree(&cli), tree_before, "{when}");
    for path in &left {
        assert!(!path.exists(), "{when}: {} stayed", path.display());
    }
    // The person's git and Tandem's next change both go on.
    common::git(&cli.root, &["update-index", "--refresh"]);
    cli.json(&restore).await;
    check(&cli, None, "restored after the kill").await;
    assert_eq!(
        common::git(&cli.root, &["rev-parse", "HEAD^{tree}"]),
        common::git(
            &cli.root,
            &["rev-parse", &format!("{}^{{tree}}", target.trim())]
        ),
    );

    // No change was cut off: a lock file is someone else's, at work, and stays. A change
    // that would write the index waits for it, then stops before changing anything and
    // says why; once git lets go, it goes through.
    let theirs = &left[0];
    std::fs::write(theirs, "").unwrap();
    let id = new_proposal(&cli, dir.path(), 2).await;
    let before = head(&cli.root);
    let back = common::git(&cli.root, &["rev-parse", "HEAD~1"]);
    let restore = ["restore", "--project", cli.root(), back.trim()];
    for args in [&["approve", id.as_str()][..], &restore[..]] {
        let output = cli
            .command(args)
            .stderr(Stdio::piped())
            .output()
            .await
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} under a held index");
        assert!(said.contains("index.lock"), "{said}");
        assert!(theirs.exists(), "a lock no cut-off change made was removed");
        assert_eq!(head(&cli.root), before, "{args:?} changed HEAD");
        assert!(!holds_round(&cli, 2), "{args:?} wrote files");
    }
    std::fs::remove_file(theirs).unwrap();
    check(&cli, None, "after the person's git finished").await;
    cli.json(&["approve", &id]).await;
    assert!(holds_round(&cli, 2));
    cli.json(&restore).await;
    check(
        &cli,
        None,
        "approved and restored once the person's git finished",
    )
    .await;
}

/// `tandem save` of new content to `src/f00.rs`, killed at the fail point `point`.
async fn save_killed_at(cli: &Cli, dir: &std::path::Path, point: &str) {
    let content = dir.join("saved.rs");
    std::fs::write(&content, "fn saved() {}\n").unwrap();
    let from = content.to_str().unwrap();
    let save = [
        "save",
        "--project",
        cli.root(),
        "--from",
        from,
        "src/f00.rs",
    ];
    cli.killed_at(point, &save).await;
}

/// A save killed once its commit moved HEAD and before the index was written: the next
/// start brings the index to HEAD (`git status` clean), and a file the person staged
/// meanwhile keeps what they staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_killed_before_its_index_write_leaves_git_status_clean() {
    let dir = tempfile::tempdir().unwrap();
    let (cli, _server) = setup(dir.path()).await;
    let before = head(&cli.root);
    save_killed_at(&cli, dir.path(), "save-after-commit").await;
    // The person's own staged work, on another file, from before the next start.
    std::fs::write(cli.root.join("src/f01.rs"), "staged by the person\n").unwrap();
    common::git(&cli.root, &["add", "src/f01.rs"]);
    std::fs::write(cli.root.join("src/f01.rs"), "and edited again\n").unwrap();

    let status = |cli: &Cli| common::git(&cli.root, &["status", "--porcelain"]);
    let when = "save killed after its commit";
    cli.json(&["chats", "--project", cli.root()]).await;
    assert_ne!(head(&cli.root), before, "{when}: the save is committed");
    assert_eq!(status(&cli), "MM src/f01.rs\n", "{when}");
    let staged = common::git(&cli.root, &["show", ":src/f01.rs"]);
    assert_eq!(staged, "staged by the person\n", "{when}");
    common::git(&cli.root, &["checkout", "HEAD", "--", "src/f01.rs"]);
    check(&cli, None, when).await;
}

/// A save killed with its new content in the temporary file, before the rename: the next
/// start removes that file (nothing else was changed), and leaves a file of the same kind of
/// name made long before the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_killed_before_its_rename_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let (cli, _server) = setup(dir.path()).await;
    // Named as Tandem names them: one made long before the change, and one the person
    // committed (made recently).
    let old = cli.root.join("src/.tandem-write-old001.tmp");
    std::fs::write(&old, "not this change's").unwrap();
    let committed = cli.root.join("src/.tandem-write-keep01.tmp");
    std::fs::write(&committed, "the person's").unwrap();
    common::git(&cli.root, &["add", "src/.tandem-write-keep01.tmp"]);
    common::git(
        &cli.root,
        &["commit", "-qm", "a file with a temporary's name"],
    );
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    let before = head(&cli.root);
    save_killed_at(&cli, dir.path(), "write-before-rename").await;
    let temps = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(cli.root.join("src"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tandem-"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(temps().len(), 3, "the kill left the save's temporary file");
    // The person takes their file out of the index (it stays in HEAD and on disk): that is
    // their staged work, which the tidying after a kill leaves alone.
    let rel = "src/.tandem-write-keep01.tmp";
    common::git(&cli.root, &["rm", "-q", "--cached", rel]);
    let when = "save killed before its rename";
    cli.json(&["chats", "--project", cli.root()]).await;
    assert_eq!(
        temps(),
        [".tandem-write-keep01.tmp", ".tandem-write-old001.tmp"],
        "{when}"
    );
    assert!(committed.exists());
    let status = common::git(&cli.root, &["status", "--porcelain", "--", rel]);
    assert_eq!(status, format!("D  {rel}\n?? {rel}\n"), "{when}");
    common::git(&cli.root, &["reset", "-q", "--", rel]);
    std::fs::remove_file(&old).unwrap();
    check(&cli, None, when).await;
    assert_eq!(head(&cli.root), before, "{when}");
}

/// Adding a folder killed once its `.git` is made and before the first commit: adding it
/// again makes the repository whole (its first commit holds the folder's files), as if the
/// first attempt had not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_add_killed_before_its_first_commit_is_made_whole_when_added_again() {
    let dir = tempfile::tempdir().unwrap();
    let (cli, _server) = setup(dir.path()).await;
    let folder = dir.path().join("second");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("a.txt"), "a\n").unwrap();
    std::fs::write(folder.join("b.txt"), "b\n").unwrap();
    let arg = folder.to_str().unwrap();
    cli.killed_at("add-after-init", &["project", "add", arg])
        .await;
    assert!(folder.join(".git").is_dir(), "the kill left the new .git");
    cli.json(&["project", "add", arg]).await;
    let files = common::git(&folder, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert_eq!(files, ".gitignore\na.txt\nb.txt\n");
    assert_eq!(common::git(&folder, &["status", "--porcelain"]), "");
}

/// A restore killed while it commits the person's uncommitted work first: their changes are
/// left as they were, not staged on their behalf (an untracked file stays untracked), and
/// HEAD has not moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_killed_saving_the_persons_work_leaves_it_unstaged() {
    let dir = tempfile::tempdir().unwrap();
    let (cli, _server) = setup(dir.path()).await;
    let id = new_proposal(&cli, dir.path(), 1).await;
    cli.json(&["approve", &id]).await;
    std::fs::write(cli.root.join("src/f01.rs"), "the person's edit\n").unwrap();
    std::fs::write(cli.root.join("notes.txt"), "the person's notes\n").unwrap();
    let before = head(&cli.root);
    let target = common::git(&cli.root, &["rev-parse", "HEAD~1"]);
    let restore = ["restore", "--project", cli.root(), target.trim()];
    cli.killed_at("commit-all-before-commit", &restore).await;
    cli.json(&["chats", "--project", cli.root()]).await;
    assert_eq!(head(&cli.root), before);
    let status = common::git(&cli.root, &["status", "--porcelain"]);
    assert_eq!(status, " M src/f01.rs\n?? notes.txt\n");
}
