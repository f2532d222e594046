//! Versions: history, restore and undo, checked with the git CLI.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;

use common::{fixture, git, repo_with};
use tandem_core::EngineError;
use tandem_core::store::{NewMessage, Role};

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
        .create_chat(f.project.id, tandem_core::store::ChatMode::Ask, None)
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
        .create_chat(
            f.project.id,
            tandem_core::store::ChatMode::Ask,
            Some(commit),
        )
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

/// `git ls-tree` of a commit: every path it tracks.
fn tracked(f: &common::Fixture, commit: &str) -> Vec<String> {
    f.git(&["ls-tree", "-r", "--name-only", commit])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_restore_never_touches_ignored_files() {
    // The first version tracked `.env` and a `build` script; later both became ignored
    // (`.env` holds today's secret, `build/` today's output). Restoring the first version
    // used to overwrite them with a forced checkout.
    let f = fixture(&[
        ("a.txt", "v0\n"),
        (".env", "TOKEN=old\n"),
        ("build", "old build script\n"),
    ]);
    let first = f.head();
    f.git(&["rm", "-q", "--cached", ".env"]);
    f.git(&["rm", "-q", "build"]);
    std::fs::write(f.root.join(".gitignore"), ".env\nbuild/\n").unwrap();
    std::fs::write(f.root.join("a.txt"), "v1\n").unwrap();
    f.git(&["add", "-A"]);
    f.git(&["commit", "-q", "-m", "ignore secrets and output"]);
    std::fs::write(f.root.join(".env"), "TOKEN=today\n").unwrap();
    std::fs::create_dir_all(f.root.join("build")).unwrap();
    std::fs::write(f.root.join("build/out.bin"), "today's output\n").unwrap();

    let outcome = f.engine.restore(&f.project, &first).unwrap();
    assert!(outcome.commit.is_some());
    assert_eq!(f.read("a.txt"), "v0\n");
    assert_eq!(f.read(".env"), "TOKEN=today\n");
    assert_eq!(f.read("build/out.bin"), "today's output\n");
    // The restore commit leaves out what it kept, and says so.
    assert_eq!(outcome.kept, [".env", "build"]);
    assert_eq!(tracked(&f, "HEAD"), ["a.txt"]);
    // Nothing of today's secret reached history.
    let all = f.git(&["log", "--all", "-p", "--format=%H"]);
    assert!(!all.contains("TOKEN=today"), "{all}");
    f.git(&["fsck", "--strict", "--no-progress"]);
}

#[test]
fn committing_everything_leaves_secret_looking_files_out() {
    let f = fixture(&[("a.txt", "a\n")]);
    let first = f.head();
    approve(&f, None, "<tandem-write path=\"a.txt\">1\n</tandem-write>");
    let secrets = [
        ".env",
        ".env.local",
        "server.pem",
        "tls/private.key",
        "keys/id_rsa",
        "cert.p12",
        "credentials.json",
        "config/secrets.yaml",
    ];
    for path in secrets.iter().chain(&["notes.txt", ".env.example"]) {
        let full = f.root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, format!("content of {path}\n")).unwrap();
    }

    // Restoring saves uncommitted work first: the notes, never the secrets.
    let outcome = f.engine.restore(&f.project, &first).unwrap();
    let saved = tracked(&f, "HEAD~1");
    assert!(saved.contains(&"notes.txt".to_string()), "{saved:?}");
    assert!(saved.contains(&".env.example".to_string()), "{saved:?}");
    for path in secrets {
        assert!(
            !saved.contains(&path.to_string()),
            "{path} committed: {saved:?}"
        );
        assert_eq!(
            f.read(path),
            format!("content of {path}\n"),
            "{path} touched"
        );
    }
    let mut left_out = outcome.left_out.clone();
    left_out.sort();
    let mut expected: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(left_out, expected);
    assert!(
        !tracked(&f, "HEAD")
            .iter()
            .any(|p| secrets.contains(&p.as_str()))
    );
    let status = f.git(&["status", "--porcelain", "--untracked-files=all"]);
    let untracked: Vec<&str> = status
        .lines()
        .filter_map(|l| l.strip_prefix("?? "))
        .collect();
    assert_eq!(untracked.len(), secrets.len(), "{status}");

    // Undo saves the same way.
    let undo_target = approve(&f, None, "<tandem-write path=\"b.txt\">b\n</tandem-write>");
    std::fs::write(f.root.join("more.txt"), "more\n").unwrap();
    let undo = f.engine.undo(&f.project).unwrap();
    assert_eq!(undo.reverted, undo_target.2);
    assert_eq!(undo.left_out.len(), secrets.len());
    assert!(
        !tracked(&f, "HEAD")
            .iter()
            .any(|p| secrets.contains(&p.as_str()))
    );
    assert!(tracked(&f, "HEAD").contains(&"more.txt".to_string()));
}

#[test]
fn putting_a_folder_under_git_leaves_secret_looking_files_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("plain");
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::write(root.join("main.py"), "print('hi')\n").unwrap();
    std::fs::write(root.join("deploy/id_rsa"), "-----BEGIN KEY-----\n").unwrap();
    let engine = tandem_core::Engine::open(Some(&dir.path().join("data"))).unwrap();
    let added = engine.add_project(&root, None).unwrap();
    assert!(added.initialized_git);
    assert_eq!(added.left_out, ["deploy/id_rsa"]);
    let files = common::git(&root, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert_eq!(files, ".gitignore\nmain.py\n");
    assert_eq!(
        std::fs::read_to_string(root.join("deploy/id_rsa")).unwrap(),
        "-----BEGIN KEY-----\n"
    );
}

#[test]
fn undo_refuses_to_overwrite_an_ignored_file() {
    let f = fixture(&[("local.cfg", "committed\n")]);
    approve(&f, None, "<tandem-delete path=\"local.cfg\"/>");
    // The person now keeps their own, ignored copy; undoing the delete would write over it.
    std::fs::write(f.root.join(".git/info/exclude"), "local.cfg\n").unwrap();
    std::fs::write(f.root.join("local.cfg"), "mine\n").unwrap();
    let head = f.head();
    let err = f.engine.undo(&f.project).unwrap_err();
    assert!(err.to_string().contains("local.cfg"), "{err}");
    assert_eq!(f.read("local.cfg"), "mine\n");
    assert_eq!(f.head(), head);
    f.assert_clean();
}

/// What a process killed half-way through landing a change leaves: the record, some files
/// written, a temporary file. Recovery puts back exactly the files that hold the change's
/// version, keeps one changed since by someone else, and leaves the tree as HEAD's.
#[test]
fn a_change_left_half_landed_is_put_back_at_the_next_start() {
    use tandem_core::vcs::landing;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    repo_with(
        &root,
        &[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")],
    );
    let repo = tandem_core::vcs::open(&root).unwrap();
    let head = tandem_core::vcs::head_oid(&repo).unwrap();
    let changes: Vec<tandem_core::vcs::PathContent<'_>> = vec![
        ("a.txt", Some((b"A\n".as_slice(), 0o100644))),
        ("b.txt", Some((b"B\n".as_slice(), 0o100644))),
        ("c.txt", None),
        ("new/d.txt", Some((b"D\n".as_slice(), 0o100644))),
    ];
    let target = tandem_core::vcs::prepare_commit(&repo, head, &changes, "change")
        .unwrap()
        .unwrap();
    landing::begin(&repo, target).unwrap();
    // Killed after writing a, c and d; b was then edited by the person.
    std::fs::write(root.join("a.txt"), "A\n").unwrap();
    std::fs::remove_file(root.join("c.txt")).unwrap();
    std::fs::create_dir_all(root.join("new")).unwrap();
    std::fs::write(root.join("new/d.txt"), "D\n").unwrap();
    std::fs::write(root.join("b.txt"), "edited by hand\n").unwrap();
    std::fs::write(root.join(".tandem-write-x1y2z3.tmp"), "half a write").unwrap();

    let recovered = landing::recover(&repo).unwrap().unwrap();
    assert!(!recovered.landed);
    assert_eq!(recovered.restored, ["a.txt", "c.txt", "new/d.txt"]);
    assert_eq!(recovered.kept, ["b.txt"]);
    assert_eq!(git(&root, &["status", "--porcelain"]), " M b.txt\n");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(root.join("c.txt")).unwrap(), "c\n");
    assert!(!root.join("new/d.txt").exists());
    assert!(!root.join(".tandem-write-x1y2z3.tmp").exists());
    // The record is gone: nothing more to do.
    assert_eq!(landing::recover(&repo).unwrap(), None);

    // Killed between making the folders of an added file and writing it: the folders go;
    // an empty folder the person had before the landing stays.
    std::fs::create_dir_all(root.join("kept/empty")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(30));
    landing::begin(&repo, target).unwrap();
    std::fs::create_dir_all(root.join("new")).unwrap();
    std::fs::write(root.join("new/.tandem-write-a1b2c3.tmp"), "half").unwrap();
    let recovered = landing::recover(&repo).unwrap().unwrap();
    assert!(recovered.restored.is_empty(), "{recovered:?}");
    assert!(
        !root.join("new").exists(),
        "the landing's empty folder stayed"
    );
    assert!(root.join("kept/empty").is_dir());
    std::fs::remove_dir_all(root.join("kept")).unwrap();

    // Killed inside the making of those folders (`deep` made, `deep/er` not yet): the folder
    // that was made goes too, though the one below it was never there.
    let nested: Vec<tandem_core::vcs::PathContent<'_>> =
        vec![("deep/er/e.txt", Some((b"E\n".as_slice(), 0o100644)))];
    let deep = tandem_core::vcs::prepare_commit(&repo, head, &nested, "nested")
        .unwrap()
        .unwrap();
    landing::begin(&repo, deep).unwrap();
    std::fs::create_dir(root.join("deep")).unwrap();
    landing::recover(&repo).unwrap().unwrap();
    assert!(
        !root.join("deep").exists(),
        "the landing's empty folder stayed"
    );

    // Landed (HEAD moved) but the record stayed: the index is brought up to date, files
    // are left as they are.
    std::fs::write(root.join("b.txt"), "b\n").unwrap();
    let target = tandem_core::vcs::prepare_commit(&repo, head, &changes, "change")
        .unwrap()
        .unwrap();
    landing::begin(&repo, target).unwrap();
    std::fs::write(root.join("a.txt"), "A\n").unwrap();
    std::fs::write(root.join("b.txt"), "B\n").unwrap();
    std::fs::remove_file(root.join("c.txt")).unwrap();
    std::fs::create_dir_all(root.join("new")).unwrap();
    std::fs::write(root.join("new/d.txt"), "D\n").unwrap();
    tandem_core::vcs::advance_head(&repo, head, target, "change").unwrap();
    let recovered = landing::recover(&repo).unwrap().unwrap();
    assert!(recovered.landed);
    assert!(recovered.restored.is_empty());
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

/// `git args` in `root` with the commits dated `time` (seconds since the epoch).
fn git_at(root: &std::path::Path, time: u32, args: &[&str]) -> String {
    common::git_at(root, &format!("@{time} +0000"), args)
}

#[test]
fn the_history_comes_as_git_log_lists_it_merges_and_a_shallow_clone_included() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    repo_with(&root, &[("a.txt", "a\n")]);
    // Two lines of work interleaved in time, then merged: the side's last commit is newer
    // than main's (git log lists it first, a walk parents-first would not).
    let commit = |time: u32, file: &str| {
        std::fs::write(root.join(file), format!("{time}\n")).unwrap();
        git_at(&root, time, &["add", "-A"]);
        git_at(
            &root,
            time,
            &["commit", "-q", "-m", &format!("{file} at {time}")],
        );
    };
    let checkout = |branch: &str| git_at(&root, 0, &["checkout", "-q", branch]);
    git_at(&root, 0, &["branch", "side"]);
    checkout("side");
    commit(1_750_000_000, "side.txt");
    commit(1_755_000_000, "side.txt");
    checkout("main");
    commit(1_760_000_000, "main.txt");
    commit(1_770_000_000, "main.txt");
    checkout("side");
    commit(1_775_000_000, "side.txt");
    checkout("main");
    git_at(
        &root,
        1_780_000_000,
        &["merge", "-q", "--no-ff", "-m", "merge side", "side"],
    );
    commit(1_790_000_000, "main.txt");
    let listed = |root: &std::path::Path, limit: usize| -> Vec<String> {
        let repo = tandem_core::vcs::open(root).unwrap();
        (tandem_core::vcs::log(&repo, limit).unwrap().into_iter())
            .map(|v| v.hash)
            .collect()
    };
    let git_log = |root: &std::path::Path, limit: usize| -> Vec<String> {
        let out = git_at(root, 0, &["log", "--format=%H", "-n", &limit.to_string()]);
        out.lines().map(str::to_string).collect()
    };
    assert_eq!(listed(&root, 100).len(), 8);
    for limit in [1, 3, 4, 6, 100] {
        assert_eq!(listed(&root, limit), git_log(&root, limit), "{limit}");
    }
    // A shallow clone's history ends where the clone cut it, without an error.
    let shallow = dir.path().join("shallow");
    let url = format!("file://{}", root.display());
    let target = shallow.to_str().unwrap();
    git_at(
        dir.path(),
        0,
        &["clone", "-q", "--depth", "2", &url, target],
    );
    let cut = listed(&shallow, 100);
    assert_eq!(cut, git_log(&shallow, 100));
    assert_eq!(cut.len(), 2, "{cut:?}");
}

#[test]
fn a_turn_reads_only_the_newest_commits_of_a_long_history() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    repo_with(&root, &[("a.txt", "0\n")]);
    for i in 1..=30 {
        std::fs::write(root.join("a.txt"), format!("{i}\n")).unwrap();
        git(&root, &["commit", "-q", "-am", &format!("edit {i}")]);
    }
    // An old commit gone from the store: a walk that reads the whole history before giving
    // the newest commits fails on it; one that reads only what it gives does not.
    let old = git(&root, &["rev-parse", "HEAD~20"]);
    let old = old.trim();
    std::fs::remove_file(root.join(".git/objects").join(&old[..2]).join(&old[2..])).unwrap();
    let repo = tandem_core::vcs::open(&root).unwrap();
    assert_eq!(tandem_core::vcs::recently_edited(&repo).unwrap(), ["a.txt"]);
    let newest = tandem_core::vcs::log(&repo, 5).unwrap();
    let messages: Vec<&str> = newest.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(
        messages,
        ["edit 30", "edit 29", "edit 28", "edit 27", "edit 26"]
    );
}

#[test]
fn recently_edited_passes_over_the_import_and_mass_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    sixty_file_repo(&root);
    let recent =
        || tandem_core::vcs::recently_edited(&tandem_core::vcs::open(&root).unwrap()).unwrap();
    // A fresh import: every file is in the first commit, and none was edited yet.
    assert!(recent().is_empty(), "{:?}", recent());
    let commit = |message: &str| {
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", message]);
    };
    std::fs::write(root.join("src/f30.rs"), "fn f30() { 30 }\n").unwrap();
    commit("edit f30");
    std::fs::remove_file(root.join("src/f20.rs")).unwrap();
    std::fs::write(root.join("src/f10.rs"), "fn f10() { 10 }\n").unwrap();
    commit("delete f20, edit f10");
    // A reformat of every file says nothing of what the person works on.
    reformat_every_file(&root);
    commit("reformat");
    std::fs::write(root.join("src/new.rs"), "fn new() {}\n").unwrap();
    std::fs::write(root.join("src/f30.rs"), "fn f30() { 31 }\n").unwrap();
    commit("add new, edit f30 again");
    std::fs::create_dir_all(root.join("lib/deep")).unwrap();
    std::fs::rename(root.join("src/f40.rs"), root.join("lib/deep/f40.rs")).unwrap();
    commit("move f40");
    assert_eq!(
        recent(),
        ["lib/deep/f40.rs", "src/f30.rs", "src/new.rs", "src/f10.rs"]
    );
}

#[test]
fn the_head_of_a_commits_patch_is_its_start_cut_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let files: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("src/f{i:03}.rs"),
                format!("fn f{i}() {{}}\n").repeat(20),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    repo_with(&root, &files);
    let repo = tandem_core::vcs::open(&root).unwrap();
    let commit = git(&root, &["rev-parse", "HEAD"]);
    let commit = commit.trim();
    let whole = tandem_core::vcs::commit_patch(&repo, commit).unwrap();
    assert!(
        whole.contains("+++ b/src/f299.rs"),
        "every file is in the whole patch"
    );
    let head = tandem_core::vcs::commit_patch_head(&repo, commit, 1_000).unwrap();
    assert!(whole.starts_with(&head));
    // Its first 1,000 bytes and at most a line more.
    assert!(head.len() > 1_000 && head.len() < 1_100, "{}", head.len());
    assert_eq!(
        tandem_core::vcs::commit_patch_head(&repo, commit, usize::MAX).unwrap(),
        whole
    );
}

#[test]
fn what_each_commit_said_and_changed_is_read_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    sixty_file_repo(&root);
    let commit = |message: &str| commit_everything(&root, message);
    std::fs::write(root.join("src/f01.rs"), "fn f1() { 1 }\n").unwrap();
    std::fs::remove_file(root.join("src/f02.rs")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("lib/new.rs"), "fn new() {}\n").unwrap();
    let edit = commit("Round invoice totals\n\nThe body is not the subject.");
    reformat_every_file(&root);
    let reformat = commit("reformat");
    git(&root, &["checkout", "-q", "-b", "side", &edit]);
    std::fs::write(root.join("lib/side.rs"), "fn side() {}\n").unwrap();
    let side = commit("side edit");
    git(&root, &["checkout", "-q", "-"]);
    git(
        &root,
        &["merge", "-q", "--no-ff", "-m", "merge side", "side"],
    );
    let merge = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let import = git(&root, &["rev-list", "--max-parents=0", "HEAD"])
        .trim()
        .to_string();
    let repo = tandem_core::vcs::open(&root).unwrap();
    let newest = tandem_core::vcs::newest_commits(&repo, 10).unwrap();
    // HEAD first; the others in time order, which within one second is any.
    assert_eq!(newest[0], merge);
    let mut all = newest.clone();
    all.sort();
    let mut expected = vec![
        merge.clone(),
        side.clone(),
        reformat.clone(),
        edit.clone(),
        import.clone(),
    ];
    expected.sort();
    assert_eq!(all, expected);
    assert_eq!(
        tandem_core::vcs::newest_commits(&repo, 2).unwrap(),
        newest[..2]
    );
    let read = |id: &str| tandem_core::vcs::commit_changes(&repo, id).unwrap();
    // Added and changed files, in path order; the deleted one is not there.
    let said = read(&edit);
    assert_eq!(said.subject, "Round invoice totals");
    assert_eq!(said.files, ["lib/new.rs", "src/f01.rs"]);
    assert!(said.moved.is_empty(), "{said:?}");
    assert_eq!(read(&side).files, ["lib/side.rs"]);
    // The import, a merge and a mass change say nothing of single files.
    for (id, subject) in [
        (&import, "initial"),
        (&merge, "merge side"),
        (&reformat, "reformat"),
    ] {
        let said = read(id);
        assert!(said.subject.starts_with(subject), "{said:?}");
        assert!(said.files.is_empty(), "{subject}: {said:?}");
    }
    assert!(tandem_core::vcs::commit_changes(&repo, "not a commit").is_err());
}

#[test]
fn the_files_each_commit_moved_are_read_as_git_finds_renames() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    sixty_file_repo(&root);
    let commit = |message: &str| commit_everything(&root, message);
    let long: String = (0..40)
        .map(|i| format!("fn step{i}() {{ {i} }}\n"))
        .collect();
    std::fs::write(root.join("src/steps.rs"), &long).unwrap();
    commit("steps");
    // Moved and changed a little on the way (git's rename, not identical content).
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("lib/steps.rs"), long.replace("{ 7 }", "{ 70 }")).unwrap();
    std::fs::remove_file(root.join("src/steps.rs")).unwrap();
    let moved = commit("Steps live in lib");
    // The whole folder moved: a mass change, whose moves still count.
    git(&root, &["mv", "src", "core"]);
    let folder = commit("src is core now");
    // 60 files moved, each edited a little: a mass change whose moves git finds by
    // similarity.
    let body = |i: usize| {
        (0..20)
            .map(|l| format!("fn g{i}_{l}() {{}}\n"))
            .collect::<String>()
    };
    std::fs::create_dir_all(root.join("gen")).unwrap();
    for i in 0..60 {
        std::fs::write(root.join(format!("gen/g{i:02}.rs")), body(i)).unwrap();
    }
    commit("generated");
    std::fs::rename(root.join("gen"), root.join("out")).unwrap();
    for i in 0..60 {
        let text = body(i).replace("_3()", "_three()");
        std::fs::write(root.join(format!("out/g{i:02}.rs")), text).unwrap();
    }
    let edited = commit("out, edited");
    std::fs::write(root.join("core/f05.rs"), "fn f5() { 5 }\n").unwrap();
    let edit = commit("edit");
    let repo = tandem_core::vcs::open(&root).unwrap();
    let read = |id: &str| tandem_core::vcs::commit_changes(&repo, id).unwrap();
    let said = read(&moved);
    assert_eq!(said.files, ["lib/steps.rs"]);
    assert_eq!(
        said.moved,
        [("src/steps.rs".to_string(), "lib/steps.rs".to_string())]
    );
    let said = read(&folder);
    assert!(said.files.is_empty(), "{said:?}");
    assert_eq!(said.moved.len(), 60, "{said:?}");
    assert!(
        (said.moved.iter()).all(|(from, to)| from.strip_prefix("src/") == to.strip_prefix("core/")),
        "{said:?}"
    );
    let said = read(&edited);
    assert!(said.files.is_empty(), "{said:?}");
    assert_eq!(said.moved.len(), 60, "{said:?}");
    assert_eq!(
        said.moved[7],
        ("gen/g07.rs".to_string(), "out/g07.rs".to_string())
    );
    assert!(read(&edit).moved.is_empty());
}

/// A repository of 60 files (`src/f00.rs` ... `src/f59.rs`) in one commit, "initial".
fn sixty_file_repo(root: &std::path::Path) {
    let files: Vec<(String, String)> = (0..60)
        .map(|i| (format!("src/f{i:02}.rs"), format!("fn f{i}() {{}}\n")))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    repo_with(root, &files);
}

/// Commits everything in the work tree at `root` with `message`: the new commit's id.
fn commit_everything(root: &std::path::Path, message: &str) -> String {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
    git(root, &["rev-parse", "HEAD"]).trim().to_string()
}

/// A line added at the top of every one of the 60 files still there: a mass change.
fn reformat_every_file(root: &std::path::Path) {
    for i in 0..60 {
        let path = root.join(format!("src/f{i:02}.rs"));
        if let Ok(content) = std::fs::read_to_string(&path) {
            std::fs::write(&path, format!("// formatted\n{content}")).unwrap();
        }
    }
}
