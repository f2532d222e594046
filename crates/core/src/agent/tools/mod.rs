//! The built-in agent tools: their specs for the model, the read-only ones (`list_files`,
//! `read_file`, `grep`, and the code-index lookups `find_definitions`, `find_references`,
//! `outline`), and the edit ones turned into [`Action`]s that go through the same
//! review and apply path as edit tags. `run_shell` is only specified here; it runs elsewhere.
//!
//! Everything here is synchronous (the agent loop calls it inside `spawn_blocking`) and every
//! error is worded to be sent back to the model, which can then correct its call. Every path
//! goes through [`resolve`] (read tools) or [`normalize_relative`] (edit tools, whose apply
//! resolves again on disk), so no tool reads or names anything outside the project or in
//! `.git`.
//!
//! A few argument-name slips are tolerated (`file_path` for `path`, `old_path` for `from`…),
//! but only names the approval policy also inspects, so the policy always judges the path the
//! tool will use. Numbers and booleans are accepted as text too (`"12"`, `"true"`), as the
//! text protocol's `<parameter=…>` form can only give strings.

mod search;
mod specs;
mod symbols;

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::edits::Action;
use crate::folder::search::BINARY_SNIFF_BYTES;
use crate::folder::{
    FileKind, OpenError, PathError, RegularFile, normalize_relative, open_regular, resolve,
};

pub use search::{grep, list_files};
pub use specs::builtin_specs;
pub use symbols::{CodeIndexes, CodeView, find_definitions, find_references, outline};

/// Which tools the model gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    /// Reading, editing and running commands.
    #[default]
    Agent,
    /// Read-only tools only: the model investigates and proposes a plan, changing nothing.
    Plan,
}

/// `read_file` output caps: lines, bytes, and characters per line (minified files).
const MAX_READ_LINES: usize = 2_000;
const MAX_READ_BYTES: usize = 100_000;
const MAX_LINE_CHARS: usize = 2_000;
/// Files above this are refused by `read_file`: they are data, not code to read.
const MAX_READ_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Files up to this size are checked whole for secrets before `read_file` shows any of them;
/// a larger one, only in what would be shown.
const SECRET_SCAN_BYTES: u64 = 8 * 1024 * 1024;
/// The most a `write_file` may write: larger files cannot be reviewed as a diff anyway.
const MAX_WRITE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a tool call failed; the message is sent to the model.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("the arguments must be a JSON object, not {0}")]
    ArgumentsNotObject(&'static str),
    #[error("the required argument \"{field}\" is missing: give {expected}")]
    MissingArgument {
        field: &'static str,
        expected: &'static str,
    },
    #[error("the argument \"{field}\" must be {expected}")]
    BadArgument {
        field: &'static str,
        expected: &'static str,
    },
    #[error("path refused: {0}")]
    PathRefused(#[from] PathError),
    #[error("{path} does not exist; use list_files to see which files exist")]
    NotFound { path: String },
    #[error("{path} is a directory; use list_files to see what it contains")]
    IsDirectory { path: String },
    #[error("{path} is a file, not a directory; use read_file to read it")]
    NotADirectory { path: String },
    #[error("{path} is {kind}, not a regular file; it was not read")]
    NotRegular { path: String, kind: FileKind },
    #[error(
        "{path} is not in a language the code index reads (Rust, JavaScript, TypeScript, \
         Python, Go, Java, C, C++); use read_file or grep"
    )]
    NotParsed { path: String },
    #[error("{path} is a binary file; only text files can be read")]
    Binary { path: String },
    #[error(
        "{path} holds what looks like a private key or an access token: Tandem does not send \
         it to the model. Ask the person for what you need from it"
    )]
    HoldsSecret { path: String },
    #[error(
        "{path} leads to {target}, whose name looks like it holds a secret: Tandem does not \
         send it to the model unless the person is asked. Read {target} by that name"
    )]
    LeadsToSecret { path: String, target: String },
    #[error("{what} is too large ({size} bytes; the limit is {limit} bytes)")]
    TooLarge { what: String, size: u64, limit: u64 },
    #[error("start_line {start} is past the end of {path}, which has {total} lines")]
    PastEnd {
        path: String,
        start: usize,
        total: usize,
    },
    #[error("\"pattern\" is not a valid regular expression: {message}")]
    BadRegex { message: String },
    #[error("\"glob\" is not a valid glob pattern: {message}")]
    BadGlob { message: String },
    #[error(
        "\"{field}\" contains the line {line:?}, which is an edit marker; quote less, so that \
         no line is a marker"
    )]
    MarkerInText { field: &'static str, line: String },
    #[error("`{tool}` is not a file-editing tool")]
    NotAnEditTool { tool: String },
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
}

impl ToolError {
    /// A link (or a folder link on the way) that leads to `target` (relative to the root),
    /// whose name looks secret, named by a path `raw` that does not: the policy asks about a
    /// secret-looking name, so the read must be made by it.
    fn leads_to_secret(raw: &str, target: &str) -> Option<ToolError> {
        let secret = crate::folder::looks_secret;
        (secret(target) && !secret(raw)).then(|| ToolError::LeadsToSecret {
            path: raw.to_string(),
            target: target.to_string(),
        })
    }

    fn io(path: &str, e: &std::io::Error) -> ToolError {
        match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotFound { path: path.into() },
            _ => ToolError::Io {
                path: path.into(),
                message: e.to_string(),
            },
        }
    }

    /// Why `path` (relative, as the model named it) was not opened.
    fn open(path: &str, e: OpenError) -> ToolError {
        match e {
            OpenError::NotRegular(FileKind::Directory) => {
                ToolError::IsDirectory { path: path.into() }
            }
            OpenError::NotRegular(kind) => ToolError::NotRegular {
                path: path.into(),
                kind,
            },
            OpenError::Io(e) => ToolError::io(path, &e),
        }
    }
}

const PATH_KEYS: [&str; 3] = ["path", "file_path", "file"];
const DIR_KEYS: [&str; 4] = ["path", "dir", "directory", "file_path"];

/// A call's arguments, with typed getters whose errors name the field.
struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    fn new(value: &'a Value) -> Result<Self, ToolError> {
        match value {
            Value::Object(map) => Ok(Args(map)),
            other => Err(ToolError::ArgumentsNotObject(match other {
                Value::Null => "null",
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                _ => "a number or boolean",
            })),
        }
    }

    /// The first of `keys` present; an explicit `null` counts as absent.
    fn get(&self, keys: &[&str]) -> Option<&'a Value> {
        keys.iter()
            .find_map(|k| self.0.get(*k))
            .filter(|v| !v.is_null())
    }

    fn opt_str(
        &self,
        keys: &[&'static str],
        expected: &'static str,
    ) -> Result<Option<&'a str>, ToolError> {
        match self.get(keys) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ToolError::BadArgument {
                field: keys[0],
                expected,
            }),
        }
    }

    fn str(&self, keys: &[&'static str], expected: &'static str) -> Result<&'a str, ToolError> {
        self.opt_str(keys, expected)?
            .ok_or(ToolError::MissingArgument {
                field: keys[0],
                expected,
            })
    }

    /// A 1-based line number.
    fn opt_line(&self, field: &'static str) -> Result<Option<usize>, ToolError> {
        let bad = ToolError::BadArgument {
            field,
            expected: "a line number, counting from 1",
        };
        let n = match self.get(&[field]) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        n.filter(|&n| n >= 1).map(Some).ok_or(bad)
    }

    fn opt_bool(&self, field: &'static str) -> Result<Option<bool>, ToolError> {
        match self.get(&[field]) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(ToolError::BadArgument {
                field,
                expected: "true or false",
            }),
        }
    }

    /// A directory or file to start from: `None` for the project root (absent, `""`, `.`).
    fn start_path(&self) -> Result<Option<&'a str>, ToolError> {
        let raw = self.opt_str(&DIR_KEYS, "a path relative to the project root")?;
        Ok(raw.filter(|p| !matches!(p.trim(), "" | "." | "./")))
    }

    fn rel_path(&self, keys: &[&'static str]) -> Result<String, ToolError> {
        let raw = self.str(keys, "a path relative to the project root")?;
        Ok(normalize_relative(raw)?)
    }

    fn description(&self) -> Result<Option<String>, ToolError> {
        let d = self.opt_str(&["description"], "a string")?;
        Ok(d.map(str::trim).filter(|d| !d.is_empty()).map(Into::into))
    }
}

/// Reads a text file, or the `start_line`..=`end_line` part of it, with numbered lines. The
/// output is capped (2,000 lines, 100 KB, 2,000 characters a line) with a note telling the
/// model which `start_line` continues. Binary files are refused.
pub fn read_file(root: &Path, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let raw = args.str(&PATH_KEYS, "a path relative to the project root")?;
    let resolved = resolve(root, raw)?;
    if let Some(refused) = ToolError::leads_to_secret(raw, &resolved.rel) {
        return Err(refused);
    }
    let path = resolved.rel.as_str();
    // A named pipe or a device is refused without being read: a pipe would block for ever.
    let RegularFile { file, meta } =
        open_regular(&resolved.abs).map_err(|e| ToolError::open(path, e))?;
    if meta.len() > MAX_READ_FILE_BYTES {
        return Err(ToolError::TooLarge {
            what: format!("{path} (use grep to find what you need in it)"),
            size: meta.len(),
            limit: MAX_READ_FILE_BYTES,
        });
    }
    let start = args.opt_line("start_line")?.unwrap_or(1);
    let end = args.opt_line("end_line")?;
    if end.is_some_and(|end| end < start) {
        return Err(ToolError::BadArgument {
            field: "end_line",
            expected: "a line number not before start_line",
        });
    }
    let last_wanted = end.unwrap_or(usize::MAX);
    let io = |e: std::io::Error| ToolError::io(path, &e);
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(io)?;
    if head.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0) {
        return Err(ToolError::Binary { path: path.into() });
    }
    let (mut body, mut total, mut shown, mut cut_at) = (String::new(), 0, None, None);
    let mut line = Vec::new();
    // The whole file, for the secrets check, when it is not too large to hold.
    let mut whole = Vec::new();
    let scan_whole = meta.len() <= SECRET_SCAN_BYTES;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        if scan_whole {
            whole.extend_from_slice(&line);
        }
        total += 1;
        if total < start || total > last_wanted || cut_at.is_some() {
            continue;
        }
        if shown.is_some_and(|(first, _)| total - first >= MAX_READ_LINES)
            || body.len() >= MAX_READ_BYTES
        {
            cut_at = Some(total);
            continue;
        }
        body.push_str(&numbered(total, &line));
        shown = Some((shown.map_or(total, |(first, _)| first), total));
    }
    // Nothing of a file that holds a key or a token goes to the model: the whole file is
    // asked (a range may begin past a key's first line), else what would be shown.
    let scanned = match scan_whole {
        true => String::from_utf8_lossy(&whole),
        false => std::borrow::Cow::Borrowed(body.as_str()),
    };
    if crate::folder::holds_secret(&scanned) {
        return Err(ToolError::HoldsSecret { path: path.into() });
    }
    let Some((first, last)) = shown else {
        if total == 0 {
            return Ok(format!("{path} is empty."));
        }
        return Err(ToolError::PastEnd {
            path: path.into(),
            start,
            total,
        });
    };
    let mut out = format!("{path} (lines {first}-{last} of {total})\n{body}");
    if let Some(next) = cut_at {
        out.push_str(&format!(
            "[output cut at {MAX_READ_LINES} lines or {} KB; lines {next}-{} not shown: call \
             read_file again with \"start_line\": {next}]\n",
            MAX_READ_BYTES / 1000,
            last_wanted.min(total)
        ));
    }
    Ok(out)
}

/// `"    12\ttext\n"`, the line's break removed and an overlong line shortened.
fn numbered(n: usize, raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{n:>6}\t{}… [line shortened]\n", &text[..cut]),
        None => format!("{n:>6}\t{text}\n"),
    }
}

/// The [`Action`] an edit tool call asks for. Paths are checked lexically here so a bad one
/// goes straight back to the model; applying the action resolves them again on disk.
pub fn edit_action(tool: &str, args: &Value) -> Result<Action, ToolError> {
    let args = Args::new(args)?;
    Ok(match tool {
        "write_file" => {
            let path = args.rel_path(&PATH_KEYS)?;
            const CONTENT: &str = "the file's complete content, as a string";
            // A model writing a JSON file sometimes gives the content as JSON itself.
            let mut content = match args.get(&["content"]) {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Object(_) | Value::Array(_))) => {
                    serde_json::to_string_pretty(v).unwrap_or_default()
                }
                None => {
                    return Err(ToolError::MissingArgument {
                        field: "content",
                        expected: CONTENT,
                    });
                }
                Some(_) => {
                    return Err(ToolError::BadArgument {
                        field: "content",
                        expected: CONTENT,
                    });
                }
            };
            if content.len() as u64 > MAX_WRITE_BYTES {
                return Err(ToolError::TooLarge {
                    what: "the content".into(),
                    size: content.len() as u64,
                    limit: MAX_WRITE_BYTES,
                });
            }
            if !content.is_empty() && !content.ends_with('\n') {
                content.push('\n');
            }
            let description = args.description()?;
            Action::Write {
                path,
                description,
                content,
            }
        }
        "search_replace" => {
            let path = args.rel_path(&PATH_KEYS)?;
            let search = args.str(&["search"], "the exact existing lines to replace")?;
            let replace = args.str(&["replace"], "the new lines (may be empty)")?;
            if search.trim().is_empty() {
                return Err(ToolError::BadArgument {
                    field: "search",
                    expected: "the exact existing lines to replace, not empty",
                });
            }
            refuse_markers("search", search, true)?;
            refuse_markers("replace", replace, false)?;
            let body = format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n");
            let description = args.description()?;
            Action::SearchReplace {
                path,
                description,
                body,
            }
        }
        "rename_file" => {
            let from = args.rel_path(&["from", "old_path", "source"])?;
            let to = args.rel_path(&["to", "new_path", "destination"])?;
            if from == to {
                return Err(ToolError::BadArgument {
                    field: "to",
                    expected: "a path different from \"from\"",
                });
            }
            Action::Rename { from, to }
        }
        "delete_file" => Action::Delete {
            path: args.rel_path(&PATH_KEYS)?,
        },
        _ => return Err(ToolError::NotAnEditTool { tool: tool.into() }),
    })
}

/// Refuses lines the SEARCH/REPLACE parser would read as markers (same shapes as
/// `edits::search_replace`: 5 to 9 `<`/`=`/`>`, spaces, the word). A `=======` line is
/// content inside REPLACE, so it is only refused in `search`.
fn refuse_markers(field: &'static str, text: &str, divider_too: bool) -> Result<(), ToolError> {
    fn run(t: &str, c: char) -> Option<&str> {
        let rest = t.trim_start_matches(c);
        (5..=9)
            .contains(&(t.len() - rest.len()))
            .then(|| rest.trim_start_matches(' '))
    }
    let marker = text.lines().find(|line| {
        let t = line.trim();
        run(t, '<') == Some("SEARCH")
            || run(t, '>') == Some("REPLACE")
            || (divider_too && run(t, '=') == Some(""))
    });
    match marker {
        Some(line) => Err(ToolError::MarkerInText {
            field,
            line: line.to_string(),
        }),
        None => Ok(()),
    }
}

/// The project paths a call reads, for the UI's "files read": `read_file`'s and `outline`'s
/// file and `grep`'s `path` when given. Listing names files without reading them, and edit tools
/// count as edits. Refused paths are left out.
pub fn paths_read(tool: &str, args: &Value) -> Vec<String> {
    let Ok(args) = Args::new(args) else {
        return Vec::new();
    };
    let raw = match tool {
        "read_file" | "outline" => args.opt_str(&PATH_KEYS, "").ok().flatten(),
        "grep" => args.start_path().ok().flatten(),
        _ => None,
    };
    raw.and_then(|raw| normalize_relative(raw).ok())
        .into_iter()
        .collect()
}

#[cfg(test)]
mod edit_tests;
#[cfg(test)]
mod tests;
