//! What the person is looking at in the editor when they send: the open tabs (the active one
//! first) and the selection. The tabs and the selection steer which files are packed (the
//! code index ranks them "open in the editor", "selected in the editor", and the selected
//! text's words find the files defining what it uses); the selection itself goes with the
//! prompt as a labelled excerpt, counted in the budget like the prompt.
//!
//! The window sends what its editor holds (the selection's text as the buffer has it, unsaved
//! edits included); the CLI names the tabs and lines, read from the file. Tabs can hold
//! anything: a path that is not an eligible file of the project (absolute, `..`, outside it,
//! gone, excluded by its context globs, binary, or holding a key or a token as the context
//! finds them) is passed over without error.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

/// The most characters of a selection sent (about 2,000 tokens); past it the excerpt says it
/// is cut.
pub const MAX_SELECTION_CHARS: usize = 8_000;
/// The most open tabs that count (the first ones: the active tab leads).
pub const MAX_OPEN_TABS: usize = 32;

/// The editor's state a send carries (see the module).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditorFocus {
    /// Project-relative paths of the open tabs, the active one first.
    pub open: Vec<String>,
    pub selection: Option<EditorSelection>,
}

/// Lines selected in the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorSelection {
    /// Project-relative.
    pub path: String,
    /// 1-based, inclusive.
    pub first_line: usize,
    pub last_line: usize,
    /// The selected lines as the editor shows them (cut to [`MAX_SELECTION_CHARS`] when
    /// sent); `None`: those lines of the file as it is on disk.
    pub text: Option<String>,
}

impl EditorSelection {
    /// Lines `first_line..=last_line` of `path` with `text` as the editor has them, cut to
    /// what is sent (a huge selection is not copied whole to be dropped later).
    pub fn new(path: String, first_line: usize, last_line: usize, text: &str) -> Self {
        EditorSelection {
            path,
            first_line,
            last_line,
            text: Some(cut(text).0.to_string()),
        }
    }
}

/// The selection as it goes to the model, in the breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SentSelection {
    pub path: String,
    pub first_line: usize,
    pub last_line: usize,
    /// What its excerpt adds to the prompt.
    pub tokens: usize,
}

/// An [`EditorFocus`] checked against the project: what a turn uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Focus {
    /// Eligible project files, each once, at most [`MAX_OPEN_TABS`], in the editor's order.
    pub(super) open: Vec<String>,
    pub(super) selection: Option<Excerpt>,
}

/// The selection, checked and bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Excerpt {
    pub(super) path: String,
    pub(super) first_line: usize,
    pub(super) last_line: usize,
    pub(super) text: String,
    /// Longer than [`MAX_SELECTION_CHARS`]: `text` is its start.
    pub(super) cut: bool,
}

impl EditorFocus {
    /// What of the focus the turn uses: paths normalised and kept when they are among
    /// `eligible` (the walk's files, sorted), the tabs de-duplicated in one pass; the
    /// selection's text bounded, read from the file under `root` when the editor gave none,
    /// and dropped when it is empty or binary, or it or its file holds a secret.
    pub(super) fn resolve(&self, root: &Path, eligible: &[&str]) -> Focus {
        let known = |raw: &str| {
            let path = crate::folder::normalize_relative(raw).ok()?;
            eligible
                .binary_search(&path.as_str())
                .is_ok()
                .then_some(path)
        };
        let mut seen = HashSet::new();
        let open = (self.open.iter())
            .filter_map(|raw| known(raw))
            .filter(|path| seen.insert(path.clone()))
            .take(MAX_OPEN_TABS)
            .collect();
        let selection = self.selection.as_ref().and_then(|s| {
            let path = known(&s.path)?;
            let first_line = s.first_line.max(1);
            let last_line = s.last_line.max(first_line);
            // The file as it is on disk: its lines when the editor gave none, and asked for
            // secrets whole (a selection may begin past a key's first line).
            let whole = crate::folder::read_project_text(root, &path);
            let text = match &s.text {
                Some(text) => text.clone(),
                None => lines(whole.as_deref()?, first_line, last_line)?,
            };
            let (kept, cut) = cut(&text);
            let kept = kept.trim_end_matches(['\n', '\r']);
            // Nothing of a file that holds a key or a token goes, as the context sends none.
            let secret = || {
                crate::folder::holds_secret(kept)
                    || whole.as_deref().is_some_and(crate::folder::holds_secret)
            };
            let usable = !kept.trim().is_empty() && !kept.contains('\0') && !secret();
            usable.then(|| Excerpt {
                path,
                first_line,
                last_line,
                text: kept.to_string(),
                cut,
            })
        });
        Focus { open, selection }
    }
}

impl Excerpt {
    /// The excerpt as it follows the prompt: where it is, then the lines in a fence.
    pub(super) fn render(&self) -> String {
        let span = match self.first_line == self.last_line {
            true => format!("line {}", self.first_line),
            false => format!("lines {}-{}", self.first_line, self.last_line),
        };
        let fence = crate::folder::context::code_fence(&self.text);
        let language = Path::new(&self.path)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        let note = match self.cut {
            true => format!(
                "\n(The selection is cut here: only its first {MAX_SELECTION_CHARS} characters \
                 are sent.)"
            ),
            false => String::new(),
        };
        format!(
            "\n\nSelected in the editor: {} {span}\n{fence}{language}\n{}\n{fence}{note}",
            self.path, self.text
        )
    }
}

/// `text` cut to [`MAX_SELECTION_CHARS`] characters, and whether it was.
fn cut(text: &str) -> (&str, bool) {
    match text.char_indices().nth(MAX_SELECTION_CHARS) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

/// Lines `first..=last` of `text` (a project file as [`crate::folder::read_project_text`]
/// reads it: only a regular file inside the project, as UTF-8 text); `None` when it has none
/// of them.
fn lines(text: &str, first: usize, last: usize) -> Option<String> {
    let count = (last - first).saturating_add(1);
    let lines: Vec<&str> = text.lines().skip(first - 1).take(count).collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The selection a turn uses when the editor holds `s` alone.
    fn resolve_selection(root: &Path, eligible: &[&str], s: EditorSelection) -> Option<Excerpt> {
        let focus = EditorFocus {
            selection: Some(s),
            ..EditorFocus::default()
        };
        focus.resolve(root, eligible).selection
    }

    fn selection(path: &str, text: Option<&str>) -> EditorSelection {
        EditorSelection {
            path: path.into(),
            first_line: 2,
            last_line: 3,
            text: text.map(str::to_string),
        }
    }

    #[test]
    fn only_eligible_project_files_count_each_once_in_the_editors_order() {
        let dir = tempfile::tempdir().unwrap();
        let eligible = ["a.rs", "docs/b.md", "src/c.rs"];
        let focus = EditorFocus {
            open: [
                "src/c.rs",
                "/etc/passwd",
                "../outside.rs",
                "./a.rs",
                "gone.rs",
                "src/c.rs",
                "docs\\b.md",
                "",
            ]
            .map(String::from)
            .to_vec(),
            selection: Some(selection("/etc/passwd", Some("root:x:0:0"))),
        };
        let resolved = focus.resolve(dir.path(), &eligible);
        assert_eq!(resolved.open, ["src/c.rs", "a.rs", "docs/b.md"]);
        assert_eq!(resolved.selection, None);
    }

    /// What the context never sends, a selection does not either: lines of a file that holds
    /// a key, even lines past the key's first line, which alone say nothing.
    #[test]
    fn a_selection_in_a_file_holding_a_key_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..6u32)
            .map(|i| {
                format!(
                    "  MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{:040x}\n",
                    i * 7919 + 12345
                )
            })
            .collect();
        let yaml = format!(
            "name: app\nkey: |\n  -----BEGIN {}-----\n{body}",
            "PRIVATE KEY"
        );
        std::fs::write(dir.path().join("app.yaml"), &yaml).unwrap();
        std::fs::write(dir.path().join("a.rs"), "one\ntwo\n").unwrap();
        let resolve = |s| resolve_selection(dir.path(), &["a.rs", "app.yaml"], s);
        for (first, last) in [(1, 8), (6, 7)] {
            let s = EditorSelection {
                path: "app.yaml".into(),
                first_line: first,
                last_line: last,
                text: None,
            };
            assert_eq!(resolve(s), None, "lines {first}-{last}");
        }
        assert!(resolve(selection("a.rs", None)).is_some());
    }

    #[test]
    fn the_selection_is_bounded_read_from_disk_when_not_given_and_dropped_when_binary() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "one\ntwo\nthree\nfour\n").unwrap();
        let resolve = |s| resolve_selection(dir.path(), &["a.rs", "b.bin"], s);
        let read = resolve(selection("a.rs", None)).unwrap();
        assert_eq!((read.text.as_str(), read.cut), ("two\nthree", false));
        assert_eq!(
            read.render(),
            "\n\nSelected in the editor: a.rs lines 2-3\n```rs\ntwo\nthree\n```"
        );
        // The editor's text wins (an unsaved edit), bounded.
        let long = "x".repeat(MAX_SELECTION_CHARS + 10);
        let given = resolve(selection("a.rs", Some(&long))).unwrap();
        assert_eq!(given.text.chars().count(), MAX_SELECTION_CHARS);
        assert!(given.render().ends_with("characters are sent.)"));
        assert_eq!(
            EditorSelection::new("a.rs".into(), 1, 1, &long)
                .text
                .unwrap()
                .len(),
            MAX_SELECTION_CHARS
        );
        // Binary, empty, past the end of the file: nothing.
        assert_eq!(resolve(selection("b.bin", Some("a\0b"))), None);
        assert_eq!(resolve(selection("a.rs", Some("  \n"))), None);
        let past = EditorSelection {
            first_line: 40,
            last_line: 41,
            ..selection("a.rs", None)
        };
        assert_eq!(resolve(past), None);
    }
}
