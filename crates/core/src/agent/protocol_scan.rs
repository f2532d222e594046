//! Text scanning for the agent protocol: removing `<think>` blocks, cutting a balanced JSON
//! value out of prose (with a light repair for what small models get wrong), and the keyword
//! directives (`PLAN`, `TOOL_CALL`, `STEP_DONE`, `FINAL`).
//!
//! All markers searched for are ASCII and searched in an ASCII-lowercased copy, which keeps
//! byte offsets identical to the original: slicing the original at them never splits a
//! character.

use serde_json::Value;

use super::calls::interpret;
use super::{Directive, ProtocolError};
use crate::llm::ToolCall;

/// One directive or tool call found in a reply, with the byte range it covers.
#[derive(Debug)]
pub(super) struct Found {
    pub start: usize,
    pub end: usize,
    /// How it was written (`TOOL_CALL`, `<tool_call>`…), for error messages.
    pub what: &'static str,
    pub result: Result<Directive, ProtocolError>,
}

/// Removes reasoning blocks. An unclosed opening tag hides the rest of the reply (the model
/// stopped mid-thought); a closing tag with no opening before it hides what precedes it (some
/// servers drop the opening tag from the stream).
pub(super) fn strip_think(text: &str) -> String {
    ["think", "thinking"]
        .iter()
        .fold(text.to_string(), |text, tag| strip_tag(&text, tag))
}

fn strip_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let lower = text.to_ascii_lowercase();
    let mut pos = match (lower.find(&open), lower.find(&close)) {
        (first_open, Some(c)) if first_open.is_none_or(|o| o > c) => c + close.len(),
        _ => 0,
    };
    let mut out = String::with_capacity(text.len());
    while let Some(o) = lower[pos..].find(&open).map(|i| pos + i) {
        out.push_str(&text[pos..o]);
        match lower[o..].find(&close) {
            Some(c) => pos = o + c + close.len(),
            None => return out,
        }
    }
    out.push_str(&text[pos..]);
    out
}

/// The end (exclusive) of the JSON object or array opening at `start`, tracking strings and
/// escapes so braces inside strings do not count. `None` when it never closes.
pub(super) fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in text.as_bytes().iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses JSON; failing that, retries once repaired (see [`repair`]). The error is the
/// original one, which points at what the model actually wrote.
pub(super) fn parse_json(json: &str) -> Result<Value, String> {
    serde_json::from_str(json).or_else(|first: serde_json::Error| {
        serde_json::from_str(&repair(json)).map_err(|_| first.to_string())
    })
}

/// Fixes the slips small models make most: raw line breaks and tabs inside strings (file
/// contents written out literally), `\'` and other invalid escapes, and trailing commas.
fn repair(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    let mut chars = json.char_indices().peekable();
    let mut in_string = false;
    while let Some((i, c)) = chars.next() {
        if !in_string {
            let trailing_comma = c == ',' && json[i + 1..].trim_start().starts_with(['}', ']']);
            in_string = c == '"';
            if !trailing_comma {
                out.push(c);
            }
            continue;
        }
        match c {
            '\\' => match chars.peek().map(|&(_, next)| next) {
                Some(next) if "\"\\/bfnrtu".contains(next) => {
                    out.extend(['\\', next]);
                    chars.next();
                }
                Some('\'') => {
                    out.push('\'');
                    chars.next();
                }
                _ => out.push_str("\\\\"),
            },
            '"' => {
                in_string = false;
                out.push('"');
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value's kind, for "must be an object, not …" messages.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Skips what models put between a marker and its JSON: spaces, line breaks, `:`, Markdown
/// emphasis and an opening code fence (with its `json` language tag).
pub(super) fn skip_separators(lower: &str, mut pos: usize) -> usize {
    let bytes = lower.as_bytes();
    loop {
        match bytes.get(pos) {
            Some(b' ' | b'\t' | b'\r' | b'\n' | b':' | b'*' | b'=') => pos += 1,
            Some(b'`') => {
                while bytes.get(pos) == Some(&b'`') {
                    pos += 1;
                }
                if lower[pos..].starts_with("json") {
                    pos += 4;
                }
            }
            _ => return pos,
        }
    }
}

/// The four directive keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    Plan,
    ToolCall,
    StepDone,
    Final,
}

impl Keyword {
    const ALL: [Keyword; 4] = [
        Keyword::Plan,
        Keyword::ToolCall,
        Keyword::StepDone,
        Keyword::Final,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Keyword::Plan => "PLAN",
            Keyword::ToolCall => "TOOL_CALL",
            Keyword::StepDone => "STEP_DONE",
            Keyword::Final => "FINAL",
        }
    }

    /// The lowercase spelling, split where models write `_`, `-`, a space or nothing.
    fn parts(self) -> (&'static str, &'static str) {
        match self {
            Keyword::Plan => ("plan", ""),
            Keyword::ToolCall => ("tool", "call"),
            Keyword::StepDone => ("step", "done"),
            Keyword::Final => ("final", ""),
        }
    }
}

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

/// The inner text of a reply that is one fenced code block and nothing else (an optional
/// language tag such as `json` after the opening fence); otherwise `text` as it is.
pub(super) fn unfence(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```").and_then(|t| t.strip_suffix("```")) else {
        return text;
    };
    let Some((info, body)) = inner.split_once('\n') else {
        return text;
    };
    let tag = info.trim();
    if tag
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_+".contains(c))
    {
        body
    } else {
        text
    }
}

/// The byte ranges between the fence lines of fenced code blocks (`` ``` `` or `~~~`); an
/// unclosed block runs to the end. A closing fence may also end a line (`…}```` `), which
/// sloppy models write.
fn fenced_blocks(text: &str) -> Vec<(usize, usize)> {
    let (mut blocks, mut open, mut pos) = (Vec::new(), None, 0);
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches([' ', '\t']);
        let fence = |t: &str| t.starts_with("```") || t.starts_with("~~~");
        // ```ls``` on one line is inline code, not a block.
        let one_line = trimmed.trim_end().len() >= 6 && trimmed.trim_end().ends_with("```");
        match open {
            None if fence(trimmed) && !one_line => open = Some(pos + line.len()),
            Some(start) if fence(trimmed) => {
                blocks.push((start, pos));
                open = None;
            }
            Some(start) if line.trim_end().ends_with("```") => {
                let end = pos + line.trim_end().len() - 3;
                blocks.push((start, end.max(start)));
                open = None;
            }
            _ => {}
        }
        pos += line.len();
    }
    if let Some(start) = open {
        blocks.push((start, text.len()));
    }
    blocks
}

/// Drops what the model quoted rather than wrote: anything starting on a Markdown quote line
/// (`> …`), and anything starting inside a fenced code block unless it is the block's whole
/// content (a model that wraps its directive in a fence). A README or a tool result shown
/// in a fence or a quote, calls and all, is content, never a directive.
pub(super) fn drop_quoted(text: &str, found: Vec<Found>) -> Vec<Found> {
    let blocks = fenced_blocks(text);
    let quote_line = |pos: usize| {
        let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
        text[line_start..pos].trim_start().starts_with('>')
    };
    found
        .into_iter()
        .filter(|f| {
            let block = blocks.iter().find(|&&(s, e)| s <= f.start && f.start < e);
            let whole = block.is_none_or(|&(s, e)| {
                let inner = &text[s..e];
                let first = s + (inner.len() - inner.trim_start().len());
                let last = s + inner.trim_end().len();
                f.start <= first && f.end >= last
            });
            whole && !quote_line(f.start)
        })
        .collect()
}
