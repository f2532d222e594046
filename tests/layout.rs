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

/// A module's path inside its crate, from its file (`a/b.rs` and `a/b/mod.rs` are `a::b`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = (rel.with_extension("").iter())
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The modules each module of the crate under `src` names by `crate::` or `super::` paths
/// (tests left out: a test may reach anywhere).
fn imports(src: &Path) -> Vec<(Vec<String>, Vec<String>)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let path = regex::Regex::new(r"\b(crate|super)((?:::\w+)+)").expect("a valid regex");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let text = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or_default();
            for m in path.captures_iter(code) {
                let named: Vec<String> = m[2].split("::").skip(1).map(str::to_string).collect();
                let target = match &m[1] {
                    "crate" => named,
                    _ => module[..module.len().saturating_sub(1)]
                        .iter()
                        .cloned()
                        .chain(named)
                        .collect(),
                };
                found.push((module.clone(), target));
            }
        }
    }
    found
}

/// Pairs of sibling modules that each name the other (or something inside it), anywhere in
/// what they hold: an import circle.
fn circles(src: &Path) -> Vec<String> {
    let imports = imports(src);
    let modules: std::collections::BTreeSet<Vec<String>> =
        imports.iter().map(|(m, _)| m.clone()).collect();
    let reaches = |a: &[String], b: &[String]| {
        (imports.iter()).any(|(from, to)| from.starts_with(a) && to.starts_with(b))
    };
    let mut found = Vec::new();
    for a in &modules {
        for b in modules.iter().filter(|b| *b > a) {
            let siblings =
                !a.is_empty() && a.len() == b.len() && a[..a.len() - 1] == b[..b.len() - 1];
            if siblings && reaches(a, b) && reaches(b, a) {
                found.push(format!("{} <-> {}", a.join("::"), b.join("::")));
            }
        }
    }
    found
}

#[test]
fn no_two_modules_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in ["crates/core/src", "crates/ui/src", "src"] {
        let found = circles(&root.join(src));
        assert!(
            found.is_empty(),
            "import circles in {src}:\n{}",
            found.join("\n")
        );
    }
}

#[test]
fn the_circle_check_sees_a_circle() {
    // The check itself, on a crate of two files that name each other.
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\n").expect("written");
    std::fs::write(dir.path().join("a.rs"), "use crate::b::B;\npub struct A;\n").expect("written");
    std::fs::write(dir.path().join("b.rs"), "pub struct B(super::a::A);\n").expect("written");
    assert_eq!(circles(dir.path()), ["a <-> b"]);
}

/// Every `#[path]` attribute in `dirs` that cuts a file instead of sharing a module: in the
/// crates' sources any at all (a module is its file, named for its concept); in tests and
/// benches one whose file no other target names (the support several test binaries share,
/// `../common/mod.rs`, is the only use: a target's own modules sit beside it, found by `mod`).
fn path_cuts(dirs: &[PathBuf]) -> Vec<String> {
    let attribute = regex::Regex::new(r#"#\[path\s*=\s*"([^"]*)"\]"#).expect("a valid regex");
    let mut named: Vec<(PathBuf, String)> = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        rust_files(dir, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for cut in attribute.captures_iter(code) {
                    let folder = file.parent().expect("a file in a folder");
                    let target = folder.join(&cut[1]);
                    let target = target.canonicalize().unwrap_or(target);
                    named.push((target, format!("{}:{}: {}", file.display(), n + 1, &cut[0])));
                }
            }
        }
    }
    let shared = |target: &PathBuf| {
        let src = target.components().any(|c| c.as_os_str() == "src");
        !src && named.iter().filter(|(t, _)| t == target).count() > 1
    };
    (named.iter())
        .filter(|(target, _)| !shared(target))
        .map(|(_, at)| at.clone())
        .collect()
}

#[test]
fn no_file_is_cut_with_a_path_attribute() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        "crates/core/src",
        "crates/ui/src",
        "src",
        "tests",
        "benches",
    ];
    let found = path_cuts(&dirs.map(|d| root.join(d)));
    assert!(found.is_empty(), "#[path] cuts:\n{}", found.join("\n"));
}

#[test]
fn the_path_check_sees_a_cut() {
    // Two targets share `shared/mod.rs`; one cuts `lib/more.rs` off itself.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    for folder in ["shared", "a", "b", "a/lib"] {
        std::fs::create_dir_all(root.join(folder)).expect("made");
    }
    let shared = "#[path = \"../shared/mod.rs\"]\nmod shared;\n";
    let cut = "#[path = \"lib/more.rs\"]\nmod more;\n";
    std::fs::write(root.join("a/main.rs"), format!("{shared}{cut}")).expect("written");
    std::fs::write(root.join("b/main.rs"), shared).expect("written");
    for file in ["shared/mod.rs", "a/lib/more.rs"] {
        std::fs::write(root.join(file), "").expect("written");
    }
    let found = path_cuts(&[root.to_path_buf()]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with(":3: #[path = \"lib/more.rs\"]"),
        "{found:?}"
    );
}
