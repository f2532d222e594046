//! The lexers behind the tag parser: opening tags with attributes, closing tags, candidate
//! words, entities. Each keeps its position between pushes so nothing is scanned twice.

use std::ops::Range;

use super::{MAX_OPEN_TAG, PREFIXED, TagKind, TagPrefix};
/// Panic-free slicing; every position the parser produces is a char boundary anyway.
pub(super) fn slice(text: &str, range: Range<usize>) -> &str {
    text.get(range).unwrap_or_default()
}

pub(super) fn is_ws(b: u8) -> bool {
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

pub(super) enum Step<T> {
    Done(T),
    Fail,
    More,
}

/// Matches the text at `start` against up to 32 candidate words at once (bit `i` of `mask`: word
/// `i` still fits). `at` is the next byte to look at, so a match split across pushes resumes.
#[derive(Debug, Clone)]
pub(super) struct WordMatch {
    pub(super) start: usize,
    pub(super) at: usize,
    pub(super) mask: u32,
}

impl WordMatch {
    /// Both callers have already seen the `<` at `start`.
    pub(super) fn new(start: usize, mask: u32) -> Self {
        WordMatch {
            start,
            at: start + 1,
            mask,
        }
    }

    /// On success returns the word, with `at` on the byte after it (which exists). No word is a
    /// prefix of another, so the first byte that continues no candidate decides.
    pub(super) fn run(
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
pub(super) struct Closer {
    pub(super) m: WordMatch,
    pub(super) in_ws: bool,
}

impl Closer {
    pub(super) fn new(lt: usize, kind: TagKind) -> Self {
        let mask = if kind == TagKind::Think { 1 } else { 0b11 };
        Closer {
            m: WordMatch::new(lt, mask),
            in_ws: false,
        }
    }

    /// `Done(end after '>')`; after `Fail`, `m.at` is where to look for the next `<` (the bytes
    /// before it matched the closing tag so far, which has no other `<`).
    pub(super) fn run(&mut self, bytes: &[u8], kind: TagKind, scanned: &mut usize) -> Step<usize> {
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
pub(super) enum Lex {
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
pub(super) struct Opener {
    pub(super) head: WordMatch,
    pub(super) kind: TagKind,
    pub(super) prefix: TagPrefix,
    pub(super) lex: Option<Lex>,
    pub(super) at: usize,
    pub(super) attrs: Vec<(Range<usize>, Range<usize>)>,
}

impl Opener {
    pub(super) fn new(lt: usize) -> Self {
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
    pub(super) fn run(&mut self, bytes: &[u8], scanned: &mut usize) -> Step<(usize, bool)> {
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
pub(super) fn unescape(raw: &str) -> String {
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
