//! The options of the `CHECKED` programs other than git: package scripts (npm, pnpm, yarn,
//! bun), test runners and formatters. They run the project's own code or configuration, so
//! they are low risk only with options known to be harmless (`f`); an option that names code,
//! settings or a path outside the listed ones is asked about.

use super::Row;

pub(in crate::agent::policy::options) const TOOLS: &[Row] = &[
    (
        "npm:*",
        "--script-shell --node-options --shell --git --node-gyp",
        'x',
        "runs scripts through another program",
    ),
    ("npm:*", "--userconfig --globalconfig", 'r', ""),
    ("npm:*", "--prefix --cache", 'w', ""),
    ("npm:*", "-C --dir --cwd", 'm', "runs in another directory"),
    (
        "npm:*",
        "--silent -s --quiet -q --loglevel --workspace -w --workspaces --ws \
         --include-workspace-root --if-present --json --long -l --all -a --depth --prod \
         --production --dev --omit --include --parseable -p --filter -F --recursive -r --color \
         --verbose -d --yes -y --fund --audit --offline --prefer-offline --ignore-scripts \
         --stream --parallel --sequential --aggregate-output --workspace-root",
        'f',
        "",
    ),
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
        "-k -m --maxfail --tb --durations -n --deselect -r -W --pythonwarnings",
        'v',
        "",
    ),
    (
        "pytest",
        "-q --quiet -v --verbose -x --exitfirst -s -l --showlocals --lf --last-failed --ff \
         --failed-first --nf --new-first --sw --stepwise --sw-skip --co --collect-only \
         --disable-warnings --disable-pytest-warnings --no-header --no-summary --strict-markers \
         --strict-config --strict --runxfail --doctest-modules --setup-show --setup-only \
         --setup-plan --fixtures --fixtures-per-test --markers --version -V -h --help \
         --full-trace --continue-on-collection-errors --cache-show --pyargs --durations-min \
         --cov --no-cov --cov-branch --import-mode --color --code-highlight --capture --assert \
         --log-level --log-cli-level",
        'f',
        "",
    ),
    (
        "jest vitest",
        "--outputFile --coverageDirectory --cacheDirectory",
        'w',
        "",
    ),
    (
        "jest vitest",
        "-c --config --rootDir --roots --root --dir",
        'r',
        "",
    ),
    (
        "jest vitest",
        "--reporter --reporters --setupFiles --setupFilesAfterEnv --globalSetup \
         --globalTeardown --testResultsProcessor --testRunner --testEnvironment --environment \
         --resolver --transform --preset --snapshotResolver --watchPlugins",
        'm',
        "loads modules named in an option",
    ),
    (
        "jest vitest",
        "-u --updateSnapshot --update",
        'M',
        "updates snapshot files",
    ),
    (
        "jest vitest",
        "--ci --coverage --watch --watchAll -t --testNamePattern --runInBand -i --verbose \
         --silent --bail -b --maxWorkers -w --passWithNoTests --listTests --onlyChanged -o \
         --json --detectOpenHandles --forceExit --no-cache --colors --testPathPattern \
         --testPathIgnorePatterns --selectProjects --shard --changedSince --findRelatedTests \
         --logHeapUsage --noStackTrace --useStderr --testTimeout --run --globals --changed \
         --threads --no-watch --typecheck --clearMocks --resetMocks --restoreMocks \
         --collectCoverage --expand -e --no-coverage",
        'f',
        "",
    ),
    (
        "mocha",
        "-r --require --config -R --reporter --ui -u --file",
        'm',
        "loads modules or a configuration",
    ),
    (
        "mocha",
        "--recursive -g --grep -f --fgrep -i --invert -t --timeout -b --bail --exit --watch -w \
         --spec --extension --parallel -j --jobs --full-trace --inline-diffs --sort -S \
         --check-leaks --forbid-only --forbid-pending --color -c --colors --diff --slow -s \
         --retries --dry-run --fail-zero",
        'f',
        "",
    ),
    (
        "rustfmt",
        "--emit --print-config --config",
        'm',
        "chooses what rustfmt writes, or its settings",
    ),
    ("rustfmt", "--config-path", 'r', ""),
    (
        "rustfmt",
        "--check --edition --style-edition -l --files-with-diff -v --verbose -q --quiet --color \
         --version -V -h --help",
        'f',
        "",
    ),
    (
        "prettier",
        "--plugin --plugin-search-dir",
        'x',
        "loads code named in an option",
    ),
    (
        "prettier",
        "--config",
        'm',
        "loads a configuration, which may be code",
    ),
    ("prettier", "--ignore-path", 'r', ""),
    ("prettier", "--cache-location", 'w', ""),
    (
        "prettier",
        "--check -c --list-different -l --no-config --cache --cache-strategy --log-level \
         --loglevel --no-editorconfig --with-node-modules --config-precedence \
         --no-error-on-unmatched-pattern --ignore-unknown -u --color --print-width --tab-width \
         --use-tabs --no-semi --single-quote --trailing-comma --prose-wrap --end-of-line \
         --parser",
        'f',
        "",
    ),
    ("black", "--config", 'r', ""),
    (
        "black",
        "--check --diff --color -l --line-length -t --target-version -S \
         --skip-string-normalization -C --skip-magic-trailing-comma --preview --unstable -q \
         --quiet -v --verbose --fast --safe --include --exclude --extend-exclude \
         --force-exclude --required-version --version -h --help",
        'f',
        "",
    ),
    ("gofmt", "-r", 'v', ""),
    ("gofmt", "-l -d -s -e", 'f', ""),
    (
        "isort",
        "--settings-path --sp --settings-file --settings",
        'r',
        "",
    ),
    (
        "isort",
        "--check-only --check -c --diff --df --profile -q --quiet -v --verbose --line-length \
         --color --skip --skip-glob --filter-files --only-modified --show-files --version -h \
         --help",
        'f',
        "",
    ),
    (
        "clang-format",
        "--dry-run -n --Werror --style -style --fallback-style --verbose --version --help \
         --assume-filename --lines --offset --length --ferror-limit --sort-includes \
         --output-replacements-xml",
        'f',
        "",
    ),
    ("ruff", "--config", 'm', "takes settings from an option"),
    ("ruff", "-o --output-file --cache-dir", 'w', ""),
    (
        "ruff",
        "--diff --check --statistics --show-source --show-fixes --no-fix --select --ignore \
         --extend-select --extend-ignore --exclude --extend-exclude --force-exclude \
         --respect-gitignore --output-format --target-version --line-length --preview \
         --no-preview -q --quiet -v --verbose -s --silent --exit-zero --exit-non-zero-on-fix \
         --no-cache --per-file-ignores --version -h --help -e",
        'f',
        "",
    ),
    (
        "eslint",
        "--plugin --rulesdir --resolve-plugins-relative-to --parser",
        'x',
        "loads code named in an option",
    ),
    (
        "eslint",
        "-c --config -f --format",
        'm',
        "loads a configuration or formatter, which may be code",
    ),
    ("eslint", "-o --output-file --cache-location", 'w', ""),
    ("eslint", "--ignore-path", 'r', ""),
    (
        "eslint",
        "--ext --color --quiet --max-warnings --no-eslintrc --no-config-lookup \
         --no-inline-config --report-unused-disable-directives --cache --no-ignore \
         --ignore-pattern --env --global --parser-options --debug --stdin --stdin-filename \
         --exit-on-fatal-error --no-error-on-unmatched-pattern --fix-dry-run --fix-type \
         --cache-strategy -h --help -v --version",
        'f',
        "",
    ),
    (
        "biome",
        "--write --apply --fix --unsafe --apply-unsafe",
        'M',
        "changes files",
    ),
    (
        "biome",
        "--config-path",
        'm',
        "takes settings from an option",
    ),
    (
        "biome",
        "--colors --diagnostic-level --max-diagnostics --no-errors-on-unmatched \
         --error-on-warnings --reporter --verbose --changed --staged --since \
         --formatter-enabled --linter-enabled --organize-imports-enabled --indent-style \
         --line-width --skip-errors --vcs-enabled --vcs-use-ignore-file --use-server \
         --log-level --version -h --help",
        'f',
        "",
    ),
];
