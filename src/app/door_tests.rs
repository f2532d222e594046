//! The front-ends (the window in `src/ui`, the CLI in `src/cli`) reach the core only through
//! this layer: a line that goes around it fails here, naming the file and the line.

use std::path::{Path, PathBuf};

/// What a front-end must not name: the core's services and their I/O.
const AROUND_THE_DOOR: &[&str] = &[
    "crate::engine",
    "tandem::engine",
    "tandem::Engine",
    "crate::chat::",
    "tandem::chat::",
    "crate::workspace",
    "tandem::workspace",
    "ChatService",
    "Secrets",
    "store::Store",
    ".store()",
    ".engine()",
    "shared_store",
    "llm::provider(",
    "llm::http_provider(",
    "external::provider(",
    "external::run(",
    "vcs::open",
    "sandbox::probe",
];

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// Every `(file, line number, pattern)` of `dirs` that names something in `forbidden`.
fn violations(dirs: &[&str], forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 10, "the front-ends' files were not found");
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for pattern in forbidden.iter().filter(|p| code.contains(**p)) {
                let rel = file.strip_prefix(root).unwrap_or(&file).display();
                found.push(format!("{rel}:{}: {pattern}", n + 1));
            }
        }
    }
    found
}

#[test]
fn the_window_and_the_cli_reach_the_core_only_through_the_app() {
    let found = violations(&["src/ui", "src/cli"], AROUND_THE_DOOR);
    assert!(
        found.is_empty(),
        "these lines go around `app`:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_window_reads_no_file_itself() {
    // Tests may write their fixtures.
    let found: Vec<_> = violations(&["src/ui"], &["std::fs::", "tokio::fs::"])
        .into_iter()
        .filter(|v| !v.contains("_tests.rs:") && !v.contains("/tests.rs:"))
        .collect();
    assert!(
        found.is_empty(),
        "file I/O in the window:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_line_that_goes_around() {
    // The scan itself: a pattern every front-end file has must be found.
    assert!(!violations(&["src/ui", "src/cli"], &["fn "]).is_empty());
}
