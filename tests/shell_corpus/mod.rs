//! The shell-command corpus: `corpus.txt` holds one command a line as `EXPECTED<TAB>COMMAND`,
//! where EXPECTED is `low`, `medium`, `high` or `deny` (the decision is Deny: a built-in hard
//! deny or Scoped trust's refusal to write outside the project) under the default settings. Lines starting with `#` are family headers; blank lines are skipped.
//! COMMAND may use the escapes `\r` `\n` `\t` `\e` (ESC) `\\` and `\xNN`, and `@PORT@`,
//! `@UDP@` and `@SOCKET@` for a local TCP port, a local UDP port and the name of an abstract
//! Unix socket (listeners the test owns). The `low` commands are safe to run for real in a
//! scratch project.

#![allow(dead_code, clippy::unwrap_used)]

pub struct Entry {
    /// 1-based line in `corpus.txt`.
    pub line: usize,
    pub expected: String,
    pub command: String,
}

const CORPUS: &str = include_str!("corpus.txt");
const CLASSES: [&str; 4] = ["low", "medium", "high", "deny"];

/// How many lines of each class the corpus holds: a line added, lost or misread fails the
/// tests that judge and run every line.
pub const COUNTS: [(&str, usize); 4] = [("low", 164), ("medium", 213), ("high", 98), ("deny", 73)];

/// Where the corpus's network lines aim: listeners the test owns.
#[derive(Debug, Clone)]
pub struct Targets {
    pub tcp: u16,
    pub udp: u16,
    /// The name of an abstract Unix socket (without the leading NUL).
    pub socket: String,
}

impl Targets {
    /// Targets nobody listens on, for judging the lines without running them.
    pub fn unused() -> Targets {
        Targets {
            tcp: 47_113,
            udp: 47_114,
            socket: "tandem-corpus-unused".into(),
        }
    }
}

/// Every entry, with `@PORT@`, `@UDP@` and `@SOCKET@` replaced by `targets`. Panics, naming
/// the line, on a malformed one.
pub fn load(targets: &Targets) -> Vec<Entry> {
    let mut out = Vec::new();
    for (n, raw) in CORPUS.lines().enumerate() {
        let line = n + 1;
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let Some((expected, command)) = raw.split_once('\t') else {
            panic!("corpus.txt line {line}: no TAB between the class and the command: {raw:?}");
        };
        assert!(
            CLASSES.contains(&expected),
            "corpus.txt line {line}: unknown class {expected:?} (want one of {CLASSES:?})"
        );
        let command = unescape(command, line)
            .replace("@PORT@", &targets.tcp.to_string())
            .replace("@UDP@", &targets.udp.to_string())
            .replace("@SOCKET@", &targets.socket);
        assert!(
            !command.trim().is_empty(),
            "corpus.txt line {line}: empty command"
        );
        out.push(Entry {
            line,
            expected: expected.to_string(),
            command,
        });
    }
    out
}

fn unescape(text: &str, line: usize) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('e') => out.push('\u{1b}'),
            Some('\\') => out.push('\\'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let byte = u8::from_str_radix(&hex, 16)
                    .unwrap_or_else(|_| panic!("corpus.txt line {line}: bad \\x escape {hex:?}"));
                out.push(char::from(byte));
            }
            other => panic!("corpus.txt line {line}: unknown escape \\{other:?}"),
        }
    }
    out
}
