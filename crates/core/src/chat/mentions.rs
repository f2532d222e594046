//! `@` mentions in a prompt, the same in the window and the CLI:
//! - `@prompt:NAME` is replaced by the text of the saved prompt NAME before the prompt is
//!   stored (one level: a saved prompt's own mentions are not expanded again); an unknown
//!   name is an error, so nothing is sent that the person did not mean.
//! - `@path` names a file or folder of the project: its files go into the context first, in
//!   every mode (Agent and Plan turns, which otherwise get the file list only, too). An `@`
//!   word that is not a project path (`@Override`, an e-mail address) is ordinary text.
//! - `@https://…` fetches the page when the prompt is sent; its text goes with the prompt
//!   (kept as an attachment of the message).

/// The characters of a prompt name: `@prompt:NAME` ends at the first other one.
pub fn is_prompt_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Whether `name` can be written as `@prompt:NAME`.
pub fn valid_prompt_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 64
        && name.chars().all(is_prompt_name_char)
        && !name.ends_with('.')
}

const PROMPT_TAG: &str = "@prompt:";

/// The prompt with every `@prompt:NAME` replaced by `lookup(NAME)`. A trailing `.` after a
/// name is sentence punctuation. Errs with the first name `lookup` does not know.
pub fn expand_prompts(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PROMPT_TAG) {
        let before = &rest[..at];
        let after = &rest[at + PROMPT_TAG.len()..];
        let standalone = !out
            .chars()
            .chain(before.chars())
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '@');
        let len = after
            .find(|c: char| !is_prompt_name_char(c))
            .unwrap_or(after.len());
        let name = after[..len].trim_end_matches('.');
        out.push_str(before);
        if !standalone || name.is_empty() {
            out.push_str(PROMPT_TAG);
            rest = after;
            continue;
        }
        let expansion = lookup(name).ok_or_else(|| name.to_string())?;
        out.push_str(expansion.trim_end());
        rest = &after[name.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The project files `@` mentions name, in order of mention: a file by its path, a folder
/// (`@src/ui` or `@src/ui/`) by every file under it. `files` are the project's eligible
/// files (`/`-separated, relative).
pub fn mentioned_files(text: &str, files: &[impl AsRef<str>]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for word in at_words(text) {
        let path = word.trim_start_matches("./");
        if files.iter().any(|f| f.as_ref() == path) {
            if seen.insert(path.to_string()) {
                found.push(path.to_string());
            }
            continue;
        }
        let folder = format!("{}/", path.trim_end_matches('/'));
        if folder == "/" {
            continue;
        }
        for file in files
            .iter()
            .map(AsRef::as_ref)
            .filter(|f| f.starts_with(&folder))
        {
            if seen.insert(file.to_string()) {
                found.push(file.to_string());
            }
        }
    }
    found
}

/// The web pages `@https://…` mentions name, in order, each once.
pub fn mentioned_urls(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in at_words(text) {
        if (word.starts_with("https://") || word.starts_with("http://"))
            && !found.iter().any(|f| f == word)
        {
            found.push(word.to_string());
        }
    }
    found
}

/// The words after an `@` that starts a word (not inside an e-mail address), with
/// sentence punctuation at their end removed.
fn at_words(text: &str) -> impl Iterator<Item = &str> {
    at_mentions(text)
        .map(|(_, word)| word)
        .filter(|word| !word.starts_with("prompt:"))
}

/// Every `@word` that starts a word, with the bytes it spans (the `@` included) and the
/// word after the `@`, sentence punctuation at its end removed; empty words are skipped.
/// The composer's chips read mentions the same way the send does.
pub fn at_mentions(text: &str) -> impl Iterator<Item = (std::ops::Range<usize>, &str)> {
    text.match_indices('@').filter_map(move |(at, _)| {
        let starts_word = !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '@'));
        if !starts_word {
            return None;
        }
        let after = &text[at + 1..];
        let len = after
            .find(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ','))
            .unwrap_or(after.len());
        let word = after[..len].trim_end_matches(['.', ':', ';', '!', '?']);
        (!word.is_empty()).then(|| (at..at + 1 + word.len(), word))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library(name: &str) -> Option<String> {
        match name {
            "review" => Some("Review this for bugs.\n".into()),
            "tests.v2" => Some("Add tests.".into()),
            _ => None,
        }
    }

    #[test]
    fn saved_prompts_expand_where_they_are_named() {
        assert_eq!(
            expand_prompts("@prompt:review then @prompt:tests.v2.", library).unwrap(),
            "Review this for bugs. then Add tests.."
        );
        assert_eq!(
            expand_prompts("(@prompt:review)", library).unwrap(),
            "(Review this for bugs.)"
        );
        // Not a mention: inside a word, or no name.
        assert_eq!(
            expand_prompts("a@prompt:review @prompt: x", library).unwrap(),
            "a@prompt:review @prompt: x"
        );
        assert_eq!(
            expand_prompts("no mentions", library).unwrap(),
            "no mentions"
        );
    }

    #[test]
    fn an_unknown_prompt_is_an_error_naming_it() {
        assert_eq!(
            expand_prompts("do @prompt:nope now", library),
            Err("nope".to_string())
        );
    }

    #[test]
    fn an_expansion_is_not_expanded_again() {
        let lookup = |_: &str| Some("@prompt:loop".to_string());
        assert_eq!(
            expand_prompts("@prompt:loop", lookup).unwrap(),
            "@prompt:loop"
        );
    }

    #[test]
    fn prompt_names_are_words() {
        assert!(valid_prompt_name("review-v2.1"));
        for bad in ["", "two words", "a/b", "end.", &"x".repeat(65)] {
            assert!(!valid_prompt_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn files_and_folders_mentioned_with_an_at() {
        let files: Vec<String> = ["src/main.rs", "src/ui/a.rs", "src/ui/b.rs", "README.md"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            mentioned_files(
                "fix @README.md, then look at @src/ui/ and @./src/main.rs.",
                &files
            ),
            ["README.md", "src/ui/a.rs", "src/ui/b.rs", "src/main.rs"]
        );
        assert_eq!(mentioned_files("@src/ui and @src/ui/a.rs", &files).len(), 2);
        // Not paths of the project, or not mentions at all.
        assert!(mentioned_files("mail me@src/main.rs, @Override, @/ @", &files).is_empty());
        assert!(mentioned_files("@src", &files).len() == 3);
        assert!(mentioned_files("@sr", &files).is_empty());
    }

    #[test]
    fn web_pages_mentioned_with_an_at() {
        assert_eq!(
            mentioned_urls("see @https://docs.rs/x (and @http://a.b/c.) twice @https://docs.rs/x"),
            ["https://docs.rs/x", "http://a.b/c"]
        );
        assert!(mentioned_urls("https://no.at or me@https://x").is_empty());
    }
}
