//! Which project files go into the model's prompt. [`ContextCache::collect`] walks the project
//! (honouring `.gitignore` and friends), decides per file whether it is eligible, and packs the
//! eligible files into a token budget; [`render`] turns the result into prompt text.
//!
//! File contents are cached by `(mtime, length, inode)`, so collecting again before every chat
//! turn costs one `stat` per file, not one read.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::tokens::estimate as estimate_tokens;

/// Files larger than this are skipped by default: they are almost always generated or data.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Directories never walked, even when no ignore file mentions them: dependencies, build output
/// and virtual environments would drown the real code.
#[rustfmt::skip]
const ALWAYS_EXCLUDED_DIRS: &[&str] = &[
    ".git", "node_modules", "target", "dist", "build", ".next", "out", "vendor", "__pycache__",
    ".venv", "venv", "coverage",
];

/// Generated dependency pins: large, machine-written, and useless to the model. Any `*.lock`
/// or `*.lockb` counts too.
#[rustfmt::skip]
const LOCK_FILES: &[&str] = &[
    "Cargo.lock", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock",
    "bun.lockb", "bun.lock", "deno.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "pdm.lock",
    "Gemfile.lock", "composer.lock", "go.sum", "go.work.sum", "flake.lock", "mix.lock",
    "pubspec.lock", "Podfile.lock", "Package.resolved", "packages.lock.json", "gradle.lockfile",
    "Cartfile.resolved", "conan.lock", "paket.lock",
];

/// Source and text extensions (compared lower-cased). Anything else is assumed to be an asset,
/// a binary or data: an allow-list fails safe, a deny-list would leak every new binary format.
/// `.env`-like and key files are deliberately absent: they tend to hold secrets.
#[rustfmt::skip]
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "markdown", "mdx", "txt", "rst", "adoc", "js", "jsx", "ts", "tsx", "mjs",
    "cjs", "mts", "cts", "json", "jsonc", "json5", "css", "scss", "sass", "less", "html", "htm",
    "vue", "svelte", "astro", "py", "pyi", "go", "java", "kt", "kts", "scala", "groovy", "gradle",
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "cs", "csproj", "fs", "fsx",
    "fsproj", "rb", "erb", "rake", "gemspec", "php", "swift", "sh", "bash", "zsh", "fish", "ps1",
    "bat", "cmd", "yaml", "yml", "sql", "graphql", "gql", "proto", "xml", "ini", "cfg", "conf",
    "properties", "lua", "pl", "pm", "r", "jl", "dart", "ex", "exs", "erl", "hrl", "hs", "elm",
    "clj", "cljs", "cljc", "edn", "ml", "mli", "nim", "zig", "tf", "hcl", "nix", "cmake", "mk",
    "tex", "bib", "prisma", "wgsl", "glsl", "hlsl", "vert", "frag", "sol", "wat", "s", "asm",
    "dockerfile", "just",
];

/// Well-known files without a (source) extension, matched exactly.
#[rustfmt::skip]
const SOURCE_NAMES: &[&str] = &[
    "Makefile", "makefile", "GNUmakefile", "Dockerfile", "Containerfile", "Jenkinsfile",
    "Vagrantfile", "Gemfile", "Rakefile", "Procfile", "Brewfile", "Podfile", "Pipfile", "Justfile",
    "justfile", "README", "LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "CONTRIBUTORS",
    "CHANGELOG", "CODEOWNERS", "BUILD", "WORKSPACE", "go.mod", "go.work",
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ContextError {
    #[error("the {list} glob {glob:?} is invalid: {message}")]
    InvalidGlob {
        list: &'static str,
        glob: String,
        message: String,
    },
    #[error("the project folder {path} cannot be read: {message}")]
    Root { path: String, message: String },
}

/// What to send. Globs are matched against `/`-separated paths relative to the root; `*` stays
/// within one directory (`*.rs` is top-level only), `**` crosses them (`**/*.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextOptions {
    /// Only files matching one of these are eligible; empty means every eligible file.
    pub include: Vec<String>,
    /// Files matching one of these are never sent (checked before `include`).
    pub exclude: Vec<String>,
    pub max_file_bytes: u64,
    /// Tokens of file content (as [`estimate_tokens`] counts them) that fit in the prompt.
    pub budget_tokens: usize,
    /// Relative paths packed first, in this order (mentioned in the prompt, recently edited).
    pub priority: Vec<String>,
    /// Only the `priority` files are read; every other file is listed by name.
    pub only_priority: bool,
    /// Tokens the names of the files not included may take; past it they become an outline
    /// of folders with file counts (see [`super::outline`]).
    pub listing_budget: usize,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            budget_tokens: usize::MAX,
            priority: Vec::new(),
            only_priority: false,
            listing_budget: usize::MAX,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// `/`-separated, relative to the root.
    pub path: String,
    pub bytes: u64,
    pub tokens: usize,
    pub content: Arc<str>,
}

/// Why a file is not eligible at all. Ignored, hidden and symlinked files, named pipes,
/// sockets and devices, and the always excluded directories, are not walked and so are not
/// reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SkipReason {
    TooLarge,
    LockFile,
    Binary,
    NotSourceExtension,
    ExcludedByGlob,
    NotIncludedByGlob,
    /// Could not be read, or its name is not clean UTF-8 without control characters.
    Unreadable,
    /// Walked as a file, but a named pipe, socket, device or link by the time it was opened:
    /// not read.
    NotRegularFile,
}

/// Why an eligible file is named in the prompt without its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ListedReason {
    OverBudget,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodebaseContext {
    /// Priority files first (in their order), then by path.
    pub included: Vec<ContextFile>,
    /// Eligible files that did not fit, in the order they were considered. A file whose size
    /// alone is over the budget is listed unread (so it could, rarely, be binary).
    pub listed_only: Vec<(String, ListedReason)>,
    /// Ineligible files, by path.
    pub skipped: Vec<(String, SkipReason)>,
    pub content_tokens: usize,
    /// The names of `listed_only` as sent: a list, or an outline by folder when the list is
    /// over the listing budget.
    pub listing: String,
    pub listing_tokens: usize,
}

/// Budgets at least this large read nearly every file: sizes are asked on the walker's threads.
const STAT_ALL_BUDGET: usize = 1_000_000;
/// After this many files in a row that did not fit, no more sizes are asked: what is left of
/// the budget is a crumb, and the rest is listed by name.
const STAT_MISSES: usize = 64;

/// Identity of a file version as `stat` sees it: (mtime, length, inode). The inode is there
/// because atomic writes (Tandem's own included) replace the file, so even a same-length edit
/// within one timestamp tick is seen. Only an in-place, same-length rewrite within one tick
/// (a few milliseconds; seconds on coarse file systems) can go unnoticed, as it does for git.
type Stamp = (SystemTime, u64, u64);

/// What a read found. Binary files are cached too, so they are not re-read every turn.
type Loaded = Result<(Arc<str>, usize), SkipReason>;

type Entries = HashMap<PathBuf, (Stamp, Loaded)>;

#[derive(Default)]
struct CacheState {
    entries: Entries,
    hits: u64,
    misses: u64,
}

/// Remembers file contents between collections. Shareable between threads; concurrent
/// collections take turns.
#[derive(Default)]
pub struct ContextCache {
    state: Mutex<CacheState>,
}

impl ContextCache {
    /// Walks the project and packs it into the budget. Only files that may fit are read:
    /// every other eligible file is listed from its size alone, so a huge project with a small
    /// budget costs a walk and a `stat` per file, and memory for what is sent.
    pub fn collect(
        &self,
        root: &Path,
        options: &ContextOptions,
    ) -> Result<CodebaseContext, ContextError> {
        let include = glob_set("include", &options.include)?;
        let exclude = glob_set("exclude", &options.exclude)?;
        let root = open_root(root)?;

        let filters = (&include, &exclude, options.max_file_bytes);
        // Sizes are asked (`stat`) on the walker's threads only when nearly everything will
        // be read anyway; otherwise one file at a time in packing order, and only while
        // something may still fit: the rest is listed by name without a `stat`.
        let sized = options.budget_tokens >= STAT_ALL_BUDGET;
        let walked = super::walk::parallel(&walker(&root), |item| {
            let entry = match item {
                Ok(entry) => entry,
                Err(err) => {
                    let rel = io_error_path(&err).and_then(|p| relative(&root, p))?;
                    return Some(Err((rel, SkipReason::Unreadable)));
                }
            };
            // Directories are walked into; symlinks are never followed (one to a file inside
            // is sent under its real name, one to outside must not leak); the rest (named
            // pipes, sockets, devices) is not text, and is never opened.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return None;
            }
            let Some(rel) = relative(&root, entry.path()) else {
                let lossy = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                let shown = lossy.to_string_lossy().escape_debug().to_string();
                return Some(Err((shown, SkipReason::Unreadable)));
            };
            if !sized {
                return Some(match check_name(&rel, filters.0, filters.1) {
                    Ok(()) => Ok(Candidate::by_name(rel, entry.into_path())),
                    Err(reason) => Err((rel, reason)),
                });
            }
            Some(candidate(rel, entry, filters))
        });
        let (mut candidates, mut skipped) = (Vec::new(), Vec::new());
        for found in walked {
            match found {
                Ok(found) => candidates.push(found),
                Err(skip) => skipped.push(skip),
            }
        }
        order(&mut candidates, &options.priority);

        let mut state = self.lock();
        // Entries move from `old` to the state as files are read again or listed; the rest
        // under this root is dropped.
        let mut old = std::mem::take(&mut state.entries);
        let mut remaining = options.budget_tokens;
        let mut included = Vec::new();
        let mut listed_only = Vec::new();
        // Earlier entries under this root not yet carried over: once none is left, files
        // listed by name need no lookup.
        let mut unclaimed = old.keys().filter(|path| path.starts_with(&root)).count();
        let mut misses = 0;
        let wanted: HashSet<&str> = match options.only_priority {
            true => options.priority.iter().map(String::as_str).collect(),
            false => HashSet::new(),
        };
        for mut found in candidates {
            // Candidates are in packing order: past the priority files nothing more is read.
            if options.only_priority && !wanted.contains(found.rel.as_str()) {
                remaining = 0;
            }
            if !sized
                && remaining > 0
                && misses < STAT_MISSES
                && let Err(reason) = found.stat(options.max_file_bytes)
            {
                skipped.push((found.rel, reason));
                continue;
            }
            // No text of `bytes` bytes estimates below a token per 4 bytes: a file whose
            // size alone is over the budget (or not known, as nothing more fits) is listed.
            if !found.statted || found.bytes.div_ceil(4) > remaining as u64 {
                misses += usize::from(found.statted);
                if unclaimed > 0 {
                    // Walked but not read this time: its entry stays as it was.
                    if let Some(entry) = old.remove(&found.abs) {
                        unclaimed -= 1;
                        state.entries.insert(found.abs, entry);
                    }
                }
                listed_only.push((found.rel, ListedReason::OverBudget));
                continue;
            }
            let before = old.len();
            let loaded = state.load(&mut old, &found, options.max_file_bytes);
            unclaimed -= before - old.len();
            match loaded {
                Ok((content, tokens)) if tokens <= remaining => {
                    remaining -= tokens;
                    misses = 0;
                    included.push(ContextFile {
                        path: found.rel,
                        bytes: content.len() as u64,
                        tokens,
                        content,
                    });
                }
                Ok(_) => {
                    misses += 1;
                    listed_only.push((found.rel, ListedReason::OverBudget));
                }
                Err(reason) => skipped.push((found.rel, reason)),
            }
        }
        // What is left under this root was deleted or is no longer walked.
        old.retain(|path, _| !path.starts_with(&root));
        state.entries.extend(old);
        drop(state);

        skipped.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = listed_only.iter().map(|(p, _)| p.as_str()).collect();
        let relevant: Vec<&str> = (options.priority.iter().map(String::as_str))
            .chain(included.iter().map(|f| f.path.as_str()))
            .collect();
        let listing = super::outline::outline(&names, &relevant, options.listing_budget);
        Ok(CodebaseContext {
            content_tokens: included.iter().map(|f| f.tokens).sum(),
            listing_tokens: estimate_tokens(&listing),
            listing,
            included,
            listed_only,
            skipped,
        })
    }

    pub fn hits(&self) -> u64 {
        self.lock().hits
    }

    pub fn misses(&self) -> u64 {
        self.lock().misses
    }

    fn lock(&self) -> MutexGuard<'_, CacheState> {
        // A panic mid-collection can only lose entries, never leave a wrong one, so a
        // poisoned cache is still a valid cache.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// An eligible-by-name file of the walk, with what `stat` says of it.
struct Candidate {
    rel: String,
    abs: PathBuf,
    bytes: u64,
    /// `None` without an mtime: versions cannot be told apart, so it is read every time.
    stamp: Option<Stamp>,
    /// Its size and stamp were asked for (a file known by name only has neither).
    statted: bool,
}

impl Candidate {
    /// A file known by name only (its size not asked yet).
    fn by_name(rel: String, abs: PathBuf) -> Self {
        Candidate {
            rel,
            abs,
            bytes: 0,
            stamp: None,
            statted: false,
        }
    }

    /// Asks the file's size and stamp; too large (or unreadable) is a skip reason.
    fn stat(&mut self, max_bytes: u64) -> Result<(), SkipReason> {
        let meta = fs::symlink_metadata(&self.abs).map_err(|_| SkipReason::Unreadable)?;
        if meta.len() > max_bytes {
            return Err(SkipReason::TooLarge);
        }
        self.bytes = meta.len();
        self.stamp = meta
            .modified()
            .ok()
            .map(|mtime| (mtime, meta.len(), super::platform::identity(&meta)));
        self.statted = true;
        Ok(())
    }
}

/// The checks a walked file passes without being read: its name, and its size.
fn candidate(
    rel: String,
    entry: ignore::DirEntry,
    (include, exclude, max_bytes): (&GlobSet, &GlobSet, u64),
) -> Result<Candidate, (String, SkipReason)> {
    if let Err(reason) = check_name(&rel, include, exclude) {
        return Err((rel, reason));
    }
    let Ok(meta) = entry.metadata() else {
        return Err((rel, SkipReason::Unreadable));
    };
    if meta.len() > max_bytes {
        return Err((rel, SkipReason::TooLarge));
    }
    let stamp = meta
        .modified()
        .ok()
        .map(|mtime| (mtime, meta.len(), super::platform::identity(&meta)));
    Ok(Candidate {
        rel,
        abs: entry.into_path(),
        bytes: meta.len(),
        stamp,
        statted: true,
    })
}

/// Priority files first (in their order), then the rest by path. Each file's rank is looked
/// up once, not on every comparison (a 15,000-file sort would hash paths half a million times).
fn order(candidates: &mut [Candidate], priority: &[String]) {
    if priority.is_empty() {
        candidates.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        return;
    }
    let mut rank = HashMap::new();
    for (i, raw) in priority.iter().enumerate() {
        if let Ok(path) = super::normalize_relative(raw) {
            rank.entry(path).or_insert(i);
        }
    }
    candidates.sort_by_cached_key(|c| {
        let rank = rank.get(&c.rel).copied().unwrap_or(usize::MAX);
        (rank, c.rel.clone())
    });
}

impl CacheState {
    /// The text of one candidate, from the previous collections' entries (`old`) when they
    /// hold this version, otherwise read from disk.
    fn load(&mut self, old: &mut Entries, found: &Candidate, max_bytes: u64) -> Loaded {
        let Some(stamp) = found.stamp else {
            self.misses += 1;
            return read_text(&found.abs, max_bytes);
        };
        let loaded = match old.remove(&found.abs) {
            Some((cached, loaded)) if cached == stamp => {
                self.hits += 1;
                loaded
            }
            _ => {
                self.misses += 1;
                read_text(&found.abs, max_bytes)
            }
        };
        // Unreadable or grown past the limit is transient or about to change: not kept.
        if matches!(loaded, Ok(_) | Err(SkipReason::Binary)) {
            self.entries
                .insert(found.abs.clone(), (stamp, loaded.clone()));
        }
        loaded
    }
}

fn read_text(abs: &Path, max_bytes: u64) -> Loaded {
    // The walk only keeps regular files, but a named pipe put in one's place since would block
    // the turn for ever: only a regular file is opened.
    let file = match super::open_regular(abs) {
        Ok(opened) => opened.file,
        Err(super::OpenError::NotRegular(_)) => return Err(SkipReason::NotRegularFile),
        Err(super::OpenError::Io(_)) => return Err(SkipReason::Unreadable),
    };
    let mut bytes = Vec::new();
    // The size was checked from metadata, but the file may have grown since: never read more
    // than the limit allows.
    let read = file
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes);
    if read.is_err() {
        return Err(SkipReason::Unreadable);
    }
    if bytes.len() as u64 > max_bytes {
        return Err(SkipReason::TooLarge);
    }
    if bytes.contains(&0) {
        return Err(SkipReason::Binary);
    }
    let text = String::from_utf8(bytes).map_err(|_| SkipReason::Binary)?;
    let tokens = estimate_tokens(&text);
    Ok((Arc::from(text), tokens))
}

fn open_root(root: &Path) -> Result<PathBuf, ContextError> {
    let error = |message: String| ContextError::Root {
        path: root.display().to_string(),
        message,
    };
    let canonical = super::paths::root_path(root).map_err(|e| error(e.to_string()))?;
    // Reading it once up front turns "cannot list the root" into an error, not an empty result.
    fs::read_dir(&canonical).map_err(|e| error(e.to_string()))?;
    Ok(canonical)
}

pub(super) fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(true)
        // A plain folder (not yet a git repository) still has its .gitignore honoured.
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let name = entry.file_name().to_str().unwrap_or_default();
            !(is_dir && entry.depth() > 0 && ALWAYS_EXCLUDED_DIRS.contains(&name))
        });
    builder
}

/// The path of an I/O failure while walking (an unreadable directory), if it names one.
fn io_error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, err } if matches!(**err, ignore::Error::Io(_)) => {
            Some(path)
        }
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => io_error_path(err),
        _ => None,
    }
}

/// The `/`-separated relative name, or `None` when it cannot be written cleanly (not UTF-8, or
/// with control characters that could break the prompt's layout).
fn relative(root: &Path, abs: &Path) -> Option<String> {
    // The walker joins plain names onto the root, so on Unix the tail is already `/`-separated.
    let rel = abs.strip_prefix(root).ok()?.to_str()?;
    (!rel.is_empty() && !rel.chars().any(char::is_control)).then(|| rel.to_string())
}

fn glob_set(list: &'static str, globs: &[String]) -> Result<GlobSet, ContextError> {
    let invalid = |glob: &str, err: globset::Error| ContextError::InvalidGlob {
        list,
        glob: glob.to_string(),
        message: err.kind().to_string(),
    };
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        // Globs are always relative to the root, so a leading `/` or `./` only anchors there.
        let pattern = glob
            .strip_prefix("./")
            .or(glob.strip_prefix('/'))
            .unwrap_or(glob);
        let compiled = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| invalid(glob, e))?;
        builder.add(compiled);
    }
    builder.build().map_err(|e| invalid(&globs.join(", "), e))
}

/// The checks that need only the name, cheapest first. User globs win over the built-in
/// rules so that the reason shown is the one the user can act on.
fn check_name(rel: &str, include: &GlobSet, exclude: &GlobSet) -> Result<(), SkipReason> {
    if exclude.is_match(rel) {
        return Err(SkipReason::ExcludedByGlob);
    }
    if !include.is_empty() && !include.is_match(rel) {
        return Err(SkipReason::NotIncludedByGlob);
    }
    let name = file_name(rel);
    let extension = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    if LOCK_FILES.contains(&name) || extension == "lock" || extension == "lockb" {
        return Err(SkipReason::LockFile);
    }
    let known_name = SOURCE_NAMES.contains(&name)
        || name.starts_with("Dockerfile.")
        || name.starts_with("Containerfile.");
    if known_name || SOURCE_EXTENSIONS.contains(&extension.as_str()) {
        Ok(())
    } else {
        Err(SkipReason::NotSourceExtension)
    }
}

/// The prompt text: each included file as its path then a fenced block, then the paths of the
/// files left out. Empty when there is nothing.
pub fn render(context: &CodebaseContext) -> String {
    let mut out = String::new();
    for file in &context.included {
        let fence = code_fence(&file.content);
        let lang = match file_name(&file.path).rsplit_once('.') {
            Some((_, ext)) if ext.chars().all(|c| c.is_ascii_alphanumeric()) => ext,
            _ => "",
        };
        out.push_str(&format!("{}\n{fence}{lang}\n{}", file.path, file.content));
        if !file.content.is_empty() && !file.content.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("{fence}\n\n"));
    }
    out.push_str(&context.listing);
    if out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// A Markdown code fence for `text`: one backtick more than the longest run inside (at least
/// three), so the content cannot close it.
pub fn code_fence(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The candidates the prompt mentions, in order of first mention: by full path (optionally
/// written `./path`), or by bare file name (`main.rs`) when exactly one candidate has that
/// name. Bare names must have an extension or be a well-known name such as `Makefile`, so
/// ordinary words do not match extensionless files.
pub fn mentioned_paths(prompt: &str, candidates: &[String]) -> Vec<String> {
    let mut name_counts: HashMap<&str, usize> = HashMap::new();
    for path in candidates {
        *name_counts.entry(file_name(path)).or_default() += 1;
    }
    let mut found: Vec<(usize, &String)> = Vec::new();
    let mut done = HashSet::new();
    for path in candidates {
        if path.is_empty() || !done.insert(path.as_str()) {
            continue;
        }
        let name = file_name(path);
        let by_name = name != path
            && name_counts.get(name) == Some(&1)
            && (name.rfind('.').is_some_and(|i| i > 0) || SOURCE_NAMES.contains(&name));
        let by_path = first_mention(prompt, path, true);
        let by_name = by_name
            .then(|| first_mention(prompt, name, false))
            .flatten();
        if let Some(at) = by_path.into_iter().chain(by_name).min() {
            found.push((at, path));
        }
    }
    found.sort_by_key(|&(at, _)| at);
    found.into_iter().map(|(_, path)| path.clone()).collect()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '\\')
}

/// The first occurrence of `needle` in `prompt` that stands alone: not part of a longer name
/// or path. A trailing `.` is sentence punctuation unless a name continues after it.
fn first_mention(prompt: &str, needle: &str, allow_dot_slash: bool) -> Option<usize> {
    prompt.match_indices(needle).map(|(at, _)| at).find(|&at| {
        let before = &prompt[..at];
        let starts_clean = match before.strip_suffix("./") {
            Some(rest) if allow_dot_slash => !rest.chars().next_back().is_some_and(is_path_char),
            _ => !before.chars().next_back().is_some_and(is_path_char),
        };
        let mut after = prompt[at + needle.len()..].chars();
        let ends_clean = match after.next() {
            None => true,
            Some('.') => !after
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_'),
            Some(c) => !is_path_char(c),
        };
        starts_clean && ends_clean
    })
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
