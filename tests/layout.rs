//! The house's layout, checked: the core crate has no GUI in its dependency tree, and the
//! front-ends (the window in `crates/ui`, the CLI in `src/cli`) reach the core only through
//! `tandem_core::app`: a line that goes around it fails here, naming the file and the line.

use std::path::{Path, PathBuf};

/// What a front-end must not name: the core's services and their I/O.
const AROUND_THE_DOOR: &[&str] = &[
    "tandem_core::engine",
    "tandem_core::Engine",
    "tandem_core::chat::",
    "tandem_core::folder",
    "ChatService",
    "Secrets",
    "store::Store",
    ".store()",
    ".engine()",
    "shared_store",
    "llm::provider(",
    "llm::http_provider(",
    "cli_agents::provider(",
    "cli_agents::run(",
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
    let found = violations(&["crates/ui/src", "src/cli"], AROUND_THE_DOOR);
    assert!(
        found.is_empty(),
        "these lines go around `app`:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_window_reads_no_file_itself() {
    // Tests may write their fixtures.
    let found: Vec<_> = violations(&["crates/ui/src"], &["std::fs::", "tokio::fs::"])
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
    assert!(!violations(&["crates/ui/src", "src/cli"], &["fn "]).is_empty());
}

/// Crates that draw, or talk to a display: none may be in the core's tree.
const GUI_CRATES: &[&str] = &[
    "egui",
    "eframe",
    "epaint",
    "winit",
    "wgpu",
    "glow",
    "glutin",
    "accesskit",
    "rfd",
    "arboard",
    "syntect",
    "wayland-client",
    "x11rb",
    "x11-dl",
];

/// The packages `cargo tree` lists under `package`, for what it is built with (normal and build
/// dependencies; not dev-dependencies, which only its own tests see).
fn dependency_tree(package: &str) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let output = std::process::Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "--prefix",
            "none",
            "--edges",
            "normal,build",
        ])
        .args(["--format", "{p}", "--package", package])
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo tree failed: {stderr}");
    let text = String::from_utf8(output.stdout).expect("cargo prints UTF-8");
    let mut names: Vec<String> = (text.lines())
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

fn gui_crates_in(package: &str) -> Vec<String> {
    (dependency_tree(package).into_iter())
        .filter(|name| {
            GUI_CRATES.contains(&name.as_str())
                || name.starts_with("egui")
                || name.starts_with("wgpu")
        })
        .collect()
}

#[test]
fn the_core_has_no_gui_in_its_dependency_tree() {
    let found = gui_crates_in("tandem-core");
    assert!(found.is_empty(), "the core crate depends on {found:?}");
}

#[test]
fn the_tree_check_sees_the_window_crate_draw() {
    // The check itself: the window's crate has egui in its tree, and the check must say so.
    let found = gui_crates_in("tandem-ui");
    assert!(found.iter().any(|n| n == "egui"), "{found:?}");
    assert!(found.iter().any(|n| n == "eframe"), "{found:?}");
}
