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
const PREFIXED: [TagKind; 9] = [
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

/// Panic-free slicing; every position the parser produces is a char boundary anyway.
fn slice(text: &str, range: Range<usize>) -> &str {
    text.get(range).unwrap_or_default()
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.')
}

/// Bare values exclude `<`: besides being HTML's rule, it means a `<` can only sit inside a quoted
/// value of an opening tag, which bounds how many failed tag candidates can overlap.
fn is_bare_byte(b: u8) -> bool {
    !is_ws(b) && !matches!(b, b'"' | b'\'' | b'<' | b'>')
}

/// Byte `k` of the concatenation of `parts`, if it is that long.
fn byte_at(parts: [&str; 3], mut k: usize) -> Option<u8> {
    for part in parts {
        if let Some(&b) = part.as_bytes().get(k) {
            return Some(b);
        }
        k -= part.len();
    }
    None
}

/// Header candidate `i` of an opening tag: 0..18 pair each prefixed kind with tandem (even) and
/// dyad (odd); 18 is `<think`.
const HEADER_MASK: u32 = (1 << 19) - 1;
fn header(i: usize) -> (TagKind, TagPrefix) {
    match PREFIXED.get(i / 2) {
        Some(&kind) => (kind, [TagPrefix::Tandem, TagPrefix::Dyad][i % 2]),
        None => (TagKind::Think, TagPrefix::None),
    }
}

enum Step<T> {
    Done(T),
    Fail,
    More,
}

/// Matches the text at `start` against up to 32 candidate words at once (bit `i` of `mask`: word
/// `i` still fits). `at` is the next byte to look at, so a match split across pushes resumes.
#[derive(Debug, Clone)]
struct WordMatch {
    start: usize,
    at: usize,
    mask: u32,
}

impl WordMatch {
    /// Both callers have already seen the `<` at `start`.
    fn new(start: usize, mask: u32) -> Self {
        WordMatch {
            start,
            at: start + 1,
            mask,
        }
    }

    /// On success returns the word, with `at` on the byte after it (which exists). No word is a
    /// prefix of another, so the first byte that continues no candidate decides.
    fn run(
        &mut self,
        bytes: &[u8],
        scanned: &mut usize,
        word: impl Fn(usize, usize) -> Option<u8>,
    ) -> Step<usize> {
        while let Some(&b) = bytes.get(self.at) {
            *scanned += 1;
            let k = self.at - self.start;
            let (mut next, mut complete) = (0, None);
            let mut bits = self.mask;
            while bits != 0 {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                match word(i, k) {
                    Some(c) if c == b => next |= 1 << i,
                    None => complete = Some(i),
                    Some(_) => {}
                }
            }
            if next == 0 {
                return complete.map_or(Step::Fail, Step::Done);
            }
            self.mask = next;
            self.at += 1;
        }
        Step::More
    }
}

/// Matches a closing tag `</PREFIX-NAME ws* >` (`</think ws* >`) that starts at `m.start`.
#[derive(Debug, Clone)]
struct Closer {
    m: WordMatch,
    in_ws: bool,
}

impl Closer {
    fn new(lt: usize, kind: TagKind) -> Self {
        let mask = if kind == TagKind::Think { 1 } else { 0b11 };
        Closer {
            m: WordMatch::new(lt, mask),
            in_ws: false,
        }
    }

    /// `Done(end after '>')`; after `Fail`, `m.at` is where to look for the next `<` (the bytes
    /// before it matched the closing tag so far, which has no other `<`).
    fn run(&mut self, bytes: &[u8], kind: TagKind, scanned: &mut usize) -> Step<usize> {
        if !self.in_ws {
            let prefix = |i| match kind {
                TagKind::Think => TagPrefix::None,
                _ if i == 0 => TagPrefix::Tandem,
                _ => TagPrefix::Dyad,
            };
            match self.m.run(bytes, scanned, |i, k| {
                byte_at(["</", prefix(i).text(), kind.name()], k)
            }) {
                Step::Done(_) => self.in_ws = true,
                Step::Fail => return Step::Fail,
                Step::More => return Step::More,
            }
        }
        while let Some(&b) = bytes.get(self.m.at) {
            *scanned += 1;
            if b == b'>' {
                return Step::Done(self.m.at + 1);
            }
            if !is_ws(b) {
                return Step::Fail;
            }
            self.m.at += 1;
        }
        Step::More
    }
}

/// Where the attribute lexer is; positions are `(start, end)` of the name and start of the value.
#[derive(Debug, Clone, Copy)]
enum Lex {
    BeforeName,
    Slash,
    Name(usize),
    AfterName(usize, usize),
    BeforeValue(usize, usize),
    Quoted(usize, usize, u8, usize),
    Bare(usize, usize, usize),
    /// A `/` in a bare value: `a=b/>` ends the tag, `a=b/c` goes on.
    BareSlash(usize, usize, usize),
}

/// A candidate opening tag at `head.start`: first the header, then the attributes.
#[derive(Debug)]
struct Opener {
    head: WordMatch,
    kind: TagKind,
    prefix: TagPrefix,
    lex: Option<Lex>,
    at: usize,
    attrs: Vec<(Range<usize>, Range<usize>)>,
}

impl Opener {
    fn new(lt: usize) -> Self {
        Opener {
            head: WordMatch::new(lt, HEADER_MASK),
            kind: TagKind::Think,
            prefix: TagPrefix::None,
            lex: None,
            at: lt,
            attrs: Vec::new(),
        }
    }

    /// `Done((end after '>', self_closing))`.
    fn run(&mut self, bytes: &[u8], scanned: &mut usize) -> Step<(usize, bool)> {
        let lt = self.head.start;
        let mut lex = match self.lex {
            Some(lex) => lex,
            None => match self.head.run(bytes, scanned, |i, k| {
                let (kind, prefix) = header(i);
                byte_at(["<", prefix.text(), kind.name()], k)
            }) {
                // `<tandem-writer` or `<thinking` is text: the name must end at ws, `>` or `/`.
                Step::Done(i)
                    if bytes
                        .get(self.head.at)
                        .is_some_and(|&b| is_ws(b) || b == b'>' || b == b'/') =>
                {
                    (self.kind, self.prefix) = header(i);
                    self.at = self.head.at;
                    Lex::BeforeName
                }
                Step::More => return Step::More,
                _ => return Step::Fail,
            },
        };
        while let Some(&b) = bytes.get(self.at) {
            if self.at - lt >= MAX_OPEN_TAG {
                return Step::Fail;
            }
            *scanned += 1;
            let (at, ws) = (self.at, is_ws(b));
            lex = match lex {
                Lex::BeforeName if ws => lex,
                Lex::BeforeName if b == b'>' => return Step::Done((at + 1, false)),
                Lex::BeforeName if b == b'/' => Lex::Slash,
                Lex::BeforeName if is_name_byte(b) => Lex::Name(at),
                Lex::Slash if b == b'>' => return Step::Done((at + 1, true)),
                Lex::Name(_) if is_name_byte(b) => lex,
                Lex::Name(s) if ws => Lex::AfterName(s, at),
                Lex::Name(s) if b == b'=' => Lex::BeforeValue(s, at),
                Lex::AfterName(..) if ws => lex,
                Lex::AfterName(s, e) if b == b'=' => Lex::BeforeValue(s, e),
                Lex::BeforeValue(..) if ws => lex,
                Lex::BeforeValue(s, e) if b == b'"' || b == b'\'' => Lex::Quoted(s, e, b, at + 1),
                Lex::BeforeValue(s, e) if is_bare_byte(b) => Lex::Bare(s, e, at),
                Lex::Quoted(s, e, q, v) if b == q => {
                    self.attrs.push((s..e, v..at));
                    Lex::BeforeName
                }
                Lex::Quoted(..) => lex,
                Lex::BareSlash(s, e, v) if b == b'>' => {
                    self.attrs.push((s..e, v..at - 1));
                    return Step::Done((at + 1, true));
                }
                Lex::Bare(s, e, v) | Lex::BareSlash(s, e, v) if ws || b == b'>' => {
                    self.attrs.push((s..e, v..at));
                    if b == b'>' {
                        return Step::Done((at + 1, false));
                    }
                    Lex::BeforeName
                }
                Lex::Bare(s, e, v) | Lex::BareSlash(s, e, v) if b == b'/' => {
                    Lex::BareSlash(s, e, v)
                }
                Lex::Bare(s, e, v) | Lex::BareSlash(s, e, v) if is_bare_byte(b) => {
                    Lex::Bare(s, e, v)
                }
                _ => return Step::Fail,
            };
            self.at += 1;
        }
        self.lex = Some(lex);
        Step::More
    }
}

/// Resolves `&amp; &lt; &gt; &quot; &apos; &#NN; &#xHH;`; anything else stays literal.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(slice(rest, 0..amp));
        let tail = slice(rest, amp..rest.len());
        let (c, used) = entity(tail).unwrap_or(('&', 1));
        out.push(c);
        rest = slice(tail, used..tail.len());
    }
    out.push_str(rest);
    out
}

fn entity(tail: &str) -> Option<(char, usize)> {
    let semi = tail.bytes().take(12).position(|b| b == b';')?;
    let c = match tail.get(1..semi)? {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        name => {
            let num = name.strip_prefix('#')?;
            let (digits, radix) = match num.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16),
                None => (num, 10),
            };
            // from_str_radix alone would also accept a sign.
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            char::from_u32(u32::from_str_radix(digits, radix).ok()?).filter(|&c| c != '\0')?
        }
    };
    Some((c, semi + 1))
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
#[path = "parser_tests.rs"]
mod tests;
