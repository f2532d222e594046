use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

/// A project in `<tmp>/proj`, with `<tmp>/outside/secret.txt` next to it.
pub(super) fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(dir.path().join("outside")).unwrap();
    fs::write(dir.path().join("outside/secret.txt"), "TOPSECRET\n").unwrap();
    for (path, content) in files {
        write(&root, path, content);
    }
    (dir, root)
}

pub(super) fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

pub(super) fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

// ---- specs ---------------------------------------------------------------------------------

#[test]
fn specs_are_json_schema_objects_with_consistent_required_fields() {
    let agent = builtin_specs(AgentMode::Agent);
    let names: Vec<&str> = agent.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "list_files",
            "read_file",
            "grep",
            "find_definitions",
            "find_references",
            "outline",
            "fetch_url",
            "write_file",
            "search_replace",
            "rename_file",
            "delete_file",
            "run_shell"
        ]
    );
    for spec in &agent {
        let p = &spec.parameters;
        assert_eq!(p["type"], "object", "{}", spec.name);
        assert!(spec.description.len() > 20, "{}", spec.name);
        let props = p["properties"].as_object().unwrap();
        for required in p["required"].as_array().unwrap() {
            assert!(
                props.contains_key(required.as_str().unwrap()),
                "{}: {required}",
                spec.name
            );
        }
        for (name, schema) in props {
            let t = schema["type"].as_str().unwrap();
            assert!(
                ["string", "integer", "boolean"].contains(&t),
                "{}.{name}",
                spec.name
            );
            assert!(
                schema["description"].as_str().is_some(),
                "{}.{name}",
                spec.name
            );
        }
    }
    let shell = &agent[11].parameters;
    assert_eq!(shell["required"], json!(["command"]));
    assert_eq!(shell["properties"]["timeout_secs"]["type"], "integer");
    assert_eq!(agent[1].parameters["required"], json!(["path"]));
    assert_eq!(agent[2].parameters["required"], json!(["pattern"]));
    assert_eq!(agent[3].parameters["required"], json!(["name"]));
    assert_eq!(agent[4].parameters["required"], json!(["name"]));
    assert_eq!(agent[5].parameters["required"], json!(["path"]));
}

#[test]
fn plan_mode_offers_only_reading_tools() {
    let names: Vec<String> = builtin_specs(AgentMode::Plan)
        .into_iter()
        .map(|s| s.name)
        .collect();
    // Reading the project (its files and its code index), and the web (each fetch asked).
    assert_eq!(
        names,
        [
            "list_files",
            "read_file",
            "grep",
            "find_definitions",
            "find_references",
            "outline",
            "fetch_url"
        ]
    );
}

// ---- list_files ----------------------------------------------------------------------------

fn gitignored_project() -> (tempfile::TempDir, PathBuf) {
    project(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/gen/.gitignore", "out.rs\n"),
        ("src/gen/out.rs", ""),
        ("src/gen/keep.rs", ""),
        ("target/debug/app", ""),
        ("run.log", ""),
        (".env.example", "X=1\n"),
        (".git/config", "[core]\n"),
        ("README.md", "# hi\n"),
    ])
}

#[test]
fn list_files_honours_gitignore_and_skips_git() {
    let (_dir, root) = gitignored_project();
    let out = list_files(&root, &json!({})).unwrap();
    assert_eq!(
        lines(&out),
        [
            ".env.example",
            ".gitignore",
            "README.md",
            "src/gen/.gitignore",
            "src/gen/keep.rs",
            "src/main.rs"
        ]
    );
    assert_eq!(list_files(&root, &json!({"path": "."})).unwrap(), out);
}

#[test]
fn list_files_in_a_directory_and_by_glob() {
    let (_dir, root) = gitignored_project();
    let out = list_files(&root, &json!({"path": "src/gen"})).unwrap();
    assert_eq!(lines(&out), ["src/gen/.gitignore", "src/gen/keep.rs"]);
    let out = list_files(&root, &json!({"glob": "*.rs"})).unwrap();
    assert_eq!(lines(&out), ["src/gen/keep.rs", "src/main.rs"]);
    let out = list_files(&root, &json!({"path": "src", "glob": "gen/*"})).unwrap();
    assert_eq!(lines(&out), ["src/gen/.gitignore", "src/gen/keep.rs"]);
    let out = list_files(&root, &json!({"glob": "*.py"})).unwrap();
    assert_eq!(out, "No files in the project matching \"*.py\".");
    assert!(matches!(
        list_files(&root, &json!({"glob": "src/[a"})),
        Err(ToolError::BadGlob { .. })
    ));
    assert!(matches!(
        list_files(&root, &json!({"path": "src/main.rs"})),
        Err(ToolError::NotADirectory { .. })
    ));
    assert!(matches!(
        list_files(&root, &json!({"path": "nope"})),
        Err(ToolError::NotFound { .. })
    ));
    assert_eq!(
        list_files(&root, &json!({"path": 3})),
        Err(ToolError::BadArgument {
            field: "path",
            expected: "a path relative to the project root"
        })
    );
}

#[test]
fn list_files_is_capped() {
    let (_dir, root) = project(&[]);
    for i in 0..510 {
        write(&root, &format!("f{i:04}.txt"), "");
    }
    let out = list_files(&root, &json!({})).unwrap();
    let all = lines(&out);
    assert_eq!(all.len(), 501);
    assert_eq!(all[499], "f0499.txt");
    assert!(all[500].starts_with("… and 10 more files"), "{}", all[500]);
}

// ---- read_file -----------------------------------------------------------------------------

#[test]
fn read_file_numbers_lines_and_reads_ranges() {
    let (_dir, root) = project(&[("a.txt", "one\r\ntwo\nthree\nfour")]);
    let out = read_file(&root, &json!({"path": "a.txt"})).unwrap();
    assert_eq!(
        out,
        "a.txt (lines 1-4 of 4)\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    let out = read_file(
        &root,
        &json!({"path": "./a.txt", "start_line": 2, "end_line": 3}),
    )
    .unwrap();
    assert_eq!(out, "a.txt (lines 2-3 of 4)\n     2\ttwo\n     3\tthree\n");
    // Numbers given as text (the text protocol's parameter form), and an end past the file.
    let out = read_file(
        &root,
        &json!({"file_path": "a.txt", "start_line": "4", "end_line": 99}),
    )
    .unwrap();
    assert_eq!(out, "a.txt (lines 4-4 of 4)\n     4\tfour\n");
}

#[test]
fn read_file_range_errors() {
    let (_dir, root) = project(&[("a.txt", "1\n2\n"), ("empty.txt", "")]);
    assert_eq!(
        read_file(&root, &json!({"path": "a.txt", "start_line": 3})),
        Err(ToolError::PastEnd {
            path: "a.txt".into(),
            start: 3,
            total: 2
        })
    );
    assert!(matches!(
        read_file(
            &root,
            &json!({"path": "a.txt", "start_line": 2, "end_line": 1})
        ),
        Err(ToolError::BadArgument {
            field: "end_line",
            ..
        })
    ));
    for bad in [json!(0), json!(-1), json!("x"), json!(1.5)] {
        assert!(matches!(
            read_file(&root, &json!({"path": "a.txt", "start_line": bad})),
            Err(ToolError::BadArgument {
                field: "start_line",
                ..
            })
        ));
    }
    assert_eq!(
        read_file(&root, &json!({"path": "empty.txt"})).unwrap(),
        "empty.txt is empty."
    );
    assert_eq!(
        read_file(&root, &json!({})),
        Err(ToolError::MissingArgument {
            field: "path",
            expected: "a path relative to the project root"
        })
    );
    assert_eq!(
        read_file(&root, &json!(["a.txt"])),
        Err(ToolError::ArgumentsNotObject("a list"))
    );
}

#[test]
fn read_file_caps_lines_and_bytes_and_says_how_to_continue() {
    let many: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    let wide: String = (1..=300)
        .map(|_| format!("{}\n", "x".repeat(999)))
        .collect();
    let (_dir, root) = project(&[("many.txt", &many), ("wide.txt", &wide)]);
    let out = read_file(&root, &json!({"path": "many.txt"})).unwrap();
    assert!(out.starts_with("many.txt (lines 1-2000 of 2500)\n"));
    assert!(out.contains("  2000\tline 2000\n") && !out.contains("\tline 2001"));
    assert!(out.contains("lines 2001-2500 not shown") && out.contains("\"start_line\": 2001"));
    let rest = read_file(&root, &json!({"path": "many.txt", "start_line": 2001})).unwrap();
    assert!(
        rest.starts_with("many.txt (lines 2001-2500 of 2500)\n") && !rest.contains("not shown")
    );
    let out = read_file(&root, &json!({"path": "wide.txt"})).unwrap();
    assert!(out.len() < 110_000, "{}", out.len());
    assert!(
        out.starts_with("wide.txt (lines 1-100 of 300)"),
        "{}",
        &out[..40]
    );
    assert!(out.contains("\"start_line\": 101"));
}

#[test]
fn read_file_shortens_huge_lines_and_refuses_binaries_and_directories() {
    let long = "y".repeat(5_000);
    let (_dir, root) = project(&[("min.js", &long)]);
    fs::write(root.join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0IHDR").unwrap();
    fs::create_dir_all(root.join("dir")).unwrap();
    let out = read_file(&root, &json!({"path": "min.js"})).unwrap();
    assert!(out.contains(&format!("\t{}… [line shortened]\n", "y".repeat(2_000))));
    assert_eq!(
        read_file(&root, &json!({"path": "img.png"})),
        Err(ToolError::Binary {
            path: "img.png".into()
        })
    );
    assert_eq!(
        read_file(&root, &json!({"path": "dir"})),
        Err(ToolError::IsDirectory { path: "dir".into() })
    );
    assert_eq!(
        read_file(&root, &json!({"path": "missing.rs"})),
        Err(ToolError::NotFound {
            path: "missing.rs".into()
        })
    );
}

// ---- grep ----------------------------------------------------------------------------------

#[test]
fn grep_finds_regex_matches_with_paths_and_lines() {
    let (_dir, root) = project(&[
        (".gitignore", "dist/\n"),
        ("src/a.rs", "fn alpha() {}\n  fn beta()  \nlet x = 1;\n"),
        ("src/b.py", "def alpha():\n    pass\n"),
        ("dist/bundle.js", "function alpha(){}\n"),
        (".hidden/c.rs", "fn alpha() {}\n"),
    ]);
    let out = grep(&root, &json!({"pattern": r"fn \w+\(\)"})).unwrap();
    assert_eq!(
        lines(&out),
        ["src/a.rs:1: fn alpha() {}", "src/a.rs:2: fn beta()"]
    );
    let out = grep(
        &root,
        &json!({"pattern": "ALPHA", "case_insensitive": true}),
    )
    .unwrap();
    assert_eq!(
        lines(&out),
        ["src/a.rs:1: fn alpha() {}", "src/b.py:1: def alpha():"]
    );
    let out = grep(&root, &json!({"pattern": "alpha", "glob": "*.py"})).unwrap();
    assert_eq!(lines(&out), ["src/b.py:1: def alpha():"]);
    // A file named explicitly is searched even when hidden.
    let out = grep(&root, &json!({"pattern": "alpha", "path": ".hidden/c.rs"})).unwrap();
    assert_eq!(lines(&out), [".hidden/c.rs:1: fn alpha() {}"]);
    let out = grep(&root, &json!({"pattern": "ALPHA"})).unwrap();
    assert_eq!(out, "No matches for \"ALPHA\" in the project.\n");
}

#[test]
fn grep_skips_binary_and_large_files_and_refuses_bad_regex() {
    let (_dir, root) = project(&[("big.txt", &"needle\n".repeat(200_000))]);
    fs::write(root.join("bin.dat"), b"needle\0needle").unwrap();
    write(&root, "ok.txt", "a needle here\n");
    let out = grep(&root, &json!({"pattern": "needle"})).unwrap();
    assert_eq!(
        lines(&out),
        [
            "ok.txt:1: a needle here",
            "[2 binary or larger-than-1-MiB files were not searched]"
        ]
    );
    assert!(matches!(
        grep(&root, &json!({"pattern": "fn ("})),
        Err(ToolError::BadRegex { .. })
    ));
    assert!(matches!(
        grep(&root, &json!({"pattern": ""})),
        Err(ToolError::BadArgument {
            field: "pattern",
            ..
        })
    ));
    assert!(matches!(
        grep(&root, &json!({"pattern": "x", "case_insensitive": "maybe"})),
        Err(ToolError::BadArgument {
            field: "case_insensitive",
            ..
        })
    ));
}

#[test]
fn grep_output_is_capped_with_a_note() {
    let (_dir, root) = project(&[("many.txt", &"hit\n".repeat(300))]);
    let out = grep(&root, &json!({"pattern": "hit"})).unwrap();
    let all = lines(&out);
    assert_eq!(all.len(), 201);
    assert_eq!(all[199], "many.txt:200: hit");
    assert!(all[200].starts_with("[stopped after 200 matches"));
    let long = format!("{}\n", "hit ".repeat(200)).repeat(150);
    let (_dir, root) = project(&[("long.txt", &long)]);
    let out = grep(&root, &json!({"pattern": "hit"})).unwrap();
    assert!(out.len() < 21_000, "{}", out.len());
    assert!(out.contains("[stopped after"));
}
