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
            ".gitignore",
            "Makefile",
            "README.md",
            "exactly.txt",
            "src/main.rs",
            "src/nested/deep/util.rs"
        ]
    );
    // Ignored, hidden (other than the project's configuration) and always-excluded files are
    // not walked at all, so not even reported.
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
        ".ignore",
    ] {
        assert!(!context.skipped.iter().any(|(p, _)| p == rel), "{rel}");
        assert!(!paths(&context).contains(&rel), "{rel}");
    }
    let main = &context.included[4];
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
fn the_projects_hidden_configuration_is_walked_and_no_other_hidden_entry() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let sent = [
        ".github/workflows/ci.yml",
        ".github/CODEOWNERS",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
        ".eslintrc.cjs",
        ".editorconfig",
        "docs/.vitepress/config.ts",
        "src/lib.rs",
    ];
    let never = [
        ".env",
        ".env.production",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".cargo/credentials.toml",
        ".aws/credentials",
        ".idea/workspace.xml",
        ".github/.env",
        ".github/workflows/.secrets.yml",
        "src/.cache/state.json",
        ".git/config",
    ];
    for rel in sent.iter().chain(&never) {
        write(root, rel, "name: value\n");
    }
    let context = collect(root, &ContextOptions::default());
    let mut expected = sent.to_vec();
    expected.sort_unstable();
    assert_eq!(paths(&context), expected);
    for rel in never {
        assert!(!context.skipped.iter().any(|(p, _)| p == rel), "{rel}");
    }
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
fn hand_written_sources_of_every_kind_are_eligible_and_secret_looking_files_never() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let eligible = [
        "tests/unit/type/hash.tcl",
        "src/parser.y",
        "src/lexer.l",
        "configure.ac",
        "Makefile.am",
        "src/config.h.in",
        "m4/ax_pthread.m4",
        "BUILD.bazel",
        "rules/defs.bzl",
        "templates/index.html.j2",
        "plugin/black.vim",
        "testdata/TestViewModel/altscreen.golden",
        "src/__snapshots__/app.test.ts.snap",
        "src/commands.def",
        "tests/jq.test",
        "src/meson.build",
    ];
    // Keys, certificates, environment files and credentials may hold secrets: never sent,
    // whatever extension they are templated with.
    let secret = [
        "deploy/server.key",
        "deploy/cert.pem",
        "deploy/id_rsa",
        "deploy/prod.env",
        "deploy/store.p12",
        "deploy/server.key.j2",
        "deploy/prod.env.in",
        "deploy/private.pem.tmpl",
        "deploy/id_rsa.patch",
        "deploy/credentials.json",
        "deploy/secrets.yaml",
    ];
    for path in eligible.iter().chain(&secret) {
        write(root, path, "text\n");
    }
    // PHP's includes conventionally hold database passwords: not a source extension.
    write(root, "config/db.inc", "<?php $password = 'x';\n");
    // A script run by name says what it is in its first line; a file without an extension
    // that does not is data.
    write(root, "tests/shtest", "#!/bin/sh\nset -e\n");
    write(root, "bin/notes", "plain words\n");
    write(root, "bin/empty", "");
    let context = collect(root, &ContextOptions::default());
    let mut expected = eligible.to_vec();
    expected.push("tests/shtest");
    expected.sort();
    assert_eq!(paths(&context), expected);
    for path in ["bin/notes", "bin/empty"] {
        let reason = skip_reason(&context, path);
        assert_eq!(reason, Some(SkipReason::NotSourceExtension), "{path}");
    }
    for path in secret {
        assert_eq!(
            skip_reason(&context, path),
            Some(SkipReason::LooksSecret),
            "{path}"
        );
    }
    assert_eq!(
        skip_reason(&context, "config/db.inc"),
        Some(SkipReason::NotSourceExtension)
    );
}

/// A private key in a file of any name (written as the test runs: no key-like text sits in
/// this file for a scanner to flag).
fn keyed(before: &str) -> String {
    let body = crate::folder::key_body();
    format!(
        "{before}key: |\n  -----BEGIN RSA {}-----\n  {body}\n",
        "PRIVATE KEY"
    )
}

#[test]
fn a_file_holding_a_key_is_never_sent_whole_or_as_its_map_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "config/app.yaml", keyed("name: app\n"));
    let many: String = (0..300).map(|i| format!("fn f{i}() {{}}\n")).collect();
    write(
        root,
        "src/big.rs",
        keyed(&format!("{many}const PEM: &str = r\"")) + "\";\n",
    );
    write(root, "src/lib.rs", "fn lib() {}\n");
    let options = ContextOptions {
        budget_tokens: 1_000,
        // Named by the person, or ranked by the index with its map known: still not sent.
        priority: vec![
            "config/app.yaml".into(),
            Priority::or_map("src/big.rs", "matches: pem"),
        ],
        mapper: Some(|_: &str, text: &str| text.lines().take(3).collect()),
        ..ContextOptions::default()
    };
    let cache = ContextCache::default();
    let context = cache.collect(root, &options).unwrap();
    assert_eq!(paths(&context), ["src/lib.rs"]);
    for path in ["config/app.yaml", "src/big.rs"] {
        assert_eq!(
            skip_reason(&context, path),
            Some(SkipReason::HoldsSecret),
            "{path}"
        );
    }
    assert!(!render(&context).contains("PRIVATE KEY"));
    // What a read found is kept with the file's stamp: not read again next turn.
    let misses = cache.misses();
    cache.collect(root, &options).unwrap();
    assert_eq!(cache.misses(), misses);
    // Once the key is gone, the file is sent.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(root, "config/app.yaml", "name: app\nkey: ${APP_KEY}\n");
    let context = cache.collect(root, &options).unwrap();
    assert_eq!(paths(&context), ["config/app.yaml", "src/lib.rs"]);
}

/// A map the code index kept is of the file as it was read: when the file has changed since
/// (a key taken out of it, the index not caught up yet), its older map is checked too.
#[test]
fn a_map_kept_from_an_older_copy_is_never_sent_with_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let many: String = (0..300).map(|i| format!("fn f{i}() {{}}\n")).collect();
    write(root, "src/big.rs", &many);
    let old_map = keyed("1: const TOKEN: &str = \"");
    let options = ContextOptions {
        budget_tokens: 1_000,
        priority: vec![Priority {
            known_map: Some(Arc::from(old_map.as_str())),
            ..Priority::or_map("src/big.rs", "matches: token")
        }],
        mapper: Some(|_: &str, text: &str| text.lines().take(3).collect()),
        ..ContextOptions::default()
    };
    let context = ContextCache::default().collect(root, &options).unwrap();
    assert!(!render(&context).contains("PRIVATE KEY"), "{context:?}");
    assert_eq!(
        skip_reason(&context, "src/big.rs"),
        Some(SkipReason::HoldsSecret)
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

/// The code index is made of the same files whether the walk asked sizes or not (it keeps a
/// digest of them: a walk of each kind would otherwise make it compare every path again).
#[test]
fn a_walk_with_sizes_gives_the_index_the_files_one_without_does() {
    let dir = project();
    let options = ContextOptions {
        max_file_bytes: 13,
        ..ContextOptions::default()
    };
    let stamped = Walk::stamped(dir.path(), &options).unwrap();
    let plain = Walk::new(dir.path(), &options).unwrap();
    let mut with_sizes: Vec<&str> = stamped.stamped_paths().map(|(p, _)| p).collect();
    let mut without: Vec<&str> = plain.stamped_paths().map(|(p, _)| p).collect();
    with_sizes.sort_unstable();
    without.sort_unstable();
    assert!(
        with_sizes.contains(&"src/nested/deep/util.rs"),
        "{with_sizes:?}"
    );
    assert_eq!(with_sizes, without);
}

/// A turn whose walk asked every size (the code index without its change journal) packs
/// what one that did not ask packs: the same files whole, listed and skipped, also past the
/// point where sizes stop being asked.
#[test]
fn packing_does_not_depend_on_whether_the_walk_asked_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a_large.rs", "x".repeat(3000));
    for i in 0..100 {
        write(root, &format!("b/file_{i:03}.rs"), "y".repeat(400));
    }
    write(root, "c_large.rs", "x".repeat(3000));
    write(root, "d_tiny.rs", "z");
    let options = ContextOptions {
        budget_tokens: 150,
        max_file_bytes: 2000,
        ..ContextOptions::default()
    };
    let pack = |walk: &Walk| ContextCache::default().pack(walk, &options).unwrap();
    let with_sizes = pack(&Walk::stamped(root, &options).unwrap());
    let without = pack(&Walk::new(root, &options).unwrap());
    assert_eq!(
        skip_reason(&without, "a_large.rs"),
        Some(SkipReason::TooLarge)
    );
    assert!(without.listed_only.iter().any(|(p, _)| &**p == "d_tiny.rs"));
    assert_eq!(with_sizes, without);
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
    use crate::folder::test_support::{fifo, promptly, socket};
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

mod cache;
mod packing;
mod render;
