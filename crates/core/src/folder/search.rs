//! Searching a project's files, for the person (the Search panel, `tandem search`) and for
//! the agent (`grep`, `list_files`): the project walked the way git sees it (`.gitignore`
//! honoured inside a repository or not, `.git` never entered, symlinks not followed), text
//! files matched line by line against a literal or a regular expression, with caps on
//! matches, output and file size so a broad search stays cheap.

use std::io::Read;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde::Serialize;

use super::{FileKind, OpenError, PathError, RegularFile, open_regular, resolve};

/// Files above this are not searched: generated bundles and data, rarely what is wanted.
pub const MAX_SEARCH_FILE_BYTES: u64 = 1024 * 1024;
/// A matching line is kept up to this many characters.
pub const MAX_MATCH_CHARS: usize = 300;
/// Bytes checked for a NUL to decide a file is binary, as git does (`read_file`, `grep`,
/// fetched pages).
pub const BINARY_SNIFF_BYTES: usize = 8_000;
/// Compiled-regex size cap, so a pathological pattern fails fast instead of eating memory.
const REGEX_SIZE_LIMIT: usize = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the search text is empty")]
    Empty,
    #[error("not a valid regular expression: {0}")]
    BadRegex(String),
    #[error("not a valid glob pattern: {0}")]
    BadGlob(String),
    #[error("path refused: {0}")]
    Path(#[from] PathError),
    #[error("{path} is {kind}, not a regular file; it was not read")]
    NotRegular { path: String, kind: FileKind },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// What to look for, and where.
#[derive(Debug, Clone)]
pub struct SearchQuery<'a> {
    pub pattern: &'a str,
    /// The pattern is plain text, not a regular expression.
    pub literal: bool,
    pub case_insensitive: bool,
    /// Only files matching this glob (from the root, from `start`, or by name when it has no
    /// `/`, so `*.rs` finds Rust files at any depth).
    pub glob: Option<&'a str>,
    /// A folder or file to search instead of the whole project.
    pub start: Option<&'a str>,
    /// Stop after this many matches.
    pub max_matches: usize,
    /// Files that look like they hold secrets are not searched (their lines go to a model):
    /// by name (see [`crate::folder::looks_secret`]; not the file named as the start, which
    /// was asked for by name), or by a private key or an access token in their text (see
    /// [`crate::folder::holds_secret`]). They are left out before their lines are matched, so
    /// nothing of the result (the matches, the cut, the count left out) depends on what they
    /// hold.
    pub leave_out_secrets: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchMatch {
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// The line, trimmed and cut to [`MAX_MATCH_CHARS`].
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    pub matches: Vec<SearchMatch>,
    /// Files not searched: binary, or larger than [`MAX_SEARCH_FILE_BYTES`].
    pub skipped: usize,
    /// Stopped at `max_matches`: there may be more.
    pub cut: bool,
    /// Files left out as looking like they hold secrets (see
    /// [`SearchQuery::leave_out_secrets`]).
    pub secret: usize,
}

/// Where a listing or a search starts.
pub struct Start {
    /// The canonical project root.
    pub root: PathBuf,
    pub abs: PathBuf,
    /// Relative to the root; empty for the root itself.
    pub rel: String,
    pub is_dir: bool,
}

impl Start {
    /// The root itself, or `start` inside it (checked like every other path).
    pub fn new(root: &Path, start: Option<&str>) -> Result<Start, SearchError> {
        let io = |path: &str, source| SearchError::Io {
            path: path.to_string(),
            source,
        };
        let canon =
            super::paths::root_path(root).map_err(|e| io(&root.display().to_string(), e))?;
        let Some(raw) = start.filter(|s| !s.trim().is_empty()) else {
            let (abs, rel) = (canon.clone(), String::new());
            return Ok(Start {
                root: canon,
                abs,
                rel,
                is_dir: true,
            });
        };
        let resolved = resolve(&canon, raw)?;
        let meta = std::fs::metadata(&resolved.abs).map_err(|e| io(raw, e))?;
        Ok(Start {
            root: canon,
            abs: resolved.abs,
            rel: resolved.rel,
            is_dir: meta.is_dir(),
        })
    }

    /// "the project" or the path, for messages.
    pub fn describe(&self) -> String {
        match self.rel.as_str() {
            "" => "the project".into(),
            rel => rel.into(),
        }
    }

    /// Files under the start, as (absolute, relative to the root) pairs, siblings sorted.
    pub fn files(&self, skip_hidden: bool) -> impl Iterator<Item = (PathBuf, String)> + use<> {
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

/// An optional glob over file paths (see [`SearchQuery::glob`]).
pub struct FileGlob(Option<(GlobMatcher, bool)>);

impl FileGlob {
    pub fn new(raw: Option<&str>) -> Result<FileGlob, SearchError> {
        let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
            return Ok(FileGlob(None));
        };
        let glob = GlobBuilder::new(raw)
            .build()
            .map_err(|e| SearchError::BadGlob(e.to_string()))?;
        Ok(FileGlob(Some((glob.compile_matcher(), !raw.contains('/')))))
    }

    pub fn matches(&self, rel: &str, start: &str) -> bool {
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

    /// ` matching "GLOB"`, or nothing.
    pub fn describe(&self) -> String {
        match &self.0 {
            Some((glob, _)) => format!(" matching {:?}", glob.glob().glob()),
            None => String::new(),
        }
    }
}

fn matcher(query: &SearchQuery<'_>) -> Result<Regex, SearchError> {
    if query.pattern.is_empty() {
        return Err(SearchError::Empty);
    }
    let source = match query.literal {
        true => regex::escape(query.pattern),
        false => query.pattern.to_string(),
    };
    RegexBuilder::new(&source)
        .case_insensitive(query.case_insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| SearchError::BadRegex(e.to_string()))
}

/// Searches text files line by line. Hidden, binary and large files are skipped, except a
/// file named as the start, which is searched even if hidden or ignored.
pub fn search(
    root: &Path,
    query: &SearchQuery<'_>,
) -> Result<(Start, FileGlob, SearchResult), SearchError> {
    let regex = matcher(query)?;
    let glob = FileGlob::new(query.glob)?;
    let start = Start::new(root, query.start)?;
    let files: Box<dyn Iterator<Item = (PathBuf, String)>> = match start.is_dir {
        true => Box::new(
            start
                .files(true)
                .filter(|(_, rel)| glob.matches(rel, &start.rel)),
        ),
        false => Box::new(std::iter::once((start.abs.clone(), start.rel.clone()))),
    };
    let named = !start.is_dir;
    let mut found = SearchResult::default();
    'files: for (abs, rel) in files {
        // Only regular files are opened: a named pipe would block the search for ever. The
        // walk lists none, but one may have taken a file's place since.
        if query.leave_out_secrets && !named && super::looks_secret(&rel) {
            found.secret += 1;
            continue;
        }
        let RegularFile { file, meta } = match open_regular(&abs) {
            Ok(opened) => opened,
            Err(OpenError::NotRegular(kind)) if named => {
                return Err(SearchError::NotRegular { path: rel, kind });
            }
            Err(_) => continue,
        };
        if meta.len() > MAX_SEARCH_FILE_BYTES {
            found.skipped += 1;
            continue;
        }
        // Never more than the limit, should the file grow while it is read.
        let mut bytes = Vec::new();
        if file
            .take(MAX_SEARCH_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .is_err()
        {
            continue;
        }
        if bytes.len() as u64 > MAX_SEARCH_FILE_BYTES {
            found.skipped += 1;
            continue;
        }
        if bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0) {
            found.skipped += 1;
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        if query.leave_out_secrets && super::holds_secret(&text) {
            found.secret += 1;
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if found.matches.len() == query.max_matches {
                found.cut = true;
                break 'files;
            }
            found.matches.push(SearchMatch {
                path: rel.clone(),
                line: i + 1,
                text: clip(line.trim()),
            });
        }
    }
    Ok((start, glob, found))
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_MATCH_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pattern: &str) -> SearchQuery<'_> {
        SearchQuery {
            pattern,
            literal: false,
            case_insensitive: false,
            glob: None,
            start: None,
            max_matches: 100,
            leave_out_secrets: false,
        }
    }

    #[test]
    fn literal_or_regex_gitignore_aware_capped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}\nlet x = a(1);\n").unwrap();
        std::fs::write(root.join("notes.md"), "a(1) in prose\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.rs"), "a(1)\n").unwrap();
        std::fs::write(root.join("data.bin"), b"a(1)\0\0").unwrap();

        // As a regex `a(1)` is "a1"; as a literal it is found, not in ignored files.
        let (_, _, regex) = search(root, &query("a(1)")).unwrap();
        assert!(regex.matches.is_empty());
        let literal = SearchQuery {
            literal: true,
            ..query("a(1)")
        };
        let (_, _, found) = search(root, &literal).unwrap();
        let places: Vec<_> = found
            .matches
            .iter()
            .map(|m| (m.path.as_str(), m.line))
            .collect();
        assert_eq!(places, [("notes.md", 1), ("src/a.rs", 2)]);
        assert_eq!(found.skipped, 1, "the binary file");

        let rust_only = SearchQuery {
            glob: Some("*.rs"),
            ..literal.clone()
        };
        assert_eq!(search(root, &rust_only).unwrap().2.matches.len(), 1);
        let capped = SearchQuery {
            max_matches: 1,
            ..literal.clone()
        };
        let (_, _, capped) = search(root, &capped).unwrap();
        assert!(capped.cut && capped.matches.len() == 1);
        let loud = SearchQuery {
            case_insensitive: true,
            ..query("FN A")
        };
        assert_eq!(search(root, &loud).unwrap().2.matches.len(), 1);

        assert!(matches!(
            search(root, &query("(")),
            Err(SearchError::BadRegex(_))
        ));
        assert!(matches!(search(root, &query("")), Err(SearchError::Empty)));
        let outside = SearchQuery {
            start: Some("../"),
            ..query("a")
        };
        assert!(matches!(search(root, &outside), Err(SearchError::Path(_))));
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_or_socket_is_never_opened_and_one_named_is_refused() {
        use crate::folder::test_support::{fifo, promptly, socket};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "needle\n").unwrap();
        fifo(&root.join("src/pipe.rs"));
        socket(&root.join("src/sock.rs"));

        let walked = root.clone();
        let found = promptly(move || search(&walked, &query("needle")).map(|r| r.2));
        let paths: Vec<_> = found.unwrap().matches.into_iter().map(|m| m.path).collect();
        assert_eq!(paths, ["src/a.rs"]);

        for (name, kind) in [("src/pipe.rs", "a named pipe"), ("src/sock.rs", "a socket")] {
            let named = root.clone();
            let refused = promptly(move || {
                let query = SearchQuery {
                    start: Some(name),
                    ..query("needle")
                };
                search(&named, &query).map(|r| r.2)
            });
            assert_eq!(
                refused.unwrap_err().to_string(),
                format!("{name} is {kind}, not a regular file; it was not read")
            );
        }
    }
}
