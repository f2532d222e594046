use std::fs;

use super::*;

#[test]
fn definitions_references_and_symbols_are_found_by_name() {
    let mut index = CodeIndex::new();
    let a = "pub fn helper() {}\npub struct Config;\n";
    let b = "fn main() { helper(); }\n";
    index.insert("src/a.rs", FileStamp::default(), &extract("src/a.rs", a));
    index.insert("src/b.rs", FileStamp::default(), &extract("src/b.rs", b));
    assert_eq!(
        index.definitions_of("helper"),
        [Location {
            path: "src/a.rs".into(),
            line: 1,
            kind: "function".into()
        }]
    );
    assert_eq!(index.references_to("helper"), ["src/b.rs"]);
    assert_eq!(
        index.symbols_in("src/a.rs"),
        [
            ("helper".to_string(), "function".to_string(), 1),
            ("Config".to_string(), "class".to_string(), 2)
        ]
    );
    index.remove("src/a.rs");
    assert!(index.definitions_of("helper").is_empty());
}

#[test]
fn refresh_reads_only_new_and_changed_files_and_drops_the_gone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/a.rs"), "fn alpha() {}\n").unwrap();
    fs::write(root.join("src/b.py"), "def beta():\n    pass\n").unwrap();
    fs::write(root.join("data.bin"), b"\0\x01binary").unwrap();
    let mut index = CodeIndex::new();
    let all = ["src/a.rs", "src/b.py", "data.bin"];
    let first = index.refresh(root, all);
    assert_eq!((first.extracted, first.unchanged), (2, 0), "{first:?}");
    assert!(!index.contains("data.bin"));
    let again = index.refresh(root, all);
    assert_eq!((again.extracted, again.unchanged), (0, 2), "{again:?}");

    // An edit (written atomically, as Tandem writes) is seen; a deletion drops the file.
    fs::write(root.join("src/a.tmp"), "fn gamma() {}\n").unwrap();
    fs::rename(root.join("src/a.tmp"), root.join("src/a.rs")).unwrap();
    fs::remove_file(root.join("src/b.py")).unwrap();
    let changed = index.refresh(root, ["src/a.rs", "src/b.py"]);
    assert_eq!((changed.extracted, changed.removed), (1, 1), "{changed:?}");
    assert!(index.definitions_of("alpha").is_empty());
    assert_eq!(index.definitions_of("gamma")[0].path, "src/a.rs");
    assert!(!index.contains("src/b.py"));
    // A path no longer walked is dropped too.
    let fewer = index.refresh(root, std::iter::empty::<&str>());
    assert_eq!(fewer.removed, 1);
    assert!(index.is_empty());
}
