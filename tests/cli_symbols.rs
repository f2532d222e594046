//! `tandem definition`, `tandem references` and `tandem symbols`: the code index from the
//! command line, on a real project.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;

use common::{Cli, repo_with};
use serde_json::json;

#[test]
fn definition_references_and_symbols_read_the_code_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    repo_with(
        &root,
        &[
            (
                "src/main.rs",
                "mod lib;\n\nfn main() {\n    let total = add(1, 2);\n}\n",
            ),
            (
                "src/lib.rs",
                "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\npub fn add_all() {}\n",
            ),
        ],
    );
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let project = root.to_str().unwrap();
    cli.json(&["project", "add", project]);
    let found = cli.json(&["definition", "--project", project, "add"]);
    assert_eq!(
        found,
        json!({"definitions": [{"path": "src/lib.rs", "line": 1, "kind": "function"}]})
    );
    let found = cli.json(&["references", "--project", project, "add"]);
    let places: Vec<(&str, u64)> = (found["references"].as_array().unwrap().iter())
        .map(|r| (r["path"].as_str().unwrap(), r["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(places, [("src/lib.rs", 1), ("src/main.rs", 4)]);
    let found = cli.json(&["symbols", "--project", project, "ADD"]);
    let names: Vec<&str> = (found["symbols"].as_array().unwrap().iter())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "add_all"]);
    let none = cli.json(&["definition", "--project", project, "nowhere"]);
    assert_eq!(none, json!({"definitions": []}));
}
