//! The tools that look across files: `list_files` and `grep`. Both walk the project the way
//! git sees it: `.gitignore` honoured (inside a repository or not), `.git` never entered, and
//! symlinks not followed, so a link pointing outside the project leads nowhere. A starting
//! `path` goes through `resolve` like every other path.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::{Args, ToolError};
use crate::folder::search::{self, FileGlob, SearchError, SearchQuery, Start};

/// `list_files` shows at most this many paths, then a count of the rest.
const MAX_LISTED: usize = 500;
/// `grep` stops at this many matches or this much output (bytes).
const MAX_MATCHES: usize = 200;
const MAX_GREP_OUTPUT: usize = 20_000;

impl From<SearchError> for ToolError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::BadRegex(message) => ToolError::BadRegex { message },
            SearchError::BadGlob(message) => ToolError::BadGlob { message },
            SearchError::Path(e) => ToolError::PathRefused(e),
            SearchError::NotRegular { path, kind } => ToolError::NotRegular { path, kind },
            SearchError::Empty => ToolError::BadArgument {
                field: "pattern",
                expected: "a non-empty regular expression",
            },
            SearchError::Io { path, source } => ToolError::io(&path, &source),
        }
    }
}

fn glob_arg<'a>(args: &Args<'a>) -> Result<Option<&'a str>, ToolError> {
    args.opt_str(&["glob"], "a glob pattern such as \"*.rs\"")
}

/// Lists files under the project root or `path`, optionally only those matching `glob`,
/// sorted, capped at 500 with a count of the rest.
pub fn list_files(root: &Path, args: &Value) -> Result<String, ToolError> {
    let args = Args::new(args)?;
    let glob = FileGlob::new(glob_arg(&args)?)?;
    let start = Start::new(root, args.start_path()?)?;
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
    let query = SearchQuery {
        pattern,
        literal: false,
        case_insensitive: args.opt_bool("case_insensitive")?.unwrap_or(false),
        glob: glob_arg(&args)?,
        start: args.start_path()?,
        max_matches: MAX_MATCHES,
        leave_out_secrets: true,
    };
    let (start, glob, found) = search::search(root, &query)?;
    // A file named as the start was asked for by name (the policy asks the person when
    // that name looks secret); any other file whose name looks secret is left out.
    let named = (!start.is_dir).then_some(start.rel.as_str());
    // Named by a link with an innocent name, a secret-looking file was not asked about.
    if let (Some(raw), Some(target)) = (query.start, named)
        && let Some(refused) = ToolError::leads_to_secret(raw, target)
    {
        return Err(refused);
    }
    let mut out = String::new();
    let mut shown = 0;
    let mut cut = found.cut;
    for m in &found.matches {
        if out.len() >= MAX_GREP_OUTPUT {
            cut = true;
            break;
        }
        shown += 1;
        let _ = writeln!(out, "{}:{}: {}", m.path, m.line, m.text);
    }
    if found.matches.is_empty() {
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
            "[stopped after {shown} matches; narrow the search with a more specific \
             \"pattern\", \"path\" or \"glob\"]"
        );
    }
    if found.skipped > 0 {
        let _ = writeln!(
            out,
            "[{} binary or larger-than-1-MiB files were not searched]",
            found.skipped
        );
    }
    // How many were left out says nothing of what they hold: they were left out before
    // their lines were matched.
    if found.secret > 0 {
        let _ = writeln!(
            out,
            "[{} files that look like they hold secrets (by their name, or a private key or \
             an access token in them) were not searched; ask the person for what you need \
             from them]",
            found.secret
        );
    }
    Ok(out)
}
