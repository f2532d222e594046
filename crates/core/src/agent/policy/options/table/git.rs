//! git's options: the global ones, those that run, write or read something, and the harmless
//! ones of every subcommand that is low risk. git is in `CHECKED`: any option of a low-risk
//! subcommand that is not listed here is asked about. `git stash list` and `git reflog` take
//! `git:log`'s options, `git stash show` takes `git:diff`'s. Harmless options are flags (`f`)
//! even when they take a value (`--author NAME`): the value is then read as an operand, which
//! these subcommands never act on, and no option can hide behind a value wrongly taken.

use super::Row;

/// Subcommands that take the diff options.
const DIFFS: &str = "git:diff git:show git:log git:whatchanged";
/// Subcommands that take the revision-walking options.
const LOGS: &str = "git:log git:show git:whatchanged git:shortlog git:rev-list";

pub(in crate::agent::policy::options) const GIT: &[Row] = &[
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
        "git",
        "--no-pager -P --bare --no-replace-objects --literal-pathspecs --glob-pathspecs \
         --noglob-pathspecs --icase-pathspecs --no-optional-locks --no-lazy-fetch --no-advice \
         --version -v --help -h --html-path --man-path --info-path",
        'f',
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
        "git:grep",
        "-n --line-number -i --ignore-case -y -I -w --word-regexp -v --invert-match -h -H \
         --full-name -E --extended-regexp -G --basic-regexp -F --fixed-strings -P --perl-regexp \
         -l --files-with-matches --name-only -L --files-without-match -c --count -o \
         --only-matching -q --quiet -z --null --color --break --heading -p --show-function -W \
         --function-context -r --recursive --cached --untracked --exclude-standard \
         --recurse-submodules -a --text --all-match --and --or --not --column \
         --after-context --before-context",
        'f',
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
    (DIFFS, "--output", 'w', ""),
    (DIFFS, "-O", 'r', ""),
    (
        DIFFS,
        "-p -u --patch -s --no-patch --raw --patch-with-raw -t --indent-heuristic --minimal \
         --patience --histogram --anchored --diff-algorithm --stat --compact-summary --numstat \
         --shortstat --dirstat --cumulative --dirstat-by-file --summary --patch-with-stat -z \
         --name-only --name-status --submodule --color --color-moved --color-moved-ws \
         --word-diff --word-diff-regex --color-words --rename-empty --check \
         --ws-error-highlight --full-index --binary --abbrev --break-rewrites --find-renames \
         --find-copies --find-copies-harder -D --irreversible-delete --diff-filter \
         --find-object --pickaxe-all --pickaxe-regex -R --relative -a --text \
         --ignore-cr-at-eol --ignore-space-at-eol -b --ignore-space-change -w \
         --ignore-all-space --ignore-blank-lines --ignore-matching-lines --inter-hunk-context \
         -W --function-context --exit-code --quiet --ignore-submodules --src-prefix \
         --dst-prefix --no-prefix --default-prefix --line-prefix --ita-invisible-in-index \
         --ita-visible-in-index --stat-width --stat-name-width --stat-graph-width --stat-count \
         --unified --output-indicator-new --output-indicator-old --output-indicator-context \
         --cached --staged --merge-base --no-index --rotate-to --skip-to --no-renames",
        'f',
        "",
    ),
    (DIFFS, "-U -M -C -B -l -S -G -I", 'o', ""),
    (
        LOGS,
        "--max-count --skip --since --after --until --before --author --committer --grep \
         --grep-reflog --date --format --pretty --encoding --decorate --decorate-refs \
         --decorate-refs-exclude --exclude --glob --branches --tags --remotes --min-parents \
         --max-parents --notes --oneline --graph --all --source --use-mailmap --mailmap \
         --full-diff --log-size --follow --first-parent --merges --reverse --topo-order \
         --date-order --author-date-order --abbrev-commit --relative-date --parents --children \
         --left-right --boundary --cherry-pick --cherry-mark --cherry --left-only --right-only \
         --walk-reflogs -g --merge --not --ancestry-path --simplify-by-decoration \
         --simplify-merges --full-history --dense --sparse --show-pulls --no-walk --do-walk \
         --expand-tabs --show-linear-break -i --regexp-ignore-case --basic-regexp -E \
         --extended-regexp -F --fixed-strings -P --perl-regexp --all-match --invert-grep \
         --remove-empty -m -c --cc --dd --diff-merges --combined-all-paths --remerge-diff \
         --clear-decorations --bisect --ignore-missing --reflog --single-worktree --count \
         --stdin --objects --objects-edge --header --timestamp --quiet --abbrev",
        'f',
        "",
    ),
    (LOGS, "-n -L", 'o', ""),
    (
        "git:status",
        "-s --short -b --branch --show-stash --porcelain --long -v --verbose --untracked-files \
         --ignore-submodules --ignored -z --column --ahead-behind --renames --find-renames",
        'f',
        "",
    ),
    ("git:status", "-u", 'o', ""),
    ("git:blame", "--contents -S --ignore-revs-file", 'r', ""),
    (
        "git:blame",
        "-b --root --show-stats -l -t -s -e --show-email -f --show-name -n --show-number -p \
         --porcelain --line-porcelain -c --score-debug -w --incremental --abbrev --progress \
         --date --color-lines --color-by-age --minimal --reverse --first-parent --encoding \
         --since --ignore-rev",
        'f',
        "",
    ),
    ("git:blame", "-L -M -C", 'o', ""),
    (
        "git:rev-parse",
        "--git-dir --show-toplevel --abbrev-ref --short --verify -q --quiet \
         --is-inside-work-tree --is-bare-repository --is-inside-git-dir \
         --is-shallow-repository --show-prefix --show-cdup --absolute-git-dir --git-common-dir \
         --symbolic --symbolic-full-name --all --branches --tags --remotes --glob --revs-only \
         --no-revs --flags --no-flags --default --prefix --sq --sq-quote --not \
         --local-env-vars --resolve-git-dir --git-path --show-superproject-working-tree \
         --show-object-format --show-ref-format --since --after --until --before --parseopt \
         --stop-at-non-option --keep-dashdash --disambiguate --exclude --shared-index-path \
         --path-format --end-of-options",
        'f',
        "",
    ),
    ("git:ls-files", "-X --exclude-from", 'r', ""),
    (
        "git:ls-files",
        "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u \
         --unmerged -k --killed -z -t -v -f --directory --no-empty-directory --eol \
         --deduplicate -x --exclude --exclude-per-directory --exclude-standard --error-unmatch \
         --with-tree --full-name --recurse-submodules --abbrev --debug --sparse --format \
         --resolve-undo",
        'f',
        "",
    ),
    (
        "git:ls-tree",
        "-d -r -t -l --long -z --name-only --name-status --object-only --full-name --full-tree \
         --abbrev --format",
        'f',
        "",
    ),
    (
        "git:describe",
        "--all --tags --contains --abbrev --candidates --exact-match --debug --long --match \
         --exclude --always --first-parent --dirty --broken",
        'f',
        "",
    ),
    (
        "git:shortlog",
        "-n --numbered -s --summary -e --email --format -c --committer --group",
        'f',
        "",
    ),
    ("git:shortlog", "-w", 'o', ""),
    (
        "git:cat-file",
        "--textconv --filters",
        'M',
        "runs text conversion or filter programs",
    ),
    (
        "git:cat-file",
        "-t -s -e -p --batch --batch-check --batch-command --batch-all-objects --buffer \
         --follow-symlinks --unordered -z -Z --allow-unknown-type --use-mailmap --mailmap --path",
        'f',
        "",
    ),
    (
        "git:merge-base",
        "-a --all --octopus --independent --is-ancestor --fork-point",
        'f',
        "",
    ),
    (
        "git:show-ref",
        "--head --tags --heads --branches --verify --exists -d --dereference -s --hash --abbrev \
         -q --quiet",
        'f',
        "",
    ),
    (
        "git:for-each-ref",
        "--count --shell -s --perl -p --python --tcl --sort --format --color --points-at \
         --merged --contains --ignore-case --omit-empty --exclude --include-root-refs",
        'f',
        "",
    ),
    ("git:version", "--build-options", 'f', ""),
    (
        "git:help",
        "-a --all -g --guides -c --config --no-external-commands --no-aliases --verbose \
         --user-interfaces --developer-interfaces",
        'f',
        "",
    ),
    (
        "git:count-objects",
        "-v --verbose -H --human-readable",
        'f',
        "",
    ),
    (
        "git:check-ignore",
        "-q --quiet -v --verbose --stdin -z -n --non-matching --no-index",
        'f',
        "",
    ),
    (
        "git:branch",
        "-a --all -r --remotes -v --verbose -l --list --show-current --contains --merged \
         --points-at --sort --format --column --color -i --ignore-case --abbrev -q --quiet \
         --omit-empty",
        'f',
        "",
    ),
    (
        "git:tag",
        "-l --list --sort --contains --merged --points-at --format --column --color -i \
         --ignore-case --omit-empty",
        'f',
        "",
    ),
    ("git:tag", "-n", 'o', ""),
    ("git:remote", "-v --verbose --push --all", 'f', ""),
    (
        "git:config",
        "--local --worktree --get --get-all --get-regexp --list -l --name-only --show-origin \
         --show-scope --null -z --type --bool --int --bool-or-int --path --expiry-date \
         --default --includes --fixed-value --blob",
        'f',
        "",
    ),
    (
        "git:stash",
        "-u --include-untracked --only-untracked",
        'f',
        "",
    ),
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
];
