//! Blocks whose lines carry the line numbers a file view showed: applied without them only
//! when the numbers cannot be the file's content.

use proptest::prelude::*;

use super::*;
use crate::edits::search_replace::{
    Block, BlockOutcome, MatchTier, SearchReplaceError, apply_blocks, apply_blocks_as_read,
};

fn b(search: &str, replace: &str) -> Block {
    let (search, replace) = (search.into(), replace.into());
    Block { search, replace }
}

/// Lines `from..=to` of `file` as `read_file` shows them (`"    12\ttext"`).
fn view(file: &str, from: usize, to: usize) -> String {
    let lines: Vec<&str> = file.lines().collect();
    (from..=to)
        .map(|n| format!("{n:>6}\t{}", lines[n - 1]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn code() -> String {
    (1..=20)
        .map(|i| match i % 4 {
            0 => "}\n".to_string(),
            1 => format!("fn f{i}() {{\n"),
            2 => format!("    let v{i} = {i};\n"),
            _ => format!("    use_it(v{});\n", i - 1),
        })
        .collect()
}

/// The outcome of one block that must apply.
fn applied(file: &str, block: Block) -> (String, BlockOutcome) {
    let (text, outcomes) = apply_blocks(file, &[block]).unwrap();
    (text, outcomes[0].clone())
}

fn not_applied(file: &str, block: Block) -> SearchReplaceError {
    apply_blocks(file, &[block]).unwrap_err()
}

/// A SEARCH of numbered blank lines is as empty as one of blank lines: refused, not taken
/// as "already applied" because REPLACE's lines are somewhere in the file (found by the
/// property below with a random seed).
#[test]
fn numbers_on_blank_lines_only_are_an_empty_search() {
    let file = "\n\n\n\n\n\n=\n";
    for search in ["1: ", "     1\t", "1→", "   1 | ", "1: \n2: "] {
        assert!(
            matches!(
                not_applied(file, b(search, "=")),
                SearchReplaceError::EmptySearch { .. }
            ),
            "{search:?}"
        );
    }
    assert!(matches!(
        not_applied(file, b("", "=")),
        SearchReplaceError::EmptySearch { .. }
    ));
}

#[test]
fn splits_each_style() {
    let text = |line| split(line).and_then(|(n, s, text)| Some((n, s?, text)));
    assert_eq!(
        text("    12\t    code"),
        Some((12, Separator::Tab, "    code"))
    );
    assert_eq!(text("12→x"), Some((12, Separator::Arrow, "x")));
    assert_eq!(text("7: x"), Some((7, Separator::Colon, "x")));
    assert_eq!(text("7:x"), Some((7, Separator::Colon, "x")));
    assert_eq!(text(" 7 | x"), Some((7, Separator::Pipe, "x")));
    assert_eq!(text("7|  x"), Some((7, Separator::Pipe, " x")));
    assert_eq!(text("7  x"), Some((7, Separator::Space, " x")));
    assert_eq!(text("    13\t  "), Some((13, Separator::Tab, "  ")));
    assert_eq!(split("    13"), Some((13, None, "")));
    for not in ["x", "", "7x", "1234567890\tx", "-1\tx", "7,x"] {
        assert_eq!(split(not), None, "{not:?}");
    }
}

#[test]
fn read_file_numbers_are_taken_off_search_and_replace() {
    let file = code();
    let search = view(&file, 6, 7);
    let replace = "     6\t    let v6 = 600;\n     7\t    use_it(v6);";
    let (text, outcome) = applied(&file, b(&search, replace));
    let plain = applied(
        &file,
        b(
            "    let v6 = 6;\n    use_it(v6);",
            "    let v6 = 600;\n    use_it(v6);",
        ),
    );
    assert_eq!(text, plain.0);
    assert!(
        text.contains("\n    let v6 = 600;\n    use_it(v6);\n}\n"),
        "{text}"
    );
    assert_eq!(
        outcome,
        BlockOutcome::Applied {
            tier: MatchTier::Exact,
            line: 6,
            numbers: Some((6, 7)),
        }
    );
}

#[test]
fn every_view_style_and_a_replacement_written_plainly() {
    let file = code();
    let want = file.replace("    let v10 = 10;\n", "    let v10 = 11;\n");
    for search in [
        "    10\t    let v10 = 10;\n    11\t    use_it(v10);",
        "10\t    let v10 = 10;\n11\t    use_it(v10);",
        "10→    let v10 = 10;\n11→    use_it(v10);",
        "10: let v10 = 10;\n11: use_it(v10);",
        "  10 |     let v10 = 10;\n  11 |     use_it(v10);",
        "10|let v10 = 10;\n11|use_it(v10);",
        // read_file's tab turned into spaces: the indentation is then a guess, fixed as for
        // any block indented differently from the file.
        "10         let v10 = 10;\n11         use_it(v10);",
    ] {
        let replace = search.replace("v10 = 10", "v10 = 11");
        let (text, outcome) = applied(&file, b(search, &replace));
        assert_eq!(text, want, "{search}");
        assert!(
            matches!(
                outcome,
                BlockOutcome::Applied {
                    line: 10,
                    numbers: Some((10, 11)),
                    ..
                }
            ),
            "{search}: {outcome:?}"
        );
    }
    // REPLACE written without the numbers is used as written.
    let search = view(&file, 10, 11);
    let (text, _) = applied(&file, b(&search, "    let v10 = 11;\n    use_it(v10);"));
    assert_eq!(text, want);
}

#[test]
fn numbered_blank_lines_and_padding() {
    let file = "a\n\nb\nc\n";
    // read_file shows a blank line as its number alone (its tab trimmed away, or not); a
    // blank line left without its number still counts; padding lines around SEARCH too.
    for search in [
        "     1\ta\n     2\n     3\tb",
        "1\ta\n2\t\n3\tb",
        "1\ta\n\n3\tb",
        "\n1\ta\n2\n3\tb\n",
    ] {
        let (text, outcome) = applied(file, b(search, "1\ta\n2\tb"));
        assert_eq!(text, "a\nb\nc\n", "{search:?}");
        assert!(matches!(
            outcome,
            BlockOutcome::Applied {
                numbers: Some((1, _)),
                ..
            }
        ));
    }
}

#[test]
fn never_when_the_numbers_could_be_content() {
    let file = code();
    let replace = "    let v6 = 600;";
    let refused = [
        // Not this line's number.
        "     7\t    let v6 = 6;",
        // Not counting up by one.
        "     6\t    let v6 = 6;\n     8\t    use_it(v6);",
        // Only some lines numbered.
        "     6\t    let v6 = 6;\n    use_it(v6);",
        // Mixed styles.
        "     6\t    let v6 = 6;\n7: use_it(v6);",
        // Numbers right, but the text still is not the file's.
        "     6\t    let v6 = 7;",
    ];
    for search in refused {
        let err = not_applied(&file, b(search, replace));
        assert!(
            matches!(err, SearchReplaceError::NotFound { .. }),
            "{search}: {err:?}"
        );
    }
    // REPLACE numbered only in part: which numbers are text cannot be told.
    let err = not_applied(
        &file,
        b(
            &view(&file, 6, 7),
            "     6\t    let v6 = 600;\n7: x\n    use_it(v6);",
        ),
    );
    assert!(matches!(
        err,
        SearchReplaceError::NotFound {
            line_numbers: true,
            ..
        }
    ));
    assert!(
        err.to_string().contains("seem to start with line numbers"),
        "{err}"
    );
    // A line starting with a year is no reason to talk about line numbers.
    let err = not_applied(&file, b("2024 was a year", "x"));
    assert!(matches!(
        err,
        SearchReplaceError::NotFound {
            line_numbers: false,
            ..
        }
    ));
    assert!(!err.to_string().contains("line numbers"), "{err}");
}

#[test]
fn a_file_numbered_like_that_is_never_unnumbered() {
    // A listing whose lines start with numbers in the same style: SEARCH's numbers may be
    // its text, so a miss stays a miss.
    let file = "1: alpha\n2: beta\nbeta\n";
    let err = not_applied(file, b("3: beta", "3: gamma"));
    assert!(
        matches!(err, SearchReplaceError::NotFound { .. }),
        "{err:?}"
    );
    // In another style they are numbers again: `read_file` shows the listing's line 3.
    let (text, outcome) = applied(file, b("     3\tbeta", "     3\tgamma"));
    assert_eq!(text, "1: alpha\n2: beta\ngamma\n");
    assert!(matches!(
        outcome,
        BlockOutcome::Applied {
            numbers: Some((3, 3)),
            ..
        }
    ));
    // A block that matches as written is applied as written, numbers and all.
    let file = "     1\tone\n     2\ttwo\n";
    let (text, outcome) = applied(file, b("     2\ttwo", "     2\tzwei"));
    assert_eq!(text, "     1\tone\n     2\tzwei\n");
    assert!(matches!(
        outcome,
        BlockOutcome::Applied { numbers: None, .. }
    ));
    // Plain SEARCH, numbered REPLACE: as written (numbering lines may be what was asked).
    let (text, _) = applied("one\ntwo\n", b("two", "     2\ttwo"));
    assert_eq!(text, "one\n     2\ttwo\n");
}

#[test]
fn an_ambiguous_block_stays_ambiguous_and_a_later_block_may_use_the_numbers_read() {
    let file = "x\ny\nx\n";
    let err = not_applied(file, b("3\tx", "3\tz"));
    assert!(
        matches!(err, SearchReplaceError::NotFound { .. }),
        "{err:?}"
    );
    // Block 2 quotes line 4 of the file as read; block 1 moved it to line 5.
    let file = code();
    let blocks = [
        b("fn f1() {", "// one\nfn f1() {"),
        b("     6\t    let v6 = 6;", "     6\t    let v6 = 60;"),
    ];
    let (text, outcomes) = apply_blocks(&file, &blocks).unwrap();
    assert!(text.contains("\n    let v6 = 60;\n"), "{text}");
    assert!(matches!(
        outcomes[1],
        BlockOutcome::Applied {
            line: 7,
            numbers: Some((6, 6)),
            ..
        }
    ));
    // An earlier edit of the same turn (not in view): the numbers are those of `read`.
    let edited = file.replacen("fn f1() {\n", "// one\n// two\nfn f1() {\n", 1);
    let block = [b("     6\t    let v6 = 6;", "    let v6 = 60;")];
    assert!(apply_blocks(&edited, &block).is_err());
    let (text, _) = apply_blocks_as_read(&edited, &block, Some(&file)).unwrap();
    assert!(text.contains("\n    let v6 = 60;\n"), "{text}");
}

/// A line of code that does not start with a digit.
fn code_line() -> impl Strategy<Value = String> {
    ("[ \t]{0,6}", "[a-z_(){};=. ]{0,14}").prop_map(|(indent, text)| format!("{indent}{text}"))
}

/// How a view sets off the number: read_file's padded tab, and the other styles.
fn style() -> impl Strategy<Value = fn(usize, &str) -> String> {
    prop_oneof![
        Just((|n, l| format!("{n:>6}\t{l}")) as fn(usize, &str) -> String),
        Just((|n, l| format!("{n}\t{l}")) as fn(usize, &str) -> String),
        Just((|n, l| format!("{n}→{l}")) as fn(usize, &str) -> String),
        Just((|n, l| format!("{n}: {l}")) as fn(usize, &str) -> String),
        Just((|n, l| format!("{n:>4} | {l}")) as fn(usize, &str) -> String),
    ]
}

proptest! {
    /// A block carrying the right numbers applies exactly as the same block without them.
    #[test]
    fn numbered_blocks_apply_as_unnumbered_ones(
        lines in proptest::collection::vec(code_line(), 1..30),
        at in 0usize..30,
        len in 1usize..6,
        replace in proptest::collection::vec(code_line(), 0..5),
        numbered_replace in any::<bool>(),
        style in style(),
    ) {
        let file = lines.join("\n") + "\n";
        let from = at % lines.len();
        let to = (from + len).min(lines.len());
        let search = lines[from..to].join("\n");
        let plain = apply_blocks(&file, &[b(&search, &replace.join("\n"))]);
        let number = |k: usize, l: &String| style(from + 1 + k, l);
        let numbered_search: Vec<String> = lines[from..to].iter().enumerate().map(|(k, l)| number(k, l)).collect();
        let numbered_replace: Vec<String> = match numbered_replace {
            true => replace.iter().enumerate().map(|(k, l)| number(k, l)).collect(),
            false => replace.clone(),
        };
        let numbered = apply_blocks(&file, &[b(&numbered_search.join("\n"), &numbered_replace.join("\n"))]);
        // The same text, or refused both (the numbers never pick one of several copies).
        let text = |r: &Result<(String, Vec<BlockOutcome>), SearchReplaceError>| r.as_ref().ok().map(|(t, _)| t.clone());
        prop_assert_eq!(text(&plain), text(&numbered), "{:?} / {:?}", plain, numbered);
        if let Ok((_, outcomes)) = &numbered {
            let numbered = matches!(outcomes[0], BlockOutcome::Applied { numbers: Some(_), .. });
            prop_assert!(numbered, "{:?}", outcomes);
        }
    }

    /// A file some of whose lines genuinely start with numbers (their line numbers, or others)
    /// is never rewritten by taking numbers off: a block quoting its lines numbered that way,
    /// with a typo or its numbers spaced differently, matches as written (or loosely, as any
    /// block) or is not applied.
    #[test]
    fn numbered_content_is_never_unnumbered(
        lines in proptest::collection::vec((code_line(), any::<bool>()), 1..20),
        numbers in proptest::collection::vec(1usize..40, 20),
        real_numbers in any::<bool>(),
        at in 0usize..20,
        len in 1usize..5,
        typo in any::<bool>(),
        style in style(),
    ) {
        let number = |i: usize| if real_numbers { i + 1 } else { numbers[i] };
        let numbered: Vec<String> = lines.iter().enumerate().map(|(i, (l, _))| style(number(i), l)).collect();
        // At least the first line is numbered content.
        let content: Vec<&str> = lines
            .iter()
            .zip(&numbered)
            .enumerate()
            .map(|(i, ((plain, as_is), numbered))| if i == 0 || *as_is { numbered } else { plain })
            .map(String::as_str)
            .collect();
        let file = content.join("\n") + "\n";
        let from = at % content.len();
        let to = (from + len).min(content.len());
        let mut search: Vec<String> = numbered[from..to].to_vec();
        search[0] = match typo {
            true => format!("{} typo", search[0]),
            false => search[0].trim_start().replacen(": ", ":", 1).replacen(" | ", "|", 1),
        };
        let search = search.join("\n");
        if let Ok((_, outcomes)) = apply_blocks(&file, &[b(&search, "replaced")]) {
            prop_assert!(!typo, "{:?} applied to {:?}", search, file);
            prop_assert!(
                outcomes.iter().all(|o| matches!(o, BlockOutcome::Applied { numbers: None, .. })),
                "{:?} applied to {:?}: {:?}", search, file, outcomes
            );
        }
    }
}
