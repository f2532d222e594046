//! `tandem context`: what is packed and why, the ranking, the index kept across processes, the
//! room kept for a model that counts more.

use super::*;

/// `tandem context --json` names every file it packed, with its tokens, how it is sent and why:
/// the `@`-mentioned file first ("mentioned"), then what fits ("room left").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_json_lists_each_included_file_with_how_and_why() {
    let (_dir, root, cli, _server) = setup().await;
    std::fs::write(root.join("src/zeta.rs"), "pub fn zeta() -> u32 { 26 }\n").unwrap();
    let root_str = root.to_str().unwrap();
    let context = cli
        .json(&[
            "context",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--prompt",
            "change @src/zeta.rs",
        ])
        .await;
    let b = &context["breakdown"];
    let included = b["included"].as_array().unwrap();
    assert_eq!(included.len(), 2, "{b}");
    assert_eq!(b["files_included"], 2);
    assert_eq!(included[0]["path"], "src/zeta.rs");
    assert_eq!(included[0]["as"], "whole");
    assert_eq!(included[0]["why"], "mentioned");
    assert_eq!(included[1]["path"], "src/lib.rs");
    assert_eq!(included[1]["as"], "whole");
    assert!(!included[1]["why"].as_str().unwrap().is_empty(), "{b}");
    // The tokens are the file's, as the codebase section counts them.
    let tokens: u64 = included.iter().map(|f| f["tokens"].as_u64().unwrap()).sum();
    assert!(
        tokens > 0 && tokens < b["codebase"].as_u64().unwrap(),
        "{b}"
    );
}

/// The prompt's words find the file that defines them, sent whole; what it uses comes next,
/// and a file too big to send whole goes as its map (definitions with line numbers); each
/// says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_ranks_the_prompts_files_first_and_maps_what_does_not_fit() {
    let (_dir, root, cli, _server) = setup().await;
    let write = |rel: &str, text: &str| common::write_file(&root, rel, text);
    // Unrelated files first in path order, enough to fill the window many times over.
    for i in 0..40 {
        let body = format!("pub fn unrelated_{i}() -> u32 {{ {i} }}\n").repeat(60);
        write(&format!("src/aaa/filler_{i:02}.rs"), &body);
    }
    write(
        "src/zz/parser.rs",
        "use crate::zz::lexer::tokenize;\npub fn parse_expression(text: &str) -> u32 {\n    tokenize(text) + evaluate_tree(text)\n}\n",
    );
    write(
        "src/zz/lexer.rs",
        "pub fn tokenize(text: &str) -> u32 { text.len() as u32 }\n",
    );
    let body = "    let x = x + 1;\n".repeat(12);
    let tree: String =
        std::iter::once("pub fn evaluate_tree(text: &str) -> u32 { 1 }\n".to_string())
            .chain(
                (0..150).map(|i| format!("pub fn tree_helper_{i}(x: u32) -> u32 {{\n{body}}}\n")),
            )
            .collect();
    write("src/zz/tree.rs", &tree);
    let root_str = root.to_str().unwrap();
    let context = cli
        .json(&[
            "context",
            "--project",
            root_str,
            "--provider",
            "fake",
            "--prompt",
            "parse_expression gives the wrong answer",
        ])
        .await;
    let included = context["breakdown"]["included"].as_array().unwrap();
    let find = |path: &str| {
        (included.iter().find(|f| f["path"] == path))
            .unwrap_or_else(|| panic!("{path} not included: {included:#?}"))
    };
    assert_eq!(included[0]["path"], "src/zz/parser.rs", "{included:#?}");
    assert_eq!(included[0]["as"], "whole");
    assert!(
        included[0]["why"]
            .as_str()
            .unwrap()
            .starts_with("matches: parse"),
        "{included:#?}"
    );
    let lexer = find("src/zz/lexer.rs");
    assert_eq!(lexer["as"], "whole");
    assert_eq!(lexer["why"], "defines `tokenize` used by src/zz/parser.rs");
    let tree = find("src/zz/tree.rs");
    assert_eq!(tree["as"], "map", "{included:#?}");
    assert_eq!(
        tree["why"],
        "defines `evaluate_tree` used by src/zz/parser.rs"
    );
    // The map is a fraction of the file.
    let whole = tandem_core::tokens::estimate(
        &std::fs::read_to_string(root.join("src/zz/tree.rs")).unwrap(),
    );
    assert!(
        tree["tokens"].as_u64().unwrap() * 5 < whole as u64,
        "{tree} of {whole}"
    );
}

/// `project add` builds the code index in the data directory; every later process uses it
/// and reads only what changed: a function written after the import is found by the next
/// `context`, and one deleted is no longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_built_at_import_follows_the_files_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    filler_repo(&root);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let root_str = root.to_str().unwrap();
    let added = cli.json(&["project", "add", root_str]).await;
    assert_eq!(added["indexed_files"], 30, "{added}");
    let server = FakeProvider::start().await;
    let provider = common::fake_provider_args(&server.url());
    let provider: Vec<&str> = provider.iter().map(String::as_str).collect();
    cli.json(&provider).await;
    let first = |prompt| first_included(&cli, root_str, prompt);
    let top = first("filler_zqar is wrong").await;
    assert_eq!(top["path"], "src/a/f17.rs", "{top}");

    std::fs::write(
        root.join("src/a/f03.rs"),
        "pub fn quaternion_slerp() -> u32 { 3 }\n",
    )
    .unwrap();
    let top = first("quaternion_slerp overshoots").await;
    assert_eq!(top["path"], "src/a/f03.rs", "{top}");
    assert!(
        top["why"].as_str().unwrap().starts_with("matches: "),
        "{top}"
    );

    std::fs::remove_file(root.join("src/a/f17.rs")).unwrap();
    let top = first("filler_zqar is wrong").await;
    assert_ne!(top["path"], "src/a/f17.rs", "{top}");
}

/// A model whose server counts more tokens than Tandem estimates: both lines of `tandem
/// context` say how much of the window is kept free for it, and `--json` gives it as
/// `breakdown.margin`, with the sent estimate times the ratio within the room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_says_what_is_kept_free_for_a_model_that_counts_more() {
    let (_dir, root, cli, _server) = setup().await;
    let root_str = root.to_str().unwrap();
    let args = ["context", "--project", root_str, "--provider", "fake"];
    assert_eq!(cli.json(&args).await["breakdown"]["margin"], 0);
    // What the replies of the fake's model taught: 1.5 tokens counted per token estimated.
    let db = rusqlite::Connection::open(cli.data.join("tandem.db")).unwrap();
    db.execute(
        "INSERT INTO model_profiles (provider_id, model, updated_at, token_ratio)
             SELECT id, 'tiny', 0, 1.5 FROM providers WHERE name = 'fake'",
        [],
    )
    .unwrap();
    drop(db);
    let b = cli.json(&args).await["breakdown"].clone();
    let n = |key: &str| b[key].as_u64().unwrap();
    let room = n("window") - n("reply_reserve");
    assert_eq!(n("margin"), room - room * 2 / 3, "{b}");
    let sent = n("system") + n("codebase") + n("history") + n("prompt");
    assert!(sent * 3 / 2 <= room, "{b}");
    let text = cli.command(&args).output().await.unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let mut lines = text.lines();
    let meter = lines.next().unwrap();
    assert!(
        meter.contains(&format!("+ {} kept free", n("margin"))),
        "{meter}"
    );
    let parts = lines.next().unwrap();
    assert!(
        parts.contains(&format!("{} kept free", n("margin"))),
        "{parts}"
    );
}

/// What past commits said about a file ranks it for those words, though the file holds none
/// of them: learnt at `project add`, a commit made later is learnt by the next `context`, and
/// a file moved keeps what was said of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_finds_files_by_what_their_past_commits_said() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    filler_repo(&root);
    // A commit that touches `file`, then five on others, so that `file` is not among the
    // recently edited.
    let commit_then_five = |file: &str, subject: &str, round: usize| {
        let touch = |rel: &str, line: String| {
            let path = root.join(rel);
            let mut text = std::fs::read_to_string(&path).unwrap();
            text.push_str(&line);
            std::fs::write(&path, text).unwrap();
        };
        touch(file, format!("// {round}\n"));
        common::git(&root, &["commit", "-q", "-am", subject]);
        for i in 0..5 {
            touch(
                &format!("src/a/f{:02}.rs", 20 + i),
                format!("// {round} {i}\n"),
            );
            common::git(
                &root,
                &["commit", "-q", "-am", &format!("tidy {round} {i}")],
            );
        }
    };
    commit_then_five("src/a/f05.rs", "Invoices: round each line, not the sum", 1);
    let cli = Cli {
        data: dir.path().join("data"),
    };
    let server = FakeProvider::start().await;
    register(&cli, &root, &server).await;
    let root_str = root.to_str().unwrap();
    let first = |prompt| first_included(&cli, root_str, prompt);
    let top = first("the invoice rounding is off by a cent").await;
    assert_eq!(top["path"], "src/a/f05.rs", "{top}");
    assert!(
        (top["why"].as_str().unwrap()).contains("its past commits said: invoice"),
        "{top}"
    );
    commit_then_five("src/a/f09.rs", "Ledger exports stream to disk", 2);
    let top = first("ledger export runs out of memory").await;
    assert_eq!(top["path"], "src/a/f09.rs", "{top}");
    // A file moved keeps what was said of it where it was.
    std::fs::create_dir_all(root.join("src/b")).unwrap();
    common::git(&root, &["mv", "src/a/f05.rs", "src/b/lines.rs"]);
    common::git(&root, &["commit", "-q", "-m", "tidy the tree"]);
    let top = first("the invoice rounding is off by a cent").await;
    assert_eq!(top["path"], "src/b/lines.rs", "{top}");
    assert!(
        (top["why"].as_str().unwrap()).contains("its past commits said: invoice"),
        "{top}"
    );
    // On a branch without a commit yet, nothing is reachable: the history says nothing.
    common::git(&root, &["checkout", "-q", "--orphan", "fresh"]);
    let top = first("ledger export runs out of memory").await;
    assert!(
        !(top["why"].as_str().unwrap()).contains("past commits"),
        "{top}"
    );
}

/// A repository of 30 files of filler functions (`src/a/f00.rs` ...), each named without
/// digits (the words of an identifier drop trailing digits): `filler_zqaa` ...
fn filler_repo(root: &std::path::Path) {
    let name = |i: u8| format!("zq{}{}", (b'a' + i / 26) as char, (b'a' + i % 26) as char);
    let files: Vec<(String, String)> = (0..30)
        .map(|i| {
            let text = format!("pub fn filler_{}() -> u32 {{ {i} }}\n", name(i)).repeat(40);
            (format!("src/a/f{i:02}.rs"), text)
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    common::repo_with(root, &files);
}

/// The first file `tandem context` packs for `prompt` (with the fake provider).
async fn first_included(cli: &Cli, root: &str, prompt: &str) -> Value {
    let args = [
        "context",
        "--project",
        root,
        "--provider",
        "fake",
        "--prompt",
        prompt,
    ];
    let context = cli.json(&args).await;
    context["breakdown"]["included"][0].clone()
}
