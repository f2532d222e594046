//! The option tables `options::scan` reads programs' arguments with: one row per
//! program (or subcommand) and kind of option. Data only; the kinds are explained on `TABLE`.

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
    ("git:config", "-f --file", 'r', ""),
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
