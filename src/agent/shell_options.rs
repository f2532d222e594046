//! Per-program option tables. Programs that are harmless on their own (`sort`, `git log`,
//! `rg`, `env`) often have an option that runs code, writes a file or reads one named in the
//! option; `scan` reads a program's arguments with its table, understanding every spelling
//! (`-oFILE`, `-o FILE`, `--output=FILE`, `--output FILE`, clusters like `-rno FILE`), so an
//! option cannot hide behind another form. An option the table does not know is a flag; if it
//! carries a path-like value (`--input=/etc/x`, `-f/etc/x`), that path counts as read.

use super::policy::Risk::{self, High, Medium};
use super::shell::among;

/// `(program, options, kind, why)`. `program` is a name, `family:sub` for a subcommand's
/// options, or `family:*` for any subcommand's. Lower-case kinds take a value, upper-case ones
/// are flags (a flag given `=value` still counts):
/// `v` a harmless value · `r` a path it reads · `w` a path it writes · `x` high risk (runs or
/// changes what `why` says) · `m` medium risk · `X`, `M` the same as flags · `e` the rest of the
/// arguments are a command it runs · `n` a variable name it sets · `a` two harmless values ·
/// `R` two values, the second a path it reads · `f` a known harmless flag (only wrappers list
/// these: an option a wrapper does not know makes the command medium risk) · `s` a sed script ·
/// `S` a string split into a command (`env -S`) · `O` sed's in-place flag, whose value may only
/// be attached (`-i.bak`).
pub(super) const TABLE: &[(&str, &str, char, &str)] = &[
    ("sed", "-e --expression", 's', ""),
    ("sed", "-f --file", 'x', "runs a sed script from a file"),
    ("sed", "-i --in-place", 'O', ""),
    ("sed", "-l --line-length", 'v', ""),
    ("grep egrep fgrep", "-f --file --exclude-from", 'r', ""),
    ("grep egrep fgrep", "-e --regexp", 's', ""),
    (
        "grep egrep fgrep",
        "-m --max-count -A -B -C --context --after-context --before-context --label --color \
         --colour -d --directories -D --devices --include --exclude --exclude-dir \
         --binary-files --group-separator",
        'v',
        "",
    ),
    (
        "rg",
        "--pre --hostname-bin",
        'x',
        "runs a preprocessor command",
    ),
    ("rg", "--pre-glob", 'm', "chooses files for a preprocessor"),
    ("rg", "-f --file --ignore-file", 'r', ""),
    ("rg", "-e --regexp", 's', ""),
    (
        "rg",
        "-g --glob --iglob -t --type -T --type-not --type-add --type-clear -m --max-count -A -B \
         -C --context --after-context --before-context -M --max-columns -j --threads --engine \
         --path-separator -r --replace -E --encoding --sort --sortr --max-depth -d --color \
         --colors --max-filesize --context-separator --field-match-separator \
         --field-context-separator --dfa-size-limit --regex-size-limit",
        'v',
        "",
    ),
    ("ag", "--pager", 'x', "runs a pager command"),
    ("ag", "-p --path-to-ignore", 'r', ""),
    (
        "ag",
        "-G --file-search-regex -A -B -C -m --depth --ignore -g",
        'v',
        "",
    ),
    ("fd fdfind", "-x --exec -X --exec-batch", 'e', ""),
    (
        "fd fdfind",
        "--ignore-file --base-directory --search-path",
        'r',
        "",
    ),
    (
        "fd fdfind",
        "-e --extension -t --type -E --exclude -d --max-depth --min-depth --exact-depth -S \
         --size --changed-within --changed-before --change-newer-than --change-older-than -o \
         --owner -j --threads --max-results -c --color --path-separator --batch-size --format",
        'v',
        "",
    ),
    ("git", "-c --config-env", 'x', "overrides git configuration"),
    (
        "git",
        "--exec-path",
        'X',
        "runs git programs from another directory",
    ),
    ("git", "-p --paginate", 'M', "runs a pager"),
    (
        "git",
        "--git-dir --work-tree",
        'm',
        "uses another repository or work tree",
    ),
    (
        "git",
        "-C --namespace --super-prefix --list-cmds --attr-source",
        'v',
        "",
    ),
    (
        "git:grep",
        "-O --open-files-in-pager",
        'X',
        "opens the matches in a pager command",
    ),
    ("git:grep", "-f", 'r', ""),
    (
        "git:grep",
        "-e -A -B -C -m --max-count --max-depth --threads --context",
        'v',
        "",
    ),
    (
        "git:diff git:log git:show git:whatchanged git:diff-tree git:range-diff",
        "--ext-diff",
        'X',
        "runs an external diff program",
    ),
    (
        "git:diff git:log git:show git:whatchanged git:blame git:diff-tree",
        "--textconv",
        'M',
        "runs text conversion programs",
    ),
    (
        "git:diff git:log git:show git:whatchanged",
        "--output",
        'w',
        "",
    ),
    ("git:blame", "--contents", 'r', ""),
    (
        "git:fetch git:pull git:clone git:ls-remote git:push git:archive",
        "--upload-pack -u --receive-pack --exec --template",
        'x',
        "runs a program on the remote side or from a template",
    ),
    (
        "git:clone",
        "-c --config",
        'x',
        "overrides git configuration",
    ),
    (
        "git:rebase",
        "-x --exec",
        'x',
        "runs a command after each commit",
    ),
    ("git:commit", "-F --file", 'r', ""),
    (
        "cargo cargo:*",
        "--config",
        'x',
        "overrides cargo configuration",
    ),
    ("cargo cargo:*", "-Z", 'm', "uses unstable cargo options"),
    ("cargo cargo:*", "--manifest-path -C", 'r', ""),
    ("cargo:*", "--target-dir --artifact-dir --out-dir", 'w', ""),
    (
        "cargo:*",
        "-p --package --features -F --bin --example --test --bench -j --jobs --target \
         --profile --message-format --color --exclude",
        'v',
        "",
    ),
    ("cargo:doc", "--open", 'M', "opens a browser"),
    (
        "go:*",
        "-exec -toolexec -vettool",
        'x',
        "runs a program given in an option",
    ),
    (
        "go:*",
        "-ldflags -gcflags -asmflags",
        'm',
        "passes flags to the toolchain",
    ),
    (
        "go:*",
        "-o -coverprofile -cpuprofile -memprofile -blockprofile -mutexprofile -trace \
         -outputdir",
        'w',
        "",
    ),
    ("go:*", "-modfile -overlay -pgo -C", 'r', ""),
    (
        "go:*",
        "-run -bench -count -timeout -tags -p -mod -covermode -coverpkg -parallel -cpu \
         -benchtime -shuffle -skip -fuzz -fuzztime -list",
        'v',
        "",
    ),
    (
        "npm:*",
        "--script-shell --node-options",
        'x',
        "runs scripts through another program",
    ),
    ("npm:*", "--userconfig --globalconfig", 'r', ""),
    ("npm:*", "--prefix --cache", 'w', ""),
    (
        "pytest",
        "-p --pdbcls -o --override-ini",
        'm',
        "loads plugins or changes pytest settings",
    ),
    (
        "pytest",
        "--rootdir --confcutdir -c --config-file --ignore --ignore-glob",
        'r',
        "",
    ),
    (
        "pytest",
        "--basetemp --junitxml --junit-xml --resultlog --result-log",
        'w',
        "",
    ),
    (
        "pytest",
        "-k -m --maxfail --tb --durations -n --deselect",
        'v',
        "",
    ),
    (
        "pylint",
        "--init-hook",
        'x',
        "runs Python code given in an option",
    ),
    (
        "pylint",
        "--load-plugins --rcfile",
        'm',
        "loads plugins or a configuration",
    ),
    ("pylint", "--output", 'w', ""),
    (
        "pylint",
        "-d --disable -e --enable -j --jobs -f --output-format --max-line-length --ignore \
         --ignore-patterns --fail-under",
        'v',
        "",
    ),
    (
        "flake8",
        "--config --append-config --require-plugins",
        'm',
        "loads a configuration",
    ),
    ("flake8", "--output-file", 'w', ""),
    (
        "flake8",
        "--select --ignore --extend-ignore --max-line-length --exclude --format \
         --max-complexity --per-file-ignores",
        'v',
        "",
    ),
    ("mypy", "--python-executable", 'x', "runs another Python"),
    ("mypy", "--config-file", 'r', ""),
    (
        "mypy",
        "--cache-dir --junit-xml --html-report --txt-report --xml-report \
         --cobertura-xml-report --linecount-report --lineprecision-report",
        'w',
        "",
    ),
    (
        "mypy",
        "--python-version --platform -m --module -p --package -c --command",
        'v',
        "",
    ),
    ("pyright", "--pythonpath", 'x', "runs another Python"),
    ("pyright", "-p --project", 'r', ""),
    ("jest vitest", "--outputFile --coverageDirectory", 'w', ""),
    ("jest vitest", "-c --config", 'r', ""),
    (
        "mocha",
        "-r --require --config",
        'm',
        "loads modules or a configuration",
    ),
    ("shellcheck", "--rcfile", 'r', ""),
    (
        "shellcheck",
        "-e --exclude -i --include -f --format -s --shell -S --severity",
        'v',
        "",
    ),
    (
        "sort",
        "--compress-program",
        'x',
        "runs a compression program",
    ),
    ("sort", "-o --output -T --temporary-directory", 'w', ""),
    ("sort", "--files0-from --random-source", 'r', ""),
    (
        "sort",
        "-k --key -t --field-separator -S --buffer-size --parallel --batch-size",
        'v',
        "",
    ),
    ("tree", "-o", 'w', ""),
    (
        "tree",
        "-L -P -I -H -T --charset --filelimit --timefmt --sort",
        'v',
        "",
    ),
    (
        "uniq",
        "-f --skip-fields -s --skip-chars -w --check-chars",
        'v',
        "",
    ),
    (
        "xxd",
        "-c -cols -g -groupsize -l -len -s -seek -o -offset -n -name",
        'v',
        "",
    ),
    (
        "head tail",
        "-n --lines -c --bytes --pid -s --sleep-interval",
        'v',
        "",
    ),
    ("wc", "--files0-from", 'r', ""),
    ("du", "--files0-from -X --exclude-from", 'r', ""),
    (
        "du",
        "-d --max-depth -B --block-size -t --threshold --exclude --time-style",
        'v',
        "",
    ),
    (
        "ls",
        "-I --ignore --hide -w --width -T --tabsize --block-size --format --sort --time \
         --time-style --indicator-style --quoting-style",
        'v',
        "",
    ),
    (
        "cut",
        "-d --delimiter -f --fields -c --characters -b --bytes --output-delimiter",
        'v',
        "",
    ),
    ("diff", "--from-file --to-file -X --exclude-from", 'r', ""),
    (
        "diff",
        "-U --unified -C --context -I --ignore-matching-lines -x --exclude --label -L -W \
         --width --palette",
        'v',
        "",
    ),
    ("stat", "-c --format --printf", 'v', ""),
    ("file", "-m --magic-file -f --files-from", 'r', ""),
    ("nl", "-b -d -f -h -i -l -n -s -v -w", 'v', ""),
    ("od", "-A -j -N -S -t -w", 'v', ""),
    ("hexdump", "-f", 'r', ""),
    ("hexdump", "-e -n -s", 'v', ""),
    ("strings", "-n -t -e", 'v', ""),
    ("column", "-s -c -o -N -R -W -E -H -O -l", 'v', ""),
    ("paste", "-d", 'v', ""),
    ("bat", "--pager", 'x', "runs a pager command"),
    (
        "bat",
        "-l --language -H --highlight-line --style --theme --tabs --wrap --terminal-width -r \
         --line-range --map-syntax --color --decorations --paging --file-name",
        'v',
        "",
    ),
    ("jq", "-f --from-file -L", 'r', ""),
    ("jq", "--rawfile --slurpfile", 'R', ""),
    ("jq", "--arg --argjson", 'a', ""),
    ("jq", "--indent", 'v', ""),
    ("date", "-s --set", 'x', "sets the system clock"),
    ("date", "-f --file -r --reference", 'r', ""),
    ("date", "-d --date -I --iso-8601 --rfc-3339", 'v', ""),
    ("hostname", "-F --file", 'x', "sets the hostname"),
    ("printf", "-v", 'n', ""),
    ("read", "-a", 'n', ""),
    ("read", "-d -n -N -p -t -u -i", 'v', ""),
    ("find", "-files0-from", 'r', ""),
    // Wrappers: every option they take is listed; others make the command medium risk.
    ("env", "-S --split-string", 'S', ""),
    (
        "env",
        "-C --chdir",
        'm',
        "runs the command in another directory",
    ),
    ("env", "-u --unset", 'v', ""),
    (
        "env",
        "-i --ignore-environment -0 --null -v --debug --default-signal --ignore-signal \
         --block-signal --list-signal-handling",
        'f',
        "",
    ),
    ("sudo doas", "-u -g -h -p -C -U -r -t -D", 'v', ""),
    ("sudo doas", "-E -H -n -S -k -K -b -i -s -P -A", 'f', ""),
    ("nohup unbuffer builtin", "-p", 'f', ""),
    ("command", "-p -v -V", 'f', ""),
    ("exec", "-a", 'v', ""),
    ("exec", "-c -l", 'f', ""),
    ("time", "-o --output", 'w', ""),
    ("time", "-f --format", 'v', ""),
    (
        "time",
        "-p -a -v -q --portability --append --verbose --quiet",
        'f',
        "",
    ),
    ("nice", "-n --adjustment", 'v', ""),
    (
        "ionice",
        "-c -n -p -P -u --class --classdata --pid --pgid --uid",
        'v',
        "",
    ),
    ("ionice", "-t --ignore", 'f', ""),
    ("stdbuf", "-i -o -e --input --output --error", 'v', ""),
    ("timeout", "-s --signal -k --kill-after", 'v', ""),
    (
        "timeout",
        "--preserve-status --foreground -v --verbose",
        'f',
        "",
    ),
    ("xargs", "-a --arg-file", 'r', ""),
    (
        "xargs",
        "--process-slot-var",
        'm',
        "sets an environment variable",
    ),
    (
        "xargs",
        "-I -n -P -L -l -d -E -e -s -i --delimiter --max-args --max-procs --max-lines \
         --replace --eof --max-chars",
        'v',
        "",
    ),
    (
        "xargs",
        "-0 --null -r --no-run-if-empty -t --verbose -p --interactive -x --exit -o --open-tty \
         --show-limits",
        'f',
        "",
    ),
];

/// Wrappers whose options all appear in `TABLE` (with `f` for harmless flags).
pub(super) const STRICT: &str =
    "env sudo doas nohup unbuffer builtin command exec time nice ionice stdbuf timeout xargs";

/// What `scan` found in a program's arguments.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) operands: Vec<String>,
    pub(super) reads: Vec<String>,
    pub(super) writes: Vec<String>,
    /// Path-like values of options the table does not know (`--input=/etc/x`): reads, for
    /// programs that read files at all.
    pub(super) guessed: Vec<String>,
    /// Risks from options, with the option named in the reason.
    pub(super) flags: Vec<(Risk, String)>,
    /// Commands the program runs (`fd -x cmd`), as text.
    pub(super) inner: Vec<String>,
    /// Variable names it sets (`printf -v`).
    pub(super) names: Vec<String>,
    /// Values of the special kinds (`s`, `S`, `O`), with the kind.
    pub(super) special: Vec<(char, String)>,
    /// How many arguments were read: with `stop`, where the first operand is.
    pub(super) used: usize,
}

/// The kind and reason of option `opt` (`-o`, `--output`) of `keys` (tried in order).
fn lookup(keys: &[&str], opt: &str) -> Option<(char, &'static str)> {
    keys.iter().find_map(|key| {
        TABLE
            .iter()
            .find(|(p, o, _, _)| among(key, p) && among(opt, o))
            .map(|&(_, _, kind, why)| (kind, why))
    })
}

/// Whether an unknown option's value looks like a path (so it is judged as one).
fn pathlike(value: &str) -> bool {
    value.len() > 1 && (value.contains('/') || value.starts_with(['~', '$', '.']))
}

/// Reads `args` of a program with the options of `keys`; `go` programs spell long options with
/// one dash (`-exec`); `stop` ends at the first operand (wrappers: the command comes next).
pub(super) fn scan(keys: &[&str], args: &[String], go: bool, stop: bool) -> Scan {
    let mut s = Scan::default();
    let strict = keys.iter().any(|k| among(k, STRICT));
    let mut i = 0;
    let mut only = false;
    while let Some(a) = args.get(i) {
        i += 1;
        if only || !a.starts_with('-') || a == "-" {
            if stop {
                i -= 1;
                break;
            }
            s.operands.push(a.clone());
            continue;
        }
        if a == "--" {
            only = true;
            continue;
        }
        // `-5` (head, nice, kill): a number, not an option.
        if a[1..].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let long = a.starts_with("--") || go;
        let (opt, attached) = match a.split_once('=').filter(|_| long) {
            Some((o, v)) => (o.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        if long || a.len() == 2 {
            let next = if attached.is_none() {
                args.get(i)
            } else {
                None
            };
            let took = s.option(keys, &opt, attached.clone(), next.cloned(), args, i, strict);
            i += took;
            continue;
        }
        // A short cluster: `-rn`, `-oFILE`, `-n5`, `-es/x/y/`.
        let chars: Vec<char> = a.chars().skip(1).collect();
        for (k, c) in chars.iter().enumerate() {
            let opt = format!("-{c}");
            let rest: String = chars[k + 1..].iter().collect();
            let kind = lookup(keys, &opt).map(|(kind, _)| kind);
            let value = kind.is_some_and(|kind| kind.is_lowercase() || kind == 'S');
            if value || kind == Some('O') {
                let (attached, next) = match rest.is_empty() {
                    true => (None, args.get(i).cloned()),
                    false => (Some(rest), None),
                };
                i += s.option(keys, &opt, attached, next, args, i, strict);
                break;
            }
            s.option(keys, &opt, None, None, args, i, strict);
            if k == 0 && pathlike(&rest) && kind.is_none() {
                // `-f/etc/x` with an option we do not know: assume the rest is its value.
                s.guessed.push(rest);
                break;
            }
        }
    }
    s.used = i.min(args.len());
    s
}

impl Scan {
    /// Notes option `opt`; returns how many following arguments it took as its value.
    #[allow(clippy::too_many_arguments)]
    fn option(
        &mut self,
        keys: &[&str],
        opt: &str,
        attached: Option<String>,
        next: Option<String>,
        args: &[String],
        at: usize,
        strict: bool,
    ) -> usize {
        let Some((kind, why)) = lookup(keys, opt) else {
            if strict {
                let why = format!("an option the checker does not know (`{opt}`)");
                self.flags.push((Medium, why));
            }
            self.guessed.extend(attached.filter(|v| pathlike(v)));
            return 0;
        };
        let takes = kind.is_lowercase() || kind == 'S' || kind == 'R';
        let (value, took) = match (attached, takes) {
            (Some(v), _) => (Some(v), 0),
            (None, true) => (next, 1),
            (None, false) => (None, 0),
        };
        let value_or_opt = value.clone().unwrap_or_default();
        match kind {
            'r' => self.reads.push(value_or_opt),
            'w' => self.writes.push(value_or_opt),
            'x' | 'X' => self.flags.push((High, format!("`{opt}` {why}"))),
            'm' | 'M' => self.flags.push((Medium, format!("`{opt}` {why}"))),
            'n' => self.names.push(value_or_opt),
            'e' => {
                // `fd -x cmd args ;`, `fd --exec=cmd args`: up to `;` or `+`.
                let rest = args.get(at..).unwrap_or_default();
                let len = rest.iter().take_while(|a| !among(a, "; +")).count();
                let first = value
                    .iter()
                    .filter(|_| took == 0)
                    .map(|v| super::shell::quote(v));
                let words: Vec<String> = first
                    .chain(rest[..len].iter().map(|w| super::shell::quote(w)))
                    .collect();
                self.inner.push(words.join(" "));
                self.flags
                    .push((Medium, format!("`{opt}` runs a command on each file")));
                return len;
            }
            'a' => return 2,
            'R' => {
                self.reads.extend(args.get(at + 1).cloned());
                return 2;
            }
            's' | 'S' | 'O' => self.special.push((kind, value_or_opt)),
            _ => {}
        }
        took
    }
}
