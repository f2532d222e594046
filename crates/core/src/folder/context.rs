//! Which project files go into the model's prompt. [`ContextCache::collect`] walks the project
//! ([`Walk`]: `.gitignore` and friends honoured, which files are eligible) and packs the
//! eligible files into a token budget ([`ContextCache::pack`], as often as needed for one walk);
//! [`render`] turns the result into prompt text.
//!
//! File contents are cached by `(mtime, length, inode)`, so collecting again before every chat
//! turn costs one `stat` per file, not one read.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

mod walk;

use crate::tokens::estimate as estimate_tokens;
use walk::SOURCE_NAMES;
pub(super) use walk::walker;
pub use walk::{Walk, never_walked_folder};

/// Files larger than this are skipped by default: they are almost always generated or data.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

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

/// Makes the map of a file from its path and text: its definitions with their line numbers,
/// sent instead of the whole file when that does not fit (empty when the file has none).
pub type Mapper = fn(&str, &str) -> String;

/// The share of the budget kept for maps when some priority files may be sent as one: a
/// sixteenth is half a dozen maps of a 32k window's codebase. Measured on the recall bench
/// (five real repositories, 125 commits, micro recall at 8k / 32k / 128k): a quarter 16.6 /
/// 35.2 / 65.7, an eighth 18.0 / 37.6 / 68.6 (only whole files count as found; a map points
/// the model to the file); later, on 21 repositories at 32k, a sixteenth 42.2 against 41.8
/// for an eighth, and 43.7 against 43.0 with how often files changed counted (see
/// [`crate::index::rank`]). Past the share a map waits for the room the whole files ranked
/// below it leave: on 29 repositories at 32k, 48.0 → 48.5 against maps that took it first.
const MAP_SHARE: usize = 16;

/// What to send. Globs are matched against `/`-separated paths relative to the root; `*` stays
/// within one directory (`*.rs` is top-level only), `**` crosses them (`**/*.rs`).
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// Only files matching one of these are eligible; empty means every eligible file.
    pub include: Vec<String>,
    /// Files matching one of these are never sent (checked before `include`).
    pub exclude: Vec<String>,
    pub max_file_bytes: u64,
    /// Tokens of the files as sent (their content as [`estimate_tokens`] counts it, and each
    /// one's header: path and fences) that fit in the prompt.
    pub budget_tokens: usize,
    /// Relative paths packed first, in this order (mentioned in the prompt, recently edited),
    /// each with why.
    pub priority: Vec<Priority>,
    /// Only the `priority` files are read; every other file is listed by name.
    pub only_priority: bool,
    /// Tokens the names of the files not included may take; past it they become an outline
    /// of folders with file counts (see [`super::outline`]).
    pub listing_budget: usize,
    /// Makes the maps of the priority files that may go as one ([`Priority::map`]).
    pub mapper: Option<Mapper>,
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
            mapper: None,
        }
    }
}

/// A file packed before the others, and why it was chosen (shown to the person).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priority {
    /// Relative to the root.
    pub path: String,
    pub why: String,
    /// When the whole file does not fit, its map may go instead (see [`Mapper`]).
    pub map: bool,
    /// Its map as already known (the code index keeps every file's definitions): then the
    /// mapper is not asked.
    pub known_map: Option<Arc<str>>,
}

impl Priority {
    pub fn new(path: impl Into<String>, why: impl Into<String>) -> Self {
        Priority {
            path: path.into(),
            why: why.into(),
            map: false,
            known_map: None,
        }
    }

    /// As [`Self::new`], sent as its map when it does not fit whole.
    pub fn or_map(path: impl Into<String>, why: impl Into<String>) -> Self {
        Priority {
            map: true,
            ..Priority::new(path, why)
        }
    }
}

impl From<&str> for Priority {
    fn from(path: &str) -> Self {
        Priority::new(path, PRIORITY_WHY)
    }
}

impl From<String> for Priority {
    fn from(path: String) -> Self {
        Priority::new(path, PRIORITY_WHY)
    }
}

/// Why a priority file given without a reason was packed.
const PRIORITY_WHY: &str = "asked for first";

/// Why a file that no signal chose was packed: it came next in path order with room left.
pub const ROOM_LEFT_WHY: &str = "room left (path order)";

/// How a file is sent: its whole text, or its map (definitions with line numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PackedAs {
    Whole,
    Map,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// `/`-separated, relative to the root.
    pub path: String,
    pub bytes: u64,
    pub tokens: usize,
    pub content: Arc<str>,
    pub packed_as: PackedAs,
    /// Why it was chosen, in a few words.
    pub why: Arc<str>,
}

/// Why a file is not eligible at all. Ignored and symlinked files, hidden ones other than the
/// project's configuration, named pipes, sockets and devices, and the always excluded
/// directories, are not walked and so are not reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SkipReason {
    TooLarge,
    LockFile,
    /// Its name looks like it holds a secret (a key, an env file, credentials): never sent,
    /// whatever its extension (see [`crate::folder::looks_secret`]).
    LooksSecret,
    /// Its content holds a private key or an access token of a known format: never sent,
    /// whatever its name (see [`crate::folder::holds_secret`]).
    HoldsSecret,
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
    /// alone is over the budget is listed unread (so it could, rarely, be binary). The names
    /// are shared with the walk's.
    pub listed_only: Vec<(Arc<str>, ListedReason)>,
    /// Ineligible files, by path.
    pub skipped: Vec<(String, SkipReason)>,
    pub content_tokens: usize,
    /// What the included files' headers (path, fences) take besides their content: counted
    /// in the budget with each file, so that thousands of tiny files do not overrun it.
    pub header_tokens: usize,
    /// The names of `listed_only` as sent: a list, or an outline by folder when the list is
    /// over the listing budget.
    pub listing: String,
    pub listing_tokens: usize,
}

/// After this many files in a row that did not fit, no more sizes are asked: what is left of
/// the budget is a crumb, and the rest is listed by name.
const STAT_MISSES: usize = 64;

/// Identity of a file version as `stat` sees it (see [`super::FileStamp`]). The inode is
/// there because atomic writes (Tandem's own included) replace the file, so even a
/// same-length edit within one timestamp tick is seen. Only an in-place, same-length rewrite
/// within one tick (a few milliseconds; seconds on coarse file systems) can go unnoticed, as it
/// does for git.
pub(super) type Stamp = super::FileStamp;

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
    /// Walks the project and packs it into the budget (see [`Self::pack`]).
    pub fn collect(
        &self,
        root: &Path,
        options: &ContextOptions,
    ) -> Result<CodebaseContext, ContextError> {
        let walk = Walk::new(root, options)?;
        self.pack(&walk, options)
    }

    /// Packs the files of `walk` into the budget. Only files that may fit are read: every
    /// other eligible file is listed from its size alone, so a huge project with a small
    /// budget costs a walk and a `stat` per file, and memory for what is sent. One walk can
    /// be packed many times (a prompt fitted to its window tries several budgets); options
    /// whose globs or size limit are not the walk's walk again.
    pub fn pack(
        &self,
        walk: &Walk,
        options: &ContextOptions,
    ) -> Result<CodebaseContext, ContextError> {
        if !walk.walked_for(options) {
            return self.collect(&walk.root, options);
        }
        let root = &walk.root;
        let mut skipped = walk.skipped.clone();
        let mut state = self.lock();
        // Entries move from `old` to the state as files are read again or listed; the rest
        // under this root is dropped.
        let mut old = std::mem::take(&mut state.entries);
        let mapper = options
            .mapper
            .filter(|_| options.priority.iter().any(|p| p.map));
        // Maps have a share of their own; past it they wait for what the whole files leave
        // (`waiting`: where each would go in `included`, and the map).
        let mut map_room = match mapper {
            Some(_) => options.budget_tokens / MAP_SHARE,
            None => 0,
        };
        let mut remaining = options.budget_tokens - map_room;
        let mut included = Vec::new();
        let mut listed_only = Vec::new();
        // Earlier entries under this root not yet carried over: once none is left, files
        // listed by name need no lookup.
        let mut unclaimed = old.keys().filter(|path| path.starts_with(root)).count();
        let mut misses = 0;
        let mut headers = 0;
        let mut waiting: Vec<(usize, ContextFile)> = Vec::new();
        let wanted: HashSet<&str> = match options.only_priority {
            true => options.priority.iter().map(|p| p.path.as_str()).collect(),
            false => HashSet::new(),
        };
        let room_left: Arc<str> = Arc::from(ROOM_LEFT_WHY);
        for (found, chosen) in walk.in_order(&options.priority) {
            // Past the ranked files, the maps that waited go before the files that only fill
            // the room left.
            if chosen.is_none() && !waiting.is_empty() {
                let room = (&mut remaining, &mut map_room, &mut headers);
                place_waiting(&mut waiting, &mut included, &mut listed_only, room);
            }
            // Candidates are in packing order: past the priority files nothing more is read.
            if options.only_priority && !wanted.contains(&*found.rel) {
                remaining = 0;
                map_room = 0;
            }
            let mapper =
                mapper.filter(|_| chosen.is_some_and(|c| c.map) && remaining + map_room > 0);
            // A file's size is looked at only while something may fit, and until
            // STAT_MISSES files were too big; after that the rest is listed. Whether the walk
            // asked the sizes already or not, the same files are packed.
            let mut seen = None;
            let may_fit = remaining > 0 || mapper.is_some();
            if may_fit && misses < STAT_MISSES {
                let asked = match found.seen {
                    Some(known) if known.bytes > options.max_file_bytes => {
                        Err(SkipReason::TooLarge)
                    }
                    Some(known) => Ok(known),
                    None => found.stat(root, options.max_file_bytes),
                };
                match asked {
                    Ok(now) => seen = Some(now),
                    Err(reason) => {
                        skipped.push((found.rel.to_string(), reason));
                        continue;
                    }
                }
            }
            // No text of `bytes` bytes estimates below a token per 4 bytes: a file whose
            // size alone is over the budget (or not known, as nothing more fits) is listed,
            // unless its map may go instead.
            let fits = seen.filter(|s| {
                let header = || header_tokens(&found.rel, false) as u64;
                mapper.is_some() || s.bytes.div_ceil(4) + header() <= remaining as u64
            });
            let Some(seen) = fits else {
                misses += usize::from(seen.is_some());
                if unclaimed > 0 {
                    // Walked but not read this time: its entry stays as it was.
                    if let Some((path, entry)) = old.remove_entry(&found.abs(root)) {
                        unclaimed -= 1;
                        state.entries.insert(path, entry);
                    }
                }
                listed_only.push((Arc::clone(&found.rel), ListedReason::OverBudget));
                continue;
            };
            let before = old.len();
            let abs = found.abs(root);
            let loaded = state.load(&mut old, &abs, seen.stamp, options.max_file_bytes);
            unclaimed -= before - old.len();
            let why =
                || chosen.map_or_else(|| Arc::clone(&room_left), |c| Arc::from(c.why.as_str()));
            let header = header_tokens(&found.rel, false);
            match loaded {
                // A file that fits goes whole, however much of the room it takes: the files
                // it leaves out rank below it. (A rule that sent a file as its map when whole
                // it would take over 45% of the budget, to leave the next ones room, was
                // measured on the recall bench's 21 repositories at 32k: 41.8% of the files
                // found with it, 42.7% without, and 51.7% against 53.7% on the mean of the
                // commits; without it requests and got lose 5 files, 11 others gain 18.)
                Ok((content, tokens)) if tokens + header <= remaining => {
                    remaining -= tokens + header;
                    headers += header;
                    misses = 0;
                    included.push(ContextFile {
                        path: found.rel.to_string(),
                        bytes: content.len() as u64,
                        tokens,
                        content,
                        packed_as: PackedAs::Whole,
                        why: why(),
                    });
                }
                Ok((content, _)) => {
                    let known = chosen.and_then(|c| c.known_map.as_deref());
                    let map = match (known, mapper) {
                        (Some(known), _) => known.to_string(),
                        (None, Some(make)) => make(&found.rel, &content),
                        (None, None) => String::new(),
                    };
                    // A map the index kept is the file's lines as they were when it was
                    // read: checked again, as the text now was (a key since removed must
                    // not go out from an older copy).
                    if super::holds_secret(&map) {
                        skipped.push((found.rel.to_string(), SkipReason::HoldsSecret));
                        continue;
                    }
                    let tokens = estimate_tokens(&map);
                    let header = header_tokens(&found.rel, true);
                    if map.is_empty() || tokens + header > remaining + map_room {
                        misses += 1;
                        listed_only.push((Arc::clone(&found.rel), ListedReason::OverBudget));
                        continue;
                    }
                    let file = ContextFile {
                        path: found.rel.to_string(),
                        bytes: map.len() as u64,
                        tokens,
                        content: Arc::from(map),
                        packed_as: PackedAs::Map,
                        why: why(),
                    };
                    // A map takes its share's room now; past it, the whole files ranked
                    // below it go first (a map points to a file, a whole file is it).
                    if tokens + header <= map_room {
                        map_room -= tokens + header;
                        headers += header;
                        included.push(file);
                    } else {
                        waiting.push((included.len(), file));
                    }
                }
                Err(reason) => skipped.push((found.rel.to_string(), reason)),
            }
        }
        let room = (&mut remaining, &mut map_room, &mut headers);
        place_waiting(&mut waiting, &mut included, &mut listed_only, room);
        // What is left under this root was deleted or is no longer walked.
        old.retain(|path, _| !path.starts_with(root));
        state.entries.extend(old);
        drop(state);

        skipped.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = listed_only.iter().map(|(p, _)| &**p).collect();
        let relevant: Vec<&str> = (options.priority.iter().map(|p| p.path.as_str()))
            .chain(included.iter().map(|f| f.path.as_str()))
            .collect();
        let listing = super::outline::outline(&names, &relevant, options.listing_budget);
        Ok(CodebaseContext {
            content_tokens: included.iter().map(|f| f.tokens).sum(),
            header_tokens: headers,
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

impl CacheState {
    /// The text of one file, from the previous collections' entries (`old`) when they hold
    /// this version, otherwise read from disk.
    fn load(
        &mut self,
        old: &mut Entries,
        abs: &Path,
        stamp: Option<Stamp>,
        max_bytes: u64,
    ) -> Loaded {
        let Some(stamp) = stamp else {
            self.misses += 1;
            return read_text(abs, max_bytes);
        };
        let (key, loaded) = match old.remove_entry(abs) {
            Some((key, (cached, loaded))) if cached == stamp => {
                self.hits += 1;
                (key, loaded)
            }
            _ => {
                self.misses += 1;
                (abs.to_path_buf(), read_text(abs, max_bytes))
            }
        };
        // Unreadable or grown past the limit is transient or about to change: not kept.
        let known = matches!(loaded, Err(SkipReason::Binary | SkipReason::HoldsSecret));
        if loaded.is_ok() || known {
            self.entries.insert(key, (stamp, loaded.clone()));
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
    if super::holds_secret(&text) {
        return Err(SkipReason::HoldsSecret);
    }
    let tokens = estimate_tokens(&text);
    Ok((Arc::from(text), tokens))
}

/// The tokens [`render`] spends on a file besides its content: its path, the fences (three
/// backticks; a longer fence, for content holding backticks, is rare) and the language tag.
fn header_tokens(path: &str, map: bool) -> usize {
    let header = match map {
        true => format!("{path} (not sent whole: its definitions, by line)\n```\n```\n\n"),
        false => {
            let lang = file_name(path).rsplit_once('.').map_or("", |(_, ext)| ext);
            format!("{path}\n```{lang}\n```\n\n")
        }
    };
    estimate_tokens(&header)
}

/// The maps that waited (where each would go in `included`, and the map) take what the whole
/// files left of `room` (whole files' room, maps' room, headers' tokens), in their order, each
/// in its place among the files; those that do not fit are listed.
fn place_waiting(
    waiting: &mut Vec<(usize, ContextFile)>,
    included: &mut Vec<ContextFile>,
    listed_only: &mut Vec<(Arc<str>, ListedReason)>,
    (remaining, map_room, headers): (&mut usize, &mut usize, &mut usize),
) {
    // Each map put in shifts the places after it by one.
    let mut placed = 0;
    for (at, file) in waiting.drain(..) {
        let header = header_tokens(&file.path, true);
        if file.tokens + header <= *remaining + *map_room {
            let from_share = (file.tokens + header).min(*map_room);
            *map_room -= from_share;
            *remaining -= file.tokens + header - from_share;
            *headers += header;
            included.insert(at + placed, file);
            placed += 1;
        } else {
            listed_only.push((Arc::from(file.path.as_str()), ListedReason::OverBudget));
        }
    }
}

/// The prompt text: each included file as its path then a fenced block, then the paths of the
/// files left out. Empty when there is nothing.
pub fn render(context: &CodebaseContext) -> String {
    let mut out = String::new();
    for file in &context.included {
        let fence = code_fence(&file.content);
        if file.packed_as == PackedAs::Map {
            out.push_str(&format!(
                "{} (not sent whole: its definitions, by line)\n{fence}\n{}",
                file.path, file.content
            ));
            if !file.content.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("{fence}\n\n"));
            continue;
        }
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
pub fn mentioned_paths(prompt: &str, candidates: &[impl AsRef<str>]) -> Vec<String> {
    // A path ends with its file's name, so only files whose name the prompt contains can be
    // mentioned either way: a short prompt rules out nearly all of a big project at once.
    let named: Vec<&str> = candidates
        .iter()
        .map(AsRef::as_ref)
        .filter(|path| !path.is_empty() && prompt.contains(file_name(path)))
        .collect();
    if named.is_empty() {
        return Vec::new();
    }
    let names: HashSet<&str> = named.iter().map(|path| file_name(path)).collect();
    let mut name_counts: HashMap<&str, usize> = HashMap::new();
    for name in candidates.iter().map(|path| file_name(path.as_ref())) {
        if names.contains(name) {
            *name_counts.entry(name).or_default() += 1;
        }
    }
    let mut found: Vec<(usize, &str)> = Vec::new();
    let mut done = HashSet::new();
    for path in named {
        if !done.insert(path) {
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
    found
        .into_iter()
        .map(|(_, path)| path.to_string())
        .collect()
}

pub(super) fn file_name(path: &str) -> &str {
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
mod tests;
