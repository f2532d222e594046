//! Text scanning for the agent protocol: removing `<think>` blocks, cutting a balanced JSON
//! value out of prose (with a light repair for what small models get wrong), and the directive
//! keywords (`PLAN`, `TOOL_CALL`, `STEP_DONE`, `FINAL`); finding them in a reply is
//! `keywords`' job.
//!
//! All markers searched for are ASCII and searched in an ASCII-lowercased copy, which keeps
//! byte offsets identical to the original: slicing the original at them never splits a
//! character.

use serde_json::Value;

use super::{Directive, ProtocolError};

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
    pub(super) const ALL: [Keyword; 4] = [
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
    pub(super) fn parts(self) -> (&'static str, &'static str) {
        match self {
            Keyword::Plan => ("plan", ""),
            Keyword::ToolCall => ("tool", "call"),
            Keyword::StepDone => ("step", "done"),
            Keyword::Final => ("final", ""),
        }
    }
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
