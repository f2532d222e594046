//! The composer's `@` mentions as a view model (no egui): the word being typed after an
//! `@`, what it may complete to (saved prompts, then folders and files of the project,
//! fuzzy-matched), the text after a choice, and the chips for what the text mentions now.
//! The core gives mentions their meaning when the prompt is sent (`chat::mentions`).

use std::collections::BTreeSet;
use std::ops::Range;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

use tandem_core::app::SavedPrompt;

/// Suggestions shown at most.
pub const MAX_SUGGESTIONS: usize = 8;

/// The `@word` the cursor is at the end of: `range` covers the `@` and the word (bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub range: Range<usize>,
    pub word: String,
}

/// The `@word` ending at character `cursor` of `text`, if the cursor is in one: an `@` at the
/// start of a word followed by non-space characters.
pub fn query_at(text: &str, cursor: usize) -> Option<Query> {
    let end = text
        .char_indices()
        .nth(cursor)
        .map_or(text.len(), |(byte, _)| byte);
    let before = &text[..end];
    let start = before.rfind(|c: char| c.is_whitespace()).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    let rest = word.strip_prefix('@')?;
    if rest.contains('@') {
        return None;
    }
    Some(Query {
        range: start..end,
        word: rest.to_string(),
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    Prompt { name: String, preview: String },
    Folder(String),
    File(String),
}

impl Suggestion {
    /// What replaces the `@word` (a space follows it).
    pub fn mention(&self) -> String {
        match self {
            Suggestion::Prompt { name, .. } => format!("@prompt:{name}"),
            Suggestion::Folder(path) => format!("@{path}/"),
            Suggestion::File(path) => format!("@{path}"),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Suggestion::Prompt { name, .. } => format!("prompt: {name}"),
            Suggestion::Folder(path) => format!("{path}/"),
            Suggestion::File(path) => path.clone(),
        }
    }
}

/// What `word` may complete to: saved prompts whose name matches (all of them after
/// `prompt:`), then folders and files ranked by fuzzy match, at most [`MAX_SUGGESTIONS`].
pub fn suggestions(word: &str, files: &[String], prompts: &[SavedPrompt]) -> Vec<Suggestion> {
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let (prompt_word, only_prompts) = match word.strip_prefix("prompt:") {
        Some(rest) => (rest, true),
        None => (word, false),
    };
    let pattern = Pattern::parse(prompt_word, CaseMatching::Ignore, Normalization::Smart);
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    let mut out: Vec<Suggestion> = pattern
        .match_list(names, &mut matcher)
        .into_iter()
        .filter_map(|(name, _)| prompts.iter().find(|p| p.name == name))
        .map(|p| Suggestion::Prompt {
            name: p.name.clone(),
            preview: p
                .text
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(60)
                .collect(),
        })
        .collect();
    if only_prompts {
        out.truncate(MAX_SUGGESTIONS);
        return out;
    }
    if word.is_empty() {
        // Nothing typed yet: the prompts, then the top-level folders.
        out.extend(
            folders(files)
                .into_iter()
                .filter(|f| !f.contains('/'))
                .map(Suggestion::Folder),
        );
        out.truncate(MAX_SUGGESTIONS);
        return out;
    }
    let pattern = Pattern::parse(word, CaseMatching::Smart, Normalization::Smart);
    let folders = folders(files);
    let mut paths: Vec<(Suggestion, u32)> = pattern
        .match_list(folders.iter(), &mut matcher)
        .into_iter()
        .map(|(f, score)| (Suggestion::Folder(f.clone()), score))
        .collect();
    paths.extend(
        pattern
            .match_list(files.iter(), &mut matcher)
            .into_iter()
            .map(|(f, score)| (Suggestion::File(f.clone()), score)),
    );
    // Best first; a shorter path first among equals (a folder before its files).
    paths.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.label().len().cmp(&b.0.label().len()))
    });
    out.extend(paths.into_iter().map(|(s, _)| s));
    out.truncate(MAX_SUGGESTIONS);
    out
}

/// Every folder that holds a file, `/`-separated.
fn folders(files: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for file in files {
        let mut at = 0;
        while let Some(i) = file[at..].find('/') {
            out.insert(file[..at + i].to_string());
            at += i + 1;
        }
    }
    out
}

/// `text` with the query's `@word` replaced by the chosen mention and a space, and the
/// character position just after it (for the cursor).
pub fn apply(text: &str, query: &Query, chosen: &Suggestion) -> (String, usize) {
    let mention = format!("{} ", chosen.mention());
    let mut out = String::with_capacity(text.len() + mention.len());
    out.push_str(&text[..query.range.start]);
    out.push_str(&mention);
    let cursor = out.chars().count();
    // A space typed already after the word is not doubled.
    let rest = &text[query.range.end..];
    out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
    (out, cursor)
}

/// A mention in the composer's text that means something: shown as a removable chip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chip {
    pub label: String,
    /// Bytes of the `@…` in the text.
    pub range: Range<usize>,
    /// An unknown prompt: sending would be refused.
    pub unknown: bool,
}

/// The mentions of `text`: files and folders of the project, saved prompts (unknown
/// `@prompt:` names too, marked, so the person sees it before sending).
pub fn chips(text: &str, files: &[String], prompts: &[SavedPrompt]) -> Vec<Chip> {
    let mut out = Vec::new();
    for (range, word) in tandem_core::app::at_mentions(text) {
        if let Some(name) = word.strip_prefix("prompt:") {
            if !name.is_empty() {
                out.push(Chip {
                    label: format!("prompt: {name}"),
                    range,
                    unknown: !prompts.iter().any(|p| p.name == name),
                });
            }
            continue;
        }
        if word.starts_with("https://") || word.starts_with("http://") {
            out.push(Chip {
                label: format!("page: {word}"),
                range,
                unknown: false,
            });
            continue;
        }
        let path = word.trim_start_matches("./").trim_end_matches('/');
        if path.is_empty() {
            continue;
        }
        let folder = format!("{path}/");
        let label = if files.iter().any(|f| f == path) {
            path.to_string()
        } else if files.iter().any(|f| f.starts_with(&folder)) {
            folder
        } else {
            continue;
        };
        out.push(Chip {
            label,
            range,
            unknown: false,
        });
    }
    out
}

/// The chips of files the context never sends because they look like they hold secrets
/// (`breakdown`: the estimate for this text), by their index in `chips`: the person sees
/// before sending that a file they named will not go.
pub fn never_sent(chips: &[Chip], breakdown: &tandem_core::app::ContextBreakdown) -> Vec<usize> {
    use tandem_core::app::SkipReason::{HoldsSecret, LooksSecret};
    let secret: std::collections::HashSet<&str> = (breakdown.files_skipped.iter())
        .filter(|(_, why)| matches!(why, LooksSecret | HoldsSecret))
        .map(|(path, _)| path.as_str())
        .collect();
    (chips.iter().enumerate())
        .filter(|(_, chip)| secret.contains(chip.label.as_str()))
        .map(|(i, _)| i)
        .collect()
}

/// `text` without the chip's mention (and one space after it).
pub fn remove(text: &str, chip: &Chip) -> String {
    let rest = &text[chip.range.end..];
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    format!("{}{rest}", &text[..chip.range.start])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mentioned_file_the_context_never_sends_as_a_secret_is_marked() {
        let files = ["deploy.sh", "main.py", "logo.png"]
            .map(String::from)
            .to_vec();
        let found = chips("run @deploy.sh with @main.py and @logo.png", &files, &[]);
        let breakdown = tandem_core::app::ContextBreakdown {
            files_skipped: vec![
                (
                    "deploy.sh".into(),
                    tandem_core::app::SkipReason::HoldsSecret,
                ),
                ("logo.png".into(), tandem_core::app::SkipReason::Binary),
            ],
            ..Default::default()
        };
        assert_eq!(never_sent(&found, &breakdown), [0]);
    }

    fn files() -> Vec<String> {
        [
            "src/main.rs",
            "src/ui/chat.rs",
            "src/ui/mod.rs",
            "README.md",
        ]
        .map(String::from)
        .to_vec()
    }

    fn prompt(name: &str) -> SavedPrompt {
        SavedPrompt {
            id: 1,
            name: name.into(),
            text: format!("{name} text\nmore"),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn the_word_being_typed_after_an_at() {
        assert_eq!(
            query_at("fix @src/ma", 11),
            Some(Query {
                range: 4..11,
                word: "src/ma".into()
            })
        );
        assert_eq!(query_at("@", 1).unwrap().word, "");
        // Cursor elsewhere, an address, no at.
        assert_eq!(query_at("fix @src/ma now", 15), None);
        assert_eq!(query_at("me@host", 7), None);
        assert_eq!(query_at("plain", 5), None);
        // Characters, not bytes.
        assert_eq!(query_at("é @a", 4).unwrap().range, 3..5);
    }

    #[test]
    fn prompts_then_paths_ranked_by_fuzzy_match() {
        let prompts = [prompt("review"), prompt("explain")];
        let found = suggestions("ui/ch", &files(), &prompts);
        assert_eq!(found[0], Suggestion::File("src/ui/chat.rs".into()));
        let found = suggestions("rev", &files(), &prompts);
        assert!(matches!(&found[0], Suggestion::Prompt { name, .. } if name == "review"));
        let only = suggestions("prompt:", &files(), &prompts);
        assert_eq!(only.len(), 2);
        assert!(only.iter().all(|s| matches!(s, Suggestion::Prompt { .. })));
        assert_eq!(
            suggestions("mai", &files(), &[])[0],
            Suggestion::File("src/main.rs".into())
        );
        let ui = suggestions("src/ui", &files(), &[]);
        assert_eq!(ui[0], Suggestion::Folder("src/ui".into()));
        let start = suggestions("", &files(), &prompts);
        assert_eq!(start.len(), 3, "{start:?}");
        assert!(suggestions("zzzz", &files(), &prompts).is_empty());
    }

    #[test]
    fn choosing_replaces_the_word_and_chips_follow_the_text() {
        let text = "fix @ui/ch and more";
        let query = query_at(text, 10).unwrap();
        let (text, cursor) = apply(text, &query, &Suggestion::File("src/ui/chat.rs".into()));
        assert_eq!(text, "fix @src/ui/chat.rs and more");
        assert_eq!(cursor, 20);

        let prompts = [prompt("review")];
        let text = format!("{text} @prompt:review @prompt:gone @src/ui/ me@src/main.rs");
        let found = chips(&text, &files(), &prompts);
        let labels: Vec<_> = found
            .iter()
            .map(|c| (c.label.as_str(), c.unknown))
            .collect();
        assert_eq!(
            labels,
            [
                ("src/ui/chat.rs", false),
                ("prompt: review", false),
                ("prompt: gone", true),
                ("src/ui/", false)
            ]
        );
        assert_eq!(
            remove(&text, &found[0]),
            "fix and more @prompt:review @prompt:gone @src/ui/ me@src/main.rs"
        );
    }
}
