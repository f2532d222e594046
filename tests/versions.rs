//! Versions: history, restore and undo, checked with the git CLI.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;

use common::fixture;
use tandem::EngineError;
use tandem::store::{NewMessage, Role};

fn approve(f: &common::Fixture, chat: Option<i64>, reply: &str) -> (i64, i64, String) {
    let proposal = f
        .engine
        .propose(&f.project, chat, Some("change"), reply)
        .unwrap();
    let commit = f
        .engine
        .approve(proposal.message.id, None)
        .unwrap()
        .commit
        .unwrap();
    (proposal.chat.id, proposal.message.id, commit)
}

#[test]
fn log_lists_commits_with_their_files() {
    let f = fixture(&[("a.txt", "a\n")]);
    approve(
        &f,
        None,
        "<tandem-write path=\"b.txt\">b\n</tandem-write><tandem-delete path=\"a.txt\"/>",
    );
    let log = f.engine.log(&f.project, 10).unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].hash, f.head());
    assert!(log[0].message.starts_with("[tandem] "));
    let files: Vec<_> = log[0].files.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(files, ["a.txt", "b.txt"]);
    assert_eq!(log[1].message, "initial");
    let diff = f
        .engine
        .version_diff(&f.project, &log[0].hash[..10])
        .unwrap();
    assert!(
        diff.contains("+++ b/b.txt") && diff.contains("-a"),
        "{diff}"
    );
    assert!(f.engine.version_diff(&f.project, "not-a-hash").is_err());
}

#[test]
fn restore_brings_back_the_tree_and_drops_later_messages() {
    let f = fixture(&[("a.txt", "v0\n")]);
    let (chat, first_msg, first) =
        approve(&f, None, "<tandem-write path=\"a.txt\">v1\n</tandem-write>");
    approve(
        &f,
        Some(chat),
        "<tandem-write path=\"a.txt\">v2\n</tandem-write><tandem-write path=\"extra.txt\">x\n</tandem-write>",
    );
    // Uncommitted work at restore time is committed, not lost.
    std::fs::write(f.root.join("scratch.txt"), "unsaved idea\n").unwrap();
    let count = f.commit_count();

    let outcome = f.engine.restore(&f.project, &first).unwrap();
    assert_eq!(outcome.restored, first);
    assert_eq!(f.read("a.txt"), "v1\n");
    assert!(!f.root.join("extra.txt").exists());
    assert!(!f.root.join("scratch.txt").exists());
    assert_eq!(f.commit_count(), count + 2, "save commit + restore commit");
    assert_eq!(
        f.git(&["log", "-1", "--format=%s"]).trim(),
        format!("[tandem] Restore {}", &first[..7])
    );
    assert_eq!(f.git(&["show", "HEAD~1:scratch.txt"]), "unsaved idea\n");
    assert_eq!(f.git(&["diff", &first, "HEAD"]), "");
    f.assert_clean();
    // The chat ends at the message that carries the restored commit.
    let messages = f.engine.store().messages(chat).unwrap();
    assert_eq!(messages.last().unwrap().id, first_msg);
    assert_eq!(outcome.removed_messages, 2);
}

#[test]
fn restoring_to_a_chats_start_clears_it() {
    let f = fixture(&[("a.txt", "v0\n")]);
    let start = f.head();
    let (chat, _, _) = approve(&f, None, "<tandem-write path=\"a.txt\">v1\n</tandem-write>");
    f.engine.restore(&f.project, &start).unwrap();
    assert_eq!(f.read("a.txt"), "v0\n");
    assert!(f.engine.store().messages(chat).unwrap().is_empty());
}

#[test]
fn undo_reverts_the_last_approved_change_only() {
    let f = fixture(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let (chat, _, _) = approve(&f, None, "<tandem-write path=\"a.txt\">A\n</tandem-write>");
    let (_, second_msg, second) = approve(
        &f,
        Some(chat),
        "<tandem-write path=\"b.txt\">B\n</tandem-write>",
    );
    // A later manual edit to another file survives the undo.
    f.engine
        .save_file(&f.project, "c.txt", b"manual\n")
        .unwrap();

    let undo = f.engine.undo(&f.project).unwrap();
    assert_eq!(undo.reverted, second);
    assert_eq!(undo.message_id, second_msg);
    assert_eq!(f.read("b.txt"), "b\n");
    assert_eq!(f.read("a.txt"), "A\n");
    assert_eq!(f.read("c.txt"), "manual\n");
    assert!(
        f.git(&["log", "-1", "--format=%s"])
            .starts_with("[tandem] Undo ")
    );
    f.assert_clean();
    let message = f.engine.store().message(second_msg).unwrap();
    assert_eq!(message.reverted_by.as_deref(), Some(undo.commit.as_str()));

    // The next undo takes the change before.
    f.engine.undo(&f.project).unwrap();
    assert_eq!(f.read("a.txt"), "a\n");
    assert!(matches!(
        f.engine.undo(&f.project),
        Err(EngineError::NothingToUndo)
    ));
}

#[test]
fn undo_refuses_when_later_edits_conflict() {
    let f = fixture(&[("a.txt", "a\n")]);
    approve(&f, None, "<tandem-write path=\"a.txt\">A\n</tandem-write>");
    f.engine
        .save_file(&f.project, "a.txt", b"A edited by hand\n")
        .unwrap();
    let head = f.head();
    let err = f.engine.undo(&f.project).unwrap_err();
    assert!(err.to_string().contains("a.txt"), "{err}");
    assert_eq!(f.head(), head);
    assert_eq!(f.read("a.txt"), "A edited by hand\n");
    f.assert_clean();
}

#[test]
fn messages_of_other_chats_survive_a_restore() {
    let f = fixture(&[("a.txt", "a\n")]);
    let (_, _, first) = approve(&f, None, "<tandem-write path=\"a.txt\">1\n</tandem-write>");
    let other = f
        .engine
        .store()
        .create_chat(f.project.id, tandem::store::ChatMode::Ask, None)
        .unwrap();
    f.engine
        .store()
        .insert_message(&NewMessage::new(other.id, Role::User, "unrelated"))
        .unwrap();
    f.engine.restore(&f.project, &first).unwrap();
    assert_eq!(f.engine.store().messages(other.id).unwrap().len(), 1);
}

/// A chat started at `commit` (as the GUI's "new chat" records HEAD) with a question and an
/// answer: it changed nothing.
fn ask_chat(f: &common::Fixture, commit: &str) -> i64 {
    let chat = f
        .engine
        .store()
        .create_chat(f.project.id, tandem::store::ChatMode::Ask, Some(commit))
        .unwrap();
    for (role, text) in [
        (Role::User, "what does a.txt do?"),
        (Role::Assistant, "it…"),
    ] {
        f.engine
            .store()
            .insert_message(&NewMessage::new(chat.id, role, text))
            .unwrap();
    }
    chat.id
}

#[test]
fn restoring_the_current_version_changes_nothing() {
    // Issue 10: "the project already is at …" deleted every message of two unrelated chats.
    let f = fixture(&[("a.txt", "a\n")]);
    let (chat, _, current) = approve(&f, None, "<tandem-write path=\"a.txt\">1\n</tandem-write>");
    // A later turn in the chat that made `current`: kept, the version did not change.
    f.engine
        .store()
        .insert_message(&NewMessage::new(chat, Role::User, "and now?"))
        .unwrap();
    let others = [ask_chat(&f, &current), ask_chat(&f, &current)];
    let before: Vec<_> = [chat, others[0], others[1]]
        .iter()
        .map(|&c| f.engine.store().messages(c).unwrap())
        .collect();
    let count = f.commit_count();

    let outcome = f.engine.restore(&f.project, &current[..10]).unwrap();
    assert_eq!(outcome.restored, current);
    assert_eq!(outcome.commit, None);
    assert_eq!(outcome.removed_messages, 0);
    assert_eq!(f.head(), current);
    assert_eq!(f.commit_count(), count);
    let after: Vec<_> = [chat, others[0], others[1]]
        .iter()
        .map(|&c| f.engine.store().messages(c).unwrap())
        .collect();
    assert_eq!(after, before);
    f.assert_clean();
}

#[test]
fn a_restore_keeps_chats_that_started_there_but_changed_nothing() {
    let f = fixture(&[("a.txt", "v0\n")]);
    let start = f.head();
    let unrelated = ask_chat(&f, &start);
    let (chat, _, _) = approve(&f, None, "<tandem-write path=\"a.txt\">v1\n</tandem-write>");
    let outcome = f.engine.restore(&f.project, &start).unwrap();
    assert!(outcome.commit.is_some());
    assert_eq!(f.read("a.txt"), "v0\n");
    // The chat whose change the restore undid is cleared; the question next to it is not.
    assert!(f.engine.store().messages(chat).unwrap().is_empty());
    assert_eq!(f.engine.store().messages(unrelated).unwrap().len(), 2);
    assert_eq!(outcome.removed_messages, 2);
}
