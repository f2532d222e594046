//! The small script languages of "read-only" text tools: sed scripts can run commands (`e`,
//! `s///e`), write files (`w`, `W`, `s///w`) and read them (`r`, `R`); awk programs can run
//! commands (`system`, pipes), write (`print > f`), read (`getline`, `ARGV`) and see the
//! environment (`ENVIRON`). A script the checker cannot read with certainty (from a file, or
//! built at run time from a variable) is not low risk.

use super::*;

/// What a sed script does besides editing its input.
#[derive(Default)]
pub(super) struct SedActs {
    /// It runs commands or writes files.
    pub(super) acts: bool,
    /// The files it reads (`r FILE`, `R FILE`).
    pub(super) reads: Vec<String>,
}

/// Reads a sed script: `e`, `s///e` run commands, `w`, `W`, `s///w` write files, `r`, `R` read
/// the file named to the end of the line. Unsure readings count as acting.
pub(super) fn sed_acts(code: &str) -> SedActs {
    let mut out = SedActs::default();
    let c: Vec<char> = code.chars().collect();
    // The index after a field ending in an unescaped `d`.
    let field = |mut k: usize, d: char| {
        while k < c.len() && c[k] != d {
            k += 1 + usize::from(c[k] == '\\');
        }
        k + 1
    };
    let line = |k: usize| {
        c[k..]
            .iter()
            .take_while(|&&x| x != '\n')
            .collect::<String>()
    };
    let mut k = 0;
    while let Some(&ch) = c.get(k) {
        k = match ch {
            '/' => field(k + 1, '/'),
            '\\' => c.get(k + 1).map_or(c.len(), |&d| field(k + 2, d)),
            's' | 'y' => {
                let Some(&d) = c.get(k + 1) else {
                    out.acts = true;
                    return out;
                };
                let mut end = field(field(k + 2, d), d);
                while end < c.len() && !";\n}".contains(c[end]) {
                    out.acts |= ch == 's' && "ew".contains(c[end]);
                    end += 1;
                }
                end
            }
            'e' | 'w' | 'W' => {
                out.acts = true;
                return out;
            }
            // Commands whose argument (text, label, file) runs to the end of the command.
            'a' | 'i' | 'c' | ':' | 'b' | 't' | 'T' | 'r' | 'R' | 'q' | 'Q' | 'l' | 'L' => {
                if matches!(ch, 'r' | 'R') {
                    // GNU sed reads the file name to the end of the line.
                    out.reads.push(line(k + 1).trim().to_string());
                }
                let len = c[k..]
                    .iter()
                    .take_while(|&&x| x != ';' && x != '\n')
                    .count();
                k + len + 1
            }
            _ => k + 1,
        };
    }
    out
}

/// sed (given its options' `scripts` and `files`, the operands): scripts that act are high
/// risk, files they read are judged as reads.
pub(super) fn sed(
    scripts: Vec<String>,
    from_file: bool,
    in_place: bool,
    mut files: Vec<String>,
    fx: &mut Effects,
) -> (Risk, &'static str) {
    let mut scripts = scripts;
    if scripts.is_empty() && !from_file && !files.is_empty() {
        scripts.push(files.remove(0));
    }
    for code in &scripts {
        let acts = sed_acts(code);
        if acts.acts {
            return (High, "a sed script that runs commands or writes files");
        }
        fx.reads.extend(acts.reads);
    }
    if fx.expands {
        let why = "a sed script or file built at run time".to_string();
        fx.flags.push((Medium, why));
    }
    if in_place {
        fx.writes.extend(files);
        return (Medium, "edits files in place");
    }
    fx.reads.extend(files);
    (Low, "read-only")
}

/// awk (`awk`, `gawk`, `mawk`, `nawk`), given the program texts of `-e`/`--source`, whether one
/// comes from a file, and the operands: the first operand is the program unless one was given,
/// the others are files it reads or `name=value` assignments.
pub(super) fn awk(
    sources: Vec<String>,
    from_file: bool,
    mut files: Vec<String>,
    fx: &mut Effects,
) -> (Risk, &'static str) {
    let mut sources = sources;
    if sources.is_empty() && !from_file && !files.is_empty() {
        sources.push(files.remove(0));
    }
    if fx.expands {
        let why = "an awk program or file built at run time".to_string();
        fx.flags.push((Medium, why));
    }
    let mut found = (Low, "reads files");
    for code in &sources {
        found = found.max(awk_acts(code));
    }
    let assignment = |f: &String| f.split_once('=').is_some_and(|(n, _)| is_name(n));
    fx.reads
        .extend(files.into_iter().filter(|f| f != "-" && !assignment(f)));
    found
}

fn is_name(n: &str) -> bool {
    let ident = n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident && n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// What an awk program may do beyond reading its input and printing: judged on its text,
/// erring towards acting (`$1 > 5` compares, but `print > f` writes).
fn awk_acts(code: &str) -> (Risk, &'static str) {
    let runs = ["system", "getline", "@"];
    if runs.iter().any(|w| code.contains(w)) || code.replace("||", "").contains('|') {
        return (
            High,
            "an awk program that runs commands or reads other files",
        );
    }
    // `print … > file`, `printf … >> file`: a redirection in a print statement.
    let statements = code.split([';', '\n', '{', '}']);
    let writes = statements
        .filter_map(|s| s.find("print").map(|at| &s[at..]))
        .any(|s| s.contains('>'));
    if writes {
        return (High, "an awk program that writes files");
    }
    if ["ENVIRON", "PROCINFO", "ARGV", "ARGC"]
        .iter()
        .any(|w| code.contains(w))
    {
        return (
            Medium,
            "an awk program that reads the environment or its arguments",
        );
    }
    (Low, "reads files")
}
