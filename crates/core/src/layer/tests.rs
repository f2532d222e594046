use std::sync::Arc;

use super::*;

fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().join("project");
    for (path, text) in [
        ("src/a.txt", "a\n"),
        (".gitignore", "target/\n"),
        ("b.txt", "b\n"),
    ] {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap_or(&root)).unwrap_or_else(|e| panic!("{e}"));
        fs::write(full, text).unwrap_or_else(|e| panic!("{e}"));
    }
    let data = dir.path().join("data");
    (dir, root, data)
}

/// Both ways of keeping a workspace find the same changes: written, created, deleted; not
/// ignored output, not a named pipe (which is never opened).
#[test]
fn changes_are_found_the_same_in_an_overlay_and_a_copy() {
    for copy in [true, false] {
        if !copy && overlay::supported().is_err() {
            continue;
        }
        let (_dir, root, data) = project();
        let workspace =
            Workspace::open(Layer::of(&data, 1), &root, copy).unwrap_or_else(|e| panic!("{e}"));
        let workspace = Arc::new(workspace);
        let (tracker, carried) =
            Tracker::start(Arc::clone(&workspace)).unwrap_or_else(|e| panic!("{e}"));
        assert!(carried.is_empty(), "{carried:?}");
        let view = workspace.view();
        fs::write(view.join("src/a.txt"), "changed\n").unwrap_or_else(|e| panic!("{e}"));
        fs::write(view.join("new.txt"), "new\n").unwrap_or_else(|e| panic!("{e}"));
        fs::remove_file(view.join("b.txt")).unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir_all(view.join("target")).unwrap_or_else(|e| panic!("{e}"));
        fs::write(view.join("target/out"), "built").unwrap_or_else(|e| panic!("{e}"));
        // Names no proposal may carry: one that reads as `exe.txt`, one with a bell.
        // And names a proposal would write elsewhere: `src/a.txt`, `b.txt`.
        for name in ["\u{202e}txt.exe", "bell\u{7}.txt", "src\\a.txt", "b.txt "] {
            fs::write(view.join(name), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        #[cfg(unix)]
        let _ = std::process::Command::new("mkfifo")
            .arg(view.join("pipe"))
            .status();
        let changes = tracker.collect().unwrap_or_else(|e| panic!("{e}"));
        let mut got: Vec<String> = changes
            .iter()
            .map(|c| match c {
                Change::Write { path, .. } => format!("write {path}"),
                Change::Delete { path } => format!("delete {path}"),
                Change::Skipped { path, .. } => format!("skip {path}"),
            })
            .collect();
        got.sort();
        let mut want = vec![
            "delete b.txt",
            "write new.txt",
            "write src/a.txt",
            "skip \u{202e}txt.exe",
            "skip bell\u{7}.txt",
            "skip src\\a.txt",
            "skip b.txt ",
        ];
        if copy {
            // A copy's listing leaves special files out altogether.
        } else {
            want.push("skip pipe");
        }
        want.sort();
        assert_eq!(got, want, "copy: {copy}");
        // The project never changed; the same state again is no change.
        assert_eq!(
            fs::read_to_string(root.join("src/a.txt")).ok().as_deref(),
            Some("a\n")
        );
        assert!(root.join("b.txt").exists() && !root.join("new.txt").exists());
        assert!(
            tracker
                .collect()
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
        // A path changed back to the project's content is a change again (the proposal had
        // the other text).
        fs::write(view.join("src/a.txt"), "a\n").unwrap_or_else(|e| panic!("{e}"));
        let back = tracker.collect().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.len(), 1, "{back:?}");
        drop(tracker);
        drop(workspace);
        Layer::of(&data, 1)
            .discard()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!Layer::of(&data, 1).exists());
    }
}

/// A workspace that fell back to a copy (an overlay cannot be mounted at a project path with
/// a comma) keeps what it holds from one open to the next.
/// An edit's own files are noted as seen; what else changed beside it (a server writing in
/// the background) is handed back to be proposed, not swallowed with the edit.
#[test]
fn an_edit_absorbs_only_its_own_files() {
    let (_dir, root, data) = project();
    let workspace =
        Workspace::open(Layer::of(&data, 1), &root, true).unwrap_or_else(|e| panic!("{e}"));
    let workspace = Arc::new(workspace);
    let (tracker, _) = Tracker::start(Arc::clone(&workspace)).unwrap_or_else(|e| panic!("{e}"));
    let view = workspace.view();
    fs::write(view.join("evil.txt"), "beside\n").unwrap_or_else(|e| panic!("{e}"));
    fs::write(view.join("src/a.txt"), "the edit\n").unwrap_or_else(|e| panic!("{e}"));
    let others = tracker
        .absorb(&["src/a.txt".to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<&str> = others.iter().map(Change::path).collect();
    assert_eq!(paths, ["evil.txt"]);
    // Both were seen: nothing is left for the next look.
    assert!(
        tracker
            .collect()
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );
}

#[test]
fn a_workspace_that_fell_back_to_a_copy_keeps_what_it_holds() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().join("pro,ject");
    fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
    fs::write(root.join("a.txt"), "a\n").unwrap_or_else(|e| panic!("{e}"));
    let layer = Layer::of(&dir.path().join("data"), 1);
    let open = || Workspace::open(layer.clone(), &root, false).unwrap_or_else(|e| panic!("{e}"));
    let workspace = open();
    fs::write(workspace.view().join("own.txt"), "mine\n").unwrap_or_else(|e| panic!("{e}"));
    let kind = workspace.kind();
    drop(workspace);
    let workspace = open();
    assert_eq!(workspace.kind(), kind);
    assert_eq!(
        fs::read_to_string(workspace.view().join("own.txt"))
            .ok()
            .as_deref(),
        Some("mine\n"),
        "{kind:?}"
    );
}

/// A layer whose record cannot be read is refused with a way out, never opened over a fresh
/// record (which would forget its bases and what a proposal put there).
#[test]
fn a_layer_with_an_unreadable_record_is_refused_not_reset() {
    let (_dir, root, data) = project();
    let layer = Layer::of(&data, 1);
    drop(Workspace::open(layer.clone(), &root, true).unwrap_or_else(|e| panic!("{e}")));
    let record = layer.dir().join("meta.json");
    fs::write(&record, "{\"held\": {\"README.md\": 5").unwrap_or_else(|e| panic!("{e}"));
    let refused = Workspace::open(layer.clone(), &root, true);
    match refused {
        Err(e @ LayerError::Record { .. }) => {
            assert!(e.to_string().contains("workspace clean --chat 1"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fs::read_to_string(&record).ok().as_deref(),
        Some("{\"held\": {\"README.md\": 5")
    );
}

#[test]
fn an_io_error_names_its_cause_once_when_printed_as_a_chain() {
    let error = LayerError::Io {
        path: PathBuf::from("/data/workspaces/1/upper/src"),
        cause: std::io::Error::from_raw_os_error(21),
    };
    // As `anyhow` prints it (`{:#}`): each error of the chain, joined by ": ".
    let mut chain = vec![error.to_string()];
    let mut next = std::error::Error::source(&error);
    while let Some(e) = next {
        chain.push(e.to_string());
        next = e.source();
    }
    let printed = chain.join(": ");
    let cause = std::io::Error::from_raw_os_error(21).to_string();
    assert_eq!(printed.matches(&cause).count(), 1, "{printed}");
}
