use std::fs;

use super::*;
use proptest::prelude::*;
use std::path::Path;

fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn paths(context: &CodebaseContext) -> Vec<&str> {
    context.included.iter().map(|f| f.path.as_str()).collect()
}

fn skip_reason(context: &CodebaseContext, rel: &str) -> Option<SkipReason> {
    context
        .skipped
        .iter()
        .find(|(path, _)| path == rel)
        .map(|&(_, reason)| reason)
}

fn collect(root: &Path, options: &ContextOptions) -> CodebaseContext {
    ContextCache::default().collect(root, options).unwrap()
}

/// A project with a little of everything.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "ignored.rs\nlogs/\n*.tmp.md\n");
    write(root, ".ignore", "scratch/\n");
    write(root, "scratch/try.rs", "// .ignore'd\n");
    write(root, "src/main.rs", "fn main() {}\n");
    write(root, "src/nested/deep/util.rs", "pub fn util() {}\n");
    write(root, "README.md", "# Project\n");
    write(root, "Makefile", "all:\n\tcargo build\n");
    write(root, "ignored.rs", "// gitignored\n");
    write(root, "logs/today.txt", "log\n");
    write(root, "notes.tmp.md", "scratch\n");
    write(root, "node_modules/pkg/index.js", "module.exports = 1;\n");
    write(
        root,
        "web/node_modules/pkg/index.js",
        "module.exports = 2;\n",
    );
    write(root, "target/debug/build.rs", "fn main() {}\n");
    write(root, "app/dist/bundle.js", "bundle\n");
    write(root, ".venv/lib/site.py", "x = 1\n");
    write(root, ".hidden/secret.rs", "// hidden\n");
    write(root, ".env", "TOKEN=secret\n");
    write(root, "Cargo.lock", "# lock\n");
    write(root, "web/package-lock.json", "{}\n");
    write(root, "web/yarn.lock", "# lock\n");
    write(root, "logo.png", [0x89, b'P', b'N', b'G', 0, 0, 0, 13]);
    write(root, "data.txt", b"text\0with a NUL");
    write(root, "latin1.txt", [b'c', b'a', b'f', 0xE9]);
    write(root, "big.txt", vec![b'a'; 1024 * 1024 + 1]);
    write(root, "exactly.txt", vec![b'a'; 1024 * 1024]);
    dir
}

#[test]
fn walks_nested_dirs_and_honours_gitignore_without_a_git_repo() {
    let dir = project();
    let context = collect(dir.path(), &ContextOptions::default());
    assert_eq!(
        paths(&context),
        [
            "Makefile",
            "README.md",
            "exactly.txt",
            "src/main.rs",
            "src/nested/deep/util.rs"
        ]
    );
    // Ignored, hidden and always-excluded files are not walked at all, so not even reported.
    for rel in [
        "ignored.rs",
        "logs/today.txt",
        "scratch/try.rs",
        "notes.tmp.md",
        "node_modules/pkg/index.js",
        "web/node_modules/pkg/index.js",
        "target/debug/build.rs",
        "app/dist/bundle.js",
        ".venv/lib/site.py",
        ".hidden/secret.rs",
        ".env",
        ".gitignore",
    ] {
        assert!(!context.skipped.iter().any(|(p, _)| p == rel), "{rel}");
        assert!(!paths(&context).contains(&rel), "{rel}");
    }
    let main = &context.included[3];
    assert_eq!(main.bytes, 13);
    assert_eq!(&*main.content, "fn main() {}\n");
    assert_eq!(main.tokens, estimate_tokens("fn main() {}\n"));
    assert_eq!(
        context.content_tokens,
        context.included.iter().map(|f| f.tokens).sum::<usize>()
    );
    assert!(context.listed_only.is_empty());
    assert_eq!(context.listing_tokens, 0);
}

#[test]
fn in_a_git_repository_git_excludes_apply_and_git_is_never_walked() {
    let dir = tempfile::tempdir().unwrap();
    // A root that happens to carry an always-excluded name is still the project.
    let root = dir.path().join("build");
    git2::Repository::init(&root).unwrap();
    write(&root, ".git/info/exclude", "local.rs\n");
    write(&root, ".git/notes.md", "# inside .git\n");
    write(&root, "local.rs", "// excluded locally\n");
    write(&root, "lib.rs", "// kept\n");
    let context = collect(&root, &ContextOptions::default());
    assert_eq!(paths(&context), ["lib.rs"]);
    assert!(context.skipped.is_empty(), "{:?}", context.skipped);
}

#[test]
fn reports_why_files_are_skipped() {
    let dir = project();
    let context = collect(dir.path(), &ContextOptions::default());
    assert_eq!(
        context.skipped,
        [
            ("Cargo.lock".to_string(), SkipReason::LockFile),
            ("big.txt".to_string(), SkipReason::TooLarge),
            ("data.txt".to_string(), SkipReason::Binary),
            ("latin1.txt".to_string(), SkipReason::Binary),
            ("logo.png".to_string(), SkipReason::NotSourceExtension),
            ("web/package-lock.json".to_string(), SkipReason::LockFile),
            ("web/yarn.lock".to_string(), SkipReason::LockFile),
        ]
    );
}

#[test]
fn max_file_bytes_is_configurable() {
    let dir = project();
    let options = ContextOptions {
        max_file_bytes: 13,
        ..ContextOptions::default()
    };
    let context = collect(dir.path(), &options);
    // Exactly at the limit is fine; one byte over is not.
    assert!(paths(&context).contains(&"src/main.rs"));
    assert_eq!(
        skip_reason(&context, "src/nested/deep/util.rs"),
        Some(SkipReason::TooLarge)
    );
    assert_eq!(
        skip_reason(&context, "exactly.txt"),
        Some(SkipReason::TooLarge)
    );
}

#[test]
fn include_and_exclude_globs() {
    let dir = project();
    let root = dir.path();
    write(root, "src/generated/schema.rs", "// generated\n");
    write(root, "src/app.test.ts", "test()\n");
    write(root, "docs/guide.md", "# Guide\n");

    let options = ContextOptions {
        include: vec!["src/**".into(), "*.md".into()],
        exclude: vec!["src/generated/**".into(), "**/*.test.ts".into()],
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    assert_eq!(
        paths(&context),
        ["README.md", "src/main.rs", "src/nested/deep/util.rs"]
    );
    assert_eq!(
        skip_reason(&context, "src/generated/schema.rs"),
        Some(SkipReason::ExcludedByGlob)
    );
    assert_eq!(
        skip_reason(&context, "src/app.test.ts"),
        Some(SkipReason::ExcludedByGlob)
    );
    // `*` does not cross `/`: the top-level pattern does not reach into docs/.
    assert_eq!(
        skip_reason(&context, "docs/guide.md"),
        Some(SkipReason::NotIncludedByGlob)
    );
    assert_eq!(
        skip_reason(&context, "Makefile"),
        Some(SkipReason::NotIncludedByGlob)
    );
    // The user's globs are the reason shown, before the built-in rules.
    assert_eq!(
        skip_reason(&context, "Cargo.lock"),
        Some(SkipReason::NotIncludedByGlob)
    );

    // A leading `./` or `/` anchors at the root, as it reads.
    let anchored = ContextOptions {
        include: vec!["./src/*.rs".into()],
        exclude: vec!["/src/nested/**".into()],
        ..ContextOptions::default()
    };
    assert_eq!(paths(&collect(root, &anchored)), ["src/main.rs"]);
}

#[test]
fn an_invalid_glob_is_an_error_naming_it() {
    let dir = project();
    let cache = ContextCache::default();
    let options = ContextOptions {
        exclude: vec!["ok/**".into(), "src/[oops".into()],
        ..ContextOptions::default()
    };
    let err = cache.collect(dir.path(), &options).unwrap_err();
    assert!(
        matches!(&err, ContextError::InvalidGlob { list: "exclude", glob, .. } if glob == "src/[oops"),
        "{err:?}"
    );
    assert!(err.to_string().contains("src/[oops"), "{err}");

    let options = ContextOptions {
        include: vec!["{a,b".into()],
        ..ContextOptions::default()
    };
    let err = cache.collect(dir.path(), &options).unwrap_err();
    assert!(
        matches!(
            err,
            ContextError::InvalidGlob {
                list: "include",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_missing_root_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = ContextCache::default()
        .collect(&dir.path().join("nope"), &ContextOptions::default())
        .unwrap_err();
    assert!(matches!(err, ContextError::Root { .. }), "{err:?}");
    let file = dir.path().join("file.rs");
    fs::write(&file, "x").unwrap();
    let err = ContextCache::default()
        .collect(&file, &ContextOptions::default())
        .unwrap_err();
    assert!(matches!(err, ContextError::Root { .. }), "{err:?}");
}

#[test]
fn symlinks_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    write(&root, "src/main.rs", "fn main() {}\n");
    write(dir.path(), "outside/secret.rs", "// secret\n");
    std::os::unix::fs::symlink(dir.path().join("outside"), root.join("linked")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside/secret.rs"), root.join("s.rs")).unwrap();
    std::os::unix::fs::symlink(root.join("src/main.rs"), root.join("alias.rs")).unwrap();
    let context = collect(&root, &ContextOptions::default());
    assert_eq!(paths(&context), ["src/main.rs"]);
    assert!(context.skipped.is_empty(), "{:?}", context.skipped);
}

/// A named pipe (or a socket) where a source file would be is never opened: opening or
/// reading a pipe nothing writes to would hang the turn for ever.
#[test]
fn named_pipes_and_sockets_are_never_opened() {
    use crate::workspace::test_support::{fifo, promptly, socket};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    write(&root, "src/main.rs", "fn main() {}\n");
    fifo(&root.join("src/pipe.rs"));
    socket(&root.join("src/sock.rs"));
    // Sizes asked on the walker's threads, then one at a time; the pipe named first (as an
    // `@` mention would) changes nothing.
    for budget in [usize::MAX, 10_000] {
        let options = ContextOptions {
            budget_tokens: budget,
            priority: vec!["src/pipe.rs".into(), "src/sock.rs".into()],
            ..ContextOptions::default()
        };
        let walked = root.clone();
        let context = promptly(move || collect(&walked, &options));
        assert_eq!(paths(&context), ["src/main.rs"]);
        assert!(context.listed_only.is_empty(), "{:?}", context.listed_only);
        assert!(context.skipped.is_empty(), "{:?}", context.skipped);
    }
    // Walked as a file, a pipe by the time it is read: skipped, saying why.
    let pipe = root.join("src/pipe.rs");
    let read = promptly(move || read_text(&pipe, DEFAULT_MAX_FILE_BYTES));
    assert_eq!(read, Err(SkipReason::NotRegularFile));
}

#[test]
fn names_that_cannot_be_shown_cleanly_are_unreadable() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.rs", "x");
    write(dir.path(), "line\nbreak.rs", "x");
    let raw = std::ffi::OsStr::from_bytes(b"caf\xe9.rs");
    fs::write(dir.path().join(raw), "x").unwrap();
    let context = collect(dir.path(), &ContextOptions::default());
    assert_eq!(paths(&context), ["ok.rs"]);
    assert_eq!(
        context.skipped,
        [
            ("caf\u{fffd}.rs".to_string(), SkipReason::Unreadable),
            ("line\\nbreak.rs".to_string(), SkipReason::Unreadable),
        ]
    );
}

/// `n` ASCII bytes cost `n / 4` tokens.
fn sized(tokens: usize) -> String {
    "abcd".repeat(tokens)
}

/// A big project with a small budget costs what is sent, not what is there: a file whose
/// size alone is over what is left is listed without being read.
#[test]
fn only_files_that_may_fit_are_read() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..10 {
        write(dir.path(), &format!("f{i}.rs"), sized(400));
    }
    // Over the budget by its size: listed as it is, even though it would be skipped if read.
    write(dir.path(), "g.rs", [0u8; 4000]);
    let cache = ContextCache::default();
    let options = ContextOptions {
        budget_tokens: 1000,
        ..ContextOptions::default()
    };
    let context = cache.collect(dir.path(), &options).unwrap();
    assert_eq!(paths(&context), ["f0.rs", "f1.rs"]);
    assert_eq!(context.listed_only.len(), 9);
    assert_eq!(cache.misses(), 2, "only the two files that fit were read");
    // With room for everything, everything is read (the binary one found and skipped).
    let context = cache
        .collect(dir.path(), &ContextOptions::default())
        .unwrap();
    assert_eq!(context.included.len(), 10);
    assert_eq!(skip_reason(&context, "g.rs"), Some(SkipReason::Binary));
    assert_eq!((cache.hits(), cache.misses()), (2, 11));
}

#[test]
fn budget_takes_priority_first_then_smaller_files_after_a_big_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.rs", sized(40));
    write(root, "b.rs", sized(400));
    write(root, "c.rs", sized(40));
    write(root, "d.rs", sized(50));
    write(root, "z.rs", sized(40));
    write(root, "Cargo.lock", sized(1));
    let options = ContextOptions {
        budget_tokens: 130,
        // Normalised, deduplicated; missing and ineligible entries are ignored.
        priority: vec![
            "./z.rs".into(),
            "missing.rs".into(),
            "Cargo.lock".into(),
            "z.rs".into(),
            "../escape.rs".into(),
        ],
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    assert_eq!(paths(&context), ["z.rs", "a.rs", "c.rs"]);
    assert_eq!(context.content_tokens, 120);
    assert_eq!(
        context.listed_only,
        [
            (Arc::from("b.rs"), ListedReason::OverBudget),
            (Arc::from("d.rs"), ListedReason::OverBudget),
        ]
    );
    assert_eq!(
        context.listing_tokens,
        estimate_tokens("Other files (not included, ask to see them):\n- b.rs\n- d.rs\n")
    );
    // Deterministic: the same input gives the same output.
    assert_eq!(collect(root, &options), context);
}

#[test]
fn a_priority_file_that_does_not_fit_is_listed_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.rs", sized(10));
    write(root, "big.rs", sized(100));
    write(root, "c.rs", sized(10));
    let options = ContextOptions {
        budget_tokens: 50,
        priority: vec!["c.rs".into(), "big.rs".into()],
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    assert_eq!(paths(&context), ["c.rs", "a.rs"]);
    assert_eq!(
        context.listed_only,
        [(Arc::from("big.rs"), ListedReason::OverBudget)]
    );

    let none = ContextOptions {
        budget_tokens: 0,
        ..ContextOptions::default()
    };
    let context = collect(root, &none);
    assert!(context.included.is_empty());
    assert_eq!(context.listed_only.len(), 3);
    assert_eq!(context.content_tokens, 0);
}

#[test]
fn empty_files_are_included_at_no_cost() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "empty.rs", "");
    write(dir.path(), "one.rs", "abcd");
    let options = ContextOptions {
        budget_tokens: 1,
        ..ContextOptions::default()
    };
    let context = collect(dir.path(), &options);
    assert_eq!(paths(&context), ["empty.rs", "one.rs"]);
    assert_eq!(context.included[0].tokens, 0);
    assert_eq!(context.content_tokens, 1);

    // No budget means paths only: nothing is read, so even an empty file is only listed.
    let none = ContextOptions {
        budget_tokens: 0,
        ..ContextOptions::default()
    };
    let context = collect(dir.path(), &none);
    assert!(context.included.is_empty());
    assert_eq!(context.listed_only.len(), 2);
}

#[test]
fn second_collect_hits_the_cache_and_a_change_misses() {
    let dir = project();
    let root = dir.path();
    let cache = ContextCache::default();
    let options = ContextOptions::default();
    let first = cache.collect(root, &options).unwrap();
    // Read: the five included files and the two binaries (name and size checks need no read).
    assert_eq!((cache.hits(), cache.misses()), (0, 7));

    let second = cache.collect(root, &options).unwrap();
    assert_eq!(second, first);
    assert_eq!((cache.hits(), cache.misses()), (7, 7));

    // A longer file is a different version.
    write(root, "src/main.rs", "fn main() { run() }\n");
    let third = cache.collect(root, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (13, 8));
    assert_eq!(&*third.included[3].content, "fn main() { run() }\n");

    // So is a same-length atomic replacement (new inode), even within one mtime tick.
    write(root, "src/main.tmp", "fn main() { walk() }");
    fs::rename(root.join("src/main.tmp"), root.join("src/main.rs")).unwrap();
    let fourth = cache.collect(root, &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (19, 9));
    assert_eq!(&*fourth.included[3].content, "fn main() { walk() }");

    // Deleted files leave the cache.
    assert_eq!(cache.lock().entries.len(), 7);
    fs::remove_file(root.join("README.md")).unwrap();
    fs::remove_file(root.join("data.txt")).unwrap();
    cache.collect(root, &options).unwrap();
    assert_eq!(cache.lock().entries.len(), 5);
}

#[test]
fn one_cache_serves_several_roots() {
    let (one, two) = (project(), project());
    let cache = ContextCache::default();
    let options = ContextOptions::default();
    cache.collect(one.path(), &options).unwrap();
    cache.collect(two.path(), &options).unwrap();
    assert_eq!(cache.lock().entries.len(), 14);
    cache.collect(one.path(), &options).unwrap();
    assert_eq!((cache.hits(), cache.misses()), (7, 14));
}

#[test]
fn a_large_project_is_only_stated_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..2000 {
        write(
            dir.path(),
            &format!("src/m{}/f{i}.rs", i % 40),
            format!("// {i}\n"),
        );
    }
    let cache = ContextCache::default();
    let first = cache
        .collect(dir.path(), &ContextOptions::default())
        .unwrap();
    assert_eq!(first.included.len(), 2000);
    assert_eq!(cache.misses(), 2000);
    let second = cache
        .collect(dir.path(), &ContextOptions::default())
        .unwrap();
    assert_eq!((cache.hits(), cache.misses()), (2000, 2000));
    assert_eq!(second, first);
}

#[test]
fn the_cache_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ContextCache>();
    let dir = project();
    let cache = ContextCache::default();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                cache
                    .collect(dir.path(), &ContextOptions::default())
                    .unwrap()
            });
        }
    });
    assert_eq!((cache.hits(), cache.misses()), (7, 7));
}

#[test]
fn defaults() {
    let options = ContextOptions::default();
    assert_eq!(options.max_file_bytes, 1024 * 1024);
    assert_eq!(options.budget_tokens, usize::MAX);
    assert!(options.include.is_empty() && options.exclude.is_empty());
    assert!(options.priority.is_empty());
}

proptest! {
    #[test]
    fn token_estimate_is_positive_and_at_most_one_per_byte(text in "\\PC{1,200}") {
        let tokens = estimate_tokens(&text);
        prop_assert!(tokens >= 1);
        prop_assert!(tokens <= text.len());
    }
}

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
        listing: crate::workspace::outline::outline(&["big.rs", "docs/huge.md"], &[], 1000),
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

/// A map of the first line of every `fn`.
fn first_lines(_path: &str, text: &str) -> String {
    (text.lines().enumerate())
        .filter(|(_, l)| l.starts_with("fn "))
        .map(|(i, l)| format!("{}: {l}\n", i + 1))
        .collect()
}

#[test]
fn a_priority_file_too_big_whole_goes_as_its_map_with_its_why() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let big: String = (0..200)
        .map(|i| format!("fn f{i}() {{\n    body();\n}}\n"))
        .collect();
    write(root, "big.rs", &big);
    write(root, "small.rs", "fn small() {}\n");
    write(root, "other.rs", "fn other() {}\n");
    let options = ContextOptions {
        budget_tokens: 1_000,
        priority: vec![
            Priority::or_map("small.rs", "matches: small"),
            Priority::or_map("big.rs", "defines `f1` used by small.rs"),
        ],
        mapper: Some(first_lines),
        ..ContextOptions::default()
    };
    let context = collect(root, &options);
    let sent: Vec<(&str, PackedAs, &str)> = (context.included.iter())
        .map(|f| (f.path.as_str(), f.packed_as, &*f.why))
        .collect();
    assert_eq!(
        sent,
        [
            ("small.rs", PackedAs::Whole, "matches: small"),
            ("big.rs", PackedAs::Map, "defines `f1` used by small.rs"),
            ("other.rs", PackedAs::Whole, ROOM_LEFT_WHY),
        ]
    );
    let map = &context.included[1];
    assert!(
        map.content.starts_with("1: fn f0() {\n4: fn f1() {\n"),
        "{}",
        map.content
    );
    assert_eq!(map.tokens, estimate_tokens(&map.content));
    assert!(
        render(&context)
            .contains("big.rs (not sent whole: its definitions, by line)\n```\n1: fn f0() {\n")
    );

    // Without a mapper (or for a file not marked), the same file is listed by path.
    let plain = ContextOptions {
        mapper: None,
        ..options.clone()
    };
    let context = collect(root, &plain);
    assert_eq!(paths(&context), ["small.rs", "other.rs"]);
    assert_eq!(context.listed_only[0].0.as_ref(), "big.rs");
}

#[test]
fn a_ranked_file_that_would_crowd_out_the_next_ones_goes_as_its_map_a_named_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // About 10,000 tokens: more than 45% of a 20,000-token budget, and it would fit whole.
    let huge: String = (0..1_000)
        .map(|i| format!("fn f{i}() {{ body(); }}\n// {}\n", "x".repeat(12)))
        .collect();
    write(root, "huge.rs", &huge);
    let next: String = (0..100).map(|i| format!("fn g{i}() {{}}\n")).collect();
    write(root, "next.rs", &next);
    let huge_tokens = estimate_tokens(&huge);
    assert!((9_001..17_500).contains(&huge_tokens), "{huge_tokens}");
    let ranked = ContextOptions {
        budget_tokens: 20_000,
        priority: vec![
            Priority::or_map("huge.rs", "matches: f"),
            Priority::or_map("next.rs", "matches: g"),
        ],
        mapper: Some(first_lines),
        ..ContextOptions::default()
    };
    let sent = |options: &ContextOptions| -> Vec<(String, PackedAs)> {
        (collect(root, options).included.iter())
            .map(|f| (f.path.clone(), f.packed_as))
            .collect()
    };
    assert_eq!(
        sent(&ranked),
        [
            ("huge.rs".to_string(), PackedAs::Map),
            ("next.rs".to_string(), PackedAs::Whole),
        ]
    );
    // Named by the person (a priority that may not go as a map), it goes whole.
    let named = ContextOptions {
        priority: vec![
            Priority::new("huge.rs", "mentioned"),
            Priority::or_map("next.rs", "matches: g"),
        ],
        ..ranked.clone()
    };
    assert_eq!(sent(&named)[0], ("huge.rs".to_string(), PackedAs::Whole));
    // In a window where it is an ordinary file (under 4,000 tokens), no file is too big.
    let small: String = (0..150)
        .map(|i| format!("fn s{i}() {{ body(); }}\n"))
        .collect();
    write(root, "huge.rs", &small);
    let tokens = estimate_tokens(&small);
    let tight = ContextOptions {
        budget_tokens: tokens * 2,
        ..ranked
    };
    assert!(tokens * 100 > tight.budget_tokens * BIG_PERCENT && tokens < BIG_FLOOR);
    assert_eq!(sent(&tight)[0], ("huge.rs".to_string(), PackedAs::Whole));
}
