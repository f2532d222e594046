#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::environment::Environment;

const LIB: &str = "pub mod util;\nuse crate::util::helper;\n\npub fn run() {\n    helper(1);\n    let helper_count = 2;\n}\n";
const UTIL: &str = "// Tools.\n\npub fn helper(n: u32) -> u32 {\n    n + 1\n}\n\npub struct HelperConfig;\n\npub fn run_helper_twice() {}\n";
const NOTES: &str = "Call helper when in doubt.\n";

/// An app on a temp data dir, and a project holding `files`.
fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, Arc<App>, Project) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    for (path, text) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, text).unwrap();
    }
    let app = App::open_in(Some(&dir.path().join("data")), Environment::isolated()).unwrap();
    let project = app.add_project(&root, None).unwrap().project;
    (dir, app, project)
}

fn standard() -> (tempfile::TempDir, Arc<App>, Project) {
    project(&[
        ("src/lib.rs", LIB),
        ("src/util.rs", UTIL),
        ("NOTES.md", NOTES),
    ])
}

#[test]
fn a_definition_is_found_in_the_file_that_holds_it() {
    let (_dir, app, project) = standard();
    let found = app.definitions(&project, "helper").unwrap();
    assert_eq!(
        found,
        [SymbolAt {
            name: "helper".into(),
            path: "src/util.rs".into(),
            line: 3,
            kind: found[0].kind.clone(),
        }]
    );
    assert!(app.definitions(&project, "nowhere").unwrap().is_empty());
}

#[test]
fn definitions_follow_an_edit_on_disk() {
    let (_dir, app, project) = standard();
    assert_eq!(app.definitions(&project, "helper").unwrap()[0].line, 3);
    write_later(&project.path.join("src/util.rs"), &format!("\n\n\n{UTIL}"));
    assert_eq!(app.definitions(&project, "helper").unwrap()[0].line, 6);
}

/// Writes `text` so that the file's stamp surely changes (another length, another inode).
fn write_later(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

#[test]
fn references_are_whole_words_in_the_files_the_index_names() {
    let (_dir, app, project) = standard();
    let found = app.references(&project, "helper").unwrap();
    let lines: Vec<(&str, u32, u32, &str)> = found
        .iter()
        .map(|r| (r.path.as_str(), r.line, r.column, r.text.as_str()))
        .collect();
    // Not `helper_count`, `HelperConfig` or `run_helper_twice`; not NOTES.md (prose, no code).
    assert_eq!(
        lines,
        [
            ("src/lib.rs", 2, 18, "use crate::util::helper;"),
            ("src/lib.rs", 5, 5, "helper(1);"),
            ("src/util.rs", 3, 8, "pub fn helper(n: u32) -> u32 {"),
        ]
    );
    assert!(app.references(&project, "not a name").is_err());
}

#[test]
fn the_filter_ranks_exact_then_prefix_then_contains_in_any_case() {
    let (_dir, app, project) = standard();
    let names = |query: &str, limit: usize| -> Vec<String> {
        (app.symbols_matching(&project, query, limit).unwrap())
            .into_iter()
            .map(|s| format!("{} {}:{}", s.name, s.path, s.line))
            .collect()
    };
    assert_eq!(
        names("HELPER", 10),
        [
            "helper src/util.rs:3",
            "HelperConfig src/util.rs:7",
            "run_helper_twice src/util.rs:9",
        ]
    );
    assert_eq!(names("help", 2).len(), 2);
    assert!(names("  ", 10).is_empty());
    assert!(names("zzz", 10).is_empty());
}

#[test]
fn the_identifier_under_the_cursor_is_the_whole_word_it_touches() {
    let text = "let x = util::helper(1);";
    // Inside, at its start, just after its end.
    assert_eq!(identifier_at(text, 16).as_deref(), Some("helper"));
    assert_eq!(identifier_at(text, 14).as_deref(), Some("helper"));
    assert_eq!(identifier_at(text, 20).as_deref(), Some("helper"));
    assert_eq!(identifier_at(text, 7), None);
    assert_eq!(identifier_at("a 42", 3), None);
    assert_eq!(identifier_at("é_ß", 1).as_deref(), Some("é_ß"));
    assert_eq!(identifier_at("", 0), None);
}
