//! The user's deny, ask and allow patterns: glob matching against tool names and commands,
//! and the "always allow" pattern suggested for a command. `policy::decide` applies them.

use std::path::Path;

use super::facts::{Ctx, Kind, Part};
use super::shell::{among, program};

/// The "always allow" pattern for the riskiest part of `command`: program and subcommand
/// (`cargo test -p foo` → `cargo test*`, `npm run lint` → `npm run lint*`), `ls *` for a
/// program without subcommands, or the bare program when it had no arguments.
pub fn allow_pattern_for(command: &str) -> String {
    let mut ctx = Ctx::new(Path::new("/"), Kind::Shell);
    ctx.run(command, 0, None);
    let parts = ctx.finish().parts;
    let moves = |p: &&Part| {
        among(
            p.core.split(' ').next().unwrap_or_default(),
            "cd pushd popd",
        )
    };
    let acting: Vec<&Part> = parts.iter().filter(|p| !moves(p)).collect();
    let pool = if acting.is_empty() {
        parts.iter().collect()
    } else {
        acting
    };
    let top = pool.iter().map(|p| p.risk).max();
    let Some(part) = pool.into_iter().find(|p| Some(p.risk) == top) else {
        return squash(command);
    };
    let words: Vec<&str> = part.core.split_whitespace().collect();
    let name = words.first().map_or("", |w| program(w));
    let second = words.get(1).copied().unwrap_or_default();
    let depth = match name {
        "npm" | "pnpm" | "yarn" | "bun" if among(second, "run run-script") => 2,
        "python" | "python3" if second == "-m" => 2,
        _ if among(
            name,
            "git cargo npm pnpm yarn bun go pip pip3 uv docker kubectl gh apt apt-get brew dnf",
        ) =>
        {
            1
        }
        _ => 0,
    };
    let sub = |w: &&&str| {
        let plain = w
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c));
        **w == "-m" || (plain && !w.starts_with('-'))
    };
    let mut prefix: Vec<&str> = words.iter().take(1).copied().collect();
    prefix.extend(words.iter().skip(1).take(depth).take_while(sub));
    // Never wider than the program and its subcommand: when the subcommand is not plain
    // (`git -c x=y push`, a pattern as the program), only the exact command is suggested.
    let glob = |w: &str| w.contains(['*', '?', '[']);
    let sudo = if part.elevated { "sudo " } else { "" };
    if prefix.len() < 1 + depth.min(words.len().saturating_sub(1)) || glob(name) {
        return squash(&format!("{sudo}{}", part.core));
    }
    let joined = format!("{sudo}{}", prefix.join(" "));
    match (prefix.len(), words.len()) {
        (2.., _) => format!("{joined}*"),
        (_, 2..) => format!("{joined} *"),
        _ => joined,
    }
}

/// Whether a user pattern matches: `tool:` patterns the tool name, others a command text.
pub(super) fn fires(pattern: &str, tool: &str, commands: &[&str]) -> bool {
    match pattern.strip_prefix("tool:") {
        Some(p) => glob(p, tool),
        None => commands.iter().any(|c| glob(pattern, c)),
    }
}

/// Glob match: `*` any text, `?` one character; whitespace runs compare as one space.
pub(super) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = squash(pattern).chars().collect();
    let t: Vec<char> = squash(text).chars().collect();
    let (mut pi, mut ti, mut star) = (0, 0, None);
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => (star, pi) = (Some((pi, ti)), pi + 1),
            Some(&c) if c == '?' || c == t[ti] => (pi, ti) = (pi + 1, ti + 1),
            _ => match star {
                Some((sp, st)) => (pi, ti, star) = (sp + 1, st + 1, Some((sp, st + 1))),
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_patterns() {
        assert!(glob("git push*", "git push"));
        assert!(glob("git push*", "git  push   origin"));
        assert!(glob("*test*", "cargo test -p x"));
        assert!(glob("cargo t?st", "cargo test"));
        assert!(!glob("git push*", "git pull"));
        assert!(!glob("npm run lint", "npm run lint --fix"));
        assert!(glob("", ""));
        assert!(!glob("", "x"));
    }
}
