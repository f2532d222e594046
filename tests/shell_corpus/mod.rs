//! The shell-command corpus: `corpus.txt` holds one command a line as `EXPECTED<TAB>COMMAND`,
//! where EXPECTED is `low`, `medium`, `high` or `deny` (the decision is Deny: a built-in hard
//! deny or Scoped trust's refusal to write outside the project) under the default settings. Lines starting with `#` are family headers; blank lines are skipped.
//! COMMAND may use the escapes `\r` `\n` `\t` `\e` (ESC) `\\` and `\xNN`, and `@PORT@` for a
//! local TCP port. The `low` commands are safe to run for real in a scratch project.

#![allow(dead_code, clippy::unwrap_used)]

pub struct Entry {
    /// 1-based line in `corpus.txt`.
    pub line: usize,
    pub expected: String,
    pub command: String,
}

const CORPUS: &str = include_str!("corpus.txt");
const CLASSES: [&str; 4] = ["low", "medium", "high", "deny"];

/// Every entry, with `@PORT@` replaced by `port`. Panics, naming the line, on a malformed one.
pub fn load(port: u16) -> Vec<Entry> {
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
        let command = unescape(command, line).replace("@PORT@", &port.to_string());
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
