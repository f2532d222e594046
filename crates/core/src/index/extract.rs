//! What one file holds for the index: its definitions and references (by its language's
//! grammar, see [`super::lang`]) and the words of its path, names and text.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::ops::ControlFlow;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tree_sitter::{Language, ParseOptions, ParseState, Parser};
use tree_sitter_tags::TagsContext;

use super::lang::Lang;
use super::terms::for_each_word;
use watchdog::Watch;

mod watchdog;

/// Files larger than this are indexed by their words only: a parse of a huge generated file
/// costs more than its definitions are worth.
pub const MAX_PARSED_BYTES: usize = 256 * 1024;

/// The longest one file's parse and tagging may take; a file that needs more is indexed by
/// its words only, as a file over [`MAX_PARSED_BYTES`] is. Real files take milliseconds, and
/// the largest parsed (256 KB of C, Rust or Python) up to ~100 ms on one core: a second is
/// ten times that, for a machine busy with a build. A file nested tens of thousands deep
/// (`type X = A<A<…>>`, `f(f(…`, well under the size limit) takes tree-sitter's matching or
/// parsing tens of seconds (Rust 24 s, C++ 46 s, JavaScript 53 s), which held a refresh, a
/// turn's ranking or an agent's outline that long, while the limit costs one at most a
/// second, once: the file is not extracted again until it changes (its stamp), nor in this
/// process while its text is the same (see [`given_up`]).
pub const EXTRACTION_LIMIT: Duration = Duration::from_secs(1);

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
    extract_within(path, text, EXTRACTION_LIMIT)
}

/// [`extract`] with the time its parse and tagging may take (a test's shorter limit).
fn extract_within(path: &str, text: &str, limit: Duration) -> Extracted {
    let mut out = Extracted::default();
    if let Some(lang) = Lang::of(path)
        && text.len() <= MAX_PARSED_BYTES
    {
        out = names(lang, text, limit);
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

/// The definitions and references of `text`, in `lang`; none when they cannot be had
/// within `limit` or the grammar's code panics (a bug of tree-sitter's or a grammar's, which
/// would otherwise take down the refresh): the file is then indexed by its words only, and
/// the text remembered as given up (see [`given_up`]).
fn names(lang: Lang, text: &str, limit: Duration) -> Extracted {
    if given_up(lang, text) {
        return Extracted::default();
    }
    match catch_unwind(AssertUnwindSafe(|| tags(lang, text, limit))) {
        Ok(Some(found)) => found,
        Ok(None) => {
            give_up(lang, text);
            Extracted::default()
        }
        Err(_) => {
            // The parser may have been left mid-parse: the next file gets a new one.
            CONTEXT.with_borrow_mut(|context| *context = TagsContext::new());
            give_up(lang, text);
            Extracted::default()
        }
    }
}

/// The definitions and references of `text`, in `lang`, or `None` when `limit` passed
/// before they were all found.
fn tags(lang: Lang, text: &str, limit: Duration) -> Option<Extracted> {
    let mut out = Extracted::default();
    let Some(config) = lang.tags() else {
        return Some(out);
    };
    let source = text.as_bytes();
    // Each definition with the bytes it spans.
    let mut definitions: Vec<(Range<usize>, Definition)> = Vec::new();
    // tree-sitter-tags stops the parse (in its progress callback) or the matching (every
    // hundred matches) once the watchdog sets the flag: `Cancelled`, from `generate_tags` or
    // as an item of the tags.
    let watch = Watch::start(limit);
    let mut stopped = false;
    CONTEXT.with_borrow_mut(|context| {
        if too_deep(context.parser(), &config.language, text, watch.deadline()) {
            stopped = true;
            return;
        }
        let (tags, _) = match context.generate_tags(config, source, Some(watch.flag())) {
            Ok(found) => found,
            Err(tree_sitter_tags::Error::Cancelled) => {
                stopped = true;
                return;
            }
            // The grammar does not load (a version tree-sitter does not read): no names.
            Err(_) => return,
        };
        for tag in tags {
            // The only error of an item is `Cancelled`; after it the tags would go on (and
            // be cancelled again a hundred matches later), so they are left there.
            let Ok(tag) = tag else {
                stopped = true;
                return;
            };
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
    // The watch ends here: what is left is linear in the tags found.
    drop(watch);
    if stopped {
        return None;
    }
    out.definitions = project_level(definitions);
    out.definitions.sort_by_key(|d| d.line);
    out.definitions.dedup();
    out.references.sort_unstable();
    out.references.dedup();
    Some(out)
}

/// Nesting (brackets of every kind, `<` and `>` among them, in strings and comments too:
/// more than the code's) past which a file's tree is measured before it is tagged.
const SUSPECT_NESTING: usize = 1_000;

/// The deepest tree tagged. The flag of `generate_tags` is read between matches of its
/// query, and tree-sitter's matching of a tree tens of thousands deep can go that long
/// without one, past any limit (Rust's `A<A<…>>` 60,000 deep: 24 s; TypeScript's 50,000:
/// 12.8 s). Real code nests tens of levels deep, generated code hundreds.
const MAX_TREE_DEPTH: usize = 10_000;

/// Whether `text` is too deep to tag (see [`MAX_TREE_DEPTH`]), or too slow to parse by
/// `deadline`. Only a text whose brackets nest past [`SUSPECT_NESTING`] is parsed for this
/// (then twice: this parse is not the one `generate_tags` makes).
fn too_deep(
    parser: &mut Parser,
    language: &Language,
    text: &str,
    deadline: Option<Instant>,
) -> bool {
    if nesting(text) <= SUSPECT_NESTING || parser.set_language(language).is_err() {
        return false;
    }
    let source = text.as_bytes();
    let mut in_time = |_: &ParseState| match deadline {
        Some(deadline) if Instant::now() >= deadline => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    };
    let options = ParseOptions::new().progress_callback(&mut in_time);
    let parsed = parser.parse_with_options(
        &mut |i, _| source.get(i..).unwrap_or_default(),
        None,
        Some(options),
    );
    let Some(tree) = parsed else {
        return true;
    };
    let mut cursor = tree.walk();
    loop {
        if cursor.depth() as usize > MAX_TREE_DEPTH {
            return true;
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return false;
            }
        }
    }
}

/// The deepest nesting of brackets in `text`, as [`SUSPECT_NESTING`] counts it.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for byte in text.bytes() {
        match byte {
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
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

/// How many given-up texts are remembered: a handful of hostile files at once is already
/// more than a project holds by accident.
const GIVEN_UP_KEPT: usize = 64;

/// Texts given up on (see [`names`]), by their hash (see [`hash_of`]), the last
/// [`GIVEN_UP_KEPT`]. The index does not extract a file again until it changes, but the
/// agent's outline and definitions read each changed file on every call, and a turn's map
/// each file it maps: met again, such a text is read by its words at once, not after the
/// limit again.
static GIVEN_UP: Mutex<VecDeque<u64>> = Mutex::new(VecDeque::new());
/// Whether any text was given up: until then no file pays for its hash.
static ANY_GIVEN_UP: AtomicBool = AtomicBool::new(false);

fn given_up(lang: Lang, text: &str) -> bool {
    if !ANY_GIVEN_UP.load(Ordering::Relaxed) {
        return false;
    }
    let hash = hash_of(lang, text);
    (GIVEN_UP.lock().unwrap_or_else(PoisonError::into_inner)).contains(&hash)
}

fn give_up(lang: Lang, text: &str) {
    let hash = hash_of(lang, text);
    let mut given = GIVEN_UP.lock().unwrap_or_else(PoisonError::into_inner);
    if !given.contains(&hash) {
        if given.len() == GIVEN_UP_KEPT {
            given.pop_front();
        }
        given.push_back(hash);
    }
    ANY_GIVEN_UP.store(true, Ordering::Relaxed);
}

/// A hash of `text` in `lang`, keyed at random for the process, so that no file can be
/// made to collide with one given up.
fn hash_of(lang: Lang, text: &str) -> u64 {
    static KEYS: LazyLock<RandomState> = LazyLock::new(RandomState::new);
    let mut hash = KEYS.build_hasher();
    lang.hash(&mut hash);
    text.hash(&mut hash);
    hash.finish()
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
        found = names(lang, text, EXTRACTION_LIMIT);
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
