//! Words for lexical matching: identifiers split at `camelCase`, `snake_case`, `kebab-case`
//! and digits, lower-cased and reduced to their stem (Snowball's English stemmer), so that a
//! prompt's "token parsers" meets `TokenParser`, `token_parser.rs` and `parse_tokens`'s
//! `tokens` alike, and "handling quoted arguments" meets `handle_quote(args: &Arguments)`.

use std::cell::RefCell;
use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// English words too common in prompts to tell files apart.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "for", "from", "has", "have",
    "if", "in", "into", "is", "it", "its", "not", "of", "on", "or", "so", "that", "the", "then",
    "this", "to", "was", "when", "with", "we", "can", "all", "no", "use", "make", "add", "fix",
    "chore", "feat", "refactor", "should", "now", "also", "only", "more", "new",
];

/// The longest word kept: longer ones are hashes, base64 or data.
const MAX_WORD: usize = 40;

/// Calls `found` with every word of `text`: each identifier's parts (see the module), and,
/// when it has several, the whole identifier lower-cased too (an exact name is the strongest
/// match).
pub fn for_each_word(text: &str, mut found: impl FnMut(&str)) {
    each_word(text, |stem, _| found(stem));
}

/// [`for_each_word`], with each word also as `text` spells it (lower-cased).
fn each_word(text: &str, mut found: impl FnMut(&str, &str)) {
    let (mut lower, mut stem) = (String::new(), String::new());
    for ident in identifiers(text) {
        let mut parts = 0;
        split_identifier(ident, |part| {
            parts += 1;
            if stemmed(part, &mut lower, &mut stem) {
                found(&stem, &lower);
            }
        });
        if parts > 1 {
            let whole: String = ident.chars().filter(|&c| c != '_' && c != '-').collect();
            if stemmed(&whole, &mut lower, &mut stem) {
                found(&stem, &lower);
            }
        }
    }
}

/// How `text` spells each of its words: word → its first spelling (`invoic` → `invoices`),
/// for saying which words matched in the person's own.
pub fn spellings(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    each_word(text, |stem, lower| {
        if !out.contains_key(stem) {
            out.insert(stem.to_string(), lower.to_string());
        }
    });
    out
}

/// The words of `text`, each once, in order of first appearance.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for_each_word(text, |w| {
        if !out.iter().any(|seen| seen == w) {
            out.push(w.to_string());
        }
    });
    out
}

fn keep(word: &str) -> bool {
    word.len() >= 2 && word.len() <= MAX_WORD && !STOP_WORDS.contains(&word)
}

/// `part` lower-cased into `lower` and stemmed into `stem`, and whether it is a word to keep:
/// neither spelling is a stop word (`only` is one, though its stem `onli` is not; `uses`
/// is not, though its stem `use` is).
fn stemmed(part: &str, lower: &mut String, stem: &mut String) -> bool {
    lower.clear();
    lower.extend(part.chars().map(|c| c.to_ascii_lowercase()));
    keep(lower) && {
        normalise(lower, stem);
        keep(stem)
    }
}

/// How many stems one thread remembers before it starts again: a project's words repeat, so
/// most are stemmed once.
const STEMS_KEPT: usize = 65_536;

/// `lower` (lower-cased already) stemmed into `out` (`files` → `file`, `parsing` → `pars` as
/// `parse` is; `class` and `is` stay).
fn normalise(lower: &str, out: &mut String) {
    thread_local! {
        static STEMS: RefCell<(Stemmer, HashMap<String, String>)> =
            RefCell::new((Stemmer::create(Algorithm::English), HashMap::new()));
    }
    STEMS.with_borrow_mut(|(stemmer, known)| {
        if let Some(stem) = known.get(lower) {
            out.clone_from(stem);
            return;
        }
        out.clear();
        out.push_str(&stemmer.stem(lower));
        if known.len() >= STEMS_KEPT {
            known.clear();
        }
        known.insert(lower.to_string(), out.clone());
    });
}

/// The runs of ASCII letters, digits, `_` and `-` that start with a letter or `_`: the
/// identifiers of most languages, and the words of prose.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map(|run| run.trim_matches(|c: char| c == '-' || c.is_ascii_digit()))
        .filter(|run| !run.is_empty())
}

/// Calls `part` with each part of one identifier: split at `_`, `-`, lower-to-upper changes
/// (`parseHTTPResponse` → parse, HTTP, Response) and letter-digit changes kept together
/// (`utf8` stays whole).
fn split_identifier(ident: &str, mut part: impl FnMut(&str)) {
    for piece in ident.split(['_', '-']).filter(|p| !p.is_empty()) {
        let bytes = piece.as_bytes();
        let mut start = 0;
        for i in 1..bytes.len() {
            let (prev, cur) = (bytes[i - 1], bytes[i]);
            let next_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_lower);
            if boundary {
                part(&piece[start..i]);
                start = i;
            }
        }
        part(&piece[start..]);
    }
}

/// Whether `c` may be part of a name as the editor and the agent's tools look names up:
/// letters, digits, `_` and `$` (JavaScript's).
pub fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The byte offset of the first place `name` occurs in `line` as a whole name (no name
/// character on either side).
pub fn find_name(line: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = line[from..].find(name) {
        let at = from + found;
        let end = at + name.len();
        let before = line[..at].chars().next_back();
        let after = line[end..].chars().next();
        if !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char) {
            return Some(at);
        }
        from = at + line[at..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_at_case_underscores_and_acronyms() {
        assert_eq!(
            words("parseHTTPResponse token_parsers utf8-decode"),
            [
                "pars",
                "http",
                "respons",
                "parsehttprespons",
                "token",
                "parser",
                "tokenpars",
                "utf8",
                "decod",
                "utf8decod",
            ]
        );
    }

    #[test]
    fn a_words_forms_meet_at_their_stem() {
        let prompt = words("handling quoted arguments");
        assert_eq!(prompt, ["handl", "quot", "argument"]);
        let code = words("fn handle_quote(args: &Arguments)");
        for word in &prompt {
            assert!(code.contains(word), "{word} in {code:?}");
        }
    }

    #[test]
    fn prose_loses_its_stop_words_and_endings() {
        assert_eq!(
            words("Fix the crash when the config files are missing"),
            ["crash", "config", "file", "miss"]
        );
        // A double s is not a plural.
        assert_eq!(words("class process"), ["class", "process"]);
    }
}
