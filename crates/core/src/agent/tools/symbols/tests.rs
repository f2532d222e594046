use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::super::tests::{lines, project, write};
use super::*;

const LIB: &str = "//! A library.

pub struct Config {
    pub name: String,
}

impl Config {
    pub fn load(path: &str) -> Config {
        Config { name: path.to_string() }
    }
}

pub fn parse_args(args: &[String]) -> Config {
    Config::load(&args[0])
}
";

const MAIN: &str = "use mylib::parse_args;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let config = parse_args(&args);
    // parse_args_extra, a longer name
    println!(\"{}\", config.name);
}
";

const REPORT: &str = "import sys


class Report:
    def __init__(self, title):
        self.title = title

    def render(self):
        return f\"# {self.title}\"


def parse_args(argv):
    return Report(argv[1])


if __name__ == \"__main__\":
    print(parse_args(sys.argv).render())
";

/// A Rust and Python project (and a README naming `parse_args`, which no index reads).
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = project(&[
        ("src/lib.rs", LIB),
        ("src/main.rs", MAIN),
        ("tools/report.py", REPORT),
        ("README.md", "Call parse_args first.\n"),
    ]);
    let root = root.canonicalize().unwrap();
    (dir, root)
}

/// Runs `tool` with the project read as `view` and `changed` the workspace's changes.
fn call(
    tool: fn(&CodeView<'_>, &Value) -> Result<String, ToolError>,
    root: &Path,
    view: &Path,
    changed: &[&str],
    indexes: &Indexes,
    args: Value,
) -> Result<String, ToolError> {
    let changed: BTreeSet<String> = changed.iter().map(|p| p.to_string()).collect();
    let code = CodeView {
        project: root,
        view,
        changed: &changed,
        indexes,
        files: &ContextOptions::default(),
    };
    tool(&code, &args)
}

fn defs(root: &Path, indexes: &Indexes, name: &str) -> String {
    call(
        find_definitions,
        root,
        root,
        &[],
        indexes,
        json!({ "name": name }),
    )
    .unwrap()
}

#[test]
fn find_definitions_gives_each_place_with_kind_and_first_line() {
    let (_dir, root) = fixture();
    let indexes = Indexes::new(None);
    assert_eq!(
        lines(&defs(&root, &indexes, "parse_args")),
        [
            "src/lib.rs:13 function pub fn parse_args(args: &[String]) -> Config {",
            "tools/report.py:12 function def parse_args(argv):",
        ]
    );
    assert_eq!(
        lines(&defs(&root, &indexes, "Report")),
        ["tools/report.py:4 class class Report:"]
    );
    // A qualified name is looked up by its last part, and the model is told.
    let load = defs(&root, &indexes, "Config::load");
    assert_eq!(
        lines(&load),
        [
            "(looked up `load`, the last part of `Config::load`)",
            "src/lib.rs:8 method pub fn load(path: &str) -> Config {",
        ]
    );
    let none = defs(&root, &indexes, "nowhere");
    assert!(
        none.starts_with("No definition of `nowhere` found."),
        "{none}"
    );
}

#[test]
fn the_index_follows_the_persons_tree_between_calls() {
    let (_dir, root) = fixture();
    let indexes = Indexes::new(None);
    assert!(defs(&root, &indexes, "parse_args").contains("tools/report.py:12"));
    write(&root, "tools/report.py", &format!("\n\n{REPORT}"));
    assert!(defs(&root, &indexes, "parse_args").contains("tools/report.py:14"));
    fs::remove_file(root.join("tools/report.py")).unwrap();
    assert!(!defs(&root, &indexes, "parse_args").contains("report.py"));
}

#[test]
fn find_references_shows_whole_word_lines_of_the_files_that_use_the_name() {
    let (_dir, root) = fixture();
    let indexes = Indexes::new(None);
    let out = call(
        find_references,
        &root,
        &root,
        &[],
        &indexes,
        json!({"name": "parse_args"}),
    )
    .unwrap();
    // Not src/lib.rs (it defines but never uses it), not the README (no index reads it),
    // not `parse_args_extra`.
    assert_eq!(
        lines(&out),
        [
            "src/main.rs:1: use mylib::parse_args;",
            "src/main.rs:5: let config = parse_args(&args);",
            "tools/report.py:12: def parse_args(argv):",
            "tools/report.py:17: print(parse_args(sys.argv).render())",
        ]
    );
    let none = call(
        find_references,
        &root,
        &root,
        &[],
        &indexes,
        json!({"name": "unused"}),
    )
    .unwrap();
    assert!(
        none.starts_with("No references to `unused` found."),
        "{none}"
    );
}

#[test]
fn find_references_is_capped_like_grep_and_says_so() {
    let calls = "    tick();\n".repeat(250);
    let (_dir, root) = project(&[
        (
            "a.rs",
            &format!("fn tick() {{}}\nfn main() {{\n{calls}}}\n"),
        ),
        ("b.rs", "fn other() {\n    tick();\n}\n"),
    ]);
    let root = root.canonicalize().unwrap();
    let indexes = Indexes::new(None);
    let out = call(
        find_references,
        &root,
        &root,
        &[],
        &indexes,
        json!({"name": "tick"}),
    )
    .unwrap();
    let shown = lines(&out);
    assert_eq!(shown.len(), MAX_REFERENCE_LINES + 1, "{out}");
    assert_eq!(shown[0], "a.rs:1: fn tick() {}");
    assert!(
        shown[MAX_REFERENCE_LINES]
            .starts_with("[stopped after 200 lines; more of a.rs and 1 more files not shown"),
        "{}",
        shown[MAX_REFERENCE_LINES]
    );
}

/// A workspace over the fixture: a copy of it where the agent added `src/extra.rs`, moved
/// `parse_args` down in `src/lib.rs` and deleted `tools/report.py`.
fn workspace(root: &Path, dir: &Path) -> (PathBuf, Vec<&'static str>) {
    let view = dir.join("view");
    for (path, content) in [("src/lib.rs", LIB), ("src/main.rs", MAIN)] {
        write(&view, path, content);
    }
    write(&view, "src/lib.rs", &format!("// moved\n\n{LIB}"));
    write(
        &view,
        "src/extra.rs",
        "use crate::parse_args;\n\npub fn perimeter(w: u32) -> u32 {\n    parse_args(&[]);\n    w * 4\n}\n",
    );
    assert!(root.join("tools/report.py").exists());
    (
        view.canonicalize().unwrap(),
        vec!["src/extra.rs", "src/lib.rs", "tools/report.py"],
    )
}

#[test]
fn answers_follow_the_workspace_over_the_index_of_the_persons_tree() {
    let (dir, root) = fixture();
    let indexes = Indexes::new(None);
    // The index knows the person's tree first.
    assert!(defs(&root, &indexes, "parse_args").contains("tools/report.py"));
    let (view, changed) = workspace(&root, dir.path());
    let found = |name: &str| {
        call(
            find_definitions,
            &root,
            &view,
            &changed,
            &indexes,
            json!({ "name": name }),
        )
        .unwrap()
    };
    assert_eq!(
        lines(&found("perimeter")),
        ["src/extra.rs:3 function pub fn perimeter(w: u32) -> u32 {"]
    );
    // Changed: its workspace line; deleted: gone.
    assert_eq!(
        lines(&found("parse_args")),
        ["src/lib.rs:15 function pub fn parse_args(args: &[String]) -> Config {"]
    );
    assert!(found("Report").starts_with("No definition"));
    let refs = call(
        find_references,
        &root,
        &view,
        &changed,
        &indexes,
        json!({"name": "parse_args"}),
    )
    .unwrap();
    assert_eq!(
        lines(&refs),
        [
            "src/extra.rs:1: use crate::parse_args;",
            "src/extra.rs:4: parse_args(&[]);",
            "src/main.rs:1: use mylib::parse_args;",
            "src/main.rs:5: let config = parse_args(&args);",
        ]
    );
    // The outline reads the workspace too.
    let map = outline(&view, &json!({"path": "src/extra.rs"})).unwrap();
    assert_eq!(
        lines(&map),
        [
            "src/extra.rs: 1 definitions, each as line: first line",
            "3: pub fn perimeter(w: u32) -> u32 {",
        ]
    );
}

#[test]
fn outline_gives_a_files_definitions_with_lines_and_first_lines() {
    let (_dir, root) = fixture();
    let rust = outline(&root, &json!({"path": "src/lib.rs"})).unwrap();
    let rust = lines(&rust);
    assert!(rust[0].starts_with("src/lib.rs: "), "{rust:?}");
    for line in [
        "3: pub struct Config {",
        "8: pub fn load(path: &str) -> Config {",
        "13: pub fn parse_args(args: &[String]) -> Config {",
    ] {
        assert!(rust.contains(&line), "{line} not in {rust:?}");
    }
    let python = outline(&root, &json!({"file_path": "./tools/report.py"})).unwrap();
    assert_eq!(
        lines(&python),
        [
            "tools/report.py: 4 definitions, each as line: first line",
            "4: class Report:",
            "5: def __init__(self, title):",
            "8: def render(self):",
            "12: def parse_args(argv):",
        ]
    );
    write(&root, "src/empty.rs", "// nothing yet\n");
    let empty = outline(&root, &json!({"path": "src/empty.rs"})).unwrap();
    assert!(
        empty.starts_with("src/empty.rs has no definitions"),
        "{empty}"
    );
    let readme = outline(&root, &json!({"path": "README.md"})).unwrap_err();
    assert_eq!(
        readme,
        ToolError::NotParsed {
            path: "README.md".into()
        }
    );
    assert!(readme.to_string().contains("use read_file or grep"));
}

#[test]
fn hostile_paths_and_names_get_clear_errors() {
    let (dir, root) = fixture();
    write(&root, ".git/config.rs", "fn hidden() {}\n");
    write(dir.path(), "outside/stolen.rs", "pub fn stolen() {}\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        dir.path().join("outside/stolen.rs"),
        root.join("src/link.rs"),
    )
    .unwrap();
    write(&root, "src/big.rs", &"// x\n".repeat(MAX_PARSED_BYTES / 4));
    fs::write(root.join("src/bin.rs"), b"fn a() {}\0\x01").unwrap();
    let refused = |path: &str| outline(&root, &json!({ "path": path })).unwrap_err();
    for path in ["../outside/stolen.rs", "/etc/passwd", ".git/config.rs"] {
        assert!(
            matches!(refused(path), ToolError::PathRefused(_)),
            "{path}: {:?}",
            refused(path)
        );
    }
    #[cfg(unix)]
    assert!(matches!(refused("src/link.rs"), ToolError::PathRefused(_)));
    assert!(matches!(refused("src"), ToolError::IsDirectory { .. }));
    assert!(matches!(refused("src/gone.rs"), ToolError::NotFound { .. }));
    assert!(matches!(refused("src/big.rs"), ToolError::TooLarge { .. }));
    assert!(matches!(refused("src/bin.rs"), ToolError::Binary { .. }));
    assert!(matches!(
        outline(&root, &json!({})).unwrap_err(),
        ToolError::MissingArgument { field: "path", .. }
    ));

    let indexes = Indexes::new(None);
    let name = |args: Value| call(find_definitions, &root, &root, &[], &indexes, args);
    for bad in [
        json!({"name": ""}),
        json!({"name": "  "}),
        json!({"name": "two words"}),
        json!({"name": "../src/lib.rs"}),
        json!({"name": "f()"}),
        json!({"name": "Config::"}),
        json!({"name": "x".repeat(1000)}),
        json!({"name": 3}),
    ] {
        assert!(
            matches!(
                name(bad.clone()),
                Err(ToolError::BadArgument { field: "name", .. })
            ),
            "{bad}: {:?}",
            name(bad.clone())
        );
    }
    assert!(matches!(
        name(json!({})),
        Err(ToolError::MissingArgument { field: "name", .. })
    ));
    assert!(matches!(
        name(json!("parse_args")),
        Err(ToolError::ArgumentsNotObject("a string"))
    ));
    // Nothing in `.git` or behind a link out is found, even when the workspace names it.
    let changed = [".git/config.rs", "src/link.rs", "src/bin.rs"];
    for n in ["hidden", "stolen"] {
        let out = call(
            find_definitions,
            &root,
            &root,
            &changed,
            &indexes,
            json!({ "name": n }),
        );
        assert!(out.unwrap().starts_with("No definition"), "{n}");
        let out = call(
            find_references,
            &root,
            &root,
            &changed,
            &indexes,
            json!({ "name": n }),
        );
        assert!(out.unwrap().starts_with("No references"), "{n}");
    }
}

#[test]
fn find_definitions_is_capped_and_says_so() {
    let many = "def f():\n    pass\n".repeat(MAX_DEFINITIONS + 20);
    let (_dir, root) = project(&[("many.py", &many)]);
    let root = root.canonicalize().unwrap();
    let indexes = Indexes::new(None);
    let out = defs(&root, &indexes, "f");
    let shown = lines(&out);
    assert_eq!(shown.len(), MAX_DEFINITIONS + 1, "{out}");
    assert_eq!(shown[0], "many.py:1 function def f():");
    assert_eq!(shown[1], "many.py:3 function def f():");
    assert!(
        shown[MAX_DEFINITIONS].starts_with("[… and 20 more definitions not shown"),
        "{}",
        shown[MAX_DEFINITIONS]
    );
}

#[test]
fn the_tools_index_the_files_the_project_sends_and_agree_with_the_turns_refresh() {
    let (_dir, root) = fixture();
    let indexes = Indexes::new(None);
    let files = ContextOptions {
        exclude: vec!["tools/**".into()],
        ..ContextOptions::default()
    };
    // What the person left out of the model's context is not found through the index.
    let changed = BTreeSet::new();
    let code = CodeView {
        project: &root,
        view: &root,
        changed: &changed,
        indexes: &indexes,
        files: &files,
    };
    let found = find_definitions(&code, &json!({ "name": "parse_args" })).unwrap();
    assert_eq!(
        lines(&found),
        ["src/lib.rs:13 function pub fn parse_args(args: &[String]) -> Config {"]
    );
    // A turn's refresh walks the same files: nothing is read again, nothing dropped (with
    // the default globs the tools once used, each refresh undid the other's).
    let walk = crate::folder::context::Walk::stamped(&root, &files).unwrap();
    let (_, again) = indexes
        .refreshed(&root, &walk, &crate::index::Changes::unknown(), None)
        .unwrap();
    assert_eq!((again.extracted, again.removed), (0, 0), "{again:?}");
}

/// A token as GitHub issues them, written as the test runs (no token sits in this file).
fn token() -> String {
    let alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let body: String = (0..36u64)
        .map(|i| char::from(alnum.as_bytes()[(i * 37 + 11) as usize % alnum.len()]))
        .collect();
    format!("gh{}_{body}", "p")
}

/// What the agent's reading tools return goes to the model: nothing of a file that holds a
/// key or a token, whichever tool asks and whatever part of it.
#[test]
fn no_reading_tool_shows_a_file_that_holds_a_secret() {
    let (_dir, root) = fixture();
    let keyed = format!(
        "pub fn deploy_token() -> &'static str {{ \"{}\" }}\n",
        token()
    );
    write(
        &root,
        "src/deploy.rs",
        &format!("{keyed}\npub fn deploy() {{}}\n"),
    );
    let body: String = (0..40)
        .map(|i| format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{i:040}\n"))
        .collect();
    let pem = format!(
        "name: app\nkey: |\n  -----BEGIN {}-----\n{body}",
        "PRIVATE KEY"
    );
    write(&root, "config/app.yaml", &pem);
    write(&root, "deploy/prod.env", "deploy_password=hunter2\n");
    write(&root, "docs/guide.md", "# Guide\n");
    let indexes = Indexes::new(None);
    let secret = |path: &str| ToolError::HoldsSecret { path: path.into() };
    // Whole, or a range past the key's first line.
    let read = |args| super::super::read_file(&root, &args);
    assert_eq!(
        read(json!({ "path": "config/app.yaml" })),
        Err(secret("config/app.yaml"))
    );
    let range = json!({ "path": "config/app.yaml", "start_line": 10, "end_line": 12 });
    assert_eq!(read(range), Err(secret("config/app.yaml")));
    assert_eq!(
        outline(&root, &json!({ "path": "src/deploy.rs" })),
        Err(secret("src/deploy.rs"))
    );
    // Searches and lookups leave such files out, and grep says so.
    let found = super::super::search::grep(&root, &json!({ "pattern": "deploy|MIIE|name" }));
    let found = found.unwrap();
    assert!(
        !found.contains("src/deploy.rs") && !found.contains("config/app.yaml"),
        "{found}"
    );
    assert!(
        !found.contains("hunter2") && found.contains("src/lib.rs"),
        "{found}"
    );
    assert!(
        found.contains("[3 files that look like they hold secrets"),
        "{found}"
    );
    // What grep says cannot depend on what they hold: a pattern only a secret matches reads
    // as one nothing matches (a model could otherwise rebuild a key a character at a time).
    let said = |pattern: &str| {
        let found = super::super::search::grep(&root, &json!({ "pattern": pattern }));
        found.unwrap().replace(pattern, "P")
    };
    assert_eq!(said("hunter2"), said("zq9xw"));
    assert_eq!(said("MIIEvQIBADAN"), said("zq9xw"));
    // Named (the policy asks the person first), a file whose name looks secret is searched.
    let named = json!({ "pattern": "deploy", "path": "deploy/prod.env" });
    let found = super::super::search::grep(&root, &named).unwrap();
    assert!(found.contains("hunter2"), "{found}");
    let defs = call(
        find_definitions,
        &root,
        &root,
        &[],
        &indexes,
        json!({ "name": "deploy_token" }),
    );
    assert!(!defs.unwrap_or_default().contains(&token()));
    let refs = call(
        find_references,
        &root,
        &root,
        &[],
        &indexes,
        json!({ "name": "deploy" }),
    );
    assert!(!refs.unwrap_or_default().contains(&token()));
    // A link with an innocent name to a file whose name looks secret: read by that name.
    std::os::unix::fs::symlink("../deploy/prod.env", root.join("docs/current.conf")).unwrap();
    assert_eq!(
        read(json!({ "path": "docs/current.conf" })),
        Err(ToolError::LeadsToSecret {
            path: "docs/current.conf".into(),
            target: "deploy/prod.env".into()
        })
    );
    let through = json!({ "pattern": "deploy", "path": "docs/current.conf" });
    let found = super::super::search::grep(&root, &through);
    assert!(
        matches!(found, Err(ToolError::LeadsToSecret { .. })),
        "{found:?}"
    );
    // The other files are read as before.
    assert!(read(json!({ "path": "src/lib.rs" })).is_ok());
}
