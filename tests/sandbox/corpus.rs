//! The shell corpus's commands, attacks included, run for real in the container with the
//! policy bypassed (as if the person had approved every one): no decoy may come back,
//! nothing outside the project may change, nothing may reach the network, nothing may
//! outlive its call.

use std::time::Duration;

use super::{DECOY, Listeners, Scratch, both, contained};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_command_run_confined_is_harmless() {
    use serde_json::json;
    use tandem::agent::policy::{Decision, PolicySettings, ToolCallView, Trust, assess};

    let listeners = Listeners::new();
    let (port, _) = listeners.ports();
    let entries = super::super::shell_corpus::load(port);
    // One scratch project for all: commands may change the project, never what is checked.
    let s = Scratch::new();
    if contained(&s.run("true", false).await).is_none() {
        return;
    }
    let tag = super::mark();
    let (mut auto, mut failed, mut timed_out) = (0, 0, 0);
    for entry in &entries {
        let arguments = json!({ "command": entry.command });
        let call = ToolCallView {
            tool: "run_shell",
            arguments: &arguments,
        };
        let assessment = assess(&call, Trust::Scoped, &PolicySettings::default(), s.root());
        auto += usize::from(matches!(assessment.decision, Decision::Allow { .. }));
        let before = s.snapshot();
        let outcome = s
            .run_for(&entry.command, false, Duration::from_secs(5))
            .await;
        failed += usize::from(outcome.exit_code != Some(0));
        timed_out += usize::from(outcome.timed_out);
        let what = format!(
            "line {} ({}): {:?}",
            entry.line, entry.expected, entry.command
        );
        assert!(
            !both(&outcome).contains(DECOY),
            "{what} leaked: {outcome:?}"
        );
        assert_eq!(s.snapshot(), before, "{what} changed something outside");
        // The project may be wrecked by one line; the next starts from a fresh copy of it.
        if !s.root().join("README.md").is_file() {
            restore(&s);
        }
    }
    assert_eq!(
        listeners.arrived(Duration::from_millis(300)),
        (false, false),
        "a corpus command reached the network"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        super::marked(&tag),
        Vec::<String>::new(),
        "processes outlived their call"
    );
    println!(
        "corpus: {} commands run confined ({auto} the policy would auto-approve, {failed} \
         exited non-zero, {timed_out} timed out): none leaked, wrote outside, connected or \
         survived",
        entries.len()
    );
    assert!(auto >= 40, "only {auto} commands auto-approved");
}

/// Puts the scratch project's files back from its git history.
fn restore(s: &Scratch) {
    let status = std::process::Command::new("git")
        .args(["checkout", "-q", "--", "."])
        .current_dir(s.root())
        .status()
        .unwrap();
    assert!(status.success());
}
