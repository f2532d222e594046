//! Hostile paths across every tool, and the edit tools' actions.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::json;

use super::tests::{lines, project, write};
use super::*;
use crate::edits::search_replace::{apply_blocks, parse_blocks};

// ---- hostile paths -------------------------------------------------------------------------

#[test]
fn hostile_paths_are_refused_by_every_tool() {
    let (dir, root) = project(&[("ok.txt", "fine\n")]);
    symlink(dir.path().join("outside"), root.join("out_dir")).unwrap();
    symlink(dir.path().join("outside/secret.txt"), root.join("out_file")).unwrap();
    write(&root, ".git/config", "[core]\n");
    let lexical = [
        "../outside/secret.txt",
        "/etc/passwd",
        ".git/config",
        "~/x",
        "a/../../b",
    ];
    let linked = ["out_dir", "out_dir/secret.txt", "out_file"];
    for raw in lexical.iter().chain(&linked) {
        let refused = |r: Result<String, ToolError>| matches!(r, Err(ToolError::PathRefused(_)));
        assert!(
            refused(read_file(&root, &json!({"path": raw}))),
            "read_file {raw}"
        );
        assert!(
            refused(grep(&root, &json!({"pattern": "S", "path": raw}))),
            "grep {raw}"
        );
        assert!(
            refused(list_files(&root, &json!({"path": raw}))),
            "list_files {raw}"
        );
    }
    // Edit tools have no root to follow symlinks from (applying resolves them again), so they
    // refuse what is wrong on its face.
    for raw in lexical {
        let refused = |tool: &str, args: Value| {
            matches!(edit_action(tool, &args), Err(ToolError::PathRefused(_)))
        };
        assert!(
            refused("write_file", json!({"path": raw, "content": "x"})),
            "{raw}"
        );
        assert!(refused(
            "search_replace",
            json!({"path": raw, "search": "a", "replace": "b"})
        ));
        assert!(refused("delete_file", json!({"path": raw})), "{raw}");
        assert!(
            refused("rename_file", json!({"from": raw, "to": "ok2.txt"})),
            "{raw}"
        );
        assert!(
            refused("rename_file", json!({"from": "ok.txt", "to": raw})),
            "{raw}"
        );
    }
    // Walking the whole project never follows the links out.
    let listed = list_files(&root, &json!({})).unwrap();
    assert_eq!(lines(&listed), ["ok.txt"]);
    let found = grep(&root, &json!({"pattern": "TOPSECRET"})).unwrap();
    assert!(found.starts_with("No matches"), "{found}");
}

// ---- edit actions --------------------------------------------------------------------------

#[test]
fn write_file_becomes_a_write_action() {
    let action = edit_action(
        "write_file",
        &json!({"path": "./src\\new.rs", "content": "fn a() {}", "description": " Add a "}),
    )
    .unwrap();
    assert_eq!(
        action,
        Action::Write {
            path: "src/new.rs".into(),
            description: Some("Add a".into()),
            content: "fn a() {}\n".into()
        }
    );
    let empty = edit_action(
        "write_file",
        &json!({"path": "e", "content": "", "description": ""}),
    );
    assert_eq!(
        empty.unwrap(),
        Action::Write {
            path: "e".into(),
            description: None,
            content: String::new()
        }
    );
    // Content given as JSON itself is written as pretty JSON.
    let Action::Write { content, .. } = edit_action(
        "write_file",
        &json!({"path": "p.json", "content": {"a": 1}}),
    )
    .unwrap() else {
        panic!("not a write");
    };
    assert_eq!(content, "{\n  \"a\": 1\n}\n");
    assert_eq!(
        edit_action("write_file", &json!({"path": "a"})),
        Err(ToolError::MissingArgument {
            field: "content",
            expected: "the file's complete content, as a string"
        })
    );
    let huge = "x".repeat(5 * 1024 * 1024);
    assert!(matches!(
        edit_action("write_file", &json!({"path": "a", "content": huge})),
        Err(ToolError::TooLarge { .. })
    ));
}

#[test]
fn search_replace_body_round_trips_and_applies() {
    let search = "fn a() {\n    old();\n}";
    let replace = "fn a() {\n    new();\n}\n=======\n";
    let Action::SearchReplace {
        path,
        description,
        body,
    } = edit_action(
        "search_replace",
        &json!({"path": "src/a.rs", "search": search, "replace": replace}),
    )
    .unwrap()
    else {
        panic!("not a search-replace");
    };
    assert_eq!((path.as_str(), description), ("src/a.rs", None));
    let blocks = parse_blocks(&body).unwrap();
    assert_eq!(blocks.len(), 1);
    assert_eq!(
        (blocks[0].search.as_str(), blocks[0].replace.as_str()),
        (search, replace)
    );
    let (text, _) = apply_blocks("x\nfn a() {\n    old();\n}\ny\n", &blocks).unwrap();
    assert_eq!(text, "x\nfn a() {\n    new();\n}\n=======\n\ny\n");
    // An empty replacement deletes.
    let Action::SearchReplace { body, .. } = edit_action(
        "search_replace",
        &json!({"path": "a", "search": "gone", "replace": ""}),
    )
    .unwrap() else {
        panic!("not a search-replace");
    };
    let (text, _) = apply_blocks("keep\ngone\n", &parse_blocks(&body).unwrap()).unwrap();
    assert_eq!(text, "keep\n");
}

#[test]
fn search_replace_refuses_markers_and_empty_search() {
    let call = |search: &str, replace: &str| {
        edit_action(
            "search_replace",
            &json!({"path": "a", "search": search, "replace": replace}),
        )
    };
    for (search, replace, field) in [
        ("x\n<<<<<<< SEARCH\ny", "z", "search"),
        ("x\n=======\ny", "z", "search"),
        ("x", "a\n  >>>>>>>   REPLACE", "replace"),
        ("x", "<<<<<<<<< SEARCH", "replace"),
    ] {
        assert!(
            matches!(call(search, replace), Err(ToolError::MarkerInText { field: f, .. }) if f == field),
            "{search:?} / {replace:?}"
        );
    }
    assert!(
        call("x\n<<<< SEARCH", "ok").is_ok(),
        "4 `<` is not a marker"
    );
    assert!(matches!(
        call(" \n", "z"),
        Err(ToolError::BadArgument {
            field: "search",
            ..
        })
    ));
    assert!(matches!(
        edit_action("search_replace", &json!({"path": "a", "search": "x"})),
        Err(ToolError::MissingArgument {
            field: "replace",
            ..
        })
    ));
}

#[test]
fn rename_delete_and_non_edit_tools() {
    assert_eq!(
        edit_action("rename_file", &json!({"from": "a.txt", "to": "dir/b.txt"})).unwrap(),
        Action::Rename {
            from: "a.txt".into(),
            to: "dir/b.txt".into()
        }
    );
    assert_eq!(
        edit_action("rename_file", &json!({"old_path": "a", "new_path": "b"})).unwrap(),
        Action::Rename {
            from: "a".into(),
            to: "b".into()
        }
    );
    assert!(matches!(
        edit_action("rename_file", &json!({"from": "a", "to": "./a"})),
        Err(ToolError::BadArgument { field: "to", .. })
    ));
    assert_eq!(
        edit_action("delete_file", &json!({"path": "old.txt"})).unwrap(),
        Action::Delete {
            path: "old.txt".into()
        }
    );
    assert_eq!(
        edit_action("read_file", &json!({"path": "a"})),
        Err(ToolError::NotAnEditTool {
            tool: "read_file".into()
        })
    );
    assert_eq!(
        edit_action("delete_file", &json!("a")),
        Err(ToolError::ArgumentsNotObject("a string"))
    );
}

#[test]
fn paths_read_names_what_the_model_sees() {
    assert_eq!(
        paths_read("read_file", &json!({"path": "./src/a.rs"})),
        ["src/a.rs"]
    );
    assert_eq!(paths_read("read_file", &json!({"file_path": "b"})), ["b"]);
    assert_eq!(
        paths_read("outline", &json!({"path": "./src/a.rs"})),
        ["src/a.rs"]
    );
    assert!(paths_read("find_definitions", &json!({"name": "a"})).is_empty());
    assert_eq!(
        paths_read("grep", &json!({"pattern": "x", "path": "src"})),
        ["src"]
    );
    assert!(paths_read("grep", &json!({"pattern": "x"})).is_empty());
    assert!(paths_read("grep", &json!({"pattern": "x", "path": "."})).is_empty());
    assert!(paths_read("read_file", &json!({"path": "../etc/passwd"})).is_empty());
    assert!(paths_read("list_files", &json!({"path": "src"})).is_empty());
    assert!(paths_read("write_file", &json!({"path": "a", "content": ""})).is_empty());
    assert!(paths_read("read_file", &json!(null)).is_empty());
}

#[test]
fn errors_name_the_problem_for_the_model() {
    let e = edit_action("write_file", &json!({"path": "../x", "content": ""})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "path refused: the path \"../x\" contains `..`; paths may not leave the project"
    );
    let e = grep(Path::new("/"), &json!({"pattern": "(", "path": "x"})).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("\"pattern\" is not a valid regular expression")
    );
}

#[test]
fn search_replace_quoting_read_files_numbered_lines_applies_with_a_note() {
    let file = "fn main() {\n    let x = 1;\n\n    println!(\"{x}\");\n}\n";
    let (_dir, root) = project(&[("src/main.rs", file)]);
    let out = read_file(
        &root,
        &json!({"path": "src/main.rs", "start_line": 2, "end_line": 4}),
    )
    .unwrap();
    // What a small model sends: read_file's lines as shown, numbers and all.
    let search: Vec<&str> = out.lines().skip(1).collect();
    let search = search.join("\n");
    let replace = search.replace("let x = 1;", "let x = 2;");
    let action = edit_action(
        "search_replace",
        &json!({"path": "src/main.rs", "search": search, "replace": replace}),
    )
    .unwrap();
    let mut checker = crate::edits::plan::EditChecker::new(&root).unwrap();
    let op = checker.check(action).unwrap();
    assert_eq!((op.added, op.removed), (1, 1));
    assert_eq!(
        op.note.as_deref(),
        Some("SEARCH carried line numbers (2-4) copied from a file view; matched without them")
    );
}
