//! `find`, read as GNU find reads it: its options before the starting points (`-H`, `-L`,
//! `-P`, `-D opts`, `-Olevel`), the starting points, then an expression whose primaries are
//! spelled with one dash (`-delete`, `-fprint FILE`, `-exec … ;`). A primary the checker does
//! not know makes the command medium risk, whatever it is an abbreviation or a misspelling of.

use super::*;

/// Primaries that take no argument (operators included).
const BARE: &str = "-depth -d -follow -xdev -mount -noleaf -ignore_readdir_race \
                    -noignore_readdir_race -daystart -warn -nowarn -help --help -version \
                    --version -empty -executable -readable -writable -false -true -nogroup \
                    -nouser -print -print0 -ls -prune -quit -a -and -o -or -not ( ) ! ,";
/// Primaries that take one harmless argument (`-printf` only prints to standard output).
const ONE: &str = "-maxdepth -mindepth -regextype -amin -atime -cmin -ctime -mmin -mtime -gid \
                   -uid -group -user -ilname -iname -inum -ipath -iregex -iwholename -links \
                   -lname -name -path -perm -regex -size -type -xtype -wholename -fstype -used \
                   -context -printf";
/// Primaries whose argument is a file find reads (its times, or names to start from).
const READS: &str = "-samefile -newer -anewer -cnewer -files0-from";
/// Primaries whose argument is a file find writes; `-fprintf` takes a format after it.
const WRITES: &str = "-fprint -fprint0 -fls -fprintf";

pub(super) fn find(args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    // Options come before the starting points: `find -L / -delete` starts at `/`.
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            "--" => {
                i += 1;
                break;
            }
            _ if a.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let rest = args.get(i..).unwrap_or_default();
    let expression = |a: &String| a.starts_with('-') || among(a, "( ) ! ,");
    let n = rest.iter().take_while(|a| !expression(a)).count();
    let mut starts = rest[..n].to_vec();
    if starts.is_empty() {
        starts.push(".".into());
    }
    fx.reads.clone_from(&starts);
    // What find acts on lies below its starting points.
    let below: Vec<String> = starts
        .iter()
        .map(|s| format!("{}/{{}}", s.trim_end_matches('/')))
        .collect();
    let (mut risk, mut i) = ((Low, "read-only"), n);
    while let Some(a) = rest.get(i) {
        let value = rest.get(i + 1).cloned();
        i += 1;
        match a.as_str() {
            "-delete" => {
                fx.writes.extend(below.iter().cloned());
                fx.recursive = true;
                risk = (High, "deletes files");
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let tail = rest.get(i..).unwrap_or_default();
                let len = tail.iter().take_while(|a| !among(a, "; +")).count();
                exec(&tail[..len], &below, fx);
                i += len + 1;
            }
            _ if among(a, WRITES) => {
                fx.writes.extend(value);
                risk = risk.max((Medium, "writes files"));
                i += 1 + usize::from(a == "-fprintf");
            }
            _ if among(a, READS) || newer(a, true) => {
                fx.reads.extend(value);
                i += 1;
            }
            _ if among(a, ONE) || newer(a, false) => i += 1,
            _ if among(a, BARE) || !a.starts_with('-') => {}
            _ => {
                let why = format!("a `find` expression the checker does not know (`{a}`)");
                fx.flags.push((Medium, why));
            }
        }
    }
    risk
}

/// `-newerXY`: with `reference` whether its argument is a file (`-newermm f`) rather than a
/// time (`-newermt '1 day ago'`).
fn newer(a: &str, reference: bool) -> bool {
    let Some(xy) = a.strip_prefix("-newer") else {
        return false;
    };
    let mut c = xy.chars();
    let times = |c: Option<char>| c.is_some_and(|c| "amcBt".contains(c));
    let (x, y) = (c.next(), c.next());
    let valid = times(x) && times(y) && c.next().is_none() && x != Some('t');
    valid && (y != Some('t')) == reference
}

/// `-exec cmd {} ;`: the command runs on each file below the starting points.
fn exec(words: &[String], below: &[String], fx: &mut Effects) {
    // `-exec sh -c 'cat {}'`: file names become shell code.
    let runner = words.first().is_some_and(|p| among(program(p), RUNNERS));
    if runner && words.iter().any(|w| w.contains("{}") && w != "{}") {
        let why = "puts file names into code it runs".to_string();
        fx.flags.push((Medium, why));
    }
    let start = below.first().cloned().unwrap_or_default();
    let words = words.iter().map(|w| match w == "{}" {
        true => start.clone(),
        false => quote(w),
    });
    fx.inner.push(words.collect::<Vec<_>>().join(" "));
}
