//! The programs `rules::classify` hands over for a closer look at their arguments:
//! shells, formatters, arithmetic builtins, git settings and package.json scripts.

use super::*;
use crate::agent::policy::shell::literal_arithmetic;

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

/// Builtins that make bash evaluate a variable's text as arithmetic, whose array subscripts
/// run commands: `[[ x -eq y ]]` on non-literal operands, `-v a[i]`, `unset a[i]`, and
/// `declare -i`/`-n` (later values are evaluated, or name array elements).
pub(super) fn arithmetic(name: &str, args: &[String], fx: &mut Effects) {
    let subscript = |a: &String| a.contains('[');
    let compares = "-eq -ne -lt -le -gt -ge";
    let operands = |k: usize| [k.checked_sub(1), Some(k + 1)].into_iter().flatten();
    let evaluated = match name {
        "[[" => args.iter().enumerate().any(|(k, a)| {
            let literal = |j: usize| args.get(j).is_some_and(|o| literal_arithmetic(o));
            (among(a, compares) && !operands(k).all(literal))
                || (a == "-v" && args.get(k + 1).is_some_and(subscript))
        }),
        "[" | "test" => args.windows(2).any(|p| p[0] == "-v" && subscript(&p[1])),
        "unset" => args.iter().any(subscript),
        _ => args.iter().any(|a| {
            let short = a.starts_with('-') && !a.starts_with("--");
            (short && a.contains(['i', 'n']))
                || a.split('=').next().is_some_and(|n| n.contains('['))
        }),
    };
    if evaluated {
        let why = "makes bash evaluate a variable's text as arithmetic, whose array subscripts \
                   can run commands"
            .to_string();
        fx.flags.push((Medium, why));
    }
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
