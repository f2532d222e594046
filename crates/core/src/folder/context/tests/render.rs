//! What the model reads: files under their paths in fences that survive their content, the
//! rest listed; and the paths a prompt names.

use super::*;

fn file(path: &str, content: &str) -> ContextFile {
    ContextFile {
        path: path.into(),
        bytes: content.len() as u64,
        tokens: estimate_tokens(content),
        content: Arc::from(content),
        packed_as: PackedAs::Whole,
        why: Arc::from(ROOM_LEFT_WHY),
    }
}

#[test]
fn render_heads_blocks_with_paths_and_lists_the_rest() {
    let context = CodebaseContext {
        included: vec![
            file("src/main.rs", "fn main() {}"),
            file("Makefile", "all:\n"),
        ],
        listed_only: vec![
            ("big.rs".into(), ListedReason::OverBudget),
            ("docs/huge.md".into(), ListedReason::OverBudget),
        ],
        listing: crate::folder::outline::outline(&["big.rs", "docs/huge.md"], &[], 1000),
        ..CodebaseContext::default()
    };
    assert_eq!(
        render(&context),
        "src/main.rs\n```rs\nfn main() {}\n```\n\n\
         Makefile\n```\nall:\n```\n\n\
         Other files (not included, ask to see them):\n- big.rs\n- docs/huge.md\n"
    );
    let only_files = CodebaseContext {
        included: vec![file("a.txt", "")],
        ..CodebaseContext::default()
    };
    assert_eq!(render(&only_files), "a.txt\n```txt\n```\n");
    assert_eq!(render(&CodebaseContext::default()), "");
}

#[test]
fn render_fence_survives_backticks_in_content() {
    let content = "# Docs\n```rust\nlet x = 1;\n```\nand ````` five\n";
    let context = CodebaseContext {
        included: vec![file("README.md", content)],
        ..CodebaseContext::default()
    };
    let rendered = render(&context);
    let mut lines = rendered.lines();
    assert_eq!(lines.next(), Some("README.md"));
    assert_eq!(lines.next(), Some("``````md"));
    let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "``````").collect();
    assert_eq!(body.join("\n") + "\n", content);
    assert_eq!(lines.next(), None);
}

#[test]
fn mentioned_paths_by_full_path_and_unique_name() {
    let candidates: Vec<String> = [
        "src/main.rs",
        "src/lib.rs",
        "tests/lib.rs",
        "README.md",
        "Makefile",
        "docs/build",
        "src/engine/mod.rs",
        "web/app.ts",
    ]
    .map(String::from)
    .to_vec();
    let prompt = "Fix main.rs, then update src/lib.rs; see README.md. Also lib.rs and the \
                  Makefile, then build. Not xsrc/engine/mod.rs nor other/app.ts nor app.tsx.";
    assert_eq!(
        mentioned_paths(prompt, &candidates),
        ["src/main.rs", "src/lib.rs", "README.md", "Makefile"]
    );
    // Order of first mention, not of the candidates; `./` and quoting are fine.
    assert_eq!(
        mentioned_paths("`./web/app.ts` calls (src/engine/mod.rs:12)", &candidates),
        ["web/app.ts", "src/engine/mod.rs"]
    );
    // Ambiguous bare names match nothing; extensions must not run on.
    assert!(mentioned_paths("lib.rs and main.rs.bak and mod.rsx", &candidates).is_empty());
    assert_eq!(mentioned_paths("see app.ts.", &candidates), ["web/app.ts"]);
    assert!(mentioned_paths("", &candidates).is_empty());
    // Duplicated candidates are reported once.
    let twice = ["a.rs".to_string(), "a.rs".to_string()];
    assert_eq!(mentioned_paths("edit a.rs and a.rs", &twice), ["a.rs"]);
}
