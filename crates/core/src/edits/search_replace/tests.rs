//! Tests for search-replace parsing and matching.
use super::*;
use MatchTier::*;
use ParseProblem::*;
use proptest::prelude::*;

fn b(search: &str, replace: &str) -> Block {
    let (search, replace) = (search.into(), replace.into());
    Block { search, replace }
}

/// Applies one block that must apply; returns the text, tier and line.
fn apply1(file: &str, search: &str, replace: &str) -> Result<(String, MatchTier, usize), Error> {
    let (text, outcomes) = apply_blocks(file, &[b(search, replace)])?;
    match outcomes[..] {
        [
            BlockOutcome::Applied {
                tier,
                line,
                numbers: None,
            },
        ] => Ok((text, tier, line)),
        _ => panic!("not applied: {outcomes:?}"),
    }
}

fn text(file: &str, search: &str, replace: &str) -> String {
    apply1(file, search, replace).unwrap().0
}

#[test]
fn exact_tier_substring_and_whole_lines_first() {
    let r = apply1("let x = foo(1);\n", "foo(1)", "bar(2)").unwrap();
    assert_eq!(r, ("let x = bar(2);\n".into(), Exact, 1));
    let r = apply1("    xa = 1;\na = 1;\n", "a = 1;", "a = 2;").unwrap();
    assert_eq!(r, ("    xa = 1;\na = 2;\n".into(), Exact, 2));
}

#[test]
fn trailing_whitespace_tier() {
    let r = apply1(
        "fn a() {  \n    x();\t\n}\n",
        "fn a() {\n    x();",
        "fn a() {\n    y();",
    );
    assert_eq!(
        r.unwrap(),
        ("fn a() {\n    y();\n}\n".into(), TrailingWhitespace, 1)
    );
}

#[test]
fn indentation_tier_reindents_to_spaces_and_tabs() {
    let (search, replace) = ("if x {\n    a();\n}", "if x {\n    b();\n\n}\nc();");
    let spaces = "fn f() {\n        if x {\n            a();\n        }\n}\n";
    let want = "fn f() {\n        if x {\n            b();\n\n        }\n        c();\n}\n";
    let r = apply1(spaces, search, replace).unwrap();
    assert_eq!(r, (want.into(), Indentation, 2));
    let tabs = "fn f() {\n\t\tif x {\n\t\t    a();\n\t\t}\n}\n";
    let want = "fn f() {\n\t\tif x {\n\t\t    b();\n\n\t\t}\n\t\tc();\n}\n";
    assert_eq!(
        apply1(tabs, search, replace).unwrap(),
        (want.into(), Indentation, 2)
    );
}

#[test]
fn reindent_keeps_relative_outdent() {
    let file = "        a();\n        b();\n";
    let r = apply1(file, "    a();\n    b();", "    a();\nz();\n      b();").unwrap();
    assert_eq!(
        r,
        (
            "        a();\n    z();\n          b();\n".into(),
            Indentation,
            1
        )
    );
}

#[test]
fn unicode_tier_folds_quotes_dashes_and_spaces() {
    let file = "say(\u{201C}it\u{2019}s\u{201D});\n// a\u{2014}b\u{a0}c\u{2026}\u{200B}\n";
    let r = apply1(file, "say(\"it's\");\n  // a-b c...", "say(\"hi\");").unwrap();
    assert_eq!(r, ("say(\"hi\");\n".into(), Unicode, 1));
    // The other way round: plain file, the model wrote typographic characters.
    let r = apply1(
        "x = 'a' - 1;\n",
        "x = \u{2018}a\u{2019} \u{2212} 1;",
        "x = 0;",
    );
    assert_eq!(r.unwrap(), ("x = 0;\n".into(), Unicode, 1));
}

#[test]
fn ambiguous_exact_and_fuzzy() {
    let err = apply1("a();\nb();\na();\n", "a();", "c();").unwrap_err();
    let want = Error::Ambiguous {
        block: 1,
        total: 1,
        count: 2,
        lines: vec![1, 3],
    };
    assert_eq!(err, want);
    let msg = err.to_string();
    assert!(msg.contains("block 1 of 1: SEARCH matches 2 places in the file (lines 1, 3)"));
    let err = apply1("  a();\nb();\n    a();\n", "a();\n", "c();").unwrap_err();
    assert_eq!(err, want);
}

#[test]
fn empty_search_is_an_error() {
    let err = apply_blocks("x\n", &[b("x", "y"), b(" \n\t", "y")]).unwrap_err();
    assert_eq!(err, Error::EmptySearch { block: 2, total: 2 });
    let msg = err.to_string();
    assert!(msg.starts_with("block 2 of 2: the SEARCH section is empty"));
}

#[test]
fn not_found_quotes_nearest_lines() {
    let file = "use std::io;\n\nfn parse(input: &str) -> u32 {\n    input.len() as u32\n}\n";
    let blocks = [
        b("use std::io;", "use std::fs;"),
        b("fn parse(input: &String) -> u32 {\n    input.len()", "x"),
    ];
    let err = apply_blocks(file, &blocks).unwrap_err();
    let Error::NotFound {
        block: 2,
        total: 2,
        nearest: Some((3, _)),
        ..
    } = err
    else {
        panic!("{err:?}")
    };
    let msg = err.to_string();
    assert!(
        msg.starts_with("block 2 of 2: the SEARCH text was not found"),
        "{msg}"
    );
    assert!(
        msg.contains("\n    fn parse(input: &String) -> u32 {\n"),
        "{msg}"
    );
    let quoted = "     3 | fn parse(input: &str) -> u32 {\n     4 |     input.len() as u32\n";
    assert!(msg.contains(quoted), "{msg}");
    assert!(msg.ends_with("re-read the file and try again."), "{msg}");
    let err = apply1("alpha\n", "zzzz qqqq", "x").unwrap_err();
    assert!(
        matches!(err, Error::NotFound { nearest: None, .. }),
        "{err:?}"
    );
}

#[test]
fn already_applied_needs_whole_lines_and_search_wins() {
    let (kept, outcomes) = apply_blocks("a();\nnew();\n", &[b("old();", "new();")]).unwrap();
    assert_eq!(kept, "a();\nnew();\n");
    assert_eq!(outcomes, vec![BlockOutcome::AlreadyApplied]);
    assert_eq!(
        text("old();\nnew();\n", "old();", "new();"),
        "new();\nnew();\n"
    );
    // A REPLACE fragment found mid-line proves nothing: still "not found".
    let err = apply_blocks("renew();\n", &[b("old();", "new")]).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }));
}

#[test]
fn blocks_apply_in_sequence() {
    let blocks = [b("a = 1;", "a = 2;\nb = 3;"), b("b = 3;", "b = 4;")];
    let (text, outcomes) = apply_blocks("a = 1;\n", &blocks).unwrap();
    assert_eq!(text, "a = 2;\nb = 4;\n");
    assert_eq!(
        outcomes[1],
        BlockOutcome::Applied {
            tier: Exact,
            line: 2,
            numbers: None,
        }
    );
}

#[test]
fn line_endings_and_final_newline_are_kept() {
    assert_eq!(
        text("a\r\nb\r\nc\r\n", "b\r\n", "x\r\ny\r\n"),
        "a\r\nx\r\ny\r\nc\r\n"
    );
    let body = "<<<<<<< SEARCH\r\nb\r\n=======\r\nx\r\n>>>>>>> REPLACE\r\n";
    let blocks = parse_blocks(body).unwrap();
    assert_eq!(apply_blocks("a\nb\nc\n", &blocks).unwrap().0, "a\nx\nc\n");
    assert_eq!(text("a\nb", "b", "c\nd"), "a\nc\nd");
    assert_eq!(text("a\nb", "  b", "c"), "a\nc");
}

#[test]
fn empty_replace_deletes_whole_lines() {
    assert_eq!(text("a\nb\nc\n", "b", ""), "a\nc\n");
    assert_eq!(text("a\nb", "b", ""), "a");
    assert_eq!(text("a\n  b \nc\n", "b", ""), "a\nc\n");
    assert_eq!(text("ab\n", "b", ""), "a\n");
}

#[test]
fn padded_search_falls_back_to_trimmed() {
    // SEARCH and REPLACE end in a blank line that the file does not have.
    assert_eq!(text("foo\nnext\n", "foo\n", "bar\n"), "bar\nnext\n");
    // When the blank line exists, it is part of the match.
    assert_eq!(text("foo\n\nnext\n", "foo\n", "bar"), "bar\nnext\n");
}

#[test]
fn parses_blocks_between_chatter_and_fences() {
    let body = "Sure, here is the edit:\n```rust\n  <<<<<<< SEARCH  \nold\n\n=======\nnew\n\
                >>>>>>>>> REPLACE\n```\n\n<<<<<<<<<SEARCH\r\na\r\n=========\r\n\
                >>>>>>>REPLACE\r\nThanks!";
    assert_eq!(
        parse_blocks(body).unwrap(),
        vec![b("old\n", "new"), b("a", "")]
    );
}

#[test]
fn markers_need_five_to_nine_chars() {
    let body = "<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE";
    assert_eq!(parse_blocks(body), Err(Error::NoBlocks));
    let body = "<<<<<<< SEARCH\n==========\n=======\n>>>>>>>>>> REPLACE\n>>>>>>> REPLACE";
    assert_eq!(
        parse_blocks(body).unwrap(),
        vec![b("==========", ">>>>>>>>>> REPLACE")]
    );
}

#[test]
fn parse_errors_name_block_and_line() {
    let parse_err = |block, line, problem| {
        Err(Error::Parse {
            block,
            line,
            problem,
        })
    };
    let ok = "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n";
    let body = format!("{ok}<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n");
    assert_eq!(parse_blocks(&body), parse_err(2, 6, MissingDivider));
    let msg = parse_blocks(&body).unwrap_err().to_string();
    assert!(msg.starts_with("block 2, line 6: the `<<<<<<< SEARCH` marker has no `=======`"));
    let body = format!("{ok}<<<<<<< SEARCH\nx\n=======\ny\n");
    assert_eq!(parse_blocks(&body), parse_err(2, 8, MissingReplace));
    assert_eq!(
        parse_blocks("<<<<<<< SEARCH\nx"),
        parse_err(1, 1, MissingDivider)
    );
    assert_eq!(parse_blocks("just chat\n```\n```"), Err(Error::NoBlocks));
    assert!(
        Error::NoBlocks
            .to_string()
            .starts_with("no SEARCH/REPLACE blocks")
    );
}

#[test]
fn large_file_with_many_blocks() {
    let line = |i| format!("    let v{i} = compute({i}, \"x\");");
    let file: String = (0..100_000).map(|i| line(i) + "\n").collect();
    let mut blocks: Vec<Block> = (0..48)
        .map(|k| k * 2000 + 7)
        .map(|i| b(&line(i), &format!("    v{i}();")))
        .collect();
    blocks.push(b(
        "let v99999 = compute(99999, \u{201C}x\u{201D});",
        "done();",
    ));
    blocks.push(b("let v5 = compute(5, \"x\");  ", "five();"));
    let (text, outcomes) = apply_blocks(&file, &blocks).unwrap();
    assert_eq!(
        outcomes[48],
        BlockOutcome::Applied {
            tier: Unicode,
            line: 100_000,
            numbers: None,
        }
    );
    assert!(text.ends_with("    done();\n") && text.contains("\n    five();\n"));
    let missing: String = (0..200)
        .map(|i| format!("let w{i} = other({i});\n"))
        .collect();
    let err = apply1(&file, &missing, "x();").unwrap_err();
    assert!(matches!(
        err,
        Error::NotFound {
            nearest: Some(_),
            ..
        }
    ));
}

fn lines_text(lines: &[String], final_newline: bool) -> String {
    let mut text = lines.join("\n");
    if final_newline && !lines.is_empty() {
        text.push('\n');
    }
    text
}

fn windows_equal(lines: &[String], slice: &[String]) -> usize {
    lines.windows(slice.len()).filter(|w| *w == slice).count()
}

proptest! {
    #[test]
    fn never_panics(
        body in "(<<<<<<< SEARCH|=======|>>>>>>> REPLACE|```|[a-c \t]|\u{a0}|\u{2019}|\u{200B}|\r|\n){0,60}",
        original in "([a-c \t{}]|\u{a0}|\u{2014}|\u{2019}|\r|\n){0,80}",
        pairs in prop::collection::vec((any::<String>(), "([ab \t]|\n|\r|\u{2026}){0,12}"), 0..3),
    ) {
        if let Ok(blocks) = parse_blocks(&body) {
            let _ = apply_blocks(&original, &blocks);
        }
        let blocks: Vec<Block> = pairs.iter().map(|(s, r)| b(s, r)).collect();
        let _ = apply_blocks(&original, &blocks);
        let fuzzy: Vec<Block> = pairs.iter().map(|(s, r)| b(r, s)).collect();
        let _ = apply_blocks(&original, &fuzzy);
    }

    #[test]
    fn unique_slice_is_replaced_exactly(
        lines in prop::collection::vec("[abc \t]{0,4}", 1..30),
        final_newline: bool,
        at: prop::sample::Index,
        len: prop::sample::Index,
        x in prop::collection::vec("[xy ]{0,3}", 0..4),
    ) {
        let start = at.index(lines.len());
        let end = start + 1 + len.index(lines.len() - start);
        let slice = &lines[start..end];
        let search = slice.join("\n");
        prop_assume!(!search.trim().is_empty() && windows_equal(&lines, slice) == 1);
        // A last empty line can only be written as a final newline after it.
        let final_newline = final_newline || lines.last().is_some_and(String::is_empty);
        let replace = x.join("\n");
        let inserted = if replace.is_empty() { vec![] } else { x.clone() };
        let expected: Vec<String> =
            [&lines[..start], &inserted[..], &lines[end..]].concat();
        let (text, _) = apply_blocks(&lines_text(&lines, final_newline), &[b(&search, &replace)]).unwrap();
        prop_assert_eq!(text, lines_text(&expected, final_newline));
    }

    #[test]
    fn applying_twice_is_already_applied(
        lines in prop::collection::vec("x[0-9]{1,2}y", 1..40),
        at: prop::sample::Index,
        len: prop::sample::Index,
        x in prop::collection::vec("r[0-9]s", 1..4),
    ) {
        let start = at.index(lines.len());
        let end = start + 1 + len.index((lines.len() - start).min(3));
        prop_assume!(windows_equal(&lines, &lines[start..end]) == 1);
        let blocks = [b(&lines[start..end].join("\n"), &x.join("\n"))];
        let (once, _) = apply_blocks(&lines_text(&lines, true), &blocks).unwrap();
        let (twice, outcomes) = apply_blocks(&once, &blocks).unwrap();
        prop_assert_eq!(twice, once);
        prop_assert_eq!(outcomes, vec![BlockOutcome::AlreadyApplied]);
    }

    #[test]
    fn rendered_blocks_parse_back(
        pairs in prop::collection::vec(
            (prop::collection::vec("[a-z ]{0,5}", 1..4), prop::collection::vec("[a-z ]{0,5}", 0..4)),
            1..4,
        ),
    ) {
        let blocks: Vec<Block> = pairs.iter().map(|(s, r)| b(&s.join("\n"), &r.join("\n"))).collect();
        let mut body = String::from("Here you go:\n```\n");
        for blk in &blocks {
            body += &format!("<<<<<<< SEARCH\n{}\n=======\n", blk.search);
            if !blk.replace.is_empty() {
                body += &format!("{}\n", blk.replace);
            }
            body += ">>>>>>> REPLACE\n";
        }
        body += "```\n";
        prop_assert_eq!(parse_blocks(&body).unwrap(), blocks);
    }
}
