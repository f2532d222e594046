//! The tools that look across files: `list_files` and `grep`. Both walk the project the way
//! git sees it: `.gitignore` honoured (inside a repository or not), `.git` never entered, and
//! symlinks not followed, so a link pointing outside the project leads nowhere. A starting
//! `path` goes through `resolve` like every other path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use regex::RegexBuilder;
use serde_json::Value;

use super::{Args, BINARY_SNIFF_BYTES, ToolError};
use crate::workspace::resolve;

/// `list_files` shows at most this many paths, then a count of the rest.
const MAX_LISTED: usize = 500;
/// `grep` stops at this many matches or this much output (bytes).
const MAX_MATCHES: usize = 200;
const MAX_GREP_OUTPUT: usize = 20_000;
/// Files above this are not searched: generated bundles and data, rarely what is wanted.
const MAX_GREP_FILE_BYTES: u64 = 1024 * 1024;
/// A matching line is shown up to this many characters.
const MAX_MATCH_CHARS: usize = 300;
/// Compiled-regex size cap, so a pathological pattern fails fast instead of eating memory.
const REGEX_SIZE_LIMIT: usize = 4 * 1024 * 1024;

/// Where a listing or search starts.
struct Start {
    /// The canonical project root.
    root: PathBuf,
    abs: PathBuf,
    /// Relative to the root; empty for the root itself.
    rel: String,
    is_dir: bool,
}

impl Start {
    fn new(root: &Path, args: &Args) -> Result<Start, ToolError> {
        let canon = root
            .canonicalize()
            .map_err(|e| ToolError::io(&root.display().to_string(), &e))?;
        let Some(raw) = args.start_path()? else {
            let (abs, rel) = (canon.clone(), String::new());
            return Ok(Start {
                root: canon,
                abs,
                rel,
                is_dir: true,
            });
        };
        let resolved = resolve(&canon, raw)?;
        let meta = std::fs::metadata(&resolved.abs).map_err(|e| ToolError::io(raw, &e))?;
        Ok(Start {
            root: canon,
            abs: resolved.abs,
            rel: resolved.rel,
            is_dir: meta.is_dir(),
        })
    }

    /// "the project" or the path, for messages.
    fn describe(&self) -> String {
        match self.rel.as_str() {
            "" => "the project".into(),
            rel => rel.into(),
        }
    }

    /// Files under the start, as (absolute, relative to the root) pairs, siblings sorted.
    fn files(&self, skip_hidden: bool) -> impl Iterator<Item = (PathBuf, String)> + use<> {
        let root = self.root.clone();
        ignore::WalkBuilder::new(&self.abs)
            .hidden(skip_hidden)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|entry| !entry.file_name().eq_ignore_ascii_case(".git"))
            .sort_by_file_name(|a, b| a.cmp(b))
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter_map(move |entry| {
                let rel = relative(&root, entry.path())?;
                Some((entry.into_path(), rel))
            })
    }
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let parts: Vec<String> = path
        .strip_prefix(root)
        .ok()?
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

/// The optional `glob` argument. A file matches when the glob matches its path from the
/// project root or from the starting directory, or (for a glob without `/`) its file name,
/// so `*.rs` and `Cargo.toml` find files at any depth.
struct Glob(Option<(GlobMatcher, bool)>);

impl Glob {
    fn new(args: &Args) -> Result<Glob, ToolError> {
        let Some(raw) = args.opt_str(&["glob"], "a glob pattern such as \"*.rs\"")? else {
            return Ok(Glob(None));
        };
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(Glob(None));
        }
        let glob = GlobBuilder::new(raw)
            .build()
            .map_err(|e| ToolError::BadGlob {
                message: e.to_string(),
            })?;
        Ok(Glob(Some((glob.compile_matcher(), !raw.contains('/')))))
    }

    fn matches(&self, rel: &str, start: &str) -> bool {
        let Some((glob, name_too)) = &self.0 else {
            return true;
        };
        let from_start = rel
            .strip_prefix(start)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(rel);
        let name = rel.rsplit('/').next().unwrap_or(rel);
        glob.is_match(rel) || glob.is_match(from_start) || (*name_too && glob.is_match(name))
    }

    fn describe(&self) -> String {
        match &self.0 {
            Some((glob, _)) => format!(" matching {:?}", glob.glob().glob()),
            None => String::new(),
        }
    }
}

/// Lists files under the project root or `path`, optionally only those matching `glob`,
/// sorted, capped at 500 with a count of the rest.
pub fn list_files(root: &Path, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let glob = Glob::new(&args)?;
    let start = Start::new(root, &args)?;
    if !start.is_dir {
        return Err(ToolError::NotADirectory { path: start.rel });
    }
    let mut files: Vec<String> = start
        .files(false)
        .map(|(_, rel)| rel)
        .filter(|rel| glob.matches(rel, &start.rel))
        .collect();
    files.sort();
    if files.is_empty() {
        return Ok(format!(
            "No files in {}{}.",
            start.describe(),
            glob.describe()
        ));
    }
    let more = files.len().saturating_sub(MAX_LISTED);
    files.truncate(MAX_LISTED);
    let mut out = files.join("\n");
    out.push('\n');
    if more > 0 {
        let _ = writeln!(
            out,
            "… and {more} more files; narrow the list with \"path\" or \"glob\""
        );
    }
    Ok(out)
}

/// Searches text files for a regular expression, line by line, as `path:line: text`. Hidden,
/// binary and >1 MiB files are skipped (a file named explicitly is searched even if hidden or
/// ignored); output stops at 200 matches or 20,000 bytes with a note.
pub fn grep(root: &Path, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let pattern = args.str(&["pattern", "regex"], "a regular expression")?;
    if pattern.is_empty() {
        return Err(ToolError::BadArgument {
            field: "pattern",
            expected: "a non-empty regular expression",
        });
    }
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(args.opt_bool("case_insensitive")?.unwrap_or(false))
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| ToolError::BadRegex {
            message: e.to_string(),
        })?;
    let glob = Glob::new(&args)?;
    let start = Start::new(root, &args)?;
    let files: Box<dyn Iterator<Item = (PathBuf, String)>> = if start.is_dir {
        Box::new(
            start
                .files(true)
                .filter(|(_, rel)| glob.matches(rel, &start.rel)),
        )
    } else {
        Box::new(std::iter::once((start.abs.clone(), start.rel.clone())))
    };
    let (mut out, mut matches, mut skipped, mut cut) = (String::new(), 0, 0, false);
    'files: for (abs, rel) in files {
        let Ok(meta) = std::fs::metadata(&abs) else {
            continue;
        };
        if meta.len() > MAX_GREP_FILE_BYTES {
            skipped += 1;
            continue;
        }
        let Ok(bytes) = std::fs::read(&abs) else {
            continue;
        };
        if bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0) {
            skipped += 1;
            continue;
        }
        for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches == MAX_MATCHES || out.len() >= MAX_GREP_OUTPUT {
                cut = true;
                break 'files;
            }
            matches += 1;
            let _ = writeln!(out, "{rel}:{}: {}", i + 1, clip(line.trim()));
        }
    }
    if matches == 0 {
        let _ = writeln!(
            out,
            "No matches for {pattern:?} in {}{}.",
            start.describe(),
            glob.describe()
        );
    }
    if cut {
        let _ = writeln!(
            out,
            "[stopped after {matches} matches; narrow the search with a more specific \
             \"pattern\", \"path\" or \"glob\"]"
        );
    }
    if skipped > 0 {
        let _ = writeln!(
            out,
            "[{skipped} binary or larger-than-1-MiB files were not searched]"
        );
    }
    Ok(out)
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_MATCH_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
