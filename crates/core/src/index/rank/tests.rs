use super::*;
use crate::index::{FileStamp, extract};

fn index(files: &[(&str, &str)]) -> CodeIndex {
    let mut index = CodeIndex::in_memory().unwrap();
    for (path, text) in files {
        let stamp = FileStamp {
            len: text.len() as u64,
            ..FileStamp::default()
        };
        (index.insert(path, stamp, &extract(path, text))).unwrap();
    }
    index
}

/// A commit the history learns: its subject and the files it changed.
fn past(id: &str, subject: &str, files: &[&str]) -> crate::index::PastCommit {
    crate::index::PastCommit {
        id: id.to_string(),
        subject: subject.to_string(),
        files: files.iter().map(|f| f.to_string()).collect(),
        moved: Vec::new(),
    }
}

fn position(ranked: &[Ranked], path: &str) -> Option<usize> {
    ranked.iter().position(|r| r.path == path)
}

fn project() -> CodeIndex {
    index(&[
        (
            "src/lexer.rs",
            "pub struct Token { pub kind: u8 }\npub fn tokenize(text: &str) -> Vec<Token> {\n    Vec::new()\n}\n",
        ),
        (
            "src/parser.rs",
            "use crate::lexer::tokenize;\npub fn parse_expression(text: &str) -> Expr {\n    let tokens = tokenize(text);\n    build_tree(tokens)\n}\n",
        ),
        (
            "src/tree.rs",
            "pub struct Expr;\npub fn build_tree(tokens: Vec<Token>) -> Expr { Expr }\n",
        ),
        (
            "src/http/server.rs",
            "pub fn listen(port: u16) {\n    accept_connections(port)\n}\n",
        ),
        (
            "src/http/client.rs",
            "pub fn request(url: &str) -> Response { fetch(url) }\n",
        ),
        (
            "docs/guide.md",
            "How to configure the server and its port.\n",
        ),
    ])
}

#[test]
fn the_file_defining_the_prompts_identifiers_ranks_above_unrelated_files() {
    let index = project();
    let ranked = index
        .rank(
            &Signals {
                prompt: "parse_expression returns the wrong Expr for nested parentheses",
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    assert_eq!(ranked[0].path, "src/parser.rs", "{ranked:#?}");
    assert!(ranked[0].why.contains("matches: "), "{}", ranked[0].why);
    assert!(ranked[0].why.contains("parse"), "{}", ranked[0].why);
    // Unrelated files are not ranked at all, or below.
    let parser = position(&ranked, "src/parser.rs");
    for unrelated in ["src/http/server.rs", "src/http/client.rs"] {
        assert!(
            position(&ranked, unrelated).is_none_or(|p| Some(p) > parser),
            "{ranked:#?}"
        );
    }
}

#[test]
fn files_defining_what_the_relevant_file_uses_come_next_and_say_so() {
    let index = project();
    let ranked = index
        .rank(
            &Signals {
                prompt: "parse_expression is slow",
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    // `tokenize` and `build_tree` are used by the parser: their files follow it, above the
    // HTTP files the prompt has nothing to do with.
    let lexer = position(&ranked, "src/lexer.rs").expect("lexer ranked");
    let tree = position(&ranked, "src/tree.rs").expect("tree ranked");
    assert!(lexer > 0 && tree > 0, "{ranked:#?}");
    assert!(
        position(&ranked, "src/http/server.rs").is_none(),
        "{ranked:#?}"
    );
    assert_eq!(
        ranked[lexer].why, "defines `tokenize` used by src/parser.rs",
        "{ranked:#?}"
    );
    assert_eq!(
        ranked[tree].why,
        "defines `build_tree` used by src/parser.rs"
    );
}

#[test]
fn the_persons_signals_lead_with_their_reasons() {
    let index = project();
    let mentioned = vec!["src/http/client.rs".to_string()];
    let recent = vec!["docs/guide.md".to_string()];
    let open = vec!["src/tree.rs".to_string()];
    let ranked = index
        .rank(
            &Signals {
                prompt: "tokenize",
                mentioned: &mentioned,
                recent: &recent,
                open: &open,
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    assert_eq!(ranked[0].path, "src/http/client.rs");
    assert_eq!(ranked[0].why, "mentioned");
    let guide = position(&ranked, "docs/guide.md").expect("recent ranked");
    assert!(ranked[guide].why.contains("edited in the last commits"));
    let tree = position(&ranked, "src/tree.rs").expect("open ranked");
    assert!(
        ranked[tree].why.starts_with("open in the editor"),
        "{ranked:#?}"
    );
    // A file gone from the index is not ranked, however it was signalled.
    let gone = vec!["src/deleted.rs".to_string()];
    let ranked = index
        .rank(
            &Signals {
                mentioned: &gone,
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    assert!(ranked.is_empty(), "{ranked:#?}");
}

#[test]
fn path_words_match_a_prompt_about_the_folder() {
    let index = project();
    let ranked = index
        .rank(
            &Signals {
                prompt: "the http client times out",
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    assert_eq!(ranked[0].path, "src/http/client.rs", "{ranked:#?}");
    assert_eq!(ranked[1].path, "src/http/server.rs", "{ranked:#?}");
}

#[test]
fn a_prompts_word_in_a_path_ranks_that_file_however_long_it_is_and_goes_with_the_path() {
    // The css plugin is long and says "css" only in its name; a short page that mentions css
    // and tags in passing wins on text alone.
    let filler = "    let value = compute(input);\n".repeat(400);
    let plugin = format!("export function minify(code) {{\n{filler}}}\n");
    let page = "// inlines the css of its tags\nexport function render() {}\n";
    let mut index = index(&[
        ("src/plugins/css.ts", plugin.as_str()),
        ("src/pages/render.ts", page),
        ("src/plugins/json.ts", "export function parse(text) {}\n"),
        ("src/plugins/wasm.ts", "export function load(bytes) {}\n"),
    ]);
    let rank = |index: &CodeIndex| {
        let signals = Signals {
            prompt: "css: minify style tags",
            ..Signals::default()
        };
        index.rank(&signals, 400).unwrap()
    };
    let ranked = rank(&index);
    // Scored above the page (it is packed after it: the page is tiny, see the test on size).
    let css = &ranked[position(&ranked, "src/plugins/css.ts").unwrap()];
    let page = &ranked[position(&ranked, "src/pages/render.ts").unwrap()];
    assert!(css.score > page.score, "{ranked:#?}");
    assert!(css.why.contains("path has: css"), "{}", css.why);
    // Renamed, the file keeps its text but no longer its path's word.
    let text = extract("src/plugins/shrink.ts", &plugin);
    index.remove("src/plugins/css.ts").unwrap();
    index
        .insert("src/plugins/shrink.ts", FileStamp::default(), &text)
        .unwrap();
    assert_eq!(
        index.files_with_path_word("css").unwrap(),
        Vec::<u32>::new()
    );
    assert_eq!(index.files_with_path_word("shrink").unwrap().len(), 1);
    // Changed in place, it keeps its path's words (once).
    let changed = extract("src/plugins/shrink.ts", "export function minify(code) {}\n");
    (index.insert("src/plugins/shrink.ts", FileStamp::default(), &changed)).unwrap();
    assert_eq!(index.files_with_path_word("shrink").unwrap().len(), 1);
    index
        .insert("src/plugins/shrink.ts", FileStamp::default(), &text)
        .unwrap();
    let ranked = rank(&index);
    assert_eq!(position(&ranked, "src/plugins/css.ts"), None, "{ranked:#?}");
    let renamed = &ranked[position(&ranked, "src/plugins/shrink.ts").unwrap()];
    assert!(!renamed.why.contains("path has: css"), "{}", renamed.why);
    assert_eq!(ranked[0].path, "src/pages/render.ts", "{ranked:#?}");
}

#[test]
fn open_tabs_rank_in_their_order_and_the_selection_at_least_as_high_as_the_active_tab() {
    let index = project();
    // The active tab first; paths the editor can hold that are not indexed project files
    // (gone, absolute, outside) are passed over without error.
    let open: Vec<String> = [
        "docs/guide.md",
        "src/http/server.rs",
        "src/deleted.rs",
        "/etc/passwd",
        "../elsewhere/lib.rs",
    ]
    .map(String::from)
    .to_vec();
    let ranked = index
        .rank(
            &Signals {
                open: &open,
                // The selection is in the second tab.
                selected: Some("src/http/server.rs"),
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    let paths: Vec<&str> = ranked.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths[..2],
        ["src/http/server.rs", "docs/guide.md"],
        "{ranked:#?}"
    );
    assert!(
        ranked[0]
            .why
            .starts_with("selected in the editor; open in the editor"),
        "{ranked:#?}"
    );
    assert_eq!(ranked[1].why, "open in the editor", "{ranked:#?}");
    for unknown in ["src/deleted.rs", "/etc/passwd", "../elsewhere/lib.rs"] {
        assert!(position(&ranked, unknown).is_none(), "{ranked:#?}");
    }
    // Without the signals neither file ranks at all.
    let none = index.rank(&Signals::default(), 400).unwrap();
    assert!(none.is_empty(), "{none:#?}");
}

#[test]
fn the_selections_identifiers_find_their_files_below_the_prompts_own_words() {
    let index = project();
    let selection = "    let tokens = tokenize(text);\n";
    let ranked = index
        .rank(
            &Signals {
                selected: Some("src/parser.rs"),
                selection,
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    assert_eq!(ranked[0].path, "src/parser.rs", "{ranked:#?}");
    // The file defining what the selection uses rises, and says why.
    let lexer = position(&ranked, "src/lexer.rs").expect("lexer ranked");
    assert!(
        // `tokens` and `tokenize` share a stem: the selection's first spelling is said.
        ranked[lexer].why.contains("selection uses: tokens"),
        "{ranked:#?}"
    );
    for unrelated in ["src/http/server.rs", "src/http/client.rs", "docs/guide.md"] {
        assert!(position(&ranked, unrelated).is_none(), "{ranked:#?}");
    }
    // The prompt's own words weigh more than the selection's.
    let ranked = index
        .rank(
            &Signals {
                prompt: "the server's port",
                selected: Some("src/parser.rs"),
                selection,
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    let (server, lexer) = (
        position(&ranked, "src/http/server.rs").expect("server ranked"),
        position(&ranked, "src/lexer.rs").expect("lexer ranked"),
    );
    assert!(server < lexer, "{ranked:#?}");
}

#[test]
fn a_word_in_most_paths_says_nothing_of_where_to_look() {
    let index = project();
    // `src` is in five paths of six; `http` in two.
    let ranked = index
        .rank(
            &Signals {
                prompt: "the http client under src",
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    let in_path = |why: &str| {
        let part = why.split("; ").find(|p| p.starts_with("path has: "));
        part.map(|p| p.to_string()).unwrap_or_default()
    };
    let client = &ranked[position(&ranked, "src/http/client.rs").unwrap()];
    assert_eq!(
        in_path(&client.why),
        "path has: http, client",
        "{ranked:#?}"
    );
    for r in &ranked {
        assert!(!in_path(&r.why).contains("src"), "{ranked:#?}");
    }
}

#[test]
fn a_selections_keywords_found_in_most_files_rank_nothing() {
    let index = project();
    // `pub` and `fn` are in five files of six: they say nothing of what the selection is.
    let ranked = index
        .rank(
            &Signals {
                selection: "pub fn",
                ..Signals::default()
            },
            400,
        )
        .unwrap();
    assert!(ranked.is_empty(), "{ranked:#?}");
}

#[test]
fn of_two_files_nearly_as_relevant_the_smaller_goes_first_but_not_past_what_the_person_named() {
    // About 200 tokens, and forty times that with the same words as often: BM25 ranks the
    // big one a little higher (more of them, against a length it saturates on).
    let small = format!(
        "fn resolve_alias() {{}}\n{}",
        "// nothing to see here\n".repeat(30)
    );
    let big = small.repeat(40);
    let index = index(&[
        ("src/big.rs", big.as_str()),
        ("src/small.rs", small.as_str()),
    ]);
    let ranked = |mentioned: &[String]| {
        let signals = Signals {
            prompt: "resolve_alias",
            mentioned,
            ..Signals::default()
        };
        index.rank(&signals, 400).unwrap()
    };
    let by_size = ranked(&[]);
    assert_eq!(by_size[0].path, "src/small.rs", "{by_size:#?}");
    assert_eq!(by_size[1].path, "src/big.rs", "{by_size:#?}");
    // Named by the person, in their order: the size does not move them.
    let named = ranked(&["src/big.rs".to_string(), "src/small.rs".to_string()]);
    assert_eq!(named[0].path, "src/big.rs", "{named:#?}");
}

#[test]
fn a_file_its_past_commits_describe_ranks_for_their_words() {
    let mut index = project();
    let prompt = Signals {
        prompt: "the invoice rounding is off by a cent",
        ..Signals::default()
    };
    // No file has these words: nothing ranks.
    assert!(index.rank(&prompt, 400).unwrap().is_empty());
    let commits = [
        past(
            "c3",
            "Invoices: round each line, not the sum",
            &["src/tree.rs"],
        ),
        past("c2", "Speed up the lexer", &["src/lexer.rs"]),
        // A file the project no longer has is not ranked.
        past(
            "c1",
            "Invoice totals in cents",
            &["src/gone.rs", "src/tree.rs"],
        ),
    ];
    let ids: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
    assert!(index.learn_history("c3", &ids, &commits).unwrap());
    let ranked = index.rank(&prompt, 400).unwrap();
    assert_eq!(ranked[0].path, "src/tree.rs", "{ranked:#?}");
    // Nothing else matches: only what the tree uses follows it, along the graph.
    assert!(
        (ranked[1..].iter()).all(|r| r.why.starts_with("defines `")),
        "{ranked:#?}"
    );
    assert!(
        // The words as the prompt spells them, not their stems (`invoic`).
        ranked[0]
            .why
            .contains("its past commits said: rounding, invoice, cent"),
        "{}",
        ranked[0].why
    );
    // Below what the files themselves say: the lexer's words rank the lexer first (the tree
    // has `tokens` too, but not a token's `kind`).
    let ranked = (index.rank(
        &Signals {
            prompt: "token kinds of invoices",
            ..Signals::default()
        },
        400,
    ))
    .unwrap();
    assert_eq!(ranked[0].path, "src/lexer.rs", "{ranked:#?}");
    assert!(position(&ranked, "src/tree.rs").is_some(), "{ranked:#?}");
}

#[test]
fn a_file_the_newest_commits_changed_often_ranks_below_a_real_match() {
    let mut index = project();
    // The guide changed in half the newest commits, the client in one.
    let mut commits: Vec<_> = (0..50)
        .map(|i| past(&format!("g{i}"), "Small fix", &["docs/guide.md"]))
        .collect();
    commits.push(past("c", "Small fix", &["src/http/client.rs"]));
    let ids: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
    assert!(index.learn_history("g0", &ids, &commits).unwrap());
    let ranked = (index.rank(
        &Signals {
            prompt: "parse_expression returns the wrong Expr",
            ..Signals::default()
        },
        400,
    ))
    .unwrap();
    let guide = position(&ranked, "docs/guide.md").expect("the guide ranks");
    let client = position(&ranked, "src/http/client.rs").expect("the client ranks");
    assert!(guide < client, "{ranked:#?}");
    assert_eq!(
        ranked[guide].why, "changed by 50 of the last 100 commits",
        "{ranked:#?}"
    );
    // A file the prompt names the code of stays first.
    assert_eq!(ranked[0].path, "src/parser.rs", "{ranked:#?}");
}

#[test]
fn a_file_that_changes_with_a_relevant_one_follows_it_unless_it_changes_with_everything() {
    let mut index = project();
    let prompt = Signals {
        prompt: "parse_expression returns the wrong Expr",
        ..Signals::default()
    };
    let before = index.rank(&prompt, 400).unwrap();
    assert_eq!(position(&before, "src/http/server.rs"), None, "{before:#?}");
    // Newest first: the server changed with the parser three times, the client once; the
    // guide changed with the parser three times too, but in 60 older commits of its own
    // (older than the newest 100, which say how often a file changes lately).
    let mut commits = vec![
        past(
            "p1",
            "Small fix",
            &["src/parser.rs", "src/http/server.rs", "docs/guide.md"],
        ),
        past(
            "p2",
            "Small fix",
            &["src/parser.rs", "src/http/server.rs", "docs/guide.md"],
        ),
        past(
            "p3",
            "Small fix",
            &["src/parser.rs", "src/http/server.rs", "docs/guide.md"],
        ),
        past("p4", "Small fix", &["src/parser.rs", "src/http/client.rs"]),
    ];
    commits.extend((0..100).map(|i| past(&format!("o{i}"), "Small fix", &["src/gone.rs"])));
    commits.extend((0..60).map(|i| past(&format!("g{i}"), "Small fix", &["docs/guide.md"])));
    let ids: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
    assert!(index.learn_history("p1", &ids, &commits).unwrap());
    let ranked = index.rank(&prompt, 400).unwrap();
    assert_eq!(ranked[0].path, "src/parser.rs", "{ranked:#?}");
    let server = position(&ranked, "src/http/server.rs").expect("the server follows");
    assert!(
        ranked[server]
            .why
            .contains("changed with src/parser.rs in 3 commits"),
        "{ranked:#?}"
    );
    // The guide changed with the parser as often, but it changes with everything: 3 of the
    // 64 commits that changed either, against the server's 3 of 4 (both changed by 3 of the
    // last 100 commits).
    let guide = position(&ranked, "docs/guide.md").expect("the guide follows too");
    assert!(
        ranked[guide].score * 4.0 < ranked[server].score,
        "{ranked:#?}"
    );
    // One commit together is chance.
    let client = position(&ranked, "src/http/client.rs");
    assert!(
        client.is_none_or(|c| !ranked[c].why.contains("changed with")),
        "{ranked:#?}"
    );
}
