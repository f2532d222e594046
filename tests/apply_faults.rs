//! Fault injection: a write fails midway through an apply. The tree must be byte-identical to
//! before, and no commit may exist.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{fixture, repo_with};
use tandem_core::Engine;
use tandem_core::EngineError;
use tandem_core::edits::ApplyError;
use tandem_core::folder::{Fs, RealFs};
use tandem_core::store::ApprovalState;

/// The real disk, except that write number `fail_at` (counting from 1) fails after having
/// written half the file in place: the worst case an apply can meet.
struct FailingFs {
    calls: AtomicUsize,
    fail_at: usize,
}

impl Fs for FailingFs {
    fn write(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at {
            std::fs::write(path, &bytes[..bytes.len() / 2])?;
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "disk full (injected)",
            ));
        }
        RealFs.write(path, bytes, mode)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        RealFs.remove(path)
    }
}

fn reply() -> &'static str {
    r#"<tandem-delete path="gone.txt"/>
<tandem-rename from="keep.txt" to="moved/keep.txt"/>
<tandem-write path="a.txt">A changed
</tandem-write>
<tandem-write path="new/dir/b.txt">brand new
</tandem-write>
<tandem-write path="c.txt">C changed
</tandem-write>"#
}

#[test]
fn a_failing_write_at_any_step_leaves_the_tree_identical_and_commits_nothing() {
    // Steps: remove gone.txt, remove keep.txt, then writes of moved/keep.txt, a.txt,
    // new/dir/b.txt, c.txt. Fail each write in turn.
    for fail_at in 3..=6 {
        let f = fixture(&[
            ("a.txt", "a\n"),
            ("c.txt", "c\n"),
            ("gone.txt", "bye\n"),
            ("keep.txt", "keep me\n"),
        ]);
        let engine = Engine::open(Some(&f.data))
            .unwrap()
            .with_fs(Arc::new(FailingFs {
                calls: AtomicUsize::new(0),
                fail_at,
            }));
        let proposal = engine.propose(&f.project, None, None, reply()).unwrap();
        let snapshot = f.snapshot();
        let head = f.head();
        let count = f.commit_count();

        let err = engine.approve(proposal.message.id, None).unwrap_err();
        assert!(
            matches!(err, EngineError::Apply(ApplyError::RolledBack { .. })),
            "step {fail_at}: {err}"
        );
        assert!(err.to_string().contains("nothing was committed"));
        assert_eq!(f.snapshot(), snapshot, "step {fail_at}: tree changed");
        assert_eq!(f.head(), head);
        assert_eq!(f.commit_count(), count);
        f.assert_clean();
        let message = engine.store().message(proposal.message.id).unwrap();
        assert_eq!(message.approval_state, Some(ApprovalState::Pending));

        // The same proposal applies cleanly once the disk behaves.
        let outcome = f.engine.approve(proposal.message.id, None).unwrap();
        assert!(outcome.commit.is_some());
        assert_eq!(f.read("moved/keep.txt"), "keep me\n");
        assert_eq!(f.read("new/dir/b.txt"), "brand new\n");
        assert!(!f.root.join("gone.txt").exists());
        f.assert_clean();
    }
}

#[test]
fn a_conflict_found_at_apply_time_writes_nothing() {
    // The file changes between the review and the write: apply re-checks every hash.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    repo_with(&root, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let root = root.canonicalize().unwrap();
    let plan = tandem_core::edits::build_plan(
        &root,
        "<tandem-write path=\"a.txt\">A\n</tandem-write><tandem-write path=\"b.txt\">B\n</tandem-write>",
    )
    .unwrap();
    let writes = plan.writes(None).unwrap();
    std::fs::write(root.join("b.txt"), "changed meanwhile\n").unwrap();
    let err = tandem_core::edits::apply_writes(&RealFs, &writes).unwrap_err();
    assert!(
        matches!(&err, ApplyError::Conflict(paths) if paths == &["b.txt"]),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
}

/// Makes the database refuse to record any approval, as a full disk or a locked file would,
/// until [`heal`] is called. A trigger: the engine's own write fails the way SQLite fails.
fn refuse_approvals(f: &common::Fixture) {
    let db = rusqlite::Connection::open(f.data.join("tandem.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER refuse_approvals BEFORE UPDATE ON messages
         WHEN NEW.approval_state = 'approved'
         BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END;",
    )
    .unwrap();
}

fn heal(f: &common::Fixture) {
    let db = rusqlite::Connection::open(f.data.join("tandem.db")).unwrap();
    db.execute_batch("DROP TRIGGER refuse_approvals").unwrap();
}

#[test]
fn an_approval_committed_but_not_recorded_is_recorded_from_git() {
    // Issue 10: the approval was recorded only after the commit; a failure in between left a
    // committed change marked pending (and it could then be neither approved nor undone).
    let f = fixture(&[("a.txt", "a\n")]);
    let proposal = f
        .engine
        .propose(
            &f.project,
            None,
            None,
            "<tandem-write path=\"a.txt\">A\n</tandem-write>",
        )
        .unwrap();
    let id = proposal.message.id;
    let head = f.head();
    refuse_approvals(&f);

    let err = f.engine.approve(id, None).unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    // The change is on disk and committed: the error says so rather than hiding it.
    let commit = f.head();
    assert_ne!(commit, head);
    assert_eq!(f.git(&["show", "HEAD:a.txt"]), "A\n");
    assert!(err.to_string().contains(&commit[..7]), "{err}");
    assert_eq!(f.read("a.txt"), "A\n");
    f.assert_clean();

    // Once the database works again, the next start records what git has.
    heal(&f);
    let engine = Engine::open(Some(&f.data)).unwrap();
    let message = engine.store().message(id).unwrap();
    assert_eq!(message.approval_state, Some(ApprovalState::Approved));
    assert_eq!(message.commit_hash.as_deref(), Some(commit.as_str()));
    // …so it can be undone like any approved change.
    let undo = engine.undo(&f.project).unwrap();
    assert_eq!(undo.reverted, commit);
    assert_eq!(f.read("a.txt"), "a\n");
    f.assert_clean();
}

#[test]
fn a_review_settles_an_interrupted_approval_from_git() {
    let f = fixture(&[("a.txt", "a\n")]);
    let reply = "<tandem-write path=\"a.txt\">A\n</tandem-write>";
    // The approval landed, but the record failed (and the engine kept running).
    let landed = f.engine.propose(&f.project, None, None, reply).unwrap();
    refuse_approvals(&f);
    f.engine.approve(landed.message.id, None).unwrap_err();
    heal(&f);
    let review = f.engine.review(landed.message.id).unwrap();
    assert_eq!(review.message.approval_state, Some(ApprovalState::Approved));
    assert_eq!(
        review.message.commit_hash.as_deref(),
        Some(f.head().as_str())
    );
    assert!(matches!(
        f.engine.reject(landed.message.id, None),
        Err(EngineError::NotReviewable { .. })
    ));

    // An approval that stopped before HEAD moved (a crash): its commit is not in history,
    // so the proposal is still pending and can be approved.
    let stopped = f
        .engine
        .propose(
            &f.project,
            Some(landed.chat.id),
            None,
            "<tandem-write path=\"b.txt\">b\n</tandem-write>",
        )
        .unwrap();
    let dangling = f.git(&[
        "commit-tree",
        "HEAD^{tree}",
        "-p",
        "HEAD",
        "-m",
        "never landed",
    ]);
    f.engine
        .store()
        .set_applying(stopped.message.id, Some(dangling.trim()))
        .unwrap();
    let review = f.engine.review(stopped.message.id).unwrap();
    assert_eq!(review.message.approval_state, Some(ApprovalState::Pending));
    assert_eq!(review.message.commit_hash, None);
    let outcome = f.engine.approve(stopped.message.id, None).unwrap();
    assert_eq!(outcome.commit.as_deref(), Some(f.head().as_str()));
    assert_eq!(f.read("b.txt"), "b\n");
    f.assert_clean();
}
