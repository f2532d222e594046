//! The programs `rules::classify` hands over for a closer look at their arguments:
//! shells, formatters, sed scripts, git settings and package.json scripts.

use super::*;

pub(super) fn never(fx: &mut Effects, why: &'static str) -> (Risk, &'static str) {
    fx.hard = Some(why);
    (High, why)
}

pub(super) fn shell(args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    let flag = |a: &String| a.starts_with('-') && !a.starts_with("--") && a.contains('c');
    let at = args.iter().position(flag);
    // `-i`, `-l`, `--rcfile`…: startup files the checker does not see run first.
    let before = args.iter().take(at.unwrap_or(args.len()));
    let startup = |a: &String| {
        let short = a.starts_with('-') && !a.starts_with("--") && a.contains(['i', 'l']);
        short || (a.starts_with("--") && !among(a, "--norc --noprofile --posix"))
    };
    if before.clone().any(startup) {
        let why = "shell options that load startup files".to_string();
        fx.flags.push((Medium, why));
    }
    match at.and_then(|c| args.get(c + 1)) {
        Some(code) => {
            fx.inner.push(code.clone());
            (Low, "runs a command in a shell")
        }
        None if operands(args, "").is_empty() => (High, "runs shell commands from its input"),
        None => (High, "runs a shell script"),
    }
}

pub(super) fn formatter(name: &str, args: &[String]) -> (Risk, &'static str) {
    let has = |flags: &str| args.iter().any(|a| among(a, flags));
    let ruff_format = name == "ruff" && args.first().is_some_and(|a| a == "format");
    let by_default = among(name, "rustfmt black isort") || ruff_format;
    let check = has("--check -l --list-different -d --diff --dry-run");
    match has("-w --write -i --fix --in-place") || (by_default && !check) {
        true => (Medium, "formats files"),
        false => (Low, "checks formatting or lints"),
    }
}

/// Whether a sed script may run commands (`e`, `s///e`) or write files (`w`, `W`, `s///w`).
pub(super) fn sed_acts(code: &str) -> bool {
    let c: Vec<char> = code.chars().collect();
    // The index after a field ending in an unescaped `d`.
    let field = |mut k: usize, d: char| {
        while k < c.len() && c[k] != d {
            k += 1 + usize::from(c[k] == '\\');
        }
        k + 1
    };
    let mut k = 0;
    while let Some(&ch) = c.get(k) {
        k = match ch {
            '/' => field(k + 1, '/'),
            '\\' => c.get(k + 1).map_or(c.len(), |&d| field(k + 2, d)),
            's' | 'y' => {
                let Some(&d) = c.get(k + 1) else { return false };
                let mut end = field(field(k + 2, d), d);
                while end < c.len() && !";\n}".contains(c[end]) {
                    if ch == 's' && "ew".contains(c[end]) {
                        return true;
                    }
                    end += 1;
                }
                end
            }
            'e' | 'w' | 'W' => return true,
            // Commands whose argument (text, label, file) runs to the end of the command.
            'a' | 'i' | 'c' | ':' | 'b' | 't' | 'T' | 'r' | 'R' | 'q' | 'Q' | 'l' | 'L' => {
                let len = c[k..]
                    .iter()
                    .take_while(|&&x| x != ';' && x != '\n')
                    .count();
                k + len + 1
            }
            _ => k + 1,
        };
    }
    false
}

/// Setting a git configuration key; keys that name programs to run are high risk.
pub(super) fn git_config(key: &str) -> (Risk, &'static str) {
    let key = key.to_ascii_lowercase();
    let runs = [
        "pager",
        "editor",
        "fsmonitor",
        "hookspath",
        "sshcommand",
        "askpass",
        "external",
        "textconv",
        "command",
        "program",
        "cmd",
        "tool",
        "helper",
        "alias.",
        "filter.",
        "exec",
        "proxy",
        "sequence",
        "gpg",
        "clean",
        "smudge",
        "process",
        "template",
    ];
    match runs.iter().any(|r| key.contains(r)) {
        true => (High, "sets a git option that runs programs"),
        false => (Medium, "changes git settings"),
    }
}

/// A package.json script: checks (`test`, `lint`, `typecheck`, `…:check`) are low risk.
pub(super) fn script(name: &str) -> (Risk, &'static str) {
    let head = name.split(':').next().unwrap_or_default();
    let checks =
        among(head, "test lint check typecheck type-check tsc") || name.ends_with(":check");
    let changes = ["fix", "write", "update"].iter().any(|w| name.contains(w));
    match name {
        "" => (Low, "lists scripts"),
        _ if checks && !changes => (Low, "runs a check script"),
        _ => (Medium, "runs a project script"),
    }
}
