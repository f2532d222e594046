//! Per-program option tables. Programs that are harmless on their own (`sort`, `git log`,
//! `rg`, `env`) often have an option that runs code, writes a file or reads one named in the
//! option; `scan` reads a program's arguments with its table, understanding every spelling
//! (`-oFILE`, `-o FILE`, `--output=FILE`, `--output FILE`, clusters like `-rno FILE`), so an
//! option cannot hide behind another form. GNU `getopt_long` and git take any unambiguous
//! prefix of a long option (`--out` is `--output`): a long option the table does not list counts
//! as the riskiest option it is a prefix of. Go programs take `--x` for `-x`. An option the table
//! still does not know is noted in `Scan::unknown` (programs whose safe options are all listed
//! ask about it) and is otherwise a flag; if it carries a path-like value (`--input=/etc/x`,
//! `-f/etc/x`), that path counts as read.

use super::Risk::{self, High, Medium};
use super::shell::among;

mod table;

use table::{GIT, Row, TABLE, TOOLS};

/// Wrappers whose options all appear in `TABLE` (with `f` for harmless flags).
pub(super) const STRICT: &str =
    "env sudo doas nohup unbuffer builtin command exec time nice ionice stdbuf timeout xargs";

/// Programs whose harmless options the tables list: when such a program is otherwise low risk,
/// an option it does not know (`Scan::unknown`) makes it medium.
pub(super) const CHECKED: &str = "git npm pnpm yarn bun pytest jest vitest mocha rustfmt \
                                  prettier black gofmt isort clang-format ruff eslint biome awk \
                                  gawk mawk nawk";

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
    /// Options the table does not know, as written.
    pub(super) unknown: Vec<String>,
    /// The full names of the options found (`--file` for `--fi`), to ask what was given.
    pub(super) given: Vec<&'static str>,
    /// How many arguments were read: with `stop`, where the first operand is.
    pub(super) used: usize,
}

/// What the table says of an option: its kind, the reason, and the option's full name.
pub(super) struct Known {
    pub(super) kind: char,
    pub(super) why: &'static str,
    pub(super) name: &'static str,
}

/// How much an option of `kind` can do, to choose among the options an abbreviation may mean.
fn rank(kind: char) -> u8 {
    match kind {
        'x' | 'X' | 'e' | 'S' => 6,
        'w' | 'O' | 's' => 5,
        'r' | 'R' => 4,
        'm' | 'M' => 3,
        'n' => 2,
        'v' | 'a' | 'o' => 1,
        _ => 0,
    }
}

/// The rows of the table for `keys`, in the order of `keys`.
fn rows<'a>(keys: &'a [&str]) -> impl Iterator<Item = &'static Row> + 'a {
    let all = || TABLE.iter().chain(GIT).chain(TOOLS);
    keys.iter()
        .flat_map(move |key| all().filter(move |(p, ..)| among(key, p)))
}

/// The kind and reason of option `opt` (`-o`, `--output`) of `keys` (tried in order). A `long`
/// option the table does not list is taken as an abbreviation: the riskiest option it is a
/// prefix of (`--out` of `--output`, `-exe` of go's `-exec`); git's `--no-x` turns `--x` off.
pub(super) fn lookup(keys: &[&str], opt: &str, long: bool) -> Option<Known> {
    let known = |&(_, _, kind, why): &Row, name| Known { kind, why, name };
    for row in rows(keys) {
        if let Some(name) = row.1.split_whitespace().find(|o| *o == opt) {
            return Some(known(row, name));
        }
    }
    if !long || opt.len() < 3 {
        return None;
    }
    let mut best: Option<Known> = None;
    for row in rows(keys) {
        for name in row.1.split_whitespace().filter(|o| o.starts_with(opt)) {
            if best.as_ref().is_none_or(|b| rank(row.2) > rank(b.kind)) {
                best = Some(known(row, name));
            }
        }
    }
    let git = keys.iter().any(|k| k.starts_with("git"));
    match opt.strip_prefix("--no-") {
        Some(rest) if best.is_none() && git => {
            let name = lookup(keys, &format!("--{rest}"), true)?.name;
            let (kind, why) = ('f', "");
            Some(Known { kind, why, name })
        }
        _ => best,
    }
}

/// Whether options of `kind` take a value: the lower-case kinds but `f` (a harmless flag) and
/// `o` (whose value may only be attached), and `S`, `R`.
fn takes_value(kind: char) -> bool {
    (kind.is_lowercase() && !matches!(kind, 'f' | 'o')) || kind == 'S' || kind == 'R'
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
        // Go's flag package takes `--exec` for `-exec`.
        let opt = match opt.strip_prefix('-').filter(|o| go && o.starts_with('-')) {
            Some(one) => one.to_string(),
            None => opt,
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
            let kind = lookup(keys, &opt, false).map(|k| k.kind);
            let value = kind.is_some_and(takes_value);
            if value || matches!(kind, Some('O' | 'o')) {
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
        let Some(Known { kind, why, name }) = lookup(keys, opt, opt.len() > 2) else {
            if strict {
                let why = format!("an option the checker does not know (`{opt}`)");
                self.flags.push((Medium, why));
            }
            self.unknown.push(opt.to_string());
            self.guessed.extend(attached.filter(|v| pathlike(v)));
            return 0;
        };
        self.given.push(name);
        // An abbreviation is named with the option it may stand for.
        let opt = match name == opt {
            true => opt.to_string(),
            false => format!("{opt}` for `{name}"),
        };
        let opt = opt.as_str();
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
