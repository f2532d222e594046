//! What each program does: the risk table (`RULES`), the programs that need a closer look at
//! their arguments (`sed`, `grep`, `cp`, `rm`, `find`, `dd`, shells, formatters, and the
//! subcommands of git, cargo, npm, go and pip). `facts` asks it about each program of a
//! command line.

use super::Risk::{self, High, Low, Medium};
use super::options::{CHECKED, Scan, scan};
use super::shell::{among, operands, option_value, program, quote};

// `find`'s options, starting points and expression.
mod find;
mod programs;
// sed scripts and awk programs.
mod scripts;
// git, cargo, npm, go and pip: global options, subcommands and what they pass on.
mod family;

pub(super) use family::subcommand;
use family::{family, family_options};
use find::find;
use programs::{arithmetic, formatter, git_config, never, script, shell};
use scripts::{awk, sed};

/// `risk|why|programs`; subcommands of git, cargo, npm (pnpm, yarn, bun), go and pip are
/// `family:sub`. Programs not listed are unknown, so high risk. "reads files" programs read
/// their operands (checked against the project).
const RULES: &str = "\
L|read-only|echo printf pwd which whereis type date whoami uname true false : test [ [[ basename
L|read-only|dirname sleep id hostname printenv export unset set read seq nproc wait cd pushd
M|shows other processes and their command lines|ps
L|read-only|popd command tr for select shift local declare typeset readonly sed grep egrep fgrep
L|evaluates arithmetic on literal numbers|((
L|read-only|rg ag
L|reads files|ls cat head tail wc tree stat file du df sort uniq cut diff cmp comm
M|a pager, which can run commands|less more
M|shell syntax the checker does not follow|case esac coproc function alias trap exec
L|reads files|realpath readlink md5sum sha1sum sha256sum xxd hexdump od nl tac column jq bat fd
L|reads files|strings paste mypy pyright pylint flake8 shellcheck
L|runs the project's tests (project code: conftest.py, setup files)|pytest jest vitest mocha
M|writes files|touch mkdir tee truncate mv cp ln install rsync tsc patch
M|runs build recipes|make cmake ninja
H|deletes files|rm rmdir unlink shred git:rm git:clean
H|changes permissions or ownership|chmod chown chgrp
H|stops processes|kill pkill killall
H|uses the network|curl wget ssh scp sftp nc ncat netcat telnet ftp aria2c http https git:push
H|uses the network|git:pull git:fetch git:clone git:ls-remote git:submodule npm:publish
H|uses the network|npm:audit cargo:publish cargo:login cargo:owner cargo:yank cargo:search
H|uses the network|cargo:fetch npm:view npm:info npm:outdated gh ping dig nslookup
H|installs packages|apt apt-get aptitude brew dnf yum pacman zypper apk snap flatpak port gem
H|installs packages|choco winget nix-env pip:install pip:uninstall pip:download pip:wheel
H|installs packages|cargo:install cargo:add cargo:update cargo:uninstall cargo:binstall go:get
H|installs packages|go:install go:mod npm:install npm:i npm:ci npm:add npm:update npm:up
H|installs packages|npm:upgrade npm:remove npm:rm npm:uninstall npm:un npm:link npm:dedupe
H|downloads and runs a package|npx pnpx bunx npm:exec npm:x npm:dlx npm:create npm:init
H|runs code|python python3 node ruby perl php deno lua
H|runs a script in this shell|source .
H|copies raw data|dd
L|reads the repository|git git:status git:log git:diff git:show git:blame git:rev-parse
L|reads the repository|git:ls-files git:ls-tree git:describe git:shortlog git:grep git:cat-file
L|reads the repository|git:rev-list git:merge-base git:show-ref git:for-each-ref git:version
L|reads the repository|git:help git:reflog git:count-objects git:check-ignore git:branch git:tag
L|reads the repository|git:remote git:config
M|changes the repository|git:add git:commit git:checkout git:switch git:restore git:reset
M|changes the repository|git:merge git:rebase git:cherry-pick git:revert git:mv git:init
M|changes the repository|git:apply git:am git:notes git:worktree git:bisect git:stash
L|builds or checks the project|cargo cargo:check cargo:c cargo:build cargo:b cargo:test cargo:t
L|builds or checks the project|cargo:bench cargo:doc cargo:tree cargo:metadata cargo:nextest
L|builds or checks the project|cargo:version cargo:help cargo:clippy go go:test go:vet
L|builds or checks the project|go:version go:env go:list go:doc
M|changes files in the project|cargo:fmt cargo:fix cargo:new cargo:init cargo:clean cargo:rm
M|changes files in the project|cargo:remove cargo:generate-lockfile go:build go:fmt go:generate
M|runs the project's program|cargo:run cargo:r go:run npm:start
L|runs the tests|npm:test npm:t
L|read-only|npm npm:ls npm:list npm:why npm:help pip pip:list pip:show pip:freeze pip:check";
const SHELLS: &str = "sh bash zsh dash ksh fish csh tcsh";
/// Programs that run the code they are given (on their input, too).
pub(super) const RUNNERS: &str = "sh bash zsh dash ksh fish csh tcsh python python3 node ruby perl php deno \
                       lua eval source .";
const FORMATTERS: &str = "rustfmt prettier black gofmt isort clang-format ruff eslint biome";

/// The reasons (from `RULES` and `classify`) of programs that need the network.
const NETWORK: &[&str] = &[
    "uses the network",
    "installs packages",
    "downloads and runs a package",
    "copies over the network",
];

const SHUTDOWN: &str = "shuts down or reboots the machine";

/// What a program reads, writes (recursively or not), runs, or does that is never allowed.
#[derive(Default)]
pub(super) struct Effects {
    pub(super) reads: Vec<String>,
    pub(super) writes: Vec<String>,
    pub(super) recursive: bool,
    pub(super) hard: Option<&'static str>,
    pub(super) inner: Vec<String>,
    /// Risks found in its options or syntax, which no allow pattern may lift.
    pub(super) flags: Vec<(Risk, String)>,
    /// Shell variables it sets (`read x`, `printf -v x`); `exported` ones (`export X=1`) reach
    /// every later program.
    pub(super) names: Vec<String>,
    pub(super) exported: Vec<String>,
    /// Options the tables do not know (`Scan::unknown`).
    pub(super) unknown: Vec<String>,
    /// Some argument holds an expansion only known at run time (`"$x"`, `$(…)`).
    pub(super) expands: bool,
}

impl Effects {
    /// Takes in what an option scan found.
    fn absorb(&mut self, s: Scan) -> Vec<String> {
        self.reads.extend(s.reads);
        self.reads.extend(s.guessed);
        self.writes.extend(s.writes);
        self.flags.extend(s.flags);
        self.inner.extend(s.inner);
        self.names.extend(s.names);
        self.unknown.extend(s.unknown);
        s.operands
    }
}

/// Whether running `name args` (judged `why`) needs the network. Looked at apart from the
/// reason because a riskier special case (`git -c x=y push`) hides the subcommand's reason.
pub(super) fn uses_network(name: &str, args: &[String], why: &str) -> bool {
    if NETWORK.contains(&why) {
        return true;
    }
    if !among(name, "git cargo npm pnpm yarn bun go pip pip3") {
        return false;
    }
    let (fam, _, sub, second) = subcommand(name, args);
    let key = format!("{fam}:{sub}");
    let remote = fam == "git" && sub == "remote" && among(second, "update show prune");
    remote || rule(&key).is_some_and(|(_, why)| NETWORK.contains(&why))
}

fn rule(key: &str) -> Option<(Risk, &'static str)> {
    RULES.lines().find_map(|line| {
        let (risk, rest) = line.split_once('|')?;
        let (why, keys) = rest.split_once('|')?;
        let risk = match risk {
            "L" => Low,
            "M" => Medium,
            _ => High,
        };
        among(key, keys).then_some((risk, why))
    })
}

/// The risk of running `name args`, noting what it reads, writes and runs in `fx`. A program
/// of `CHECKED` that is otherwise low risk is asked about options it does not know.
pub(super) fn classify(name: &str, args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    let found = judge(name, args, fx);
    let unknown = std::mem::take(&mut fx.unknown);
    if found.0 == Low && among(name, CHECKED) {
        for opt in unknown {
            let why = format!("an option the checker does not know (`{opt}`)");
            fx.flags.push((Medium, why));
        }
    }
    found
}

/// `classify` without the check of unknown options.
fn judge(name: &str, args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    let has = |flags: &str| args.iter().any(|a| among(a, flags));
    let in_family = among(name, "git cargo npm pnpm yarn bun go pip pip3");
    let mut found = (!in_family).then(|| scan(&[name], args, false, false));
    if let (Some(s), Some((_, "read-only"))) = (&mut found, rule(name)) {
        // `echo --x=/etc/y` prints text: only programs that read files read option values.
        s.guessed.clear();
    }
    let specials = found
        .as_ref()
        .map(|s| s.special.clone())
        .unwrap_or_default();
    let given = found.as_ref().map(|s| s.given.clone()).unwrap_or_default();
    let gave = |names: &str| given.iter().any(|g| among(g, names));
    let files = found.map(|s| fx.absorb(s)).unwrap_or_default();
    let special = |kind: char| specials.iter().filter(move |(k, _)| *k == kind);
    match name {
        "sed" => {
            let scripts = special('s').map(|(_, v)| v.clone()).collect();
            let in_place = special('O').next().is_some();
            return sed(scripts, gave("-f --file"), in_place, files, fx);
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            let sources = special('s').map(|(_, v)| v.clone()).collect();
            return awk(sources, gave("-f --file -E --exec"), files, fx);
        }
        "grep" | "egrep" | "fgrep" | "rg" | "ag" => {
            // The first operand is the pattern, unless one came with -e or -f.
            let mut files = files.clone();
            let given = special('s').next().is_some() || gave("-f --file");
            if !given && !files.is_empty() {
                files.remove(0);
            }
            fx.reads.extend(files);
        }
        "uniq" | "xxd" => {
            // `uniq IN OUT`, `xxd [-r] IN OUT`: the second operand is written.
            let mut files = files.clone().into_iter();
            fx.reads.extend(files.next());
            fx.writes.extend(files);
            return (Low, "reads files");
        }
        "date" if files.iter().any(|a| !a.starts_with('+')) => {
            return (High, "sets the system clock");
        }
        "hostname" if !files.is_empty() => return (High, "sets the hostname"),
        "less" | "more" => fx.reads.clone_from(&files),
        "bat" if files.first().is_some_and(|f| f == "cache") => {
            return (Medium, "builds or clears bat's cache outside the project");
        }
        "pylint" => {
            // `--output-format=json:FILE,text`: a format may name the file it is written to.
            let formats = option_value(args, "-f --output-format").unwrap_or_default();
            let files = formats.split(',').filter_map(|f| f.split_once(':'));
            fx.writes.extend(files.map(|(_, file)| file.to_string()));
        }
        "ps" if files.iter().any(|a| a.contains('e')) => {
            return (Medium, "shows other processes' environment variables");
        }
        "[[" | "[" | "test" | "unset" | "declare" | "typeset" | "local" => {
            arithmetic(name, args, fx)
        }
        _ => {}
    }
    match name {
        "export" | "declare" | "typeset" | "readonly" | "local" | "read" | "for" | "select" => {
            let names = files
                .iter()
                .map(|a| a.split('=').next().unwrap_or_default());
            let names = names.map(String::from);
            let exported = name == "export" || (name != "read" && has("-x"));
            match name {
                "for" | "select" => fx.names.extend(names.take(1)),
                _ if exported => fx.exported.extend(names),
                _ => fx.names.extend(names),
            }
        }
        "eval" => {
            let code = args.join(" ");
            if code.contains(['$', '`']) {
                return (High, "evaluates code built at run time");
            }
            fx.inner.push(code);
            return (Medium, "evaluates a command");
        }
        "alias" => {
            let values = files
                .iter()
                .filter_map(|a| a.split_once('='))
                .map(|(_, v)| v);
            fx.inner.extend(values.map(String::from));
        }
        "trap" => fx.inner.extend(files.first().cloned()),
        "coproc" => fx
            .inner
            .push(args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")),
        // The first operand is the filter, unless it came from a file.
        "jq" if !gave("-f --from-file") => {
            fx.reads.extend(files.iter().skip(1).cloned());
            return (Low, "reads files");
        }
        // A target directory given as an option (`-t DIR`, `--target=DIR`) is in `fx.writes`.
        "touch" | "mkdir" | "tee" | "truncate" | "mv" => fx.writes.extend(files.clone()),
        "cp" | "ln" | "install" | "rsync" => {
            let mut files = match name {
                "rsync" => operands(args, "-e"),
                _ => files.clone(),
            };
            let remote = |f: &String| f.split_once(':').is_some_and(|(h, _)| !h.contains('/'));
            if name == "rsync" && files.iter().any(remote) {
                return (High, "copies over the network");
            }
            if !gave("-t --target-directory") {
                fx.writes.extend(files.pop());
            }
            fx.reads.extend(files);
        }
        "rm" | "rmdir" | "unlink" | "shred" | "chmod" | "chown" | "chgrp" => {
            let perms = name.starts_with("ch");
            fx.writes = operands(args, "")
                .into_iter()
                .skip(usize::from(perms))
                .collect();
            let short = |a: &String| a.starts_with('-') && !a.starts_with("--");
            let letter = |a: &String| a.contains('R') || (!perms && a.contains('r'));
            // `--rec` is `--recursive` to getopt_long.
            let long = |a: &String| a.len() > 2 && "--recursive".starts_with(a.as_str());
            fx.recursive = args.iter().any(|a| long(a) || (short(a) && letter(a)));
        }
        "curl" | "wget" => {
            let out = if name == "curl" {
                "-o --output"
            } else {
                "-O --output-document"
            };
            fx.writes
                .extend(option_value(args, out).filter(|f| f != "-"));
            // `-d @file`, `-F x=@file`, `-T file`: files it sends.
            let sent = args
                .iter()
                .filter_map(|a| a.split_once('@').map(|(_, f)| f));
            fx.reads.extend(
                sent.filter(|f| !f.is_empty() && *f != "-")
                    .map(String::from),
            );
            fx.reads
                .extend(option_value(args, "-T --upload-file -K --config"));
        }
        "dd" => {
            for a in args {
                match a.split_once('=') {
                    Some(("of", file)) => fx.writes.push(file.into()),
                    Some(("if", file)) => fx.reads.push(file.into()),
                    _ => {}
                }
            }
        }
        "find" => return find(args, fx),
        "shutdown" | "reboot" | "halt" | "poweroff" => return never(fx, SHUTDOWN),
        "init" | "telinit" if has("0 6") => return never(fx, SHUTDOWN),
        "systemctl" if has("reboot poweroff halt kexec") => return never(fx, SHUTDOWN),
        _ if name == "mkfs" || name.starts_with("mkfs.") => return never(fx, "formats a disk"),
        "python" | "python3" if args.len() > 1 && args[0] == "-m" => {
            fx.unknown.clear();
            return classify(&args[1], &args[2..], fx);
        }
        _ if among(name, RUNNERS) && has("--version -V") => return (Low, "read-only"),
        _ if among(name, SHELLS) => return shell(args, fx),
        _ if among(name, FORMATTERS) => return formatter(name, args),
        _ if in_family || name == "make" => {
            // `git -C dir`, `make -C dir`: the work happens in `dir`.
            let found = if name == "make" {
                (Medium, "runs build recipes")
            } else {
                family_options(name, args, fx);
                family(name, args)
            };
            let dir = option_value(args, "-C").into_iter();
            if found.0 > Low {
                fx.writes.extend(dir)
            } else {
                fx.reads.extend(dir)
            }
            return found;
        }
        _ => {}
    }
    let found = rule(name).unwrap_or((High, "unknown command"));
    if found.1 == "reads files" || found.1.starts_with("runs the project's tests") {
        fx.reads.extend(files);
    }
    found
}

#[cfg(test)]
mod tests;
