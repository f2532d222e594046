use std::fs;

use super::*;

#[test]
fn definitions_references_and_symbols_are_found_by_name() {
    let mut index = CodeIndex::in_memory().unwrap();
    let a = "pub fn helper() {}\npub struct Config;\n";
    let b = "fn main() { helper(); }\n";
    // `a` is on disk, as the index read it: its definitions are the file's as it is.
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    fs::write(dir.path().join("src/a.rs"), a).unwrap();
    let stamp = FileStamp::of(&fs::symlink_metadata(dir.path().join("src/a.rs")).unwrap());
    index
        .insert("src/a.rs", stamp, &extract("src/a.rs", a))
        .unwrap();
    index
        .insert("src/b.rs", FileStamp::default(), &extract("src/b.rs", b))
        .unwrap();
    assert_eq!(
        index.definitions_of("helper").unwrap(),
        [Location {
            path: "src/a.rs".into(),
            line: 1,
            kind: "function".into(),
            signature: "pub fn helper() {}".into(),
        }]
    );
    assert_eq!(index.references_to("helper").unwrap(), ["src/b.rs"]);
    let symbols: Vec<(String, String, u32)> = (index
        .symbols_in(dir.path(), "src/a.rs")
        .unwrap()
        .expect("indexed"))
    .into_iter()
    .map(|d| (d.name, d.kind, d.line))
    .collect();
    assert_eq!(
        symbols,
        [
            ("helper".to_string(), "function".to_string(), 1),
            ("Config".to_string(), "class".to_string(), 2)
        ]
    );
    // A change replaces what the file held; a removal takes it out of every row.
    let b2 = "fn main() { other(); }\n";
    index
        .insert("src/b.rs", FileStamp::default(), &extract("src/b.rs", b2))
        .unwrap();
    assert!(index.references_to("helper").unwrap().is_empty());
    assert_eq!(index.references_to("other").unwrap(), ["src/b.rs"]);
    index.remove("src/a.rs").unwrap();
    assert!(index.definitions_of("helper").unwrap().is_empty());
    assert_eq!(index.len().unwrap(), 1);
    assert_eq!(index.totals().unwrap(), (1, index.totals().unwrap().1));
}

#[test]
fn refresh_reads_only_new_and_changed_files_and_drops_the_gone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/a.rs"), "fn alpha() {}\n").unwrap();
    fs::write(root.join("src/b.py"), "def beta():\n    pass\n").unwrap();
    fs::write(root.join("data.bin"), b"\0\x01binary").unwrap();
    let mut index = CodeIndex::in_memory().unwrap();
    let all = ["src/a.rs", "src/b.py", "data.bin"];
    let first = index.refresh(root, all).unwrap();
    assert_eq!((first.extracted, first.unchanged), (2, 0), "{first:?}");
    assert!(!index.contains("data.bin").unwrap());
    assert!(index.symbols_in(root, "data.bin").unwrap().is_none());
    let again = index.refresh(root, all).unwrap();
    // The binary file is not read again either.
    assert_eq!((again.extracted, again.unchanged), (0, 3), "{again:?}");

    // An edit (written atomically, as Tandem writes) is seen; a deletion drops the file.
    let kept = |index: &CodeIndex| {
        (index.symbols_in(root, "src/a.rs").unwrap()).map(|d| d[0].name.clone())
    };
    assert_eq!(kept(&index).as_deref(), Some("alpha"));
    fs::write(root.join("src/a.tmp"), "fn gamma() {}\n").unwrap();
    fs::rename(root.join("src/a.tmp"), root.join("src/a.rs")).unwrap();
    // Until the index reads it again, what it kept of the file is not what it says now.
    assert_eq!(kept(&index), None);
    fs::remove_file(root.join("src/b.py")).unwrap();
    let changed = index.refresh(root, ["src/a.rs", "src/b.py"]).unwrap();
    assert_eq!((changed.extracted, changed.removed), (1, 1), "{changed:?}");
    assert!(index.definitions_of("alpha").unwrap().is_empty());
    assert_eq!(index.definitions_of("gamma").unwrap()[0].path, "src/a.rs");
    assert_eq!(kept(&index).as_deref(), Some("gamma"));
    assert!(!index.contains("src/b.py").unwrap());
    // A path no longer walked is dropped too.
    let fewer = index.refresh(root, std::iter::empty::<&str>()).unwrap();
    assert_eq!(fewer.removed, 1);
    assert!(index.is_empty().unwrap());
}

#[test]
fn a_binary_file_is_not_read_again_until_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("data.bin"), b"\0\x01binary").unwrap();
    fs::write(root.join("a.rs"), "fn alpha() {}\n").unwrap();
    let mut index = CodeIndex::in_memory().unwrap();
    let all = ["data.bin", "a.rs"];
    assert_eq!(index.refresh(root, all).unwrap().extracted, 1);
    let again = index.refresh(root, all).unwrap();
    assert_eq!((again.extracted, again.unchanged), (0, 2), "{again:?}");
    assert_eq!(index.len().unwrap(), 1);
    // Once it is text, it is indexed.
    fs::write(root.join("data.bin"), "fn beta() {}\n").unwrap();
    let changed = index.refresh(root, all).unwrap();
    assert_eq!(changed.extracted, 1, "{changed:?}");
    assert_eq!(index.len().unwrap(), 2);
}

/// 700 files, `f{i}.rs` each defining `f{i}`, more than one round of reading; their names.
fn many_files(root: &std::path::Path) -> Vec<String> {
    let names: Vec<String> = (0..700).map(|i| format!("f{i}.rs")).collect();
    for (i, name) in names.iter().enumerate() {
        fs::write(root.join(name), format!("fn f{i}() {{}}\n")).unwrap();
    }
    names
}

#[test]
fn a_deadline_leaves_the_rest_for_the_next_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = many_files(root);
    let mut index = CodeIndex::in_memory().unwrap();
    let paths = || names.iter().map(String::as_str);
    let past = std::time::Instant::now();
    let first = (index.refresh_until(
        root,
        paths().map(|p| (p, None)),
        &Changes::unknown(),
        Some(past),
    ))
    .unwrap();
    // One round at least, whatever the deadline: every refresh moves on.
    assert_eq!((first.extracted, first.left), (512, 188), "{first:?}");
    let rest = index.refresh(root, paths()).unwrap();
    assert_eq!((rest.extracted, rest.left), (188, 0), "{rest:?}");
    assert_eq!(index.definitions_of("f699").unwrap()[0].path, "f699.rs");
}

/// A build in short refreshes reads the next round while it writes its last one; the next
/// refresh takes those reads as they are, but for a file changed since, which it reads again.
#[test]
fn a_refresh_reading_ahead_leaves_the_next_round_read_unless_a_file_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = many_files(root);
    let mut index = CodeIndex::in_memory().unwrap();
    let paths = || names.iter().map(String::as_str).map(|p| (p, None));
    let past = std::time::Instant::now();
    let first =
        (index.refresh_reading_ahead(root, paths(), &Changes::unknown(), Some(past))).unwrap();
    assert_eq!((first.extracted, first.left), (512, 188), "{first:?}");
    assert_eq!(index.ahead.len(), 188);
    assert!(index.definitions_of("f600").unwrap().is_empty());
    // A read taken as it is: what it holds (put there by hand, the file as it was) goes in.
    let Some(refresh::Read::Indexed(_, held)) = index.ahead.get_mut("f650.rs") else {
        panic!("f650.rs read ahead");
    };
    *held = extract("f650.rs", "fn held650() {}\n");
    // A file changed since it was read ahead is read again.
    fs::write(root.join("f600.rs"), "fn changed600() {}\n").unwrap();
    let rest = (index.refresh_until(root, paths(), &Changes::unknown(), None)).unwrap();
    assert_eq!((rest.extracted, rest.left), (188, 0), "{rest:?}");
    assert_eq!(index.definitions_of("held650").unwrap()[0].path, "f650.rs");
    assert_eq!(
        index.definitions_of("changed600").unwrap()[0].path,
        "f600.rs"
    );
    assert!(index.definitions_of("f600").unwrap().is_empty());
    assert_eq!(index.definitions_of("f699").unwrap()[0].path, "f699.rs");
    // Nothing is left read ahead by a refresh that did not stop early.
    assert!(index.ahead.is_empty());
}

/// A refresh of several rounds writes each round while reading the next: every round's
/// files, the last one's too, are in the index when it returns, and counted once.
#[test]
fn a_refresh_of_several_rounds_writes_every_round() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = many_files(root);
    let mut index = CodeIndex::in_memory().unwrap();
    let paths = || names.iter().map(String::as_str);
    let first = index.refresh(root, paths()).unwrap();
    assert_eq!((first.extracted, first.removed, first.left), (700, 0, 0));
    for name in ["f0", "f511", "f512", "f699"] {
        assert_eq!(index.definitions_of(name).unwrap().len(), 1, "{name}");
    }
    // Every file changes; one in the second round becomes binary and leaves the index.
    for (i, name) in names.iter().enumerate() {
        fs::write(root.join(name), format!("fn gg{i}() {{}}\n")).unwrap();
    }
    fs::write(root.join("f600.rs"), b"\0binary").unwrap();
    let second = index.refresh(root, paths()).unwrap();
    assert_eq!((second.extracted, second.removed, second.left), (699, 1, 0));
    for name in ["f0", "f699", "gg600"] {
        assert!(index.definitions_of(name).unwrap().is_empty(), "{name}");
    }
    for name in ["gg0", "gg511", "gg512", "gg699"] {
        assert_eq!(index.definitions_of(name).unwrap().len(), 1, "{name}");
    }
}

#[test]
fn a_stamp_the_caller_has_is_not_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.rs"), "fn alpha() {}\n").unwrap();
    let mut index = CodeIndex::in_memory().unwrap();
    index.refresh(root, ["a.rs"]).unwrap();
    let before = FileStamp::of(&fs::symlink_metadata(root.join("a.rs")).unwrap());
    fs::write(root.join("a.tmp"), "fn gamma() {}\n").unwrap();
    fs::rename(root.join("a.tmp"), root.join("a.rs")).unwrap();
    // Given the stamp it stored, the index takes the file as unchanged (it trusts the walk).
    let trusted = index
        .refresh_until(root, [("a.rs", Some(before))], &Changes::unknown(), None)
        .unwrap();
    assert_eq!(
        (trusted.extracted, trusted.unchanged),
        (0, 1),
        "{trusted:?}"
    );
    // Given the file's stamp now, it reads it.
    let now = FileStamp::of(&fs::symlink_metadata(root.join("a.rs")).unwrap());
    let read = index
        .refresh_until(root, [("a.rs", Some(now))], &Changes::unknown(), None)
        .unwrap();
    assert_eq!(read.extracted, 1, "{read:?}");
    assert_eq!(index.definitions_of("gamma").unwrap()[0].path, "a.rs");
}

/// What a refresh is told when the change journal answered `paths` since where the index
/// stands, with `seq` as the answer's token.
fn told(index: &CodeIndex, seq: u64, paths: &[&str]) -> Changes {
    let token = crate::folder::journal::Token { keeper: 7, seq };
    Changes {
        stored: tables::journal(&index.db).unwrap(),
        answer: Some(crate::folder::journal::Answer::Changed {
            token,
            paths: paths.iter().map(|p| p.to_string()).collect(),
        }),
    }
}

#[test]
fn a_refresh_told_what_changed_reads_only_that_and_still_sees_files_come_and_go() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("src/a.rs"), "fn alpha() {}\n").unwrap();
    fs::write(root.join("src/deep/b.rs"), "fn beta() {}\n").unwrap();
    fs::write(root.join("top.rs"), "fn top() {}\n").unwrap();
    let mut index = CodeIndex::in_memory().unwrap();
    let all = ["src/a.rs", "src/deep/b.rs", "top.rs"];
    let unstamped = |paths: &[&'static str]| {
        let paths: Vec<&'static str> = paths.to_vec();
        paths.into_iter().map(|p| (p, None))
    };
    index.refresh(root, all).unwrap();
    assert_eq!(tables::journal(&index.db).unwrap().token, None);

    // Changed on disk, but the journal names nothing: the same files as before, none read
    // (no `stat` either: the walk gave no stamps).
    fs::write(root.join("top.rs"), "fn changed() {}\n").unwrap();
    let changes = told(&index, 5, &[]);
    assert!(!changes.needs_stamps());
    let done = index
        .refresh_until(root, unstamped(&all), &changes, None)
        .unwrap();
    assert_eq!((done.extracted, done.unchanged), (0, 3), "{done:?}");
    let stood = tables::journal(&index.db).unwrap();
    assert_eq!(stood.token.map(|t| t.seq), Some(5));

    // A folder named stands for everything under it; a file for itself.
    let changes = told(&index, 6, &["src", "top.rs"]);
    let done = index
        .refresh_until(root, unstamped(&all), &changes, None)
        .unwrap();
    assert_eq!((done.extracted, done.unchanged), (3, 0), "{done:?}");
    assert_eq!(index.definitions_of("changed").unwrap()[0].path, "top.rs");
    let changes = told(&index, 7, &["src/deep"]);
    let done = index
        .refresh_until(root, unstamped(&all), &changes, None)
        .unwrap();
    assert_eq!((done.extracted, done.unchanged), (1, 2), "{done:?}");

    // Files that came and went are found by the walk's paths, whatever the journal says
    // (a new `.gitignore`, other settings: the walk changes without its files changing).
    fs::write(root.join("new.rs"), "fn gamma() {}\n").unwrap();
    let now = ["new.rs", "src/deep/b.rs", "top.rs"];
    let changes = told(&index, 8, &[]);
    let done = index
        .refresh_until(root, unstamped(&now), &changes, None)
        .unwrap();
    assert_eq!((done.extracted, done.removed), (1, 1), "{done:?}");
    assert_eq!(index.definitions_of("gamma").unwrap()[0].path, "new.rs");
    assert!(index.definitions_of("alpha").unwrap().is_empty());
    assert_eq!(
        tables::journal(&index.db).unwrap().token.map(|t| t.seq),
        Some(8)
    );
}

/// A refresh told that every file changed, cut short by its deadline, keeps the files it did
/// not read as pending and stands at the journal's new token: the next refresh, told only
/// what changed since, reads the pending ones and not again those read. (Standing still
/// instead, a refresh that cannot read every changed file within one deadline read the same
/// first round at every turn, and never got further.)
#[test]
fn a_refresh_cut_short_goes_on_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = many_files(root);
    let mut index = CodeIndex::in_memory().unwrap();
    let paths = || names.iter().map(|p| (p.as_str(), None));
    index
        .refresh_until(root, paths(), &told(&index, 1, &[]), None)
        .unwrap();
    for (i, name) in names.iter().enumerate() {
        fs::write(root.join(name), format!("fn g{i}() {{}}\n")).unwrap();
    }
    // What the journal answers: every file changed after token 1, nothing after 2.
    let journal = |index: &CodeIndex, seq: u64| {
        let since = tables::journal(&index.db).unwrap().token.map(|t| t.seq);
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        told(index, seq, if since < Some(2) { &all } else { &[] })
    };
    let past = std::time::Instant::now();
    let cut = index
        .refresh_until(root, paths(), &journal(&index, 2), Some(past))
        .unwrap();
    assert_eq!((cut.extracted, cut.left), (512, 188), "{cut:?}");
    let stood = tables::journal(&index.db).unwrap();
    assert_eq!(stood.token.map(|t| t.seq), Some(2));
    assert_eq!(stood.pending.len(), 188);
    assert!(stood.paths.is_empty(), "no digest: the index is not whole");
    let rest = index
        .refresh_until(root, paths(), &journal(&index, 3), None)
        .unwrap();
    assert_eq!((rest.extracted, rest.left), (188, 0), "{rest:?}");
    for i in [0, 511, 699] {
        assert_eq!(index.definitions_of(&format!("g{i}")).unwrap().len(), 1);
    }
    let stood = tables::journal(&index.db).unwrap();
    assert_eq!(stood.token.map(|t| t.seq), Some(3));
    assert!(
        stood.pending.is_empty() && !stood.paths.is_empty(),
        "{stood:?}"
    );
    // Without the journal (no keeper), the stamps are compared, and the pending files are
    // read whatever their stamps say.
    let past = std::time::Instant::now();
    let changes = told(
        &index,
        4,
        &names.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    index
        .refresh_until(root, paths(), &changes, Some(past))
        .unwrap();
    let unknown = Changes {
        stored: tables::journal(&index.db).unwrap(),
        answer: None,
    };
    let rest = index.refresh_until(root, paths(), &unknown, None).unwrap();
    assert_eq!((rest.extracted, rest.left), (188, 0), "{rest:?}");
}

#[test]
fn a_refresh_overtaken_or_missing_a_file_keeps_no_new_standing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names = many_files(root);
    let mut index = CodeIndex::in_memory().unwrap();
    let paths = || names.iter().map(|p| (p.as_str(), None));
    let done = index
        .refresh_until(root, paths(), &told(&index, 4, &[]), None)
        .unwrap();
    assert_eq!(done.extracted, 700);
    let stood = tables::journal(&index.db).unwrap();
    assert_eq!(stood.token.map(|t| t.seq), Some(4));
    assert!(!stood.paths.is_empty());

    // Overtaken: another refresh wrote after this one was told where the index stood.
    let changes = told(&index, 9, &["f1.rs"]);
    fs::write(root.join("f2.rs"), "fn other() {}\n").unwrap();
    index
        .refresh(root, names.iter().map(String::as_str))
        .unwrap();
    index.refresh_until(root, paths(), &changes, None).unwrap();
    let stood = tables::journal(&index.db).unwrap();
    assert_eq!(stood.token.map(|t| t.seq), Some(4), "the older token stays");

    // A file of the walk that vanished before it was read: the index does not hold the
    // walk's paths, so no digest of them is kept.
    let mut with_ghost: Vec<&str> = names.iter().map(String::as_str).collect();
    with_ghost.push("ghost.rs");
    with_ghost.sort();
    let changes = told(&index, 10, &[]);
    let ghost = with_ghost.iter().map(|p| (*p, None));
    index.refresh_until(root, ghost, &changes, None).unwrap();
    let stood = tables::journal(&index.db).unwrap();
    assert_eq!(stood.token.map(|t| t.seq), Some(10));
    assert!(stood.paths.is_empty(), "{stood:?}");
}

/// An edit in place that keeps the size, the inode and the modification time (put back as
/// `touch -d` does) is still seen by its status change time, which nothing can put back.
#[test]
fn an_edit_with_its_old_time_put_back_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.rs"), "fn alpha() {}\n").unwrap();
    let mut index = CodeIndex::in_memory().unwrap();
    index.refresh(root, ["a.rs"]).unwrap();
    let before = fs::metadata(root.join("a.rs")).unwrap();
    // Past the file system's clock tick, as any later edit is.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(root.join("a.rs"), "fn omega() {}\n").unwrap();
    let file = fs::File::options()
        .write(true)
        .open(root.join("a.rs"))
        .unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    let after = fs::metadata(root.join("a.rs")).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap())
    );
    let done = index.refresh(root, ["a.rs"]).unwrap();
    assert_eq!(done.extracted, 1, "{done:?}");
    assert_eq!(index.definitions_of("omega").unwrap()[0].path, "a.rs");
}

/// The symbol filter folds case as the person types it, whatever the script: SQLite's
/// `lower` folds ASCII only.
#[test]
fn names_are_found_by_any_case_in_any_script() {
    let mut index = CodeIndex::in_memory().unwrap();
    let text = "pub fn Ärger() {}\npub struct ΣSigma;\npub fn plain_name() {}\n";
    index
        .insert("src/u.rs", FileStamp::default(), &extract("src/u.rs", text))
        .unwrap();
    let found = |query: &str| {
        let mut names = index.names_containing(query).unwrap();
        names.sort();
        names
    };
    assert_eq!(found("ärger"), ["Ärger"]);
    assert_eq!(found("σsig"), ["ΣSigma"]);
    assert_eq!(found("sigma"), ["ΣSigma"]);
    assert_eq!(found("name"), ["plain_name"]);
    assert!(found("zzz").is_empty());
}

#[test]
fn a_file_given_up_on_is_indexed_by_its_words_and_not_read_again_until_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Its tags took tree-sitter 24 s (see extract's tests); the limit gives up on it.
    let deep = format!(
        "type Deep = {}Leaf{};\n",
        "A<".repeat(60_000),
        ">".repeat(60_000)
    );
    fs::write(root.join("deep.rs"), &deep).unwrap();
    fs::write(root.join("fine.rs"), "fn fine() {}\n").unwrap();
    let mut index = CodeIndex::in_memory().unwrap();
    let all = ["deep.rs", "fine.rs"];
    let first = index.refresh(root, all).unwrap();
    assert_eq!(first.extracted, 2, "{first:?}");
    let symbols = |index: &CodeIndex, path| index.symbols_in(root, path).unwrap();
    assert_eq!(symbols(&index, "deep.rs").map(|d| d.len()), Some(0));
    assert_eq!(symbols(&index, "fine.rs").map(|d| d.len()), Some(1));
    let again = index.refresh(root, all).unwrap();
    assert_eq!((again.extracted, again.unchanged), (0, 2), "{again:?}");
}
