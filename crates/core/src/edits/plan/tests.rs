//! Planner tests: operations run in order against an overlay, nothing touches disk.

use super::*;

fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

fn sr(path: &str, search: &str, replace: &str) -> String {
    format!(
        "<tandem-search-replace path=\"{path}\">\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n</tandem-search-replace>\n"
    )
}

#[test]
fn later_operations_see_earlier_ones() {
    let (_dir, root) = project(&[]);
    let reply = format!(
        "<tandem-write path=\"a.txt\">one\ntwo\n</tandem-write>\n{}",
        sr("a.txt", "two", "TWO")
    );
    let plan = build_plan(&root, &reply).unwrap();
    assert_eq!(plan.operations.len(), 2);
    assert!(plan.operations.iter().all(|o| o.status == OpStatus::Ok));
    assert_eq!(plan.files.len(), 1);
    assert_eq!(plan.files[0].kind, FileChangeKind::Added);
    assert_eq!(plan.files[0].new_text.as_deref(), Some("one\nTWO\n"));
    assert_eq!(plan.base.get("a.txt"), Some(&None));
    assert!(!root.join("a.txt").exists(), "planning never writes");
}

#[test]
fn rename_then_edit_is_one_renamed_file() {
    let (_dir, root) = project(&[("old.rs", "fn a() {}\n")]);
    let reply = format!(
        "<tandem-rename from=\"old.rs\" to=\"new.rs\"/>\n{}",
        sr("new.rs", "fn a() {}", "fn b() {}")
    );
    let plan = build_plan(&root, &reply).unwrap();
    assert_eq!(plan.files.len(), 1, "{:#?}", plan.files);
    let file = &plan.files[0];
    assert_eq!(file.kind, FileChangeKind::Renamed);
    assert_eq!(file.old_path.as_deref(), Some("old.rs"));
    assert_eq!((file.added, file.removed), (1, 1));
    let writes = plan.writes(None).unwrap();
    assert_eq!(writes.len(), 2);
    assert_eq!(
        (writes[0].rel.as_str(), writes[0].new.is_none()),
        ("old.rs", true)
    );
    assert_eq!(writes[1].rel, "new.rs");
}

#[test]
fn operation_errors_are_precise_and_fail_their_file() {
    let (_dir, root) = project(&[("a.txt", "alpha\nbeta\n"), ("b.txt", "b\n")]);
    let reply = format!(
        "{}<tandem-delete path=\"nope.txt\"/>\n<tandem-rename from=\"a.txt\" to=\"b.txt\"/>\n<tandem-write path=\"../x\">x</tandem-write>\n<tandem-write>no path</tandem-write>",
        sr("a.txt", "gamma", "delta")
    );
    let plan = build_plan(&root, &reply).unwrap();
    let errors: Vec<&str> = plan.errors().filter_map(|o| o.error.as_deref()).collect();
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[0].starts_with("a.txt: "), "{}", errors[0]);
    assert!(errors[1].contains("nope.txt") && errors[1].contains("does not exist"));
    assert!(errors[2].contains("already exists"));
    assert!(errors[3].contains(".."));
    assert!(errors[4].contains("missing its `path`"));
    assert!(plan.files.is_empty(), "nothing changes: {:#?}", plan.files);
}

#[test]
fn a_failed_block_blocks_the_file_even_after_a_good_write() {
    let (_dir, root) = project(&[("a.txt", "a\n")]);
    let reply = format!(
        "<tandem-write path=\"a.txt\">x\n</tandem-write>\n{}",
        sr("a.txt", "zzz", "y")
    );
    let plan = build_plan(&root, &reply).unwrap();
    assert_eq!(plan.files.len(), 1);
    assert!(plan.files[0].error.is_some());
    assert!(plan.writes(None).is_err());
}

#[test]
fn binary_files_are_renamed_and_deleted_whole() {
    let (_dir, root) = project(&[]);
    std::fs::write(
        root.join("logo.png"),
        [0x89, b'P', b'N', b'G', 0, 0xff, 0xfe],
    )
    .unwrap();
    std::fs::write(root.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
    let reply =
        "<tandem-rename from=\"logo.png\" to=\"img/logo.png\"/><tandem-delete path=\"blob.bin\"/>";
    let plan = build_plan(&root, reply).unwrap();
    assert_eq!(plan.files.len(), 2);
    assert!(plan.files.iter().all(|f| f.binary && f.hunks.is_empty()));
    assert!(
        plan.unified_diff()
            .contains("Binary files a/logo.png and b/img/logo.png differ")
    );
    let writes = plan.writes(None).unwrap();
    let moved = writes.iter().find(|w| w.rel == "img/logo.png").unwrap();
    assert_eq!(
        moved.new.as_ref().unwrap().0,
        [0x89, b'P', b'N', b'G', 0, 0xff, 0xfe]
    );
}

#[test]
fn search_replace_on_a_binary_file_is_refused() {
    let (_dir, root) = project(&[]);
    std::fs::write(root.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
    let plan = build_plan(&root, &sr("blob.bin", "x", "y")).unwrap();
    assert!(
        plan.operations[0]
            .error
            .as_deref()
            .unwrap()
            .contains("not UTF-8")
    );
}

#[test]
fn dependencies_sql_findings_and_summary_are_collected() {
    let (_dir, root) = project(&[]);
    let reply = r#"<tandem-add-dependency packages="serde anyhow"></tandem-add-dependency>
<tandem-add-dependency packages="--registry=evil x"/>
<tandem-execute-sql description="add users">CREATE TABLE users (id INTEGER);</tandem-execute-sql>
<tandem-security-finding title="SQL injection" level="critical">Use parameters.</tandem-security-finding>
<tandem-chat-summary>Add users</tandem-chat-summary>"#;
    let plan = build_plan(&root, reply).unwrap();
    assert_eq!(plan.dependencies, ["serde", "anyhow"]);
    assert_eq!(plan.operations[1].status, OpStatus::Error);
    assert_eq!(plan.sql[0].sql, "CREATE TABLE users (id INTEGER);");
    assert_eq!(plan.security_findings[0].level, "critical");
    assert_eq!(plan.summary.as_deref(), Some("Add users"));
}

#[test]
fn writes_with_the_same_content_change_nothing() {
    let (_dir, root) = project(&[("a.txt", "same\n")]);
    let plan = build_plan(&root, "<tandem-write path=\"a.txt\">same\n</tandem-write>").unwrap();
    assert!(plan.is_proposal());
    assert!(plan.files.is_empty());
}

#[test]
fn crlf_files_stay_crlf_when_rewritten() {
    let (_dir, root) = project(&[("w.txt", "a\r\nb\r\n")]);
    let plan = build_plan(&root, "<tandem-write path=\"w.txt\">a\nc\n</tandem-write>").unwrap();
    assert_eq!(plan.files[0].new_text.as_deref(), Some("a\r\nc\r\n"));
    assert_eq!((plan.files[0].added, plan.files[0].removed), (1, 1));
}

#[test]
fn deleting_a_directory_is_an_error_not_a_crash() {
    let (_dir, root) = project(&[("dir/a.txt", "a\n")]);
    let plan = build_plan(&root, "<tandem-delete path=\"dir\"/>").unwrap();
    assert!(
        plan.operations[0]
            .error
            .as_deref()
            .unwrap()
            .contains("directory")
    );
}

#[test]
fn selection_rules() {
    let (_dir, root) = project(&[("a.txt", "a\n")]);
    let plan = build_plan(
        &root,
        "<tandem-write path=\"a.txt\">b\n</tandem-write><tandem-write path=\"n.txt\">n\n</tandem-write>",
    )
    .unwrap();
    let pick = |path: &str, hunks: Option<Vec<usize>>| Selection {
        files: vec![FileSelection {
            path: path.into(),
            hunks,
        }],
        dependencies: false,
    };
    use crate::edits::apply::{FileSelection, Selection, SelectionError};
    assert!(matches!(
        plan.writes(Some(&pick("zzz", None))),
        Err(SelectionError::UnknownFile(_))
    ));
    assert!(matches!(
        plan.writes(Some(&pick("a.txt", Some(vec![5])))),
        Err(SelectionError::UnknownHunk { .. })
    ));
    assert!(
        plan.writes(Some(&pick("a.txt", Some(vec![]))))
            .unwrap()
            .is_empty()
    );
    assert!(
        plan.writes(Some(&pick("n.txt", Some(vec![]))))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        plan.writes(Some(&pick("n.txt", Some(vec![0]))))
            .unwrap()
            .len(),
        1
    );
}

fn search_replace(path: &str, search: &str, replace: &str) -> Action {
    let body = format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n");
    Action::SearchReplace {
        path: path.into(),
        description: None,
        body,
    }
}

#[test]
fn the_checker_builds_on_accepted_edits_and_forgets_failed_ones() {
    let (_dir, root) = project(&[("a.txt", "one\ntwo\n")]);
    let mut checker = EditChecker::new(&root).unwrap();
    let first = checker
        .check(search_replace("a.txt", "one", "ONE"))
        .unwrap();
    assert_eq!((first.added, first.removed), (1, 1));
    // Checked on top of the first edit: "one" is gone.
    let error = checker
        .check(search_replace("a.txt", "one", "1"))
        .unwrap_err();
    assert!(error.contains("a.txt"), "{error}");
    // A failed edit leaves no trace: the file is not marked failed, the next edit applies.
    assert_eq!(checker.planner.slots["a.txt"].error, None);
    assert_eq!(checker.planner.plan.operations.len(), 1);
    checker
        .check(search_replace("a.txt", "two", "TWO"))
        .unwrap();
    // A failed rename of a file nobody touched leaves no slot behind.
    let rename = Action::Rename {
        from: "missing.txt".into(),
        to: "b.txt".into(),
    };
    assert!(checker.check(rename).is_err());
    assert!(!checker.planner.slots.contains_key("missing.txt"));
    assert!(!checker.planner.order.iter().any(|p| p == "missing.txt"));
    checker
        .check(Action::Write {
            path: "b.txt".into(),
            description: None,
            content: "new\n".into(),
        })
        .unwrap();
    // Each file is read once: a change on disk after the first touch is not seen.
    std::fs::write(root.join("a.txt"), "changed on disk\n").unwrap();
    checker
        .check(search_replace("a.txt", "ONE\nTWO", "both"))
        .unwrap();
    assert_eq!(checker.planner.plan.operations.len(), 4);
}

#[test]
fn security_findings_come_out_most_severe_first_with_their_place() {
    let reply = "Two problems.\n\
<tandem-security-finding title=\"Verbose errors\" level=\"Low\">Stack traces reach users.</tandem-security-finding>\n\
<tandem-security-finding title=\"SQL injection\" level=\"critical\" path=\"src/db.rs\" lines=\"40-52\">\nUse parameters.\n</tandem-security-finding>\n\
<tandem-security-finding>No title or level.</tandem-security-finding>";
    let found = crate::edits::security_findings(reply);
    let summary: Vec<_> = found
        .iter()
        .map(|f| {
            (
                f.title.as_str(),
                f.level.as_str(),
                f.path.as_deref(),
                f.first_line(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("SQL injection", "critical", Some("src/db.rs"), Some(40)),
            ("Verbose errors", "low", None, None),
            ("Security finding", "unknown", None, None),
        ]
    );
    assert_eq!(found[0].body, "Use parameters.");
    assert!(crate::edits::security_findings("nothing here").is_empty());
}

#[test]
fn line_numbers_taken_off_are_noted_on_the_operation() {
    let (_dir, root) = project(&[("a.rs", "fn a() {\n    one();\n}\n")]);
    let reply = sr("a.rs", "     2\t    one();", "     2\t    two();")
        + &sr("a.rs", "fn a() {", "fn b() {");
    let plan = build_plan(&root, &reply).unwrap();
    assert_eq!(
        plan.files[0].new_text.as_deref(),
        Some("fn b() {\n    two();\n}\n")
    );
    let note = plan.operations[0].note.as_deref().unwrap();
    assert_eq!(
        note,
        "SEARCH carried line numbers (2) copied from a file view; matched without them"
    );
    assert_eq!(plan.operations[1].note, None);
    // In the JSON the CLI prints; absent where there is nothing to say.
    let json = serde_json::to_value(&plan.operations).unwrap();
    assert_eq!(json[0]["note"], note);
    assert!(json[1].get("note").is_none());
}

#[test]
fn the_checker_takes_line_numbers_as_the_file_was_read() {
    let (_dir, root) = project(&[("a.txt", "one\ntwo\nthree\n")]);
    let mut checker = EditChecker::new(&root).unwrap();
    checker
        .check(search_replace("a.txt", "one", "zero\none"))
        .unwrap();
    // The model read the file before its first edit: "three" was line 3, is line 4 now.
    let op = checker
        .check(search_replace("a.txt", "3\tthree", "3\tTHREE"))
        .unwrap();
    assert!(op.note.unwrap().contains("line numbers (3)"));
    assert_eq!(
        checker.planner.slots["a.txt"].current.as_ref().unwrap().0,
        b"zero\none\ntwo\nTHREE\n"
    );
    // Numbers of neither version: refused, with the hint.
    let error = checker
        .check(search_replace("a.txt", "2\tTHREE", "x"))
        .unwrap_err();
    assert!(error.contains("seem to start with line numbers"), "{error}");
}
