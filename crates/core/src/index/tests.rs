use std::fs;

use super::*;

#[test]
fn definitions_references_and_symbols_are_found_by_name() {
    let mut index = CodeIndex::in_memory().unwrap();
    let a = "pub fn helper() {}\npub struct Config;\n";
    let b = "fn main() { helper(); }\n";
    index
        .insert("src/a.rs", FileStamp::default(), &extract("src/a.rs", a))
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
    let symbols: Vec<(String, String, u32)> =
        (index.symbols_in("src/a.rs").unwrap().expect("indexed"))
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
    assert!(index.symbols_in("data.bin").unwrap().is_none());
    let again = index.refresh(root, all).unwrap();
    // The binary file is not read again either.
    assert_eq!((again.extracted, again.unchanged), (0, 3), "{again:?}");

    // An edit (written atomically, as Tandem writes) is seen; a deletion drops the file.
    fs::write(root.join("src/a.tmp"), "fn gamma() {}\n").unwrap();
    fs::rename(root.join("src/a.tmp"), root.join("src/a.rs")).unwrap();
    fs::remove_file(root.join("src/b.py")).unwrap();
    let changed = index.refresh(root, ["src/a.rs", "src/b.py"]).unwrap();
    assert_eq!((changed.extracted, changed.removed), (1, 1), "{changed:?}");
    assert!(index.definitions_of("alpha").unwrap().is_empty());
    assert_eq!(index.definitions_of("gamma").unwrap()[0].path, "src/a.rs");
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

#[test]
fn a_deadline_leaves_the_rest_for_the_next_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let names: Vec<String> = (0..700).map(|i| format!("f{i}.rs")).collect();
    for (i, name) in names.iter().enumerate() {
        fs::write(root.join(name), format!("fn f{i}() {{}}\n")).unwrap();
    }
    let mut index = CodeIndex::in_memory().unwrap();
    let paths = || names.iter().map(String::as_str);
    let past = std::time::Instant::now();
    let first = (index.refresh_until(root, paths().map(|p| (p, None)), Some(past))).unwrap();
    assert_eq!((first.extracted, first.left), (0, 700), "{first:?}");
    let rest = index.refresh(root, paths()).unwrap();
    assert_eq!((rest.extracted, rest.left), (700, 0), "{rest:?}");
    assert_eq!(index.definitions_of("f699").unwrap()[0].path, "f699.rs");
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
        .refresh_until(root, [("a.rs", Some(before))], None)
        .unwrap();
    assert_eq!(
        (trusted.extracted, trusted.unchanged),
        (0, 1),
        "{trusted:?}"
    );
    // Given the file's stamp now, it reads it.
    let now = FileStamp::of(&fs::symlink_metadata(root.join("a.rs")).unwrap());
    let read = index
        .refresh_until(root, [("a.rs", Some(now))], None)
        .unwrap();
    assert_eq!(read.extracted, 1, "{read:?}");
    assert_eq!(index.definitions_of("gamma").unwrap()[0].path, "a.rs");
}
