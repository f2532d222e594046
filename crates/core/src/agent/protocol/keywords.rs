//! The keyword directives (`PLAN`, `TOOL_CALL`, `STEP_DONE`, `FINAL`) found in a reply: a
//! keyword counts when a JSON value (or, for `TOOL_CALL` and `FINAL`, a plain form) follows it.
//!
//! Markers are searched in an ASCII-lowercased copy, which keeps byte offsets identical to the
//! original (see `scan`).

use serde_json::Value;

use super::calls::interpret;
use super::scan::{Found, Keyword, balanced_end, parse_json, skip_separators};
use super::{Directive, ProtocolError};
use crate::llm::ToolCall;

/// What the keyword pass found: directives, and keywords written the way a directive starts
/// (upper case, at the start of a line) but with nothing usable after them.
#[derive(Debug, Default)]
pub(super) struct KeywordScan {
    pub found: Vec<Found>,
    pub bare: Vec<Keyword>,
}

/// Finds the keyword directives. A keyword counts when a JSON value follows it; a keyword in
/// lower case or mid-sentence whose JSON is broken is prose that happens to use the word, so
/// JSON errors are only reported for keywords written in upper case.
pub(super) fn keyword_directives(text: &str) -> KeywordScan {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut scan = KeywordScan::default();
    let mut pos = 0;
    while pos < bytes.len() {
        let at_word = bytes[pos].is_ascii_alphabetic() && (pos == 0 || !is_ident(bytes[pos - 1]));
        let Some((keyword, word_end)) = at_word.then(|| match_keyword(bytes, pos)).flatten() else {
            pos += 1;
            continue;
        };
        let upper = !text[pos..word_end].bytes().any(|b| b.is_ascii_lowercase());
        let line_start = at_line_start(bytes, pos);
        match directive_after(text, &lower, keyword, word_end, upper, line_start) {
            Some((end, result)) => {
                let what = keyword.name();
                scan.found.push(Found {
                    start: pos,
                    end,
                    what,
                    result,
                });
                pos = end;
            }
            None => {
                if upper && line_start {
                    scan.bare.push(keyword);
                }
                pos = word_end;
            }
        }
    }
    scan
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn match_keyword(lower: &[u8], pos: usize) -> Option<(Keyword, usize)> {
    Keyword::ALL.into_iter().find_map(|keyword| {
        let (first, second) = keyword.parts();
        let mut end = pos + first.len();
        if !lower[pos..].starts_with(first.as_bytes()) {
            return None;
        }
        if !second.is_empty() {
            if matches!(lower.get(end), Some(b'_' | b'-' | b' ')) {
                end += 1;
            }
            if !lower.get(end..)?.starts_with(second.as_bytes()) {
                return None;
            }
            end += second.len();
        }
        (!lower.get(end).is_some_and(|&b| is_ident(b))).then_some((keyword, end))
    })
}

/// Only indentation and Markdown decoration before `pos` on its line.
fn at_line_start(bytes: &[u8], pos: usize) -> bool {
    bytes[..pos]
        .iter()
        .rev()
        .take_while(|&&b| b != b'\n')
        .all(|b| b" \t*#>-`_".contains(b))
}

type Parsed = (usize, Result<Directive, ProtocolError>);

/// The directive a keyword introduces, with where it ends; `None` when the keyword is prose.
fn directive_after(
    text: &str,
    lower: &str,
    keyword: Keyword,
    word_end: usize,
    upper: bool,
    line_start: bool,
) -> Option<Parsed> {
    let what = keyword.name();
    let start = skip_separators(lower, word_end);
    let (end, result) = match lower.as_bytes().get(start) {
        Some(b'{' | b'[') => match balanced_end(text, start) {
            None => (
                text.len(),
                Err(ProtocolError::UnclosedJson { keyword: what }),
            ),
            Some(end) => (
                end,
                parse_json(&text[start..end])
                    .map_err(|message| ProtocolError::BadJson {
                        keyword: what,
                        message,
                    })
                    .and_then(|value| interpret(keyword, value)),
            ),
        },
        _ if keyword == Keyword::ToolCall => named_call(text, lower, start)?,
        _ if keyword == Keyword::Final && upper && line_start => plain_final(text, start)?,
        _ => return None,
    };
    (upper || result.is_ok()).then_some((end, result))
}

/// `TOOL_CALL read_file {"path": …}` or `TOOL_CALL read_file({…})`: the name outside the JSON.
fn named_call(text: &str, lower: &str, start: usize) -> Option<Parsed> {
    let name_len = text[start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
        .unwrap_or(text.len() - start);
    let name = &text[start..start + name_len];
    let mut open = skip_separators(lower, start + name_len);
    if lower.as_bytes().get(open) == Some(&b'(') {
        open = skip_separators(lower, open + 1);
    }
    if name.is_empty() || lower.as_bytes().get(open) != Some(&b'{') {
        return None;
    }
    let end = balanced_end(text, open)?;
    let value = parse_json(&text[open..end]).ok()?;
    let Value::Object(_) = value else {
        return None;
    };
    let close = skip_separators(lower, end);
    let end = if lower.as_bytes().get(close) == Some(&b')') {
        close + 1
    } else {
        end
    };
    let call = ToolCall {
        id: None,
        name: name.to_string(),
        arguments: value,
    };
    Some((end, Ok(Directive::ToolCall(call))))
}

/// `FINAL: All done.` — the message as plain text: the rest of the line, or when that is
/// empty the paragraph below it. A message written as a JSON string loses its quotes.
fn plain_final(text: &str, start: usize) -> Option<Parsed> {
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let end = if text[start..line_end].trim().is_empty() {
        text[line_end..]
            .find("\n\n")
            .map_or(text.len(), |i| line_end + i)
    } else {
        line_end
    };
    let raw = text[start..end].trim().trim_matches('`').trim();
    let message = serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_string());
    let message = message.trim();
    (!message.is_empty()).then(|| {
        let message = message.to_string();
        (end, Ok(Directive::Final { message }))
    })
}

/// An upper-case word at the start of a line followed by a JSON object, such as
/// `ACTION: {…}`: the model meant a directive but used the wrong keyword.
pub(super) fn unknown_keyword(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim_start_matches(|c: char| " \t*#>-`_".contains(c));
        let word_len = line
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(line.len());
        let word = &line[..word_len];
        let starts_upper = word.starts_with(|c: char| c.is_ascii_uppercase());
        let known = Keyword::ALL.iter().any(|k| k.name() == word);
        if word.len() < 3
            || !starts_upper
            || known
            || line[word_len..].starts_with(char::is_alphanumeric)
        {
            return None;
        }
        let lower = line.to_ascii_lowercase();
        let next = skip_separators(&lower, word_len);
        lower[next..].starts_with('{').then(|| word.to_string())
    })
}
