//! The agent's workspace, against the real kernel (an overlay in a user namespace; a forced
//! copy where it is not there): the scripted "make the tests pass" turn in both protocols,
//! a partial approval, the person's edit underneath, the copy path forced.

use std::path::Path;

use serde_json::json;
use tandem_core::chat::SendOptions;
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ChatMode, StepKind};

use super::fake_provider::ollama_tool_call;
use super::fake_provider::setup::{Setup, setup};
use super::{assert_complete, text};

/// A project whose one test fails: `add` subtracts.
const UTIL: &str = "add() { echo $(($1 - $2)); }\n";
const FIXED: &str = "add() { echo $(($1 + $2)); }\n";
const TEST: &str = ". ./src/util.sh\n[ \"$(add 2 3)\" = 5 ] || { echo \"add 2 3 gave $(add 2 3)\"; exit 1; }\necho PASS\n";

fn project(s: &Setup) {
    for (path, content) in [
        ("src/util.sh", UTIL),
        ("test.sh", TEST),
        (".gitignore", "build/\n"),
    ] {
        let full = s.root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    git(&s.root, &["add", "-A"]);
    git(&s.root, &["commit", "-qm", "a failing test"]);
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file of the person's tree (not `.git`), with its bytes.
pub(crate) fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Whether the overlay tests can run: the kernel gives overlays in user namespaces. Under
/// `CI` it must (the copy path is proven by its own test; the overlay needs the kernel).
fn overlay_here() -> bool {
    if kernel_overlay() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must prove the overlay workspace"
    );
    println!("KERNEL FEATURE UNAVAILABLE: overlays in user namespaces");
    false
}

/// The kernel gives overlays in user namespaces (asked through util-linux).
fn kernel_overlay() -> bool {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["l", "u", "w", "m"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let d = dir.path().display();
    std::process::Command::new("unshare")
        .args([
            "-Urm",
            "mount",
            "-t",
            "overlay",
            "overlay",
            "-o",
            &format!("lowerdir={d}/l,upperdir={d}/u,workdir={d}/w,userxattr"),
            &format!("{d}/m"),
        ])
        .status()
        .is_ok_and(|s| s.success())
}

/// The calls of the "make the tests pass" turn, as (tool, arguments).
fn calls() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("run_shell", json!({"command": "sh test.sh"})),
        (
            "write_file",
            json!({"path": "src/util.sh", "content": FIXED, "description": "add adds"}),
        ),
        ("read_file", json!({"path": "src/util.sh"})),
        (
            "run_shell",
            json!({"command": "sh test.sh && mkdir -p build src/util && echo out > build/out && echo 'add is fixed' > src/util/NOTE.txt"}),
        ),
    ]
}

/// Runs the turn in the protocol `native` says; checks everything up to the proposal.
async fn make_the_tests_pass(native: bool) -> (Setup, i64) {
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    s.tool_calling(if native { "native" } else { "text" });
    let mut replies: Vec<_> = calls()
        .into_iter()
        .map(|(tool, arguments)| match native {
            true => ollama_tool_call(tool, arguments),
            false => text(&format!(
                "TOOL_CALL {}",
                json!({"name": tool, "arguments": arguments})
            )),
        })
        .collect();
    if !native {
        replies.insert(0, text("PLAN {\"steps\": [\"Make the test pass\"]}"));
        replies.push(text("STEP_DONE {\"index\": 1}"));
    }
    replies.push(text(match native {
        true => "The test passes now.",
        false => "FINAL {\"message\": \"The test passes now.\"}",
    }));
    s.script("/api/chat", replies);
    let before = tree(&s.root);
    let head = git(&s.root, &["rev-parse", "HEAD"]);
    let options = SendOptions {
        allow_risk: Some(tandem_core::agent::policy::Risk::High),
        ..SendOptions::default()
    };
    let (outcome, _) = s
        .turn(ChatMode::Agent, "make the tests pass", options, &[], false)
        .await;
    assert_complete(&outcome);
    let steps: Vec<_> = s
        .steps(outcome.message_id)
        .into_iter()
        .filter(|st| st.kind == StepKind::Tool)
        .collect();
    let result = |i: usize| steps[i].result.clone().unwrap_or_default();
    // The first run fails against the old code...
    assert_eq!(steps[0].exit_code, Some(1), "{}", result(0));
    assert!(result(0).contains("add 2 3 gave -1"), "{}", result(0));
    // ...the edit is in the workspace: read_file shows it...
    assert!(
        result(2).contains("$1 + $2"),
        "read_file showed: {}",
        result(2)
    );
    // ...and the second run passes against it.
    assert_eq!(steps[3].exit_code, Some(0), "{}", result(3));
    assert!(result(3).contains("PASS"), "{}", result(3));
    // The file the command wrote joins the proposal, labelled; the ignored build output
    // does not.
    let labelled: Vec<_> = steps
        .iter()
        .filter(|st| {
            st.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("changed by `sh test.sh"))
        })
        .collect();
    assert_eq!(labelled.len(), 1, "{steps:#?}");
    let review = s.engine.review(outcome.message_id).unwrap();
    let paths: Vec<&str> = review.plan.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/util.sh", "src/util/NOTE.txt"], "{paths:?}");
    // The person's tree is byte-identical, HEAD unmoved.
    assert_eq!(tree(&s.root), before);
    assert_eq!(git(&s.root, &["rev-parse", "HEAD"]), head);
    (s, outcome.message_id)
}

async fn approve_all_lands_one_commit(native: bool) {
    if !overlay_here() {
        return;
    }
    let (s, message) = make_the_tests_pass(native).await;
    let commits = git(&s.root, &["rev-list", "--count", "HEAD"]);
    s.engine.approve(message, None).unwrap();
    assert_eq!(
        git(&s.root, &["rev-list", "--count", "HEAD"])
            .trim()
            .parse::<u32>()
            .unwrap(),
        commits.trim().parse::<u32>().unwrap() + 1
    );
    let changed = git(&s.root, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(
        changed.lines().collect::<Vec<_>>(),
        ["src/util.sh", "src/util/NOTE.txt"]
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/util.sh")).unwrap(),
        FIXED
    );
    assert!(
        !s.root.join("build").exists(),
        "ignored output stays in the workspace"
    );
    // The workspace went with the decision.
    let layer = s.root.parent().unwrap().join("data/workspaces/1");
    assert!(!layer.exists(), "{} is still there", layer.display());
    let out = std::process::Command::new("sh")
        .arg("test.sh")
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert!(out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_tools_make_the_tests_pass_in_the_workspace() {
    approve_all_lands_one_commit(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_protocol_makes_the_tests_pass_in_the_workspace() {
    approve_all_lands_one_commit(false).await;
}

/// Sends `prompt` to `chat` and waits for the turn to complete (no approvals are expected).
async fn send(s: &Setup, chat: i64, prompt: &str) -> tandem_core::chat::TurnOutcome {
    let outcome = turn(s, chat, prompt).await;
    assert_complete(&outcome);
    outcome
}

/// Sends `prompt` to `chat` with every risk pre-approved and waits for the turn to end,
/// however it ends.
async fn turn(s: &Setup, chat: i64, prompt: &str) -> tandem_core::chat::TurnOutcome {
    let options = SendOptions {
        allow_risk: Some(tandem_core::agent::policy::Risk::High),
        ..SendOptions::default()
    };
    let handle = s.service.send(chat, prompt, options).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(30), handle.outcome)
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_approval_lands_what_was_checked_and_drops_the_rest() {
    if !overlay_here() {
        return;
    }
    let (s, message) = make_the_tests_pass(true).await;
    let selection = tandem_core::edits::Selection {
        files: vec![tandem_core::edits::FileSelection {
            path: "src/util.sh".into(),
            hunks: None,
        }],
        dependencies: false,
    };
    s.engine.approve(message, Some(&selection)).unwrap();
    let changed = git(&s.root, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(changed.lines().collect::<Vec<_>>(), ["src/util.sh"]);
    assert!(!s.root.join("src/util/NOTE.txt").exists());
    // What was left out went with the workspace: the next turn starts from the tree.
    assert!(!s.root.parent().unwrap().join("data/workspaces/1").exists());
}

/// The person edits their tree while the workspace holds a pending proposal: a file only
/// they changed shows their content to the agent; a file both changed is a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persons_edit_underneath_shows_through_and_a_shared_file_conflicts() {
    if !overlay_here() {
        return;
    }
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call(
                "write_file",
                json!({"path": "src/util.sh", "content": FIXED}),
            ),
            text("Fixed add."),
            ollama_tool_call("read_file", json!({"path": "test.sh"})),
            ollama_tool_call("read_file", json!({"path": "src/util.sh"})),
            text("Read them."),
        ],
    );
    let chat = s.chat(ChatMode::Agent);
    let first = send(&s, chat, "fix add").await;
    // The person changes both files in their own tree.
    std::fs::write(
        s.root.join("test.sh"),
        format!("# the person's note\n{TEST}"),
    )
    .unwrap();
    std::fs::write(s.root.join("src/util.sh"), format!("# mine\n{UTIL}")).unwrap();
    let second = send(&s, chat, "look again").await;
    let steps = s.steps(second.message_id);
    let result = |tool: &str, n: usize| {
        steps
            .iter()
            .filter(|st| st.tool.as_deref() == Some(tool))
            .nth(n)
            .and_then(|st| st.result.clone())
            .unwrap_or_default()
    };
    // Only the person changed test.sh: the agent sees their version...
    assert!(
        result("read_file", 0).contains("the person's note"),
        "{steps:#?}"
    );
    // ...util.sh the agent had changed: it sees its own.
    assert!(result("read_file", 1).contains("$1 + $2"));
    assert!(!result("read_file", 1).contains("# mine"));
    // The second turn carried the first one's change and replaced its proposal.
    let first = s.engine.store().message(first.message_id).unwrap();
    assert_eq!(
        first.approval_state,
        Some(tandem_core::store::ApprovalState::Rejected)
    );
    let review = s.engine.review(second.message_id).unwrap();
    let util = review
        .plan
        .files
        .iter()
        .find(|f| f.path == "src/util.sh")
        .unwrap();
    assert!(util.conflict.is_some(), "{:?}", review.plan.files);
    // Never silently overwritten: approving refuses, and the person's edit stays.
    assert!(s.engine.approve(second.message_id, None).is_err());
    assert!(
        std::fs::read_to_string(s.root.join("src/util.sh"))
            .unwrap()
            .starts_with("# mine")
    );
}

/// A turn that carries an earlier turn's changes but fails makes no proposal: the earlier
/// one stays pending, and the workspace holding it stays (a stale one would be removed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_leaves_the_earlier_proposal_and_its_workspace() {
    if !overlay_here() {
        return;
    }
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call(
                "write_file",
                json!({"path": "src/util.sh", "content": FIXED}),
            ),
            text("Fixed add."),
        ],
    );
    let chat = s.chat(ChatMode::Agent);
    let first = send(&s, chat, "fix add").await;
    // The next turn breaks the step protocol until it gives up.
    s.tool_calling("text");
    s.script("/api/chat", (0..4).map(|_| text("just chatting")).collect());
    let handle = (s.service.send(chat, "again", SendOptions::default()).await).unwrap();
    let second = tokio::time::timeout(std::time::Duration::from_secs(30), handle.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.status, tandem_core::store::MessageStatus::Error);
    let first = s.engine.store().message(first.message_id).unwrap();
    assert_eq!(
        first.approval_state,
        Some(tandem_core::store::ApprovalState::Pending)
    );
    let layer = s
        .root
        .parent()
        .unwrap()
        .join(format!("data/workspaces/{chat}"));
    assert!(layer.exists());
    let stale = (s.engine.workspaces(&s.root.parent().unwrap().join("data"))).unwrap();
    assert!(stale.iter().all(|w| !w.stale), "{stale:?}");
}

/// An Agent turn whose workspace cannot be opened does not start: its commands would change
/// the person's project directly, and nothing of it would come back for review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_turn_whose_workspace_cannot_be_opened_does_not_start() {
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call(
                "write_file",
                json!({"path": "src/util.sh", "content": FIXED}),
            ),
            text("Fixed add."),
            ollama_tool_call("run_shell", json!({"command": "echo pwned > pwned.txt"})),
            text("Done."),
        ],
    );
    let chat = s.chat(ChatMode::Agent);
    let first = send(&s, chat, "fix add").await;
    let record = (s.root.parent().unwrap()).join(format!("data/workspaces/{chat}/meta.json"));
    std::fs::write(&record, "{ not json").unwrap();
    let before = tree(&s.root);
    let asked = s.chat_requests().len();
    let second = turn(&s, chat, "again").await;
    assert!(
        !s.root.join("pwned.txt").exists(),
        "the command changed the project"
    );
    assert_eq!(second.status, tandem_core::store::MessageStatus::Error);
    let error = second.error.unwrap_or_default();
    assert!(
        error.contains("record cannot be read")
            && error.contains(&format!("tandem workspace clean --chat {chat}")),
        "{error}"
    );
    // The model was never asked, the project is as it was, the first proposal still waits.
    assert_eq!(s.chat_requests().len(), asked);
    assert_eq!(tree(&s.root), before);
    let first = s.engine.store().message(first.message_id).unwrap();
    assert_eq!(
        first.approval_state,
        Some(tandem_core::store::ApprovalState::Pending)
    );
}

/// An edit through a link the agent made in its workspace would land on another file than
/// the one its proposal names (the project has no such link): refused with the real path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_through_a_workspace_link_is_refused_with_the_real_path() {
    if !overlay_here() {
        return;
    }
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    s.tool_calling("native");
    s.script(
        "/api/chat",
        vec![
            ollama_tool_call("run_shell", json!({"command": "ln -s src s3"})),
            ollama_tool_call(
                "write_file",
                json!({"path": "s3/evil.sh", "content": "echo evil\n"}),
            ),
            text("Done."),
        ],
    );
    let chat = s.chat(ChatMode::Agent);
    let outcome = send(&s, chat, "write through the link").await;
    let steps = s.steps(outcome.message_id);
    let write = (steps.iter())
        .find(|st| st.tool.as_deref() == Some("write_file"))
        .and_then(|st| st.result.clone())
        .unwrap_or_default();
    assert!(
        write.contains("leads through a link in the workspace to src/evil.sh"),
        "{write}"
    );
    let review = s.engine.review(outcome.message_id).unwrap();
    assert!(
        review.plan.files.iter().all(|f| !f.path.contains("evil")),
        "{:?}",
        review.plan.files
    );
}

/// Where overlays cannot be mounted the workspace is a copy: the same turn works there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_workspace_does_the_same_when_forced() {
    use tandem_core::layer::{Layer, Tracker, Workspace};
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    let data = s.engine.data_dir().unwrap().to_path_buf();
    let workspace = Workspace::open(Layer::of(&data, 7), &s.root, true).unwrap();
    assert_eq!(workspace.kind(), tandem_core::layer::Kind::Copy);
    let workspace = std::sync::Arc::new(workspace);
    let (tracker, carried) = Tracker::start(std::sync::Arc::clone(&workspace)).unwrap();
    assert!(carried.is_empty(), "{carried:?}");
    std::fs::write(workspace.view().join("src/util.sh"), FIXED).unwrap();
    let others = tracker.absorb(&["src/util.sh".to_string()]).unwrap();
    assert!(others.is_empty(), "{others:?}");
    // A command in the copy, in the container, at the project's path.
    let temp = tempfile::tempdir().unwrap();
    let mut confinement = tandem_core::sandbox::Confinement::new(&s.root, temp.path());
    confinement.view = Some(workspace.project_view());
    let outcome = tandem_core::process::run_shell(
        tandem_core::process::ShellRequest {
            sandbox: tandem_core::process::Sandbox::Confined(confinement),
            ..tandem_core::process::ShellRequest::new(
                "sh test.sh && echo note > NOTE.txt && rm test.sh",
                &s.root,
            )
        },
        Default::default(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    let changes = tracker.collect().unwrap();
    let names: Vec<&str> = changes.iter().map(|c| c.path()).collect();
    assert_eq!(names, ["NOTE.txt", "test.sh"], "{changes:?}");
    // The project never changed.
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/util.sh")).unwrap(),
        UTIL
    );
    assert!(s.root.join("test.sh").exists() && !s.root.join("NOTE.txt").exists());
    drop(tracker);
    drop(workspace);
    Layer::of(&data, 7).discard().unwrap();
    assert!(!data.join("workspaces/7").exists());
}

/// In a copy workspace a command's renames stay in the copy: a secret moved out from under
/// its cover by one command is still hidden from the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_moved_in_the_copy_stays_hidden() {
    use tandem_core::layer::{Layer, Workspace};
    let s = setup(ProviderKind::Ollama).await;
    project(&s);
    std::fs::create_dir_all(s.root.join("config")).unwrap();
    std::fs::write(s.root.join("config/.env"), "TOKEN=MOVED-SECRET\n").unwrap();
    let data = s.engine.data_dir().unwrap().to_path_buf();
    let workspace = Workspace::open(Layer::of(&data, 8), &s.root, true).unwrap();
    assert_eq!(workspace.kind(), tandem_core::layer::Kind::Copy);
    let run = |command: &'static str| {
        let temp = tempfile::tempdir().unwrap();
        let mut confinement = tandem_core::sandbox::Confinement::new(&s.root, temp.path());
        confinement.view = Some(workspace.project_view());
        let request = tandem_core::process::ShellRequest {
            sandbox: tandem_core::process::Sandbox::Confined(confinement),
            ..tandem_core::process::ShellRequest::new(command, &s.root)
        };
        async move {
            let outcome = tandem_core::process::run_shell(request, Default::default())
                .await
                .unwrap();
            drop(temp);
            outcome
        }
    };
    let first = run("mv config moved && ls moved && cat moved/.env").await;
    let second = run("cat moved/.env; grep -r MOVED . ; cat src/util.sh").await;
    for outcome in [&first, &second] {
        let seen = format!("{}{}", outcome.stdout, outcome.stderr);
        assert!(!seen.contains("MOVED-SECRET"), "{outcome:?}");
    }
    assert!(second.stdout.contains("add()"), "{second:?}");
    drop(workspace);
    Layer::of(&data, 8).discard().unwrap();
}
