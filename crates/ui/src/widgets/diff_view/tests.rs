//! Tests for `diff_view`.
use super::*;

fn line(kind: LineKind, text: &str) -> DiffLine {
    DiffLine {
        kind,
        old_line: None,
        new_line: None,
        text: text.to_string(),
        no_newline: false,
    }
}

fn kinds(spec: &str) -> Vec<DiffLine> {
    spec.chars()
        .map(|c| match c {
            '+' => line(LineKind::Added, "a"),
            '-' => line(LineKind::Removed, "r"),
            _ => line(LineKind::Context, "c"),
        })
        .collect()
}

fn row(old: Option<usize>, new: Option<usize>) -> SplitRow {
    SplitRow { old, new }
}

#[test]
fn removed_lines_pair_with_the_added_lines_after_them() {
    let rows = split_rows(&kinds(" --+ +++-"));
    assert_eq!(
        rows,
        [
            row(Some(0), Some(0)),
            row(Some(1), Some(3)),
            row(Some(2), None),
            row(Some(4), Some(4)),
            row(None, Some(5)),
            row(None, Some(6)),
            row(None, Some(7)),
            row(Some(8), None),
        ]
    );
    let partners = partners(&kinds(" --+ +++-"));
    assert_eq!(partners[1], Some(3));
    assert_eq!(partners[3], Some(1));
    assert_eq!(partners[2], None);
    assert_eq!(partners[0], None, "context lines have no partner");
    assert_eq!(partners[5], None);
}

#[test]
fn split_rows_cover_every_line_once() {
    let lines = kinds("--++++ - + ---+");
    let rows = split_rows(&lines);
    let mut seen: Vec<usize> = rows
        .iter()
        .flat_map(|r| [r.old, r.new.filter(|n| Some(*n) != r.old)])
        .flatten()
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..lines.len()).collect::<Vec<_>>());
}

fn changed<'a>(text: &'a str, spans: &[Range<usize>]) -> Vec<&'a str> {
    spans.iter().map(|s| &text[s.clone()]).collect()
}

#[test]
fn only_the_changed_words_are_emphasised() {
    let (old, new) = (
        "    let total = count(items);",
        "    let total = count(&items, 2);",
    );
    let spans = word_spans(old, new);
    assert!(changed(old, &spans.old).is_empty(), "{spans:?}");
    assert_eq!(changed(new, &spans.new), ["&", ", 2"]);

    let (old, new) = ("x = foo(bar);", "x = foo(baz);");
    let spans = word_spans(old, new);
    assert_eq!(changed(old, &spans.old), ["bar"]);
    assert_eq!(changed(new, &spans.new), ["baz"]);
}

#[test]
fn rewritten_long_or_equal_lines_get_no_emphasis() {
    assert_eq!(
        word_spans("fn main() {", "struct Point { x: f32 }"),
        WordSpans::default()
    );
    assert_eq!(word_spans("same", "same"), WordSpans::default());
    let long = "a ".repeat(400);
    assert_eq!(word_spans(&long, &format!("{long}b")), WordSpans::default());
}

#[test]
fn whitespace_between_changes_joins_them() {
    let (old, new) = (
        "call(one two, keep, more, stuff)",
        "call(uno dos, keep, more, stuff)",
    );
    let spans = word_spans(old, new);
    assert_eq!(changed(old, &spans.old), ["one two"]);
    assert_eq!(changed(new, &spans.new), ["uno dos"]);
}

#[test]
fn spans_fall_on_character_boundaries() {
    let (old, new) = ("naïve café = 1", "naïve café = 2");
    let spans = word_spans(old, new);
    assert_eq!(changed(old, &spans.old), ["1"]);
    assert_eq!(changed(new, &spans.new), ["2"]);
}

#[test]
fn hunk_headers_match_git() {
    let hunk = |old_start, old_len, new_start, new_len| Hunk {
        old_start,
        old_len,
        new_start,
        new_len,
        added: 0,
        removed: 0,
        lines: Vec::new(),
    };
    assert_eq!(hunk_header(&hunk(0, 4, 0, 5)), "@@ -1,4 +1,5 @@");
    assert_eq!(hunk_header(&hunk(0, 0, 0, 2)), "@@ -0,0 +1,2 @@");
    assert_eq!(digits(7), 3);
    assert_eq!(digits(12_345), 5);
}

#[test]
fn git_output_is_classified_by_hunk_counts() {
    let text = "commit abc\nAuthor: me\n\n    message\ndiff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n keep\n--- sql comment\n+++ added\n keep\n\\ No newline at end of file\n--- a/y\n+++ b/y\n@@ -1 +0,0 @@\n-gone";
    let lines: Vec<&str> = text.lines().collect();
    use GitLine::*;
    assert_eq!(
        classify(&lines),
        [
            Meta, Meta, Meta, Meta, Meta, Meta, Meta, Meta, Hunk, Context, Removed, Added, Context,
            Meta, Meta, Meta, Hunk, Removed
        ]
    );
}

#[test]
fn columns_never_undercount() {
    assert_eq!(columns("abc"), 3);
    assert_eq!(columns("\tx"), 5);
    assert!(columns("日本") >= 4);
}
