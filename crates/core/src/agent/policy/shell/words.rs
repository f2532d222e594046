//! Reading a simple command's words: the program a word names, the wrappers and assignments
//! in front of it, operands and option values, and quoting a word back.

use super::{Cmd, among};
use crate::agent::policy::Risk;
use crate::agent::policy::options::{STRICT, Scan, scan};

/// Programs that fetch from the network.
const DOWNLOADERS: &str = "curl wget aria2c http https fetch";
const BIN_DIRS: &str = "/bin /sbin /usr/bin /usr/sbin /usr/local/bin /usr/local/sbin \
                        /opt/homebrew/bin";

/// The program a word names: `/usr/bin/rm` is `rm`, but `./ls` is a script, not `ls`.
pub(in crate::agent) fn program(word: &str) -> &str {
    match word.rsplit_once('/') {
        Some((dir, name)) if among(dir, BIN_DIRS) => name,
        _ => word,
    }
}

pub(in crate::agent) fn is_assignment(word: &str) -> bool {
    let name = word.split_once('=').map_or("", |(k, _)| k);
    let ident = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident && name.starts_with(|c: char| !c.is_ascii_digit())
}

/// Skips assignments and wrappers (`env`, `sudo`, `nohup`, `time`, `xargs`…): the index of
/// the program that really runs, and whether it runs as root.
pub(in crate::agent) fn unwrap(words: &[String]) -> (usize, bool) {
    let u = unwrap_all(words);
    (u.at, u.elevated)
}

/// What the wrappers and assignments before a program do.
#[derive(Default)]
pub(in crate::agent) struct Unwrapped {
    /// The index of the program that really runs (`words.len()` when none does).
    pub(in crate::agent) at: usize,
    pub(in crate::agent) elevated: bool,
    /// The names of the variables set for it (`FOO=1 cmd`, `env FOO=1 cmd`).
    pub(in crate::agent) names: Vec<String>,
    /// `xargs` feeds its input to the program as arguments.
    pub(in crate::agent) xargs: bool,
    /// What the wrappers' options do (`env -S`, `time -o FILE`, options nobody knows).
    pub(in crate::agent) scan: Scan,
}

/// Reads the assignments and wrappers in front of a program.
pub(in crate::agent) fn unwrap_all(words: &[String]) -> Unwrapped {
    let mut u = Unwrapped::default();
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let rest = words.get(i + 1..).unwrap_or_default();
        if is_assignment(w) {
            u.names
                .extend(w.split_once('=').map(|(k, _)| k.to_string()));
            i += 1;
            continue;
        }
        let name = program(w);
        let version = rest.first().is_some_and(|a| a == "-v" || a == "-V");
        if !among(name, STRICT) || (name == "command" && version) {
            break;
        }
        let s = scan(&[name], rest, false, true);
        i += 1 + s.used;
        match name {
            "sudo" | "doas" => u.elevated = true,
            "exec" => {
                let why = "`exec` replaces the shell or changes its file descriptors";
                u.scan.flags.push((Risk::Medium, why.into()));
            }
            // The duration comes before the command.
            "timeout" => i += usize::from(i < words.len()),
            "xargs" => u.xargs = true,
            _ => {}
        }
        let split = s
            .special
            .iter()
            .find(|(kind, _)| *kind == 'S')
            .map(|(_, v)| v.clone());
        merge(&mut u.scan, s);
        if let Some(split) = split {
            // `env -S 'a b' c`: the string is split into words that run, before the rest.
            let tail = words.get(i..).unwrap_or_default().iter().map(|w| quote(w));
            let command: Vec<String> = std::iter::once(split).chain(tail).collect();
            u.scan.inner.push(command.join(" "));
            let why = "`env -S` splits a string into a command line";
            u.scan.flags.push((Risk::Medium, why.into()));
            i = words.len();
            break;
        }
    }
    u.at = i.min(words.len());
    u
}

pub(in crate::agent) fn merge(into: &mut Scan, from: Scan) {
    into.reads.extend(from.reads);
    into.writes.extend(from.writes);
    into.flags.extend(from.flags);
    into.inner.extend(from.inner);
    into.names.extend(from.names);
}

/// The non-option arguments, skipping the values of `with_value` options.
pub(in crate::agent) fn operands(args: &[String], with_value: &str) -> Vec<String> {
    let (mut out, mut i, mut only) = (Vec::new(), 0, false);
    while let Some(a) = args.get(i) {
        if a == "--" && !only {
            only = true;
        } else if only || !a.starts_with('-') {
            out.push(a.clone());
        } else if among(a, with_value) {
            i += 1;
        }
        i += 1;
    }
    out
}

pub(in crate::agent) fn option_value(args: &[String], names: &str) -> Option<String> {
    args.iter()
        .enumerate()
        .find_map(|(i, a)| match among(a, names) {
            true => args.get(i + 1).cloned(),
            false => names
                .split(' ')
                .find_map(|n| a.strip_prefix(&format!("{n}=")))
                .map(Into::into),
        })
}

pub(in crate::agent) fn quote(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%{}".contains(c));
    match plain && !word.is_empty() {
        true => word.to_string(),
        false => format!("'{}'", word.replace('\'', r"'\''")),
    }
}

/// Whether `cmd` runs a downloader (`curl`, `wget`…), even behind `sudo` or `env`.
pub(in crate::agent::policy) fn is_download(cmd: &Cmd) -> bool {
    let (at, _) = unwrap(&cmd.words);
    cmd.words
        .get(at)
        .is_some_and(|w| among(program(w), DOWNLOADERS))
}
