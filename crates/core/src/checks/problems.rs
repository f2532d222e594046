//! A check's output read as problems: file, line, column, severity, message — from the
//! formats of the usual tools (rustc/cargo, tsc, eslint, Python tracebacks and linters, go,
//! and the `path:line:col: message` form most others share). Lines that name no file are
//! left in the output only.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem a check reported, at a place in the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub column: Option<usize>,
    pub severity: Severity,
    pub message: String,
}

/// Problems past this many are not listed (the output still has them).
const MAX_PROBLEMS: usize = 200;

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Regex> =
            LazyLock::new(|| Regex::new($re).expect("a valid built-in pattern"));
    };
}

// rustc / cargo: `error[E0425]: message` then `  --> src/main.rs:3:5`.
pattern!(RUST_HEAD, r"^(error|warning)(?:\[\w+\])?: (.+)$");
pattern!(RUST_AT, r"^\s*--> (.+?):(\d+):(\d+)\s*$");
// tsc: `src/a.ts(3,5): error TS2304: message` or `src/a.ts:3:5 - error TS2304: message`.
pattern!(
    TSC,
    r"^(.+?)(?:\((\d+),(\d+)\):|:(\d+):(\d+) -) (error|warning) (TS\d+: .+)$"
);
// eslint stylish: a path line, then `  3:5  error  message  rule`.
pattern!(ESLINT_ROW, r"^\s+(\d+):(\d+)\s+(error|warning)\s+(.+?)\s*$");
// Python traceback: `  File "a.py", line 3` … last line `SyntaxError: message`.
pattern!(PY_FILE, r#"^\s*File "(.+?)", line (\d+)"#);
pattern!(
    PY_ERROR,
    r"^(\w+(?:Error|Exception)|SyntaxError|IndentationError): (.+)$"
);
// The common `path:line:col: message` and `path:line: message` (go, gcc, ruff, flake8, mypy).
pattern!(
    COLON,
    r"^(\.{0,2}/?[\w.@+\-/]+\.\w+):(\d+):(?:(\d+):)?\s*(?:(error|warning|note)\s*:?\s*)?(.+)$"
);

/// The problems in `output`, with paths made relative to the project: `roots` are the
/// directories the check ran in (absolute paths under them are made relative).
pub fn parse(output: &str, roots: &[&std::path::Path]) -> Vec<Problem> {
    let mut found = Vec::new();
    let lines: Vec<&str> = output.lines().collect();
    let mut rust_head: Option<(Severity, String)> = None;
    let mut eslint_file: Option<String> = None;
    let mut py_at: Option<(String, usize)> = None;
    for line in &lines {
        let line = line.trim_end();
        if let Some(c) = RUST_HEAD.captures(line) {
            rust_head = Some((severity(&c[1]), c[2].to_string()));
            continue;
        }
        if let Some(c) = RUST_AT.captures(line) {
            if let Some((severity, message)) = rust_head.take() {
                push(
                    &mut found,
                    roots,
                    &c[1],
                    &c[2],
                    Some(&c[3]),
                    severity,
                    message,
                );
            }
            continue;
        }
        if let Some(c) = TSC.captures(line) {
            let (l, col) = match (c.get(2), c.get(4)) {
                (Some(l), _) => (l.as_str(), c.get(3).map(|m| m.as_str())),
                (None, Some(l)) => (l.as_str(), c.get(5).map(|m| m.as_str())),
                _ => continue,
            };
            push(
                &mut found,
                roots,
                &c[1],
                l,
                col,
                severity(&c[6]),
                c[7].to_string(),
            );
            continue;
        }
        if let Some(c) = PY_FILE.captures(line) {
            if let Ok(n) = c[2].parse() {
                py_at = Some((c[1].to_string(), n));
            }
            continue;
        }
        if let Some(c) = PY_ERROR.captures(line) {
            if let Some((path, n)) = py_at.take() {
                let message = format!("{}: {}", &c[1], &c[2]);
                push(
                    &mut found,
                    roots,
                    &path,
                    &n.to_string(),
                    None,
                    Severity::Error,
                    message,
                );
            }
            continue;
        }
        if let (Some(file), Some(c)) = (&eslint_file, ESLINT_ROW.captures(line)) {
            push(
                &mut found,
                roots,
                file,
                &c[1],
                Some(&c[2]),
                severity(&c[3]),
                c[4].to_string(),
            );
            continue;
        }
        if let Some(c) = COLON.captures(line) {
            let kind = c.get(4).map(|m| m.as_str());
            if kind == Some("note") {
                continue;
            }
            let severity = kind.map_or(Severity::Error, severity);
            push(
                &mut found,
                roots,
                &c[1],
                &c[2],
                c.get(3).map(|m| m.as_str()),
                severity,
                c[5].to_string(),
            );
            continue;
        }
        // A bare path on its own line starts an eslint block.
        let bare = line.trim();
        eslint_file = (!bare.is_empty()
            && !bare.contains(' ')
            && bare.rsplit_once('.').is_some_and(|(_, ext)| ext.len() <= 5))
        .then(|| bare.to_string())
        .or(eslint_file.filter(|_| !bare.is_empty()));
    }
    found.dedup();
    found.truncate(MAX_PROBLEMS);
    found
}

fn severity(word: &str) -> Severity {
    match word {
        "warning" => Severity::Warning,
        _ => Severity::Error,
    }
}

fn push(
    found: &mut Vec<Problem>,
    roots: &[&std::path::Path],
    path: &str,
    line: &str,
    column: Option<&str>,
    severity: Severity,
    message: String,
) {
    let (Some(path), Ok(line)) = (relative(path, roots), line.parse::<usize>()) else {
        return;
    };
    if line == 0 {
        return;
    }
    found.push(Problem {
        path,
        line,
        column: column.and_then(|c| c.parse().ok()),
        severity,
        message: message.trim().to_string(),
    });
}

/// `path` relative to the project: absolute paths under one of `roots` are made relative,
/// `./` is dropped; anything else outside the project (a dependency's file) is `None`.
fn relative(path: &str, roots: &[&std::path::Path]) -> Option<String> {
    let path = std::path::Path::new(path);
    let rel = match path.is_absolute() {
        true => roots.iter().find_map(|root| path.strip_prefix(root).ok())?,
        false => path,
    };
    crate::folder::normalize_relative(&rel.to_string_lossy()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn at(p: &Problem) -> (String, usize, Option<usize>, Severity) {
        (p.path.clone(), p.line, p.column, p.severity)
    }

    #[test]
    fn rustc_errors_and_warnings() {
        let out = "   Compiling app v0.1.0\n\
                   error[E0425]: cannot find value `x` in this scope\n \
                   --> src/main.rs:3:5\n  |\n3 |     x\n  |     ^ not found\n\n\
                   warning: unused variable: `y`\n --> src/lib.rs:10:9\n\
                   error: could not compile `app` (bin \"app\") due to 1 previous error\n";
        let found = parse(out, &[]);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            at(&found[0]),
            ("src/main.rs".into(), 3, Some(5), Severity::Error)
        );
        assert_eq!(found[0].message, "cannot find value `x` in this scope");
        assert_eq!(
            at(&found[1]),
            ("src/lib.rs".into(), 10, Some(9), Severity::Warning)
        );
    }

    #[test]
    fn tsc_both_styles() {
        let out = "src/a.ts(3,5): error TS2304: Cannot find name 'x'.\n\
                   src/b.ts:7:1 - error TS1005: ';' expected.\n";
        let found = parse(out, &[]);
        assert_eq!(
            at(&found[0]),
            ("src/a.ts".into(), 3, Some(5), Severity::Error)
        );
        assert_eq!(found[0].message, "TS2304: Cannot find name 'x'.");
        assert_eq!(
            at(&found[1]),
            ("src/b.ts".into(), 7, Some(1), Severity::Error)
        );
    }

    #[test]
    fn eslint_stylish() {
        let out = "\n/work/p/src/app.js\n  3:5   error    'x' is not defined  no-undef\n  \
                   9:1   warning  Unexpected console statement  no-console\n\n✖ 2 problems\n";
        let found = parse(out, &[Path::new("/work/p")]);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            at(&found[0]),
            ("src/app.js".into(), 3, Some(5), Severity::Error)
        );
        assert_eq!(
            at(&found[1]),
            ("src/app.js".into(), 9, Some(1), Severity::Warning)
        );
    }

    #[test]
    fn python_tracebacks_and_linters() {
        let out = "*** Error compiling './pkg/mod.py'...\n  File \"./pkg/mod.py\", line 4\n    \
                   def f(:\n          ^\nSyntaxError: invalid syntax\n\
                   app.py:12:1: F821 undefined name 'y'\n";
        let found = parse(out, &[]);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            at(&found[0]),
            ("pkg/mod.py".into(), 4, None, Severity::Error)
        );
        assert_eq!(found[0].message, "SyntaxError: invalid syntax");
        assert_eq!(
            at(&found[1]),
            ("app.py".into(), 12, Some(1), Severity::Error)
        );
    }

    #[test]
    fn go_vet_and_paths_outside_the_project() {
        let out = "# example.com/app\n./main.go:5:2: undefined: x\n\
                   /usr/lib/go/src/fmt/print.go:1:1: something\n../other/x.go:1:1: outside\n";
        let found = parse(out, &[Path::new("/tmp/scratch")]);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            at(&found[0]),
            ("main.go".into(), 5, Some(2), Severity::Error)
        );
        assert_eq!(found[0].message, "undefined: x");
    }
}
