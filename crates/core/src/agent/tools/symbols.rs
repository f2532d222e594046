//! The tools that ask the code index ([`crate::index`]): `find_definitions`,
//! `find_references` and `outline`, cheaper for a model than `grep` and whole-file reads.
//!
//! The index is of the person's tree, but the agent reads its workspace. So each answer is
//! the index's with the files the workspace changed taken out, and those files extracted
//! again from their workspace text ([`crate::index::extract`]); a file the workspace deleted
//! is simply absent. Lines are always read from the view the agent sees, through
//! [`resolve`], so nothing outside the project or in `.git` is read.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

use super::{Args, MAX_READ_FILE_BYTES, PATH_KEYS, ToolError};
use crate::folder::context::ContextOptions;
use crate::folder::search::BINARY_SNIFF_BYTES;
use crate::folder::{RegularFile, open_regular, resolve};
use crate::index::{self, CodeIndex, Extracted, Indexes, Lang, MAX_PARSED_BYTES};

/// The longest name looked up, in characters.
const MAX_NAME_CHARS: usize = 200;
/// `find_definitions` lists at most this many places.
const MAX_DEFINITIONS: usize = 100;
/// `find_references` stops at this many lines or this much output (bytes), like `grep`.
const MAX_REFERENCE_LINES: usize = 200;
const MAX_REFERENCE_OUTPUT: usize = 20_000;
/// A shown line is cut at this many characters.
const MAX_SHOWN_CHARS: usize = 300;
/// Said when the index has nothing: which files it reads.
const LANGUAGES: &str = "Rust, JavaScript, TypeScript, Python, Go, Java, C and C++";

/// The code indexes of the process, shared with the chat service, and which files of the
/// project they hold (`Indexes` is not `Debug`: it holds whole indexes, which no debug print
/// should show).
#[derive(Clone)]
pub struct CodeIndexes {
    pub indexes: std::sync::Arc<crate::index::Indexes>,
    /// The project's include and exclude, as every refresh of its index walks.
    pub files: crate::folder::context::ContextOptions,
}

impl std::fmt::Debug for CodeIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeIndexes")
    }
}

/// What the symbol tools read.
pub struct CodeView<'a> {
    /// The person's tree (canonical): what the index is of.
    pub project: &'a Path,
    /// Where the agent reads: its workspace's view, or the project itself.
    pub view: &'a Path,
    /// The paths the workspace created, changed or deleted against the project.
    pub changed: &'a BTreeSet<String>,
    pub indexes: &'a Indexes,
    /// The project's include and exclude: the index holds the files they select.
    pub files: &'a ContextOptions,
}

impl CodeView<'_> {
    /// Asks the project's index, brought up to date with the person's tree first (only the
    /// files that changed since are read again; see [`index::Indexes::ask`]).
    fn ask<T>(&self, query: impl FnOnce(&CodeIndex) -> index::Result<T>) -> Result<T, ToolError> {
        (self.indexes.ask(self.project, self.files, query)).map_err(|e| ToolError::Io {
            path: "the code index".into(),
            message: e.to_string(),
        })
    }

    /// What each file the workspace changed holds now (deleted or unreadable ones left out).
    fn changed_files(&self) -> Vec<(&str, Extracted)> {
        (self.changed.iter())
            .filter(|path| Lang::of(path).is_some())
            .filter_map(|path| {
                let text = read_text(self.view, path, MAX_PARSED_BYTES as u64).ok()?;
                Some((path.as_str(), index::extract(path, &text)))
            })
            .collect()
    }
}

/// The text of the file `rel` in `view`, if it is a regular text file of at most `limit`
/// bytes that holds no secret (a file that does is left out of every answer).
fn read_text(view: &Path, rel: &str, limit: u64) -> Result<String, ToolError> {
    let resolved = resolve(view, rel)?;
    if let Some(refused) = ToolError::leads_to_secret(rel, &resolved.rel) {
        return Err(refused);
    }
    let path = resolved.rel.as_str();
    let RegularFile { file, meta } =
        open_regular(&resolved.abs).map_err(|e| ToolError::open(path, e))?;
    if meta.len() > limit {
        return Err(ToolError::TooLarge {
            what: format!("{path} (use grep to find what you need in it)"),
            size: meta.len(),
            limit,
        });
    }
    let mut bytes = Vec::new();
    (file.take(limit).read_to_end(&mut bytes)).map_err(|e| ToolError::io(path, &e))?;
    if bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0) {
        return Err(ToolError::Binary { path: path.into() });
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // A definition's first line may be the key or the token itself.
    if crate::folder::holds_secret(&text) {
        return Err(ToolError::HoldsSecret { path: path.into() });
    }
    Ok(text)
}

/// The name to look up: one identifier. A qualified name (`Config::load`, `os.path.join`)
/// is looked up by its last part, which is what the index keeps; the note says so.
fn name_arg(args: &Args<'_>) -> Result<(String, Option<String>), ToolError> {
    const EXPECTED: &str = "one identifier, such as \"parse_args\" (not a path or an expression)";
    let raw = args.str(&["name", "symbol"], EXPECTED)?.trim();
    let bad = ToolError::BadArgument {
        field: "name",
        expected: EXPECTED,
    };
    let last = raw.rsplit("::").next().unwrap_or(raw);
    let last = last.rsplit('.').next().unwrap_or(last);
    if last.is_empty()
        || raw.chars().count() > MAX_NAME_CHARS
        || raw
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "()[]{}<>/\\\"'`;,".contains(c))
    {
        return Err(bad);
    }
    let note = (last != raw).then(|| format!("(looked up `{last}`, the last part of `{raw}`)\n"));
    Ok((last.to_string(), note))
}

/// `text` trimmed and cut at [`MAX_SHOWN_CHARS`].
fn shown(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Each place `name` is defined, as `path:line kind signature`, by path then line.
pub fn find_definitions(code: &CodeView<'_>, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let (name, note) = name_arg(&args)?;
    let indexed = code.ask(|index| index.definitions_of(&name))?;
    // (path, line, kind, first line): the index keeps no first lines; they are read from
    // the view below, for the places shown only.
    let mut found: Vec<(String, u32, String, Option<String>)> = (indexed.into_iter())
        .filter(|place| !code.changed.contains(&place.path))
        .map(|place| (place.path, place.line, place.kind, None))
        .collect();
    for (path, extracted) in code.changed_files() {
        for d in extracted.definitions.into_iter().filter(|d| d.name == name) {
            found.push((path.to_string(), d.line, d.kind, Some(d.signature)));
        }
    }
    found.sort();
    let mut out = note.unwrap_or_default();
    if found.is_empty() {
        let _ = writeln!(
            out,
            "No definition of `{name}` found. The index reads {LANGUAGES} files; use grep for \
             other files or another spelling."
        );
        return Ok(out);
    }
    let more = found.len().saturating_sub(MAX_DEFINITIONS);
    let mut texts: HashMap<&str, Option<String>> = HashMap::new();
    for (path, line, kind, signature) in found.iter().take(MAX_DEFINITIONS) {
        let signature = match signature {
            Some(signature) => shown(signature),
            None => (texts.entry(path.as_str()))
                .or_insert_with(|| read_text(code.view, path, MAX_READ_FILE_BYTES).ok())
                .as_deref()
                .and_then(|text| text.lines().nth(line.saturating_sub(1) as usize))
                .map(shown)
                .unwrap_or_default(),
        };
        let _ = writeln!(out, "{path}:{line} {kind} {signature}");
    }
    if more > 0 {
        let _ = writeln!(
            out,
            "[… and {more} more definitions not shown: use grep with a \"path\" to narrow]"
        );
    }
    Ok(out)
}

/// The lines that use `name`, as `path:line: text`, in the files the index says use it
/// (those the workspace changed judged by their workspace text); capped like `grep`.
pub fn find_references(code: &CodeView<'_>, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let (name, note) = name_arg(&args)?;
    let mut files: Vec<String> = code
        .ask(|index| index.references_to(&name))?
        .into_iter()
        .filter(|path| !code.changed.contains(path))
        .collect();
    for (path, extracted) in code.changed_files() {
        if extracted.references.binary_search(&name).is_ok() {
            files.push(path.to_string());
        }
    }
    files.sort();
    files.dedup();
    let mut out = note.unwrap_or_default();
    let (mut lines, mut cut_at) = (0, None);
    for (i, path) in files.iter().enumerate() {
        let Ok(text) = read_text(code.view, path, MAX_READ_FILE_BYTES) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if index::terms::find_name(line, &name).is_none() {
                continue;
            }
            if lines >= MAX_REFERENCE_LINES || out.len() >= MAX_REFERENCE_OUTPUT {
                cut_at = Some(i);
                break;
            }
            let _ = writeln!(out, "{path}:{}: {}", n + 1, shown(line));
            lines += 1;
        }
        if cut_at.is_some() {
            break;
        }
    }
    if lines == 0 {
        let _ = writeln!(
            out,
            "No references to `{name}` found. The index reads {LANGUAGES} files; use grep \
             for other files, comments and strings."
        );
    }
    if let Some(at) = cut_at {
        let _ = writeln!(
            out,
            "[stopped after {lines} lines; more of {} and {} more files not shown: use grep \
             with a \"path\" to see one file]",
            files[at],
            files.len() - at - 1
        );
    }
    Ok(out)
}

/// The definitions of one file with their line numbers and first lines (the map the index
/// renders), read from the view.
pub fn outline(view: &Path, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let raw = args.str(&PATH_KEYS, "a file's path relative to the project root")?;
    let resolved = resolve(view, raw)?;
    let rel = resolved.rel;
    open_regular(&resolved.abs).map_err(|e| ToolError::open(&rel, e))?;
    if Lang::of(&rel).is_none() {
        return Err(ToolError::NotParsed { path: rel });
    }
    let text = read_text(view, &rel, MAX_PARSED_BYTES as u64)?;
    let map = index::map_of(&rel, &text);
    if map.is_empty() {
        return Ok(format!(
            "{rel} has no definitions (functions, types, classes, ...); use read_file to read it."
        ));
    }
    let count = map.lines().count();
    Ok(format!(
        "{rel}: {count} definitions, each as line: first line\n{map}"
    ))
}

#[cfg(test)]
mod tests;
