//! The shell lexer: splits a command line into simple commands, following quotes, escapes,
//! operators (`;`, `&&`, `||`, `|`, `&`), subshells, `$(…)`, backticks, `<(…)` and
//! here-documents; and the helpers that read a simple command's words (wrappers such as `sudo`
//! and `env`, options, operands). It only parses: what a command does is `rules`' call.

use std::mem::{replace, take};

// Brace expansion and arithmetic, as bash makes them before a program runs.
mod expand;
// The words of one command: wrappers, operands, options.
mod words;

pub(super) use expand::literal_arithmetic;
pub(super) use words::{is_download, operands, option_value, program, quote, unwrap, unwrap_all};

const RESERVED: &str = "{ } ! if then else elif fi do done while until esac";
/// Subshells and substitutions nested deeper than this are not parsed (the command is then
/// unknown, so high risk): the parser recurses, and input must not overflow the stack.
const MAX_NESTING: usize = 12;

/// Whether `word` is in `list`, a space-separated table like the ones here and in `rules`.
pub(super) fn among(word: &str, list: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// One simple command: its words (unquoted), redirections and how its input is fed.
#[derive(Default)]
pub(super) struct Cmd {
    pub(super) start: usize,
    end: usize,
    pub(super) text: String,
    pub(super) words: Vec<String>,
    starts: Vec<usize>,
    pub(super) redirects: Vec<(String, String)>,
    pub(super) heredocs: Vec<usize>,
    /// The commands (ranges of `out`) before it in its pipelines: they feed its input.
    pub(super) upstream: Vec<(usize, usize)>,
    /// A `$(…)`, backtick or `<(…)` in it runs a download.
    pub(super) sub_download: bool,
    /// Syntax the lexer does not follow exactly as the shell does (`$'…'`, `${x%…}`).
    pub(super) odd: Vec<&'static str>,
    /// How each word was written (parallel to `words`).
    pub(super) marks: Vec<Marks>,
}

/// How a word was written: what the shell does to it that its text alone does not show.
#[derive(Default, Clone, Copy)]
pub(super) struct Marks {
    /// It has quotes or escapes.
    pub(super) quoted: bool,
    /// It holds an expansion only known at run time (`$x`, `${x}`, `$(…)`, backticks).
    pub(super) dynamic: bool,
    /// It has an unquoted brace expansion (`{a,b}`, `{1..3}`).
    pub(super) braces: bool,
    /// It was made by a brace expansion.
    pub(super) braced: bool,
}

impl Cmd {
    /// Adds a word that starts at `start` in the source.
    fn push(&mut self, word: String, start: usize, marks: Marks) {
        self.words.push(word);
        self.starts.push(start);
        self.marks.push(marks);
    }

    fn begin(&mut self, at: usize) {
        if self.words.is_empty() && self.redirects.is_empty() {
            self.start = at;
        }
    }
}

pub(super) struct Parser<'a> {
    s: &'a [char],
    i: usize,
    pub(super) out: Vec<Cmd>,
    /// Here-documents whose bodies start after the next newline: (body slot, delimiter).
    pending: Vec<(usize, String)>,
    /// Here-document bodies, and whether `$(…)` in them runs.
    pub(super) bodies: Vec<(String, bool)>,
    /// How the word being read, and the last word read, were written.
    mark: Marks,
    last: Marks,
}

impl<'a> Parser<'a> {
    pub(super) fn new(s: &'a [char]) -> Parser<'a> {
        Parser {
            s,
            i: 0,
            out: Vec::new(),
            pending: Vec::new(),
            bodies: Vec::new(),
            mark: Marks::default(),
            last: Marks::default(),
        }
    }

    fn at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn slice(&self, from: usize, to: usize) -> String {
        self.s.get(from..to).unwrap_or_default().iter().collect()
    }

    /// A command list, up to `end` (consumed) or the end of the input.
    pub(super) fn list(&mut self, end: Option<char>, depth: usize, feeders: &[(usize, usize)]) {
        if depth > MAX_NESTING {
            self.i = self.s.len();
            let text = "(nested too deeply)".to_string();
            self.out.push(Cmd {
                words: vec![text.clone()],
                text,
                ..Cmd::default()
            });
            return;
        }
        let (mut cur, mut feed) = (Cmd::default(), feeders.to_vec());
        let mut pipeline = self.out.len();
        while let Some(c) = self.at(0) {
            let next = self.at(1);
            if Some(c) == end {
                self.i += 1;
                break;
            }
            match c {
                // `\r` is no blank to the shell: it stays in the word (`ls\r#` is one word).
                ' ' | '\t' => self.i += 1,
                // An unmatched `)` ends a `case` pattern (`x) rm -rf ~;;`): a command starts.
                ')' => {
                    self.finish(&mut cur, &feed);
                    self.i += 1;
                }
                '\\' if next == Some('\n') => self.i += 2,
                '#' => self.i += self.s[self.i..].iter().take_while(|&&c| c != '\n').count(),
                '&' if next == Some('>') => self.redirect(&mut cur, end, depth),
                '\n' | ';' | '&' | '|' => {
                    self.finish(&mut cur, &feed);
                    let pipe = c == '|' && next != Some('|');
                    feed = feeders.to_vec();
                    if pipe {
                        feed.push((pipeline, self.out.len()));
                    } else {
                        pipeline = self.out.len();
                    }
                    let two = if pipe {
                        next == Some('&')
                    } else {
                        c != '\n' && next == Some(c)
                    };
                    self.i += 1 + usize::from(two);
                    if c == '\n' {
                        self.heredoc_bodies();
                    }
                }
                '(' => {
                    self.finish(&mut cur, &feed);
                    if next == Some('(') && self.arithmetic_command(&mut cur) {
                        continue;
                    }
                    self.i += 1;
                    self.list(Some(')'), depth + 1, &feed);
                }
                '<' | '>' if next != Some('(') => self.redirect(&mut cur, end, depth),
                _ if c.is_ascii_digit() && self.fd_redirect() => {
                    self.redirect(&mut cur, end, depth)
                }
                _ => {
                    let start = self.i;
                    let word = self.word(&mut cur, end, depth, false);
                    if self.i == start {
                        self.i += 1;
                        continue;
                    }
                    cur.begin(start);
                    self.push_word(&mut cur, word, start);
                    cur.end = self.i;
                }
            }
        }
        self.finish(&mut cur, &feed);
    }

    /// Ends the current command: leading reserved words (`if`, `then`, `{`…) are dropped.
    fn finish(&mut self, cur: &mut Cmd, feed: &[(usize, usize)]) {
        let mut cmd = take(cur);
        let skip = cmd.words.iter().take_while(|w| among(w, RESERVED)).count();
        cmd.words.drain(..skip);
        cmd.starts.drain(..skip);
        cmd.marks.drain(..skip.min(cmd.marks.len()));
        if let (true, Some(&s)) = (skip > 0, cmd.starts.first()) {
            cmd.start = s;
        }
        if cmd.words.is_empty() && cmd.redirects.is_empty() {
            return;
        }
        cmd.text = self.slice(cmd.start, cmd.end).trim().to_string();
        cmd.upstream = feed.to_vec();
        self.out.push(cmd);
    }

    fn fd_redirect(&self) -> bool {
        let digits = self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        matches!(self.at(digits), Some('<' | '>'))
    }

    fn redirect(&mut self, cur: &mut Cmd, end: Option<char>, depth: usize) {
        cur.begin(self.i);
        self.i += self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let mut op = String::new();
        while let Some(c) = self.at(0) {
            let more = match op.as_str() {
                "" => "<>&",
                "&" | "&>" => ">",
                ">" => ">|&",
                "<" => "<&>",
                "<<" => "<-",
                _ => "",
            };
            if !more.contains(c) {
                break;
            }
            op.push(c);
            self.i += 1;
        }
        self.i += self.s[self.i..]
            .iter()
            .take_while(|&&c| c == ' ' || c == '\t')
            .count();
        let from = self.i;
        let target = match self.at(0) {
            Some(c) if !";&|<>()\n".contains(c) => self.word(cur, end, depth, false),
            _ => String::new(),
        };
        if op == "<<" || op == "<<-" {
            let quoted = self.slice(from, self.i).contains(['\'', '"', '\\']);
            cur.heredocs.push(self.bodies.len());
            self.pending.push((self.bodies.len(), target.clone()));
            self.bodies.push((String::new(), !quoted));
        }
        cur.redirects.push((op, target));
        cur.end = self.i;
    }

    fn heredoc_bodies(&mut self) {
        for (slot, delim) in take(&mut self.pending) {
            let mut body = String::new();
            while self.i < self.s.len() {
                let len = self.s[self.i..].iter().take_while(|&&c| c != '\n').count();
                let line = self.slice(self.i, self.i + len);
                self.i = (self.i + len + 1).min(self.s.len());
                if line.trim() == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if let Some(b) = self.bodies.get_mut(slot) {
                b.0 = body;
            }
        }
    }

    /// One word, unquoted; `body` reads a here-document body to the end instead. Commands in
    /// substitutions go to `out`; the word keeps their text.
    pub(super) fn word(
        &mut self,
        cur: &mut Cmd,
        end: Option<char>,
        depth: usize,
        body: bool,
    ) -> String {
        let (mut w, mut dq, mut braces) = (String::new(), body, 0usize);
        // Unquoted `{` open in this word (brace expansion, not `${`).
        let mut lists = 0usize;
        let outer = take(&mut self.mark);
        while let Some(c) = self.at(0) {
            let (next, open, quoted) = (self.at(1), self.i, dq || braces > 0);
            let escapes = !dq || matches!(next, Some('$' | '`' | '"' | '\\' | '\n'));
            let m = &mut self.mark;
            match c {
                '\'' | '"' | '\\' => m.quoted = true,
                '$' if next
                    .is_some_and(|n| n.is_ascii_alphanumeric() || "_{(@*#?-$!'\"[".contains(n)) =>
                {
                    m.dynamic = true
                }
                '`' => m.dynamic = true,
                '{' if !quoted => lists += 1,
                '}' if !quoted && lists > 0 => lists -= 1,
                ',' if !quoted && lists > 0 => m.braces = true,
                '.' if !quoted && lists > 0 && next == Some('.') => m.braces = true,
                _ => {}
            }
            match c {
                '<' | '>' if !quoted && w.is_empty() && next == Some('(') => {
                    self.i += 2;
                    self.sub(cur, open, ')', depth, &mut w);
                }
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' if !quoted => {
                    break;
                }
                '`' if end == Some('`') => break,
                '\'' if !dq => {
                    let rest = self.s.get(open + 1..).unwrap_or_default();
                    let len = rest.iter().take_while(|&&q| q != '\'').count();
                    w.extend(&rest[..len]);
                    self.i = (open + len + 2).min(self.s.len());
                }
                '"' if !body => (dq, self.i) = (!dq, self.i + 1),
                '\\' if escapes => {
                    w.extend(next.filter(|&n| n != '\n'));
                    self.i = (open + 2).min(self.s.len());
                }
                '$' if !dq && matches!(next, Some('\'' | '"')) => {
                    // `$'\x72m'` and `$"…"`: quoting the lexer does not decode.
                    cur.odd.push("ANSI-C or locale quoting (`$'…'`, `$\"…\"`)");
                    (w, self.i) = (w + "$", open + 1);
                }
                '$' if next == Some('{') => {
                    let inner = self.s.get(open + 2..).unwrap_or_default();
                    let name = inner.iter().take_while(|&&c| c != '}');
                    if name
                        .clone()
                        .any(|&c| !c.is_ascii_alphanumeric() && c != '_')
                    {
                        cur.odd
                            .push("a parameter expansion with operators (`${x%…}`)");
                    }
                    (w, braces, self.i) = (w + "${", braces + 1, open + 2)
                }
                '}' if braces > 0 => (w, braces, self.i) = (w + "}", braces - 1, open + 1),
                '$' if next == Some('[') => {
                    // `$[…]`, bash's old arithmetic: checked like `$((…))`, then read on.
                    let rest = self.s.get(open + 2..).unwrap_or_default();
                    let expr: String = rest.iter().take_while(|&&c| c != ']').collect();
                    if !expand::literal_arithmetic(&expr) {
                        cur.odd.push(expand::ARITHMETIC);
                    }
                    (w, self.i) = (w + "$[", open + 2);
                }
                '$' if next == Some('(') => {
                    if self.at(2) != Some('(') || !self.arithmetic(cur, &mut w) {
                        self.i += 2;
                        self.sub(cur, open, ')', depth, &mut w);
                    }
                }
                '`' => {
                    self.i += 1;
                    self.sub(cur, open, '`', depth, &mut w);
                }
                _ => (w, self.i) = (w + c.encode_utf8(&mut [0; 4]), open + 1),
            }
        }
        self.last = replace(&mut self.mark, outer);
        w
    }

    /// `$((…))` with no parentheses or backticks inside: arithmetic, copied as text. (Bash
    /// reads `$((a) )` as a command substitution; anything unusual is parsed as one here too.)
    fn arithmetic(&mut self, cur: &mut Cmd, w: &mut String) -> bool {
        let rest = self.s.get(self.i + 3..).unwrap_or_default();
        let len = rest.iter().take_while(|&&c| !"()`".contains(c)).count();
        if rest.get(len..len + 2) != Some(&[')', ')']) {
            return false;
        }
        let expr: String = rest[..len].iter().collect();
        if !expand::literal_arithmetic(&expr) {
            cur.odd.push(expand::ARITHMETIC);
        }
        w.extend(&self.s[self.i..self.i + len + 5]);
        self.i += len + 5;
        true
    }

    fn sub(&mut self, cur: &mut Cmd, open: usize, close: char, depth: usize, w: &mut String) {
        let mark = self.out.len();
        self.list(Some(close), depth + 1, &[]);
        let inner = self.out.get(mark..).unwrap_or_default();
        cur.sub_download |= inner.iter().any(is_download);
        w.push_str(&self.slice(open, self.i));
    }
}
