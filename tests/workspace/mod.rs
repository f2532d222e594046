//! The agent's workspace, against the real kernel (an overlay in a user namespace; a forced
//! copy where it is not there): the scripted "make the tests pass" turn in both protocols,
//! a partial approval, the person's edit underneath, the copy path forced.

use std::path::Path;

use serde_json::json;
use tandem::chat::SendOptions;
use tandem::llm::ProviderKind;
use tandem::store::{ChatMode, StepKind};

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
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
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
        allow_risk: Some(tandem::agent::policy::Risk::High),
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
    if !kernel_overlay() {
        // The copy path is proven by its own test; the overlay needs the kernel.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must prove the overlay workspace"
        );
        println!("KERNEL FEATURE UNAVAILABLE: overlays in user namespaces");
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
