//! The families of programs with subcommands (git, cargo, npm with pnpm, yarn and bun, go,
//! pip): their global options, the subcommand, its options and what it passes on after `--`.

use super::*;

/// git's subcommands that print files' contents as they were: by a `rev:path`, by a path, or
/// as the patches of the paths named.
const GIT_SHOWS_FILES: &str =
    "show log diff blame annotate cat-file grep whatchanged format-patch archive";

/// The options of a family program: its global ones and its subcommand's.
pub(super) fn family_options(name: &str, args: &[String], fx: &mut Effects) {
    let (fam, at, sub, second) = subcommand(name, args);
    let global = scan(
        &[fam],
        args.get(..at).unwrap_or_default(),
        fam == "go",
        false,
    );
    fx.absorb(global);
    // `git stash list` and `git reflog` take log options, `git stash show` diff options.
    let like = match (fam, sub, second) {
        ("git", "stash", "list") | ("git", "reflog", _) => "git:log",
        ("git", "stash", "show") => "git:diff",
        _ => "",
    };
    let keys = [format!("{fam}:{sub}"), format!("{fam}:*"), like.to_string()];
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let rest = args.get(at + 1..).unwrap_or_default();
    let found = scan(&keys, rest, fam == "go", false);
    let operands = fx.absorb(found);
    if fam == "git" && sub == "diff" && args.iter().any(|a| a == "--no-index") {
        fx.reads.extend(operands);
    } else if fam == "git" && among(sub, GIT_SHOWS_FILES) {
        // What these print goes to the model: a file whose name looks secret, named as a
        // path or as `rev:path`, is a read to ask about (its revs and other names are not).
        for operand in operands {
            let path = match operand.split_once(':') {
                Some((_, path)) if !operand.contains("://") => path,
                _ => operand.as_str(),
            };
            if crate::folder::looks_secret(path) {
                fx.reads.push(path.to_string());
            }
        }
    }
    passed_on(fam, sub, rest, fx);
}

/// The arguments after `--`, which cargo passes to the test harness or the compiler
/// (`cargo test -- --logfile F` writes F) and npm to a package script (`npm run lint -- --fix`).
fn passed_on(fam: &str, sub: &str, rest: &[String], fx: &mut Effects) {
    let Some(at) = rest.iter().position(|a| a == "--") else {
        return;
    };
    let passed = rest.get(at + 1..).unwrap_or_default();
    let key = match (fam, sub) {
        ("cargo", "test" | "t" | "bench" | "nextest") => "libtest",
        ("cargo", "clippy") => "rustc-lints",
        ("npm", _) => {
            // A package script's options are the script's own business: asked about.
            let options = passed.iter().filter(|a| a.starts_with('-'));
            fx.unknown.extend(options.cloned());
            return;
        }
        _ => return,
    };
    let found = scan(&[key], passed, false, false);
    for opt in &found.unknown {
        let why = format!("passes on an option the checker does not know (`{opt}`)");
        fx.flags.push((Medium, why));
    }
    fx.absorb(found);
}

/// git, cargo, npm (pnpm, yarn, bun), go, pip: by subcommand and a few telling flags.
pub(super) fn family(name: &str, args: &[String]) -> (Risk, &'static str) {
    let (fam, at, sub, second) = subcommand(name, args);
    let before = args.iter().take(at);
    let tail = args.iter().skip(at + 1);
    let has = |flags: &str| tail.clone().any(|a| among(a, flags));
    let discard = Some((High, "discards uncommitted changes"));
    let special = match (fam, sub) {
        ("git", _) if before.clone().any(|a| among(a, "-c --config-env")) => {
            Some((High, "overrides git configuration"))
        }
        ("git", "branch" | "tag") if has("-d -D --delete") => {
            Some((High, "deletes a branch or tag"))
        }
        ("git", "branch" | "tag") if !second.is_empty() || has("-m -M -c -C") => {
            Some((Medium, "creates or renames a branch or tag"))
        }
        ("git", "stash") if among(second, "list show") => Some((Low, "reads the repository")),
        ("git", "stash") if among(second, "drop clear") => Some((High, "drops stashed changes")),
        ("git", "remote") if among(second, "add rename remove rm set-url set-head") => {
            Some((Medium, "changes git settings"))
        }
        ("git", "remote") if !among(second, "get-url") && !second.is_empty() => {
            Some((High, "uses the network"))
        }
        ("git", "config") if !has("--get --get-all --get-regexp --list -l") => {
            Some(git_config(second))
        }
        // Without `--local`, reading shows ~/.gitconfig too (tokens in URLs, helpers).
        ("git", "config") if !has("--local --worktree") => {
            Some((Medium, "shows git settings from outside the project"))
        }
        ("git", "bisect") if second == "run" => Some((High, "runs a command on each commit")),
        ("go", "env") if has("-w -u") => Some((High, "changes Go's settings")),
        ("git", "clean") if has("-n --dry-run") => Some((Low, "previews a clean")),
        ("git", "reset") if has("--hard --merge --keep") => discard,
        ("git", "checkout") if has("-- . -f --force") => discard,
        ("git", "restore") if has("--worktree -W") || !has("--staged -S") => discard,
        ("git", "rm") if has("--cached") => Some((Medium, "changes the repository")),
        ("git", "reflog") if !among(second, "show") && !second.is_empty() => {
            Some((High, "rewrites history"))
        }
        ("cargo", "clippy") if has("--fix") => Some((Medium, "changes files in the project")),
        ("cargo", "fmt") if has("--check") => Some((Low, "checks formatting")),
        ("npm", "") if name == "yarn" => Some((High, "installs packages")),
        ("npm", "run" | "run-script") => Some(script(second)),
        _ => None,
    };
    let key = if sub.is_empty() {
        fam.to_string()
    } else {
        format!("{fam}:{sub}")
    };
    let scripts = fam == "npm" && name != "npm";
    let fallback = if scripts {
        script(sub)
    } else {
        (High, "unknown command")
    };
    special.or_else(|| rule(&key)).unwrap_or(fallback)
}

/// The family (`npm` for pnpm, yarn and bun), the subcommand's index, the subcommand, and
/// the operand after it. Global options (`git -C dir`, `cargo +nightly`) come before it.
pub(in crate::agent::policy) fn subcommand<'a>(
    name: &'a str,
    args: &'a [String],
) -> (&'a str, usize, &'a str, &'a str) {
    let fam = match name {
        "pnpm" | "yarn" | "bun" => "npm",
        "pip3" => "pip",
        _ => name,
    };
    let mut at = 0;
    loop {
        let rest = args.get(at..).unwrap_or_default();
        at += scan(&[fam], rest, fam == "go", true).used;
        match args.get(at) {
            Some(a) if a.starts_with('+') => at += 1,
            _ => break,
        }
    }
    let word = |w: Option<&'a String>| w.map_or("", String::as_str);
    let sub = word(args.get(at));
    let after = args.get(at + 1..).unwrap_or_default();
    let second = word(after.iter().find(|a| !a.starts_with('-')));
    (fam, at.min(args.len()), sub, second)
}
