//! Syntax highlighting (syntect) turned into egui [`LayoutJob`]s, with a cache that makes an
//! unchanged buffer free and an edited one cheap.
//!
//! - [`Highlighter`] holds syntect's bundled syntaxes and themes. Loading them costs ~10–50 ms
//!   (more in debug builds), so [`HighlightCache::default`] is free and starts the load on a
//!   background thread the first time it is used; until it arrives everything is plain text.
//! - Per open file ([`HighlightCache::sync`]) the cache keeps a copy of the text, the line start
//!   offsets, the colour spans of every line highlighted so far (the *frontier*) and the parser
//!   state at checkpoints every [`CHECKPOINT_EVERY`] lines. The same revision costs nothing.
//! - A new revision is diffed against the copy (common prefix and suffix): spans before the edit
//!   are kept, highlighting resumes at the checkpoint before the edit, and the old lines after the
//!   edit are parked as a *tail*. When the re-highlighting reaches a parked checkpoint with an
//!   identical parser state, the rest of the tail is reused as is, so typing costs at most about
//!   two checkpoint intervals of highlighting, whatever the file size.
//! - [`HighlightCache::advance`] highlights lazily, only up to the line the view needs and within
//!   a time budget; lines past the frontier show plain until a later frame reaches them.
//! - Lines longer than [`LONG_LINE`] bytes are shown plain and skipped by the parser (a minified
//!   line would stall the regex engine); files without a known syntax are plain.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::ops::Range;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use egui::text::{Galley, LayoutJob, TextFormat};
use egui::{Color32, FontId};
use syntect::highlighting::{HighlightState, Theme, ThemeSet};
use syntect::parsing::{ParseState, SyntaxSet};

/// Parser state is saved every this many lines.
pub const CHECKPOINT_EVERY: usize = 128;
/// Lines longer than this (in bytes) are shown plain.
pub const LONG_LINE: usize = 2_000;
/// Snippets kept by [`HighlightCache::code_job`] before the cache is emptied.
const SNIPPET_CACHE: usize = 256;

/// syntect's bundled syntaxes and the two themes the app uses.
pub struct Highlighter {
    syntaxes: SyntaxSet,
    dark: Theme,
    light: Theme,
}

impl Highlighter {
    /// Loads the bundled syntaxes and themes: ~10–50 ms, so never on the UI thread during a
    /// frame (the cache loads it on a background thread).
    pub fn new() -> Highlighter {
        let mut themes = ThemeSet::load_defaults().themes;
        Highlighter {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            dark: themes.remove("base16-ocean.dark").unwrap_or_default(),
            light: themes.remove("InspiredGitHub").unwrap_or_default(),
        }
    }

    /// The syntax for a path (`src/main.rs`, `Makefile`) or a code-fence token (`rust`, `py`).
    fn syntax_index(&self, path_or_ext: &str) -> Option<usize> {
        let name = path_or_ext
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(path_or_ext);
        let ext = name.rsplit_once('.').map_or(name, |(_, ext)| ext);
        let set = &self.syntaxes;
        let found = set
            .find_syntax_by_extension(ext)
            .or_else(|| set.find_syntax_by_extension(name))
            .or_else(|| set.find_syntax_by_token(name))?;
        if found.name == "Plain Text" {
            return None;
        }
        set.syntaxes().iter().position(|s| std::ptr::eq(s, found))
    }

    fn theme(&self, dark: bool) -> &Theme {
        if dark { &self.dark } else { &self.light }
    }
}

impl Default for Highlighter {
    /// Same cost as [`Highlighter::new`].
    fn default() -> Self {
        Highlighter::new()
    }
}

/// One coloured run of a line, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Hash)]
struct Span {
    len: u32,
    color: Color32,
    italic: bool,
    underline: bool,
}

type State = (ParseState, HighlightState);

/// The old lines after an edit, renumbered to the new text, waiting to be reused.
struct Tail {
    first: usize,
    spans: Vec<Vec<Span>>,
    checkpoints: Vec<(usize, State)>,
    /// The state at the end of `spans` (the old frontier).
    end_state: State,
}

struct Doc {
    revision: u64,
    dark: bool,
    /// Made after the highlighter loaded (else it is plain and is replaced once it has).
    ready: bool,
    syntax: Option<usize>,
    text: String,
    line_starts: Vec<usize>,
    longest_line: usize,
    spans: Vec<Vec<Span>>,
    /// (line, state at the start of that line), sorted by line.
    checkpoints: Vec<(usize, State)>,
    /// The state at the start of line `spans.len()`.
    state: Option<State>,
    tail: Option<Tail>,
    find: Option<(String, Vec<Range<usize>>)>,
    /// The small-file editor's galley by key, the line galleys it was stacked from by content,
    /// and the font atlas fill ratio they were laid out at.
    galley: Option<(u64, Arc<Galley>)>,
    line_galleys: HashMap<u64, Arc<Galley>, BuildHasherDefault<QuickHasher>>,
    atlas_fill: f32,
}

/// Counters, so tests (and a debug overlay) can see how much work was done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HighlightStats {
    /// Lines run through the parser.
    pub lines_highlighted: u64,
    /// The line the most recent highlighting run started at.
    pub last_start: Option<usize>,
    /// Snippets highlighted by [`HighlightCache::code_job`] (cache misses).
    pub snippets_highlighted: u64,
}

enum Loader {
    Idle,
    Loading(mpsc::Receiver<Highlighter>),
    Ready(Box<Highlighter>),
    Failed,
}

/// Highlighted lines of open files and chat snippets. See the module docs.
pub struct HighlightCache {
    loader: Loader,
    /// Asked to repaint when the background load finishes.
    repaint: Arc<Mutex<Option<egui::Context>>>,
    docs: HashMap<String, Doc>,
    snippets: HashMap<u64, LayoutJob>,
    last_snippet: Option<(String, Doc)>,
    stats: HighlightStats,
}

impl Default for HighlightCache {
    /// Free: the highlighter is loaded in the background on first use.
    fn default() -> Self {
        HighlightCache {
            loader: Loader::Idle,
            repaint: Arc::default(),
            docs: HashMap::new(),
            snippets: HashMap::new(),
            last_snippet: None,
            stats: HighlightStats::default(),
        }
    }
}

impl HighlightCache {
    /// A cache with the highlighter already loaded (tests, or an app that loaded it itself).
    pub fn with_highlighter(highlighter: Highlighter) -> Self {
        HighlightCache {
            loader: Loader::Ready(Box::new(highlighter)),
            ..HighlightCache::default()
        }
    }

    pub fn stats(&self) -> HighlightStats {
        self.stats
    }

    /// Whether the highlighter has loaded (before that, everything is plain).
    pub fn is_ready(&mut self) -> bool {
        self.poll();
        matches!(self.loader, Loader::Ready(_))
    }

    /// Who to wake when the background load is done.
    pub fn set_repaint_context(&mut self, ctx: &egui::Context) {
        if let Ok(mut slot) = self.repaint.lock()
            && slot.is_none()
        {
            *slot = Some(ctx.clone());
        }
    }

    /// Starts the background load on first use; picks up its result once it is there.
    fn poll(&mut self) {
        match &self.loader {
            Loader::Idle => {
                let (send, receive) = mpsc::channel();
                let repaint = Arc::clone(&self.repaint);
                let spawned = std::thread::Builder::new()
                    .name("syntect-load".into())
                    .spawn(move || {
                        let _ = send.send(Highlighter::new());
                        if let Ok(Some(ctx)) = repaint.lock().as_deref() {
                            ctx.request_repaint();
                        }
                    });
                self.loader = match spawned {
                    Ok(_) => Loader::Loading(receive),
                    Err(_) => Loader::Failed,
                };
            }
            Loader::Loading(receive) => match receive.try_recv() {
                Ok(highlighter) => self.loader = Loader::Ready(Box::new(highlighter)),
                Err(mpsc::TryRecvError::Empty) => {}
                Err(mpsc::TryRecvError::Disconnected) => self.loader = Loader::Failed,
            },
            Loader::Ready(_) | Loader::Failed => {}
        }
    }

    fn highlighter(&self) -> Option<&Highlighter> {
        match &self.loader {
            Loader::Ready(h) => Some(h),
            _ => None,
        }
    }

    /// A highlighted snippet (chat code blocks), cached by content. `path_or_ext` is a path or
    /// a fence token (`rs`, `rust`); unknown or empty is plain.
    pub fn code_job(
        &mut self,
        path_or_ext: &str,
        code: &str,
        dark: bool,
        font_size: f32,
    ) -> LayoutJob {
        self.poll();
        let mut hasher = DefaultHasher::new();
        (path_or_ext, code, dark, font_size.to_bits()).hash(&mut hasher);
        let key = hasher.finish();
        if let Some(job) = self.snippets.get(&key) {
            return job.clone();
        }
        let base = TextFormat::simple(FontId::monospace(font_size), plain_color(dark));
        let mut job = LayoutJob::default();
        let Loader::Ready(h) = &self.loader else {
            // Not loaded yet: plain, and not cached, so it is coloured once the load is done.
            job.append(code, 0.0, base);
            return job;
        };
        let syntax = h.syntax_index(path_or_ext);
        // A block being streamed grows at the end: continue its last document instead of
        // starting over, so each delta only highlights the new lines.
        let mut doc = match self.last_snippet.take() {
            Some((lang, mut doc))
                if lang == path_or_ext
                    && doc.dark == dark
                    && doc.syntax == syntax
                    && code.starts_with(doc.text.as_str()) =>
            {
                doc.edit(doc.revision + 1, code);
                doc
            }
            _ => Doc::new(0, dark, syntax, code),
        };
        doc.advance(h, usize::MAX, None, &mut self.stats);
        for line in 0..doc.line_count() {
            if line > 0 {
                job.append("\n", 0.0, base.clone());
            }
            doc.push_line(&mut job, line, &base, &[]);
        }
        self.last_snippet = Some((path_or_ext.to_string(), doc));
        self.stats.snippets_highlighted += 1;
        if self.snippets.len() >= SNIPPET_CACHE {
            self.snippets.clear();
        }
        self.snippets.insert(key, job.clone());
        job
    }

    /// Makes the cache current for `path` at `revision`. O(1) when nothing changed; otherwise
    /// O(file size) to diff, then highlighting resumes from the checkpoint before the edit.
    pub fn sync(&mut self, path: &str, revision: u64, text: &str, dark: bool) {
        self.poll();
        let ready = self.highlighter().is_some();
        if let Some(doc) = self.docs.get_mut(path)
            && (doc.dark, doc.ready) == (dark, ready)
        {
            if doc.revision != revision {
                doc.edit(revision, text);
            }
            return;
        }
        let syntax = self.highlighter().and_then(|h| h.syntax_index(path));
        let mut doc = Doc::new(revision, dark, syntax, text);
        doc.ready = ready;
        self.docs.insert(path.to_string(), doc);
    }

    /// Highlights `path` up to line `upto` (exclusive), stopping at `deadline`. Returns whether
    /// those lines are done (a plain file always is).
    pub fn advance(&mut self, path: &str, upto: usize, deadline: Option<Instant>) -> bool {
        let (Some(doc), Loader::Ready(h)) = (self.docs.get_mut(path), &self.loader) else {
            // Nothing to colour until the highlighter has loaded.
            return !matches!(self.loader, Loader::Idle | Loader::Loading(_));
        };
        doc.advance(h, upto, deadline, &mut self.stats)
    }

    /// Drops files no longer open.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.docs.retain(|path, _| keep(path));
    }

    pub fn line_count(&self, path: &str) -> usize {
        self.docs.get(path).map_or(0, Doc::line_count)
    }

    /// The longest line, in bytes (sizes the horizontal scroll range).
    pub fn longest_line(&self, path: &str) -> usize {
        self.docs.get(path).map_or(0, |d| d.longest_line)
    }

    /// Byte range of a line, without its newline.
    pub fn line_range(&self, path: &str, line: usize) -> Option<Range<usize>> {
        self.docs.get(path)?.line_range(line)
    }

    /// The line holding byte `offset`.
    pub fn line_of(&self, path: &str, offset: usize) -> usize {
        self.docs.get(path).map_or(0, |d| d.line_of(offset))
    }

    /// Byte ranges of `query` in the synced text: case-insensitive unless the query has
    /// capitals. Cached until the revision or the query changes.
    pub fn find(&mut self, path: &str, query: &str) -> &[Range<usize>] {
        let Some(doc) = self.docs.get_mut(path) else {
            return &[];
        };
        if doc.find.as_ref().is_none_or(|(q, _)| q != query) {
            doc.find = Some((query.to_string(), find_all(&doc.text, query)));
        }
        doc.find.as_ref().map_or(&[], |(_, m)| m.as_slice())
    }

    /// One line as a job, with find matches behind it.
    pub fn line_job(
        &self,
        path: &str,
        line: usize,
        base: &TextFormat,
        marks: Option<&FindMarks<'_>>,
    ) -> LayoutJob {
        let mut job = LayoutJob::default();
        if let Some(doc) = self.docs.get(path) {
            let range = doc.line_range(line).unwrap_or(0..0);
            doc.push_line(&mut job, line, base, &doc.marks_in(&range, marks));
        }
        job
    }

    /// The whole synced text as one galley, for the small-file editor. Each line is laid out
    /// on its own (by `layout`) and kept by content; the lines are stacked with
    /// `Galley::concat`. So an edit lays out only the lines whose text, colours or marks
    /// changed, and an unchanged frame returns the previous galley at no cost.
    ///
    /// `atlas_fill` is the font atlas fill ratio: egui empties a full atlas, which invalidates
    /// every kept galley, and a drop in the ratio is how that shows.
    pub fn document_galley(
        &mut self,
        path: &str,
        base: &TextFormat,
        marks: Option<FindMarks<'_>>,
        (pixels_per_point, atlas_fill): (f32, f32),
        layout: &mut dyn FnMut(LayoutJob) -> Arc<Galley>,
    ) -> Arc<Galley> {
        let Some(doc) = self.docs.get_mut(path) else {
            return layout(LayoutJob::default());
        };
        if doc.atlas_fill > atlas_fill {
            doc.line_galleys.clear();
            doc.galley = None;
        }
        doc.atlas_fill = atlas_fill;
        let ppp = pixels_per_point.to_bits();
        let base_key = hash_of(&(base, ppp));
        let key = hash_of(&(doc.revision, doc.spans.len(), base_key, marks));
        if let Some((k, galley)) = &doc.galley
            && *k == key
        {
            return Arc::clone(galley);
        }
        let mut kept = std::mem::take(&mut doc.line_galleys);
        let mut galleys = Vec::with_capacity(doc.line_count());
        for line in 0..doc.line_count() {
            let range = doc.line_range(line).unwrap_or(0..0);
            let line_marks = doc.marks_in(&range, marks.as_ref());
            let spans = doc.spans.get(line).map_or(&[][..], Vec::as_slice);
            let key = hash_of(&(&doc.text[range.clone()], spans, &line_marks, base_key));
            let reused = kept
                .remove(&key)
                .or_else(|| doc.line_galleys.get(&key).cloned());
            // A hash collision must never show another line's text.
            let galley = match reused.filter(|g| g.text() == &doc.text[range.clone()]) {
                Some(galley) => galley,
                None => {
                    // Trailing spaces take room, or the cursor could not sit after them.
                    let mut job = LayoutJob {
                        keep_trailing_whitespace: true,
                        ..LayoutJob::default()
                    };
                    doc.push_line(&mut job, line, base, &line_marks);
                    layout(job)
                }
            };
            doc.line_galleys.insert(key, Arc::clone(&galley));
            galleys.push(galley);
        }
        let mut job = LayoutJob::single_section(doc.text.clone(), base.clone());
        job.keep_trailing_whitespace = true;
        let galley = Arc::new(Galley::concat(Arc::new(job), &galleys, pixels_per_point));
        doc.galley = Some((key, Arc::clone(&galley)));
        galley
    }
}

/// Keys for the line galleys: every line of a file is hashed on each edit, so this uses
/// [`QuickHasher`] rather than the (DoS-resistant, slower) default.
fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = QuickHasher::default();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A small multiply-rotate hasher (the Fx scheme): a few cycles per 8 bytes. Only for keys
/// of our own data, where collisions cannot be forced by an attacker.
#[derive(Default)]
struct QuickHasher(u64);

impl Hasher for QuickHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u8(&mut self, value: u8) {
        self.write_u64(value.into());
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(value.into());
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Find matches to paint behind the text; `query` must have been passed to
/// [`HighlightCache::find`] for the current revision.
#[derive(Debug, Clone, Copy, Hash)]
pub struct FindMarks<'a> {
    pub query: &'a str,
    /// Index of the current match, painted in `current_color`.
    pub current: usize,
    pub color: Color32,
    pub current_color: Color32,
}

fn plain_color(dark: bool) -> Color32 {
    if dark {
        Color32::from_gray(210)
    } else {
        Color32::from_gray(40)
    }
}

/// Every occurrence of `query` (smart case: case-insensitive unless it has capitals).
fn find_all(text: &str, query: &str) -> Vec<Range<usize>> {
    if query.is_empty() {
        return Vec::new();
    }
    let matches = |hay: &str, needle: &str| -> Vec<Range<usize>> {
        hay.match_indices(needle)
            .map(|(i, m)| i..i + m.len())
            .take(100_000)
            .collect()
    };
    if query.chars().any(char::is_uppercase) {
        matches(text, query)
    } else {
        // ASCII lowering keeps byte offsets (and char boundaries) identical.
        matches(&text.to_ascii_lowercase(), &query.to_ascii_lowercase())
    }
}

fn line_starts(text: &str) -> (Vec<usize>, usize) {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let longest = starts
        .windows(2)
        .map(|w| w[1] - w[0])
        .chain([text.len() - starts[starts.len() - 1]])
        .max()
        .unwrap_or(0);
    (starts, longest)
}

mod doc;

#[cfg(test)]
mod tests;
