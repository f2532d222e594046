//! Incremental parser for the tag protocol a model uses to propose file edits.
//!
//! A reply is prose with tags in it. A tag opens with `<tandem-NAME` or `<dyad-NAME` (NAME is one
//! of [`TagKind::name`]) or `<think`, then attributes `a="v"`, `a='v'` or `a=v`, then `>` or `/>`.
//! Body-less kinds (rename, delete, add-dependency) end at their opening tag; the others take
//! everything up to `</tandem-NAME>`, `</dyad-NAME>` (either prefix) or `</think>` as a raw body.
//! Tags inside fenced code blocks or inline code spans of the prose are documentation: text.
//!
//! [`StreamParser`] is fed the reply as it streams. Each decision is made only once the text that
//! decides it has arrived, so any chunking gives the same result as [`parse`] on the whole text,
//! and every scanner keeps its position across pushes, so total work is linear in the text.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

mod lex;
use lex::{Closer, Opener, Step, is_ws, slice, unescape};

/// An opening tag longer than this (from `<` to `>`) is text, so a stray `<tandem-write` cannot
/// hold back the rest of the reply.
const MAX_OPEN_TAG: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagKind {
    Write,
    Rename,
    Delete,
    SearchReplace,
    AddDependency,
    ChatSummary,
    ExecuteSql,
    SecurityFinding,
    ProblemReport,
    Think,
}

/// The kinds written with a `tandem-`/`dyad-` prefix, in the order the header table uses.
pub(super) const PREFIXED: [TagKind; 9] = [
    TagKind::Write,
    TagKind::Rename,
    TagKind::Delete,
    TagKind::SearchReplace,
    TagKind::AddDependency,
    TagKind::ChatSummary,
    TagKind::ExecuteSql,
    TagKind::SecurityFinding,
    TagKind::ProblemReport,
];

impl TagKind {
    pub fn name(self) -> &'static str {
        match self {
            TagKind::Write => "write",
            TagKind::Rename => "rename",
            TagKind::Delete => "delete",
            TagKind::SearchReplace => "search-replace",
            TagKind::AddDependency => "add-dependency",
            TagKind::ChatSummary => "chat-summary",
            TagKind::ExecuteSql => "execute-sql",
            TagKind::SecurityFinding => "security-finding",
            TagKind::ProblemReport => "problem-report",
            TagKind::Think => "think",
        }
    }

    /// The kind named `name` (without prefix); `think` is not a prefixed kind, so it is `None`.
    pub fn from_name(name: &str) -> Option<TagKind> {
        PREFIXED.into_iter().find(|kind| kind.name() == name)
    }

    pub fn has_body(self) -> bool {
        !matches!(
            self,
            TagKind::Rename | TagKind::Delete | TagKind::AddDependency
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagPrefix {
    Tandem,
    Dyad,
    /// Only for `<think>`.
    None,
}

impl TagPrefix {
    fn text(self) -> &'static str {
        match self {
            TagPrefix::Tandem => "tandem-",
            TagPrefix::Dyad => "dyad-",
            TagPrefix::None => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub kind: TagKind,
    pub prefix: TagPrefix,
    /// In source order, values entity-unescaped.
    pub attrs: Vec<(String, String)>,
    /// Raw text between the opening and closing tags; empty for self-closing and body-less tags.
    pub body: String,
    /// False while streaming or if never closed; such a tag is never an action.
    pub complete: bool,
    /// Byte range in the full reply (for an incomplete tag: to the current end).
    pub span: Range<usize>,
}

impl Tag {
    /// The value of the first attribute called `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text { text: String, span: Range<usize> },
    Tag(Tag),
}

/// Parses a whole reply: the same as pushing it into a [`StreamParser`] and finishing.
pub fn parse(text: &str) -> Vec<Segment> {
    let mut parser = StreamParser::new();
    parser.push(text);
    parser.finish()
}

/// Parses a reply as it streams in. See the module docs.
#[derive(Debug)]
pub struct StreamParser {
    buf: String,
    done: Vec<Segment>,
    /// Prose since the last tag starts here and is decided up to `pos`.
    text_start: usize,
    pos: usize,
    prose: Prose,
    mode: Mode,
    scanned: usize,
}

impl Default for StreamParser {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamParser {
    pub fn new() -> Self {
        let prose = Prose {
            line_start: true,
            ..Prose::default()
        };
        let (buf, done, mode) = (String::new(), Vec::new(), Mode::Scan);
        let (text_start, pos, scanned) = (0, 0, 0);
        StreamParser {
            buf,
            done,
            text_start,
            pos,
            prose,
            mode,
            scanned,
        }
    }

    /// Appends more reply text and parses as far as the text so far decides.
    pub fn push(&mut self, chunk: &str) {
        self.buf.push_str(chunk);
        self.advance(false);
    }

    /// Everything pushed so far.
    pub fn text(&self) -> &str {
        &self.buf
    }

    /// Segments that will never change again.
    pub fn completed(&self) -> &[Segment] {
        &self.done
    }

    /// The in-progress tail: prose that may still grow, or an open tag with its body so far
    /// (without a closing tag that has only partly arrived). Held-back undecided text is not shown.
    pub fn pending(&self) -> Option<Segment> {
        match &self.mode {
            Mode::Body(open) => {
                let end = open.closer.as_ref().map_or(self.buf.len(), |c| c.m.start);
                let mut tag = open.tag.clone();
                tag.body = slice(&self.buf, open.tag.span.end..end).to_string();
                tag.span.end = self.buf.len();
                Some(Segment::Tag(tag))
            }
            Mode::Trailer(trailer) => Some(Segment::Tag(trailer.tag.clone())),
            _ => (self.pos > self.text_start).then(|| Segment::Text {
                text: slice(&self.buf, self.text_start..self.pos).to_string(),
                span: self.text_start..self.pos,
            }),
        }
    }

    /// [`completed`](Self::completed) followed by [`pending`](Self::pending), cloned.
    pub fn segments(&self) -> Vec<Segment> {
        let mut all = self.done.clone();
        all.extend(self.pending());
        all
    }

    /// Ends the stream: held-back text becomes text, an unclosed body tag stays incomplete.
    pub fn finish(mut self) -> Vec<Segment> {
        self.advance(true);
        let tail = self.pending();
        let mut all = self.done;
        all.extend(tail);
        all
    }

    /// How many bytes the scanners have examined in total (instrumentation for linearity tests).
    pub fn scanned_bytes(&self) -> usize {
        self.scanned
    }
}

/// Markdown state of the prose. Code blocks and code spans turn tags into text.
#[derive(Debug, Default)]
struct Prose {
    /// Only spaces and tabs since the last newline (or the start of the reply).
    line_start: bool,
    fence: Option<Fence>,
    /// After a code span opener found no closer on its line, every later backtick run on that line
    /// is known: run length -> starts, ascending. Valid for positions before `runs_until` (the
    /// newline), so a line with many unclosed runs is still scanned only once.
    runs: HashMap<usize, VecDeque<usize>>,
    runs_until: usize,
}

#[derive(Debug, Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
    line: FenceLine,
}

/// Progress through the current line of a code block, looking for its closing fence.
#[derive(Debug, Clone, Copy)]
enum FenceLine {
    Indent,
    Run(usize),
    Trailing,
    Other,
}

impl Fence {
    /// Feeds one byte; true when it is the newline that ends the closing fence line. Everything in
    /// a code block is text either way, so nothing needs to be held back here.
    fn step(&mut self, b: u8) -> bool {
        let blank = matches!(b, b' ' | b'\t' | b'\r');
        self.line = match self.line {
            FenceLine::Run(n) if b == b'\n' && n >= self.len => return true,
            FenceLine::Trailing if b == b'\n' => return true,
            _ if b == b'\n' => FenceLine::Indent,
            FenceLine::Indent if b == b' ' || b == b'\t' => FenceLine::Indent,
            FenceLine::Indent if b == self.ch => FenceLine::Run(1),
            FenceLine::Run(n) if b == self.ch => FenceLine::Run(n.saturating_add(1)),
            FenceLine::Run(n) if blank && n >= self.len => FenceLine::Trailing,
            FenceLine::Trailing if blank => FenceLine::Trailing,
            _ => FenceLine::Other,
        };
        false
    }
}

/// A tag after its opening `>`: a body tag looking for its closing tag, or a body-less one whose
/// span may still absorb whitespace and its closing tag. `at` is how far the search got; until the
/// tag is done, `tag.span` ends at the opening `>`, where a body starts.
#[derive(Debug)]
struct OpenTag {
    tag: Tag,
    at: usize,
    closer: Option<Closer>,
}

/// What the parser is doing at `pos`. Every variant keeps its scan position.
#[derive(Debug)]
enum Mode {
    Scan,
    /// Counting a run of backticks (or tildes at a line start) that begins at `pos`.
    Run {
        ch: u8,
        at: usize,
    },
    /// A code span opener of `n` backticks at `pos`: looking for a run of exactly `n` on its line.
    Inline {
        n: usize,
        at: usize,
        run: Option<usize>,
    },
    Open(Box<Opener>),
    Body(Box<OpenTag>),
    Trailer(Box<OpenTag>),
}

impl StreamParser {
    /// Parses as far as the text decides (at `eof`: to the end). The buffer is moved out meanwhile
    /// so the scanners can read it while they update the parser.
    fn advance(&mut self, eof: bool) {
        let text = std::mem::take(&mut self.buf);
        while self.step(&text, eof) {}
        self.buf = text;
    }

    /// One decision; false when nothing more can be decided with the text so far.
    fn step(&mut self, text: &str, eof: bool) -> bool {
        let bytes = text.as_bytes();
        match std::mem::replace(&mut self.mode, Mode::Scan) {
            Mode::Scan => self.scan(bytes),
            Mode::Run { ch, at } => self.run(bytes, ch, at, eof),
            Mode::Inline { n, at, run } => self.inline(bytes, n, at, run, eof),
            Mode::Open(opener) => self.open(text, opener, eof),
            Mode::Body(open) => self.body(text, open, eof),
            Mode::Trailer(trailer) => self.trailer(bytes, trailer, eof),
        }
    }

    fn scan(&mut self, bytes: &[u8]) -> bool {
        let start = self.pos;
        while let Some(&b) = bytes.get(self.pos) {
            self.scanned += 1;
            if let Some(fence) = &mut self.prose.fence {
                if fence.step(b) {
                    self.prose.fence = None;
                    self.prose.line_start = true;
                }
                self.pos += 1;
                continue;
            }
            match b {
                b'\n' => self.prose.line_start = true,
                b' ' | b'\t' => {}
                b'`' | b'~' if b == b'`' || self.prose.line_start => {
                    self.mode = Mode::Run {
                        ch: b,
                        at: self.pos + 1,
                    };
                    return true;
                }
                b'<' => {
                    self.mode = Mode::Open(Box::new(Opener::new(self.pos)));
                    return true;
                }
                _ => self.prose.line_start = false,
            }
            self.pos += 1;
        }
        self.pos > start
    }

    fn run(&mut self, bytes: &[u8], ch: u8, mut at: usize, eof: bool) -> bool {
        while let Some(&b) = bytes.get(at) {
            self.scanned += 1;
            if b != ch {
                break;
            }
            at += 1;
        }
        if at >= bytes.len() && !eof {
            self.mode = Mode::Run { ch, at };
            return false;
        }
        let n = at - self.pos;
        if std::mem::replace(&mut self.prose.line_start, false) && n >= 3 {
            let line = FenceLine::Other;
            self.prose.fence = Some(Fence { ch, len: n, line });
        } else if ch == b'`' && self.pos < self.prose.runs_until {
            // This line's runs are already known: the closer is the next run of length `n`.
            let pos = self.pos;
            let closer = self.prose.runs.get_mut(&n).and_then(|starts| {
                while starts.front().is_some_and(|&s| s <= pos) {
                    starts.pop_front();
                }
                starts.front().copied()
            });
            at = closer.unwrap_or(pos) + n;
        } else if ch == b'`' {
            self.prose.runs.clear();
            self.mode = Mode::Inline { n, at, run: None };
            return true;
        }
        self.pos = at;
        true
    }

    fn inline(
        &mut self,
        bytes: &[u8],
        n: usize,
        mut at: usize,
        mut run: Option<usize>,
        eof: bool,
    ) -> bool {
        loop {
            let b = bytes.get(at).copied();
            self.scanned += usize::from(b.is_some());
            if let Some(start) = run {
                if b == Some(b'`') {
                    at += 1;
                    continue;
                }
                if b.is_none() && !eof {
                    break;
                }
                run = None;
                if at - start == n {
                    // Closed: the whole span, tags and all, is prose.
                    self.prose.runs.clear();
                    self.pos = at;
                    return true;
                }
                self.prose
                    .runs
                    .entry(at - start)
                    .or_default()
                    .push_back(start);
            }
            match b {
                None if !eof => break,
                None | Some(b'\n') => {
                    // No closer on this line: the opener was literal backticks.
                    self.prose.runs_until = at;
                    self.pos += n;
                    return true;
                }
                Some(b'`') => run = Some(at),
                Some(_) => {}
            }
            at += 1;
        }
        self.mode = Mode::Inline { n, at, run };
        false
    }

    fn open(&mut self, text: &str, mut opener: Box<Opener>, eof: bool) -> bool {
        let (end, self_closing) = match opener.run(text.as_bytes(), &mut self.scanned) {
            Step::Done(done) => done,
            Step::More if !eof => {
                self.mode = Mode::Open(opener);
                return false;
            }
            Step::More | Step::Fail => {
                self.prose.line_start = false;
                self.pos += 1;
                return true;
            }
        };
        if self.pos > self.text_start {
            self.done.push(Segment::Text {
                text: slice(text, self.text_start..self.pos).to_string(),
                span: self.text_start..self.pos,
            });
        }
        let attrs = opener.attrs.iter().map(|(name, value)| {
            self.scanned += value.len();
            (
                slice(text, name.clone()).to_string(),
                unescape(slice(text, value.clone())),
            )
        });
        let tag = Tag {
            kind: opener.kind,
            prefix: opener.prefix,
            attrs: attrs.collect(),
            body: String::new(),
            complete: self_closing || !opener.kind.has_body(),
            span: self.pos..end,
        };
        self.prose.line_start = false;
        self.text_start = self.pos;
        let open = Box::new(OpenTag {
            tag,
            at: end,
            closer: None,
        });
        match (self_closing, open.tag.complete) {
            (true, _) => self.emit(open.tag),
            (false, true) => self.mode = Mode::Trailer(open),
            (false, false) => self.mode = Mode::Body(open),
        }
        true
    }

    fn emit(&mut self, tag: Tag) {
        self.pos = tag.span.end;
        self.text_start = self.pos;
        self.done.push(Segment::Tag(tag));
    }

    fn body(&mut self, text: &str, mut open: Box<OpenTag>, eof: bool) -> bool {
        let bytes = text.as_bytes();
        let kind = open.tag.kind;
        loop {
            if let Some(closer) = &mut open.closer {
                match closer.run(bytes, kind, &mut self.scanned) {
                    Step::Done(end) => {
                        let body = open.tag.span.end..closer.m.start;
                        let mut tag = open.tag;
                        (tag.body, tag.span.end) = (slice(text, body).to_string(), end);
                        tag.complete = true;
                        self.emit(tag);
                        return true;
                    }
                    Step::Fail => {
                        open.at = closer.m.at;
                        open.closer = None;
                    }
                    Step::More => {
                        if eof {
                            open.closer = None;
                        }
                        break;
                    }
                }
            }
            let rest = bytes.get(open.at..).unwrap_or_default();
            let Some(i) = rest.iter().position(|&b| b == b'<') else {
                self.scanned += rest.len();
                open.at = bytes.len();
                break;
            };
            self.scanned += i + 1;
            open.at += i;
            open.closer = Some(Closer::new(open.at, kind));
        }
        self.mode = Mode::Body(open);
        false
    }

    fn trailer(&mut self, bytes: &[u8], mut trailer: Box<OpenTag>, eof: bool) -> bool {
        let kind = trailer.tag.kind;
        loop {
            if let Some(closer) = &mut trailer.closer {
                match closer.run(bytes, kind, &mut self.scanned) {
                    Step::Done(end) => trailer.tag.span.end = end,
                    Step::More if !eof => {
                        self.mode = Mode::Trailer(trailer);
                        return false;
                    }
                    // Something else follows: the tag ends at its `>` and that is prose again.
                    _ => {}
                }
                break;
            }
            let next = bytes.get(trailer.at).copied();
            self.scanned += usize::from(next.is_some());
            match next {
                Some(b) if is_ws(b) => trailer.at += 1,
                Some(b'<') => trailer.closer = Some(Closer::new(trailer.at, kind)),
                None if !eof => {
                    self.mode = Mode::Trailer(trailer);
                    return false;
                }
                _ => break,
            }
        }
        self.emit(trailer.tag);
        true
    }
}

#[cfg(test)]
mod tests;
