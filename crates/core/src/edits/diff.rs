//! Line diffs for review: hunks with context, per-hunk application (so a person can accept some
//! hunks of a file and not others), and unified-diff text.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use similar::{Algorithm, ChangeTag, TextDiff};

/// Lines of unchanged context around each hunk.
pub const CONTEXT_LINES: usize = 3;

/// A diff that takes longer than this falls back to a coarser (still correct) result.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub kind: LineKind,
    /// 1-based line number in the old text (context and removed lines).
    pub old_line: Option<usize>,
    /// 1-based line number in the new text (context and added lines).
    pub new_line: Option<usize>,
    /// The line without its line break.
    pub text: String,
    /// The line is the last one and has no line break.
    pub no_newline: bool,
}

/// One reviewable change: a run of edits with up to [`CONTEXT_LINES`] of context each side.
/// Ranges are 0-based line indices; the context lines are identical in old and new, so
/// replacing `old_start..old_start+old_len` with the new range applies exactly this hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub added: usize,
    pub removed: usize,
    pub lines: Vec<DiffLine>,
}

fn text_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
}

/// The hunks that turn `old` into `new`.
pub fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = text_diff(old, new);
    diff.grouped_ops(CONTEXT_LINES)
        .iter()
        .filter_map(|group| {
            let first = group.first()?;
            let last = group.last()?;
            let old_start = first.old_range().start;
            let new_start = first.new_range().start;
            let mut hunk = Hunk {
                old_start,
                old_len: last.old_range().end - old_start,
                new_start,
                new_len: last.new_range().end - new_start,
                added: 0,
                removed: 0,
                lines: Vec::new(),
            };
            for op in group {
                for change in diff.iter_changes(op) {
                    let kind = match change.tag() {
                        ChangeTag::Equal => LineKind::Context,
                        ChangeTag::Insert => {
                            hunk.added += 1;
                            LineKind::Added
                        }
                        ChangeTag::Delete => {
                            hunk.removed += 1;
                            LineKind::Removed
                        }
                    };
                    let value = change.value();
                    let text = value.strip_suffix('\n').unwrap_or(value);
                    hunk.lines.push(DiffLine {
                        kind,
                        old_line: change.old_index().map(|i| i + 1),
                        new_line: change.new_index().map(|i| i + 1),
                        text: text.strip_suffix('\r').unwrap_or(text).to_string(),
                        no_newline: !value.ends_with('\n'),
                    });
                }
            }
            Some(hunk)
        })
        .collect()
}

/// Added and removed line counts between two texts.
pub fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = text_diff(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// `old` with only the hunks whose index is in `selected` applied (`hunks` must come from
/// [`hunks`]`(old, new)`).
pub fn apply_hunks(old: &str, new: &str, hunks: &[Hunk], selected: &[usize]) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out = String::with_capacity(new.len().max(old.len()));
    let mut next_old = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let start = hunk.old_start.min(old_lines.len());
        push(&mut out, old_lines.get(next_old..start));
        let end = (hunk.old_start + hunk.old_len).min(old_lines.len());
        if selected.contains(&index) {
            let new_end = (hunk.new_start + hunk.new_len).min(new_lines.len());
            push(
                &mut out,
                new_lines.get(hunk.new_start.min(new_end)..new_end),
            );
        } else {
            push(&mut out, old_lines.get(start..end));
        }
        next_old = end.max(next_old);
    }
    push(&mut out, old_lines.get(next_old..));
    out
}

fn push(out: &mut String, lines: Option<&[&str]>) {
    for line in lines.unwrap_or_default() {
        out.push_str(line);
    }
}

/// Unified diff text of `hunks`, with `---`/`+++` headers (`None` = /dev/null).
pub fn unified(old_path: Option<&str>, new_path: Option<&str>, hunks: &[Hunk]) -> String {
    let mut out = String::new();
    let name = |prefix: &str, path: Option<&str>| match path {
        Some(path) => format!("{prefix}/{path}"),
        None => "/dev/null".to_string(),
    };
    let _ = writeln!(out, "--- {}", name("a", old_path));
    let _ = writeln!(out, "+++ {}", name("b", new_path));
    for hunk in hunks {
        let range = |start: usize, len: usize| {
            let first = if len == 0 { start } else { start + 1 };
            format!("{first},{len}")
        };
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            range(hunk.old_start, hunk.old_len),
            range(hunk.new_start, hunk.new_len)
        );
        for line in &hunk.lines {
            let sign = match line.kind {
                LineKind::Context => ' ',
                LineKind::Added => '+',
                LineKind::Removed => '-',
            };
            let _ = writeln!(out, "{sign}{}", line.text);
            if line.no_newline {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn separate_changes_make_separate_hunks() {
        let old = numbered(40);
        let new = old
            .replace("line 5\n", "line five\n")
            .replace("line 30\n", "line 30\nline 30b\n");
        let hunks = hunks(&old, &new);
        assert_eq!(hunks.len(), 2);
        assert_eq!((hunks[0].added, hunks[0].removed), (1, 1));
        assert_eq!((hunks[1].added, hunks[1].removed), (1, 0));
        assert_eq!(line_counts(&old, &new), (2, 1));
        assert_eq!(apply_hunks(&old, &new, &hunks, &[0, 1]), new);
        assert_eq!(apply_hunks(&old, &new, &hunks, &[]), old);
        assert_eq!(
            apply_hunks(&old, &new, &hunks, &[0]),
            old.replace("line 5\n", "line five\n")
        );
        assert_eq!(
            apply_hunks(&old, &new, &hunks, &[1]),
            old.replace("line 30\n", "line 30\nline 30b\n")
        );
    }

    #[test]
    fn hunks_at_both_ends_and_missing_final_newline() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj";
        let new = "A\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n";
        let hunks = hunks(old, new);
        assert_eq!(hunks.len(), 2);
        assert_eq!(
            apply_hunks(old, new, &hunks, &[0]),
            "A\nb\nc\nd\ne\nf\ng\nh\ni\nj"
        );
        assert_eq!(
            apply_hunks(old, new, &hunks, &[1]),
            "a\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n"
        );
        let text = unified(Some("x"), Some("x"), &hunks);
        assert!(text.contains("\\ No newline at end of file"), "{text}");
        assert!(
            text.starts_with("--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n-a\n+A\n"),
            "{text}"
        );
    }

    #[test]
    fn unified_matches_the_git_cli_format_for_new_and_deleted_files() {
        let added = hunks("", "one\ntwo\n");
        assert_eq!(
            unified(None, Some("n.txt"), &added),
            "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
        let removed = hunks("one\n", "");
        assert_eq!(
            unified(Some("n.txt"), None, &removed),
            "--- a/n.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-one\n"
        );
    }

    #[test]
    fn crlf_lines_show_without_carriage_returns() {
        let hunks = hunks("a\r\nb\r\n", "a\r\nc\r\n");
        let texts: Vec<_> = hunks[0].lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["a", "b", "c"]);
    }
}
