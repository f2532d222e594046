//! What one file holds for the index: its definitions and references (by its language's
//! grammar, see [`super::lang`]) and the words of its path, names and text.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;

use tree_sitter_tags::TagsContext;

use super::lang::Lang;
use super::terms::for_each_word;

/// Files larger than this are indexed by their words only: a parse of a huge generated file
/// costs more than its definitions are worth.
pub const MAX_PARSED_BYTES: usize = 256 * 1024;

/// How much a word of the path counts, against one occurrence in the text.
const PATH_WEIGHT: u16 = 5;
/// How much a word of a definition's name counts, on top of its occurrence in the text.
const DEFINITION_WEIGHT: u16 = 2;
/// The longest signature kept, in bytes.
const MAX_SIGNATURE: usize = 160;

/// A definition: what is defined, what kind of thing it is (`function`, `class`, `method`,
/// `module`, `interface`, ... as the grammar's query names it), where, and its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    pub kind: String,
    /// 1-based.
    pub line: u32,
    /// The definition's first line, trimmed (cut at [`MAX_SIGNATURE`] bytes).
    pub signature: String,
}

/// What one file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub definitions: Vec<Definition>,
    /// The names the file uses (calls, types, macros, ...), each once, sorted.
    pub references: Vec<String>,
    /// Each word (see [`super::terms`]) with how much it counts in this file.
    pub words: HashMap<String, u16>,
}

/// Extracts `text`, the content of the file at `path` (relative, `/`-separated).
pub fn extract(path: &str, text: &str) -> Extracted {
    let mut out = Extracted::default();
    if let Some(lang) = Lang::of(path)
        && text.len() <= MAX_PARSED_BYTES
    {
        tags(lang, text, &mut out);
    }
    let words = &mut out.words;
    for_each_word(text, |w| add(words, w, 1));
    for_each_word(path, |w| add(words, w, PATH_WEIGHT));
    for definition in &out.definitions {
        for_each_word(&definition.name, |w| add(words, w, DEFINITION_WEIGHT));
    }
    out
}

fn add(words: &mut HashMap<String, u16>, word: &str, weight: u16) {
    match words.get_mut(word) {
        Some(count) => *count = count.saturating_add(weight),
        None => {
            words.insert(word.to_string(), weight);
        }
    }
}

thread_local! {
    /// A parser and query cursor per thread, reused for every file.
    static CONTEXT: RefCell<TagsContext> = RefCell::new(TagsContext::new());
}

fn tags(lang: Lang, text: &str, out: &mut Extracted) {
    let Some(config) = lang.tags() else {
        return;
    };
    let source = text.as_bytes();
    // Each definition with the bytes it spans.
    let mut definitions: Vec<(Range<usize>, Definition)> = Vec::new();
    CONTEXT.with_borrow_mut(|context| {
        let Ok((tags, _)) = context.generate_tags(config, source, None) else {
            return;
        };
        for tag in tags.flatten() {
            let Some(name) = text.get(tag.name_range.clone()) else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            if tag.is_definition {
                let line = text.get(tag.line_range.clone()).unwrap_or_default().trim();
                let definition = Definition {
                    name: name.to_string(),
                    kind: config.syntax_type_name(tag.syntax_type_id).to_string(),
                    line: u32::try_from(tag.span.start.row + 1).unwrap_or(u32::MAX),
                    signature: cut(line, MAX_SIGNATURE).to_string(),
                };
                definitions.push((tag.range.clone(), definition));
            } else {
                out.references.push(name.to_string());
            }
        }
    });
    out.definitions = project_level(definitions);
    out.definitions.sort_by_key(|d| d.line);
    out.definitions.dedup();
    out.references.sort_unstable();
    out.references.dedup();
}

/// Kinds of definition that name something of the project only outside a function: a
/// constant, variable, type, enum or field declared in a function's body is the function's.
const SCOPED_KINDS: [&str; 5] = ["constant", "variable", "type", "enum", "field"];
/// Kinds that are a function's body, for [`SCOPED_KINDS`].
const FUNCTION_KINDS: [&str; 2] = ["function", "method"];

/// `found` (each definition with the bytes it spans) without what a function's body declares
/// for itself (see [`SCOPED_KINDS`]), and with one definition a name and line: where patterns
/// name the same thing twice (`const hook: Hook = () => …` is a constant and a function), the
/// function or class wins over the constant or variable.
fn project_level(mut found: Vec<(Range<usize>, Definition)>) -> Vec<Definition> {
    // Functions by start, each with the furthest end of those starting at or before it: a
    // definition lies in some function when the last one starting before it reaches as far.
    let mut bodies: Vec<(usize, usize)> = (found.iter())
        .filter(|(_, d)| FUNCTION_KINDS.contains(&d.kind.as_str()))
        .map(|(range, _)| (range.start, range.end))
        .collect();
    bodies.sort_unstable();
    let mut reach = 0;
    for body in &mut bodies {
        reach = reach.max(body.1);
        body.1 = reach;
    }
    let inside = |range: &Range<usize>| {
        let before = bodies.partition_point(|b| b.0 < range.start);
        before > 0 && bodies[before - 1].1 >= range.end
    };
    found.retain(|(range, d)| !(SCOPED_KINDS.contains(&d.kind.as_str()) && inside(range)));
    let plain = |d: &Definition| matches!(d.kind.as_str(), "constant" | "variable");
    found.sort_by(|a, b| {
        (a.1.line, &a.1.name, plain(&a.1)).cmp(&(b.1.line, &b.1.name, plain(&b.1)))
    });
    found.dedup_by(|later, kept| later.1.line == kept.1.line && later.1.name == kept.1.name);
    found.into_iter().map(|(_, d)| d).collect()
}

/// `text` cut at `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The map of the file at `path` with `text`: its definitions, as [`file_map`] writes them.
pub fn map_of(path: &str, text: &str) -> String {
    let mut found = Extracted::default();
    if let Some(lang) = Lang::of(path)
        && text.len() <= MAX_PARSED_BYTES
    {
        tags(lang, text, &mut found);
    }
    file_map(&found.definitions)
}

/// The map of a file: each definition as `line: signature`, one a line; empty when the file
/// has none.
pub fn file_map(definitions: &[Definition]) -> String {
    let mut out = String::new();
    for d in definitions {
        out.push_str(&format!("{}: {}\n", d.line, d.signature));
    }
    out
}

#[cfg(test)]
mod tests;
