//! The option tables `options::scan` reads programs' arguments with: one row per
//! program (or subcommand) and kind of option. Data only; the kinds are explained on `TABLE`.

// git's options, global and per subcommand.
mod git;
// Test runners, package scripts and formatters, whose harmless options are listed.
mod tools;

pub(super) use git::GIT;
pub(super) use tools::TOOLS;

pub(super) type Row = (&'static str, &'static str, char, &'static str);

/// `(program, options, kind, why)`. `program` is a name, `family:sub` for a subcommand's
/// options, or `family:*` for any subcommand's. Lower-case kinds take a value, upper-case ones
/// are flags (a flag given `=value` still counts):
/// `v` a harmless value · `r` a path it reads · `w` a path it writes · `x` high risk (runs or
/// changes what `why` says) · `m` medium risk · `X`, `M` the same as flags · `e` the rest of the
/// arguments are a command it runs · `n` a variable name it sets · `a` two harmless values ·
/// `R` two values, the second a path it reads · `f` a known harmless flag (wrappers and the
/// programs of `CHECKED` list these: an option such a program does not know makes it medium
/// risk) · `o` a harmless flag whose value may only be attached (`-U3`, `-M50%`) · `s` a sed
/// script · `S` a string split into a command (`env -S`) · `O` sed's in-place flag, whose value
/// may only be attached (`-i.bak`). git's rows are in `GIT`.
pub(super) const TABLE: &[Row] = &[
    ("sed", "-e --expression", 's', ""),
    ("sed", "-f --file", 'x', "runs a sed script from a file"),
    ("sed", "-i --in-place", 'O', ""),
    ("sed", "-l --line-length", 'v', ""),
    (
        "awk gawk mawk nawk",
        "-f --file -E --exec -i --include -l --load",
        'x',
        "runs an awk program or library from a file",
    ),
    (
        "awk gawk mawk nawk",
        "-o --pretty-print -d --dump-variables -p --profile",
        'X',
        "writes a file",
    ),
    (
        "awk gawk mawk nawk",
        "-D --debug -W",
        'm',
        "runs the awk debugger or an implementation option",
    ),
    ("awk gawk mawk nawk", "-e --source", 's', ""),
    (
        "awk gawk mawk nawk",
        "-F --field-separator -v --assign",
        'v',
        "",
    ),
    (
        "awk gawk mawk nawk",
        "-b --characters-as-bytes -c --traditional -n --non-decimal-data -N --use-lc-numeric \
         -P --posix -r --re-interval -s --no-optimize -S --sandbox -V --version -M --bignum -O \
         --optimize -L --lint -t --lint-old -h --help --csv -k",
        'f',
        "",
    ),
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
    // What `cargo test -- …` passes to the test harness, `cargo clippy -- …` to the compiler.
    ("libtest", "--logfile", 'w', ""),
    ("libtest", "-Z", 'm', "uses unstable test harness options"),
    (
        "libtest",
        "--nocapture --no-capture --test-threads --exact --ignored --include-ignored --skip \
         --list -q --quiet --show-output --color --format --report-time --shuffle \
         --shuffle-seed --bench --test --force-run-in-process --exclude-should-panic \
         --ensure-time",
        'f',
        "",
    ),
    (
        "rustc-lints",
        "-D -W -A -F --deny --warn --allow --forbid --cap-lints --no-deps",
        'f',
        "",
    ),
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
    ("mypy", "--install-types", 'X', "installs packages"),
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
        "-R",
        'M',
        "writes an HTML listing into every directory",
    ),
    ("tree", "--infofile --gitfile", 'r', ""),
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
    (
        "file",
        "-C --compile",
        'M',
        "compiles a magic file, which it writes",
    ),
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
        "--generate-config-file --config-file --config-dir --cache-dir",
        'M',
        "writes or shows bat's own files outside the project",
    ),
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
    ("cp mv ln install", "-t --target-directory", 'w', ""),
    ("cp mv ln install", "-S --suffix", 'v', ""),
    ("install", "-m --mode -o --owner -g --group", 'v', ""),
    ("touch truncate", "-r --reference", 'r', ""),
    ("touch", "-d --date -t", 'v', ""),
    ("truncate", "-s --size", 'v', ""),
    ("mkdir", "-m --mode --context", 'v', ""),
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
