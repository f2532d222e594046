//! Proposals end to end: a reply is planned, reviewed and applied as one git commit, checked
//! with the git CLI.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;

use common::fixture;
use tandem_core::EngineError;
use tandem_core::edits::{FileChangeKind, FileSelection, OpStatus, Selection};
use tandem_core::store::ApprovalState;

const APP: &str = "fn main() {\n    println!(\"hello\");\n}\n";

fn reply_touching_everything() -> String {
    r#"I'll restructure this.
<tandem-write path="src/lib.rs" description="library">
pub fn greet() -> &'static str {
    "hi"
}
</tandem-write>
<tandem-search-replace path="src/main.rs" description="use it">
<<<<<<< SEARCH
    println!("hello");
=======
    println!("{}", tandem_demo::greet());
>>>>>>> REPLACE
</tandem-search-replace>
<tandem-rename from="notes.txt" to="docs/notes.md"></tandem-rename>
<tandem-delete path="old.txt"></tandem-delete>
<tandem-chat-summary>Split greeting into a library</tandem-chat-summary>
Done."#
        .to_string()
}

#[test]
fn approve_applies_everything_as_one_commit() {
    let f = fixture(&[
        ("src/main.rs", APP),
        ("notes.txt", "some notes\n"),
        ("old.txt", "obsolete\n"),
    ]);
    let before = f.commit_count();
    let proposal = f
        .engine
        .propose(
            &f.project,
            None,
            Some("split it"),
            &reply_touching_everything(),
        )
        .unwrap();
    assert_eq!(
        proposal.message.approval_state,
        Some(ApprovalState::Pending)
    );
    let kinds: Vec<_> = proposal
        .plan
        .files
        .iter()
        .map(|c| (c.path.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("src/lib.rs", FileChangeKind::Added),
            ("src/main.rs", FileChangeKind::Modified),
            ("docs/notes.md", FileChangeKind::Renamed),
            ("old.txt", FileChangeKind::Deleted),
        ]
    );
    assert!(
        proposal
            .plan
            .operations
            .iter()
            .all(|op| op.status == OpStatus::Ok)
    );
    // Nothing touched the disk yet.
    assert_eq!(f.read("src/main.rs"), APP);
    assert!(!f.root.join("src/lib.rs").exists());

    let outcome = f.engine.approve(proposal.message.id, None).unwrap();
    let commit = outcome.commit.unwrap();
    assert_eq!(commit.len(), 40);
    assert_eq!(f.head(), commit);
    assert_eq!(f.commit_count(), before + 1);
    f.assert_clean();
    assert_eq!(
        f.git(&["log", "-1", "--format=%s"]).trim(),
        "[tandem] Split greeting into a library — wrote 2, renamed 1, deleted 1 file(s)"
    );
    let mut changed: Vec<String> = f
        .git(&["show", "--name-status", "--format=", "-M", "HEAD"])
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            "A src/lib.rs",
            "D old.txt",
            "M src/main.rs",
            "R100 notes.txt docs/notes.md"
        ]
    );
    assert!(f.read("src/main.rs").contains("tandem_demo::greet()"));
    assert_eq!(f.read("docs/notes.md"), "some notes\n");
    let message = f.engine.store().message(proposal.message.id).unwrap();
    assert_eq!(message.approval_state, Some(ApprovalState::Approved));
    assert_eq!(message.commit_hash.as_deref(), Some(commit.as_str()));
    // A second approval is refused.
    assert!(matches!(
        f.engine.approve(proposal.message.id, None),
        Err(EngineError::NotReviewable { .. })
    ));
}

#[test]
fn reject_touches_nothing() {
    let f = fixture(&[
        ("src/main.rs", APP),
        ("notes.txt", "n\n"),
        ("old.txt", "o\n"),
    ]);
    let snapshot = f.snapshot();
    let head = f.head();
    let proposal = f
        .engine
        .propose(&f.project, None, None, &reply_touching_everything())
        .unwrap();
    f.engine.reject(proposal.message.id, None).unwrap();
    assert_eq!(f.snapshot(), snapshot);
    assert_eq!(f.head(), head);
    let message = f.engine.store().message(proposal.message.id).unwrap();
    assert_eq!(message.approval_state, Some(ApprovalState::Rejected));
    assert!(f.engine.approve(proposal.message.id, None).is_err());
}

#[test]
fn a_failed_block_refuses_the_whole_approval_but_a_selection_can_skip_it() {
    let f = fixture(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let reply = r#"<tandem-search-replace path="a.txt">
<<<<<<< SEARCH
alpah
=======
delta
>>>>>>> REPLACE
</tandem-search-replace>
<tandem-write path="b.txt">BETA
</tandem-write>"#;
    let snapshot = f.snapshot();
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    let failed = &proposal.plan.operations[0];
    assert_eq!(failed.status, OpStatus::Error);
    let error = failed.error.as_deref().unwrap();
    assert!(
        error.contains("block 1 of 1") && error.contains("alpha"),
        "{error}"
    );
    let err = f.engine.approve(proposal.message.id, None).unwrap_err();
    assert!(matches!(err, EngineError::Unapprovable(_)), "{err}");
    assert_eq!(f.snapshot(), snapshot);
    // The failed file cannot be selected…
    let bad = Selection {
        files: vec![FileSelection {
            path: "a.txt".into(),
            hunks: None,
        }],
        dependencies: true,
    };
    assert!(f.engine.approve(proposal.message.id, Some(&bad)).is_err());
    // …but the working one can.
    let good = Selection {
        files: vec![FileSelection {
            path: "b.txt".into(),
            hunks: None,
        }],
        dependencies: true,
    };
    let outcome = f.engine.approve(proposal.message.id, Some(&good)).unwrap();
    assert!(outcome.commit.is_some());
    assert_eq!(f.read("b.txt"), "BETA\n");
    assert_eq!(f.read("a.txt"), "alpha\n");
    f.assert_clean();
}

#[test]
fn approving_selected_hunks_writes_exactly_those() {
    let original: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let f = fixture(&[("f.txt", &original)]);
    let changed = original
        .replace("line 2\n", "line two\n")
        .replace("line 25\n", "line twenty-five\n");
    let reply = format!("<tandem-write path=\"f.txt\">\n{changed}</tandem-write>");
    let proposal = f.engine.propose(&f.project, None, None, &reply).unwrap();
    assert_eq!(proposal.plan.files[0].hunks.len(), 2);
    let selection = Selection {
        files: vec![FileSelection {
            path: "f.txt".into(),
            hunks: Some(vec![1]),
        }],
        dependencies: false,
    };
    f.engine
        .approve(proposal.message.id, Some(&selection))
        .unwrap();
    assert_eq!(
        f.read("f.txt"),
        original.replace("line 25\n", "line twenty-five\n")
    );
    f.assert_clean();
    let diff = f.git(&["show", "--format=", "HEAD"]);
    assert!(
        diff.contains("+line twenty-five") && !diff.contains("line two"),
        "{diff}"
    );
    // The commit and the record say it was only part.
    let subject = f.git(&["log", "-1", "--format=%s"]);
    assert!(subject.trim_end().ends_with("(1 of 2 hunks)"), "{subject}");
    let message = f.engine.store().message(proposal.message.id).unwrap();
    let note = message.approval_note.unwrap();
    assert_eq!((note.hunks_applied, note.hunks_total), (1, 2));
    assert_eq!(note.part_applied().as_deref(), Some("1 of 2 hunks"));
    assert_eq!(note.left_out.len(), 1);
    assert_eq!(note.left_out[0].path, "f.txt");
    let hunk = &note.left_out[0].hunks[0];
    assert!(
        hunk.starts_with("@@ ") && hunk.contains("-line 2\n+line two"),
        "{hunk}"
    );
    assert_eq!(note.reason, None);
}

#[test]
fn a_reason_is_kept_with_what_was_left_out_and_with_a_rejection() {
    let f = fixture(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let reply = "<tandem-write path=\"a.txt\">\nA\n</tandem-write>\n                 <tandem-write path=\"b.txt\">\nB\n</tandem-write>";
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    let only_a = Selection {
        files: vec![FileSelection {
            path: "a.txt".into(),
            hunks: None,
        }],
        dependencies: false,
    };
    f.engine
        .approve_with_reason(
            proposal.message.id,
            Some(&only_a),
            Some("  keep b lowercase "),
        )
        .unwrap();
    assert_eq!(
        (f.read("a.txt"), f.read("b.txt")),
        ("A\n".into(), "b\n".into())
    );
    let note = f
        .engine
        .store()
        .message(proposal.message.id)
        .unwrap()
        .approval_note
        .unwrap();
    assert_eq!((note.hunks_applied, note.hunks_total), (1, 2));
    assert_eq!(note.left_out[0].path, "b.txt");
    assert!(note.left_out[0].hunks[0].contains("+B"));
    assert_eq!(note.reason.as_deref(), Some("keep b lowercase"));

    // Everything applied and no reason: no note.
    let all = f
        .engine
        .propose(
            &f.project,
            None,
            None,
            "<tandem-write path=\"b.txt\">\nbb\n</tandem-write>",
        )
        .unwrap();
    f.engine.approve(all.message.id, None).unwrap();
    let message = f.engine.store().message(all.message.id).unwrap();
    assert_eq!(message.approval_note, None);
    assert!(!f.git(&["log", "-1", "--format=%s"]).contains("hunks"));

    // A rejection with a reason keeps it; without one, nothing.
    let rejected = f
        .engine
        .propose(
            &f.project,
            None,
            None,
            "<tandem-write path=\"a.txt\">\nno\n</tandem-write>",
        )
        .unwrap();
    f.engine
        .reject(rejected.message.id, Some("wrong file"))
        .unwrap();
    let note = f
        .engine
        .store()
        .message(rejected.message.id)
        .unwrap()
        .approval_note
        .unwrap();
    assert_eq!(note.reason.as_deref(), Some("wrong file"));
    assert_eq!(note.hunks_applied, 0);
}

#[test]
fn a_file_changed_since_the_proposal_is_a_conflict() {
    let f = fixture(&[("a.txt", "one\n")]);
    let reply = "<tandem-write path=\"a.txt\">two\n</tandem-write>";
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    std::fs::write(f.root.join("a.txt"), "edited by hand\n").unwrap();
    let review = f.engine.review(proposal.message.id).unwrap();
    assert!(review.plan.files[0].conflict.is_some());
    let err = f.engine.approve(proposal.message.id, None).unwrap_err();
    assert!(err.to_string().contains("changed on disk"), "{err}");
    assert_eq!(f.read("a.txt"), "edited by hand\n");
}

#[test]
fn uncommitted_manual_edits_get_their_own_commit_first() {
    let f = fixture(&[("a.txt", "one\ntwo\nthree\n")]);
    std::fs::write(f.root.join("a.txt"), "one\ntwo (edited)\nthree\n").unwrap();
    let before = f.commit_count();
    let reply = r#"<tandem-search-replace path="a.txt">
<<<<<<< SEARCH
three
=======
THREE
>>>>>>> REPLACE
</tandem-search-replace>"#;
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    let outcome = f.engine.approve(proposal.message.id, None).unwrap();
    assert!(outcome.manual_commit.is_some());
    assert_eq!(f.commit_count(), before + 2);
    assert_eq!(
        f.git(&["show", "HEAD~1:a.txt"]),
        "one\ntwo (edited)\nthree\n"
    );
    assert_eq!(f.git(&["show", "HEAD:a.txt"]), "one\ntwo (edited)\nTHREE\n");
    f.assert_clean();
    // Reverting only the AI commit keeps the manual edit.
    f.engine.undo(&f.project).unwrap();
    assert_eq!(f.read("a.txt"), "one\ntwo (edited)\nthree\n");
}

#[test]
fn staged_changes_to_other_files_are_not_swept_into_the_commit() {
    let f = fixture(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    std::fs::write(f.root.join("b.txt"), "b staged\n").unwrap();
    f.git(&["add", "b.txt"]);
    let proposal = f
        .engine
        .propose(
            &f.project,
            None,
            None,
            "<tandem-write path=\"a.txt\">A\n</tandem-write>",
        )
        .unwrap();
    f.engine.approve(proposal.message.id, None).unwrap();
    let files = f.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.trim(), "a.txt");
    assert_eq!(f.git(&["status", "--porcelain"]), "M  b.txt\n");
}

#[test]
fn hostile_paths_are_errors_and_never_written() {
    let f = fixture(&[("a.txt", "a\n")]);
    let outside = f.dir.path().join("escaped.txt");
    let reply = format!(
        r#"<tandem-write path="../escaped.txt">x</tandem-write>
<tandem-write path="{}">x</tandem-write>
<tandem-write path=".git/hooks/pre-commit">x</tandem-write>
<tandem-delete path="/etc/passwd"/>"#,
        outside.display()
    );
    let proposal = f.engine.propose(&f.project, None, None, &reply).unwrap();
    assert!(proposal.plan.files.is_empty());
    assert_eq!(proposal.plan.operations.len(), 4);
    assert!(
        proposal
            .plan
            .operations
            .iter()
            .all(|op| op.status == OpStatus::Error)
    );
    assert!(f.engine.approve(proposal.message.id, None).is_err());
    assert!(!outside.exists());
    assert!(!f.root.join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_reply_without_tags_is_not_a_proposal() {
    let f = fixture(&[("a.txt", "a\n")]);
    let reply =
        "Here is how you would do it:\n```\n<tandem-write path=\"a.txt\">b</tandem-write>\n```\n";
    let proposal = f
        .engine
        .propose(&f.project, None, Some("how?"), reply)
        .unwrap();
    assert!(!proposal.plan.is_proposal());
    assert_eq!(proposal.message.approval_state, None);
    assert!(f.engine.approve(proposal.message.id, None).is_err());
    assert_eq!(proposal.chat.title, "how?");
}

#[test]
fn already_applied_blocks_need_no_commit() {
    let f = fixture(&[("a.txt", "new text\n")]);
    let head = f.head();
    let reply = r#"<tandem-search-replace path="a.txt">
<<<<<<< SEARCH
old text
=======
new text
>>>>>>> REPLACE
</tandem-search-replace>"#;
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    assert_eq!(proposal.plan.operations[0].status, OpStatus::AlreadyApplied);
    let outcome = f.engine.approve(proposal.message.id, None).unwrap();
    assert_eq!(outcome.commit, None);
    assert_eq!(f.head(), head);
}

#[test]
fn crlf_files_keep_crlf() {
    let f = fixture(&[("w.txt", "a\r\nb\r\n")]);
    let reply = r#"<tandem-search-replace path="w.txt">
<<<<<<< SEARCH
b
=======
B
>>>>>>> REPLACE
</tandem-search-replace>"#;
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    f.engine.approve(proposal.message.id, None).unwrap();
    assert_eq!(f.read("w.txt"), "a\r\nB\r\n");
}

#[test]
fn saving_a_file_commits_it() {
    let f = fixture(&[("a.txt", "a\n")]);
    let commit = f
        .engine
        .save_file(&f.project, "a.txt", b"edited\n")
        .unwrap()
        .unwrap();
    assert_eq!(f.head(), commit);
    assert_eq!(
        f.git(&["log", "-1", "--format=%s"]).trim(),
        "[tandem] Edit a.txt"
    );
    f.assert_clean();
    assert_eq!(
        f.engine
            .save_file(&f.project, "a.txt", b"edited\n")
            .unwrap(),
        None
    );
    assert!(f.engine.save_file(&f.project, "../x", b"x").is_err());
}

#[test]
fn an_executable_keeps_its_mode() {
    let f = fixture(&[("run.sh", "#!/bin/sh\necho 1\n")]);
    f.git(&["update-index", "--chmod=+x", "run.sh"]);
    f.git(&["commit", "-q", "-m", "exec"]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        f.root.join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let reply = "<tandem-write path=\"run.sh\">#!/bin/sh\necho 2\n</tandem-write>";
    let proposal = f.engine.propose(&f.project, None, None, reply).unwrap();
    f.engine.approve(proposal.message.id, None).unwrap();
    let mode = std::fs::metadata(f.root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(f.git(&["ls-tree", "HEAD", "run.sh"]).starts_with("100755"));
    f.assert_clean();
}

#[test]
fn a_chat_of_another_project_is_refused() {
    let f = fixture(&[("a.txt", "a\n")]);
    let other_root = f.dir.path().join("other");
    common::repo_with(&other_root, &[("b.txt", "b\n")]);
    let other = f.engine.add_project(&other_root, None).unwrap().project;
    let chat = f
        .engine
        .store()
        .create_chat(other.id, tandem_core::store::ChatMode::Build, None)
        .unwrap();
    let err = f
        .engine
        .propose(&f.project, Some(chat.id), None, "hi")
        .unwrap_err();
    assert!(matches!(err, EngineError::ChatNotInProject { .. }), "{err}");
}

#[test]
fn a_plan_is_made_once_and_made_again_only_when_what_it_read_changes() {
    let f = fixture(&[
        ("src/main.rs", APP),
        ("notes.txt", "some notes\n"),
        ("old.txt", "obsolete\n"),
    ]);
    let engine = &f.engine;
    let proposal = engine
        .propose(
            &f.project,
            None,
            Some("split it"),
            &reply_touching_everything(),
        )
        .unwrap();
    let id = proposal.message.id;
    let made = engine.plans_made();
    // Showing it again and again (the chat reloaded at the turn's end, the review opened,
    // `tandem diff`): no new plan, and the same one.
    for _ in 0..3 {
        assert_eq!(engine.review(id).unwrap().plan, proposal.plan);
    }
    assert_eq!(engine.plans_made(), made, "a review planned again");

    // A file the plan reads changes: the next review plans again and sees the conflict.
    std::fs::write(f.root.join("src/main.rs"), "fn main() {}\n").unwrap();
    let review = engine.review(id).unwrap();
    assert_eq!(engine.plans_made(), made + 1);
    let main = (review.plan.operations.iter())
        .find(|op| op.path == "src/main.rs")
        .unwrap();
    assert_eq!(main.status, OpStatus::Error, "{main:?}");
    assert_eq!(engine.review(id).unwrap().plan, review.plan);
    assert_eq!(engine.plans_made(), made + 1);

    // A path it would create appears (a folder above it, here): planned again.
    std::fs::create_dir(f.root.join("docs")).unwrap();
    std::fs::write(f.root.join("docs/notes.md"), "in the way\n").unwrap();
    engine.review(id).unwrap();
    assert_eq!(engine.plans_made(), made + 2);

    // Approving never trusts a kept plan: it plans under the lock.
    std::fs::write(f.root.join("src/main.rs"), APP).unwrap();
    std::fs::remove_dir_all(f.root.join("docs")).unwrap();
    let before = engine.plans_made();
    engine.approve(id, None).unwrap();
    assert!(engine.plans_made() > before, "approval used a kept plan");
    assert_eq!(
        f.read("src/lib.rs"),
        "pub fn greet() -> &'static str {\n    \"hi\"\n}\n"
    );
}
