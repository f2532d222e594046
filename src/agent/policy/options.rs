//! Per-program option tables. Programs that are harmless on their own (`sort`, `git log`,
//! `rg`, `env`) often have an option that runs code, writes a file or reads one named in the
//! option; `scan` reads a program's arguments with its table, understanding every spelling
//! (`-oFILE`, `-o FILE`, `--output=FILE`, `--output FILE`, clusters like `-rno FILE`), so an
//! option cannot hide behind another form. An option the table does not know is a flag; if it
//! carries a path-like value (`--input=/etc/x`, `-f/etc/x`), that path counts as read.

use super::Risk::{self, High, Medium};
use super::shell::among;

mod table;

use table::TABLE;

/// Wrappers whose options all appear in `TABLE` (with `f` for harmless flags).
pub(super) const STRICT: &str =
    "env sudo doas nohup unbuffer builtin command exec time nice ionice stdbuf timeout xargs";

/// What `scan` found in a program's arguments.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) operands: Vec<String>,
    pub(super) reads: Vec<String>,
    pub(super) writes: Vec<String>,
    /// Path-like values of options the table does not know (`--input=/etc/x`): reads, for
    /// programs that read files at all.
    pub(super) guessed: Vec<String>,
    /// Risks from options, with the option named in the reason.
    pub(super) flags: Vec<(Risk, String)>,
    /// Commands the program runs (`fd -x cmd`), as text.
    pub(super) inner: Vec<String>,
    /// Variable names it sets (`printf -v`).
    pub(super) names: Vec<String>,
    /// Values of the special kinds (`s`, `S`, `O`), with the kind.
    pub(super) special: Vec<(char, String)>,
    /// How many arguments were read: with `stop`, where the first operand is.
    pub(super) used: usize,
}

/// The kind and reason of option `opt` (`-o`, `--output`) of `keys` (tried in order).
fn lookup(keys: &[&str], opt: &str) -> Option<(char, &'static str)> {
    keys.iter().find_map(|key| {
        TABLE
            .iter()
            .find(|(p, o, _, _)| among(key, p) && among(opt, o))
            .map(|&(_, _, kind, why)| (kind, why))
    })
}

/// Whether options of `kind` take a value: the lower-case kinds but `f` (a harmless flag),
/// and `S`, `R`.
fn takes_value(kind: char) -> bool {
    (kind.is_lowercase() && kind != 'f') || kind == 'S' || kind == 'R'
}

/// Whether an unknown option's value looks like a path (so it is judged as one).
fn pathlike(value: &str) -> bool {
    value.len() > 1 && (value.contains('/') || value.starts_with(['~', '$', '.']))
}

/// Reads `args` of a program with the options of `keys`; `go` programs spell long options with
/// one dash (`-exec`); `stop` ends at the first operand (wrappers: the command comes next).
pub(super) fn scan(keys: &[&str], args: &[String], go: bool, stop: bool) -> Scan {
    let mut s = Scan::default();
    let strict = keys.iter().any(|k| among(k, STRICT));
    let mut i = 0;
    let mut only = false;
    while let Some(a) = args.get(i) {
        i += 1;
        if only || !a.starts_with('-') || a == "-" {
            if stop {
                i -= 1;
                break;
            }
            s.operands.push(a.clone());
            continue;
        }
        if a == "--" {
            only = true;
            continue;
        }
        // `-5` (head, nice, kill): a number, not an option.
        if a[1..].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let long = a.starts_with("--") || go;
        let (opt, attached) = match a.split_once('=').filter(|_| long) {
            Some((o, v)) => (o.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        if long || a.len() == 2 {
            let next = if attached.is_none() {
                args.get(i)
            } else {
                None
            };
            let took = s.option(keys, &opt, attached.clone(), next.cloned(), args, i, strict);
            i += took;
            continue;
        }
        // A short cluster: `-rn`, `-oFILE`, `-n5`, `-es/x/y/`.
        let chars: Vec<char> = a.chars().skip(1).collect();
        for (k, c) in chars.iter().enumerate() {
            let opt = format!("-{c}");
            let rest: String = chars[k + 1..].iter().collect();
            let kind = lookup(keys, &opt).map(|(kind, _)| kind);
            let value = kind.is_some_and(takes_value);
            if value || kind == Some('O') {
                let (attached, next) = match rest.is_empty() {
                    true => (None, args.get(i).cloned()),
                    false => (Some(rest), None),
                };
                i += s.option(keys, &opt, attached, next, args, i, strict);
                break;
            }
            s.option(keys, &opt, None, None, args, i, strict);
            if k == 0 && pathlike(&rest) && kind.is_none() {
                // `-f/etc/x` with an option we do not know: assume the rest is its value.
                s.guessed.push(rest);
                break;
            }
        }
    }
    s.used = i.min(args.len());
    s
}

impl Scan {
    /// Notes option `opt`; returns how many following arguments it took as its value.
    #[allow(clippy::too_many_arguments)]
    fn option(
        &mut self,
        keys: &[&str],
        opt: &str,
        attached: Option<String>,
        next: Option<String>,
        args: &[String],
        at: usize,
        strict: bool,
    ) -> usize {
        let Some((kind, why)) = lookup(keys, opt) else {
            if strict {
                let why = format!("an option the checker does not know (`{opt}`)");
                self.flags.push((Medium, why));
            }
            self.guessed.extend(attached.filter(|v| pathlike(v)));
            return 0;
        };
        let takes = takes_value(kind);
        let (value, took) = match (attached, takes) {
            (Some(v), _) => (Some(v), 0),
            (None, true) => (next, 1),
            (None, false) => (None, 0),
        };
        let value_or_opt = value.clone().unwrap_or_default();
        match kind {
            'r' => self.reads.push(value_or_opt),
            'w' => self.writes.push(value_or_opt),
            'x' | 'X' => self.flags.push((High, format!("`{opt}` {why}"))),
            'm' | 'M' => self.flags.push((Medium, format!("`{opt}` {why}"))),
            'n' => self.names.push(value_or_opt),
            'e' => {
                // `fd -x cmd args ;`, `fd --exec=cmd args`: up to `;` or `+`.
                let rest = args.get(at..).unwrap_or_default();
                let len = rest.iter().take_while(|a| !among(a, "; +")).count();
                let first = value
                    .iter()
                    .filter(|_| took == 0)
                    .map(|v| super::shell::quote(v));
                let words: Vec<String> = first
                    .chain(rest[..len].iter().map(|w| super::shell::quote(w)))
                    .collect();
                self.inner.push(words.join(" "));
                self.flags
                    .push((Medium, format!("`{opt}` runs a command on each file")));
                return len;
            }
            'a' => return 2,
            'R' => {
                self.reads.extend(args.get(at + 1).cloned());
                return 2;
            }
            's' | 'S' | 'O' => self.special.push((kind, value_or_opt)),
            _ => {}
        }
        took
    }
}
