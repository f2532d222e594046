//! The approval and risk policy for agent tool calls. Every call gets a [`Risk`] and a
//! [`Decision`] by a fixed precedence:
//!
//! 1. built-in hard denies, which no setting overrides: wrecking the machine or the project,
//!    running downloaded code, any write outside the project under [`Trust::Scoped`], anything
//!    but reading under [`Trust::ReadOnly`];
//! 2. the user's deny patterns, 3. ask patterns, 4. allow patterns;
//! 5. the default: allowed up to [`PolicySettings::auto_approve_up_to`], asked above it.
//!
//! Only what the call would do counts, never what the model says about it. Nothing here touches
//! the disk: paths are judged lexically against the project root (the tools still resolve
//! symlinks with `workspace::resolve`). A shell command is split into parts (chains, pipes,
//! subshells, `$(…)`, backticks, here-documents, `sh -c`, `eval`, `find -exec`, `xargs`), each
//! part is classified, and the command is as risky as its riskiest part.
//!
//! Judgement calls: `~` and `$HOME` always count as outside the project; a path only known at
//! run time (`$DIR/x`) makes a write high risk but is never a hard deny; `cd` moves the
//! directory later relative paths are judged from; recursively deleting the project root or
//! its `.git` is a hard deny like deleting `/`; reading outside the project is medium risk;
//! feeding downloaded code to any interpreter (`| sh`, `bash <(curl …)`, `eval "$(curl …)"`) is
//! a hard deny, not just `curl … | sh`; MCP and unknown tools are denied under read-only trust.

use std::fmt;
use std::mem::take;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use Risk::{High, Low, Medium};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

/// How far the user trusts the agent in this project.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Writes outside the project are possible (high risk, so asked by default).
    Trusted,
    /// The agent may change the project only; writes outside it are denied.
    #[default]
    Scoped,
    /// The agent may only read: edit tools, `run_shell`, MCP and unknown tools are denied.
    ReadOnly,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Allow { reason: String },
    Ask { reason: String },
    Deny { reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub risk: Risk,
    pub decision: Decision,
    /// Why this risk, one line per part: "`rm -rf build`: deletes files".
    pub reasons: Vec<String>,
    /// For `run_shell`: the parts of the command in source order. Empty for other tools.
    pub parts: Vec<String>,
}

/// Patterns are globs (`*` any text, `?` one character, whitespace runs compare as one space).
/// `tool:NAME` patterns match tool names (`tool:delete_file`, `tool:github/*`); the others match
/// shell commands: the whole command, each part, and each part without wrappers (`FOO=1`, `env`,
/// `time`, `nohup`, `xargs`; also `sudo` for deny and ask, never for allow). A deny or ask
/// pattern fires when any of these matches; allow patterns approve a command only when every
/// part matches one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicySettings {
    pub deny: Vec<String>,
    pub ask: Vec<String>,
    pub allow: Vec<String>,
    /// Auto-approve up to this risk; `None` asks for everything. Defaults to `Some(Low)`.
    pub auto_approve_up_to: Option<Risk>,
}

impl Default for PolicySettings {
    fn default() -> Self {
        let (deny, ask, allow) = (Vec::new(), Vec::new(), Vec::new());
        let auto_approve_up_to = Some(Low);
        Self {
            deny,
            ask,
            allow,
            auto_approve_up_to,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct ToolCallView<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(["low", "medium", "high"][*self as usize])
    }
}

impl Decision {
    pub fn reason(&self) -> &str {
        let (Decision::Allow { reason } | Decision::Ask { reason } | Decision::Deny { reason }) =
            self;
        reason
    }
}

/// `risk|why|programs`; subcommands of git, cargo, npm (pnpm, yarn, bun), go and pip are
/// `family:sub`. Programs not listed are unknown, so high risk. "reads files" programs read
/// their operands (checked against the project).
const RULES: &str = "\
L|read-only|echo printf pwd which whereis type date whoami uname true false : test [ [[ basename
L|read-only|dirname sleep id hostname printenv export unset set read seq nproc ps wait cd pushd
L|read-only|popd command tr for select case shift local sed grep egrep fgrep rg ag
L|reads files|ls cat head tail wc tree stat file du df less more sort uniq cut diff cmp comm
L|reads files|realpath readlink md5sum sha1sum sha256sum xxd hexdump od nl tac column jq bat fd
L|reads files|strings paste pytest jest vitest mocha mypy pyright pylint flake8 shellcheck
M|writes files|touch mkdir tee truncate mv cp ln install rsync tsc patch
M|runs build recipes|make cmake ninja
H|deletes files|rm rmdir unlink shred git:rm git:clean
H|changes permissions or ownership|chmod chown chgrp
H|stops processes|kill pkill killall
H|uses the network|curl wget ssh scp sftp nc ncat netcat telnet ftp aria2c http https git:push
H|uses the network|git:pull git:fetch git:clone git:ls-remote git:submodule npm:publish
H|uses the network|npm:audit cargo:publish cargo:login cargo:owner cargo:yank cargo:search
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
const RUNNERS: &str = "sh bash zsh dash ksh fish csh tcsh python python3 node ruby perl php deno \
                       lua eval source .";
const DOWNLOADERS: &str = "curl wget aria2c http https fetch";
const FORMATTERS: &str = "rustfmt prettier black gofmt isort clang-format ruff eslint biome";
const RESERVED: &str = "{ } ! if then else elif fi do done while until esac";
const BIN_DIRS: &str = "/bin /sbin /usr/bin /usr/sbin /usr/local/bin /usr/local/sbin \
                        /opt/homebrew/bin";
const PATH_KEYS: &str = "path paths from to file file_path source destination target old_path \
                         new_path dir directory";
const DISKS: &str = "sd hd vd xvd nvme mmcblk disk loop mapper/ md dm- mem kmem port";
const HARMLESS: &str = "null zero stdin stdout stderr tty random urandom";
const SHUTDOWN: &str = "shuts down or reboots the machine";
/// `~` and `$HOME` stand for this pseudo-directory: outside any project.
const HOME: &str = "/~";
const MAX_NESTING: usize = 12;

/// Assesses one tool call. See the module docs for the precedence.
pub fn assess(
    call: &ToolCallView<'_>,
    trust: Trust,
    settings: &PolicySettings,
    project_root: &Path,
) -> Assessment {
    let mut ctx = Ctx::new(project_root, Kind::of(call.tool));
    let args = call.arguments;
    let command = ["command", "cmd"]
        .iter()
        .find_map(|k| args.get(k)?.as_str());
    match command.filter(|_| ctx.kind == Kind::Shell) {
        Some(command) => {
            if let Some(cwd) = ["cwd", "workdir"]
                .iter()
                .find_map(|k| args.get(k)?.as_str())
            {
                ctx.cwd = ctx.anchor(cwd, true);
            }
            ctx.command = Some(command.to_string());
            ctx.run(command, 0, None);
        }
        None => ctx.tool(call.tool, args),
    }
    let facts = ctx.finish();
    let decision = decide(&facts, call.tool, trust, settings);
    let shell = facts.command.is_some();
    let parts = facts.parts.iter().filter(|_| shell).map(|p| p.text.clone());
    let (risk, reasons, parts) = (facts.risk, facts.reasons, parts.collect());
    Assessment {
        risk,
        decision,
        reasons,
        parts,
    }
}

/// The risk of a shell command run in `project_root`, its parts and the reasons per part.
pub fn classify_shell(command: &str, project_root: &Path) -> (Risk, Vec<String>, Vec<String>) {
    let mut ctx = Ctx::new(project_root, Kind::Shell);
    ctx.run(command, 0, None);
    let facts = ctx.finish();
    let parts = facts.parts.into_iter().map(|p| p.text).collect();
    (facts.risk, parts, facts.reasons)
}

/// The parts of a chained command in source order (an inner command after its holder).
pub fn split_command(command: &str) -> Vec<String> {
    classify_shell(command, Path::new("/")).1
}

/// The "always allow" pattern for the riskiest part of `command`: program and subcommand
/// (`cargo test -p foo` → `cargo test*`, `npm run lint` → `npm run lint*`), `ls *` for a
/// program without subcommands, or the bare program when it had no arguments.
pub fn allow_pattern_for(command: &str) -> String {
    let mut ctx = Ctx::new(Path::new("/"), Kind::Shell);
    ctx.run(command, 0, None);
    let parts = ctx.finish().parts;
    let moves = |p: &&Part| {
        among(
            p.core.split(' ').next().unwrap_or_default(),
            "cd pushd popd",
        )
    };
    let acting: Vec<&Part> = parts.iter().filter(|p| !moves(p)).collect();
    let pool = if acting.is_empty() {
        parts.iter().collect()
    } else {
        acting
    };
    let top = pool.iter().map(|p| p.risk).max();
    let Some(part) = pool.into_iter().find(|p| Some(p.risk) == top) else {
        return squash(command);
    };
    let words: Vec<&str> = part.core.split_whitespace().collect();
    let name = words.first().map_or("", |w| program(w));
    let second = words.get(1).copied().unwrap_or_default();
    let depth = match name {
        "npm" | "pnpm" | "yarn" | "bun" if among(second, "run run-script") => 2,
        "python" | "python3" if second == "-m" => 2,
        _ if among(
            name,
            "git cargo npm pnpm yarn bun go pip pip3 uv docker kubectl gh apt apt-get brew dnf",
        ) =>
        {
            1
        }
        _ => 0,
    };
    let sub = |w: &&&str| {
        let plain = w
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c));
        **w == "-m" || (plain && !w.starts_with('-'))
    };
    let mut prefix: Vec<&str> = words.iter().take(1).copied().collect();
    prefix.extend(words.iter().skip(1).take(depth).take_while(sub));
    let sudo = if part.elevated { "sudo " } else { "" };
    let joined = format!("{sudo}{}", prefix.join(" "));
    match (prefix.len(), words.len()) {
        (2.., _) => format!("{joined}*"),
        (_, 2..) => format!("{joined} *"),
        _ => joined,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Edit,
    Shell,
    Mcp,
    Other,
}

impl Kind {
    fn of(tool: &str) -> Kind {
        match tool {
            "list_files" | "read_file" | "grep" => Kind::Read,
            "write_file" | "search_replace" | "rename_file" | "delete_file" => Kind::Edit,
            "run_shell" => Kind::Shell,
            _ if tool.contains('/') => Kind::Mcp,
            _ => Kind::Other,
        }
    }
}

fn decide(f: &Facts, tool: &str, trust: Trust, settings: &PolicySettings) -> Decision {
    let deny = |reason| Decision::Deny { reason };
    if !f.hard.is_empty() {
        return deny(format!("never allowed: {}", f.hard.join("; ")));
    }
    if trust == Trust::Scoped && !f.outside.is_empty() {
        let what = f.outside.join("; ");
        return deny(format!(
            "writes outside the project, which Scoped trust forbids: {what}"
        ));
    }
    if trust == Trust::ReadOnly && f.kind != Kind::Read {
        return deny(format!(
            "the agent may only read in this project; `{tool}` can change it"
        ));
    }
    // A deny or ask pattern may match the command, any part, or any part's core.
    let mut all: Vec<&str> = f.command.iter().map(String::as_str).collect();
    if f.command.is_some() {
        all.extend(
            f.parts
                .iter()
                .flat_map(|p| [p.text.as_str(), p.core.as_str()]),
        );
    }
    let hit = |patterns: &[String]| patterns.iter().find(|p| fires(p, tool, &all)).cloned();
    if let Some(p) = hit(&settings.deny) {
        return deny(format!("matches your deny pattern `{p}`"));
    }
    if let Some(p) = hit(&settings.ask) {
        return Decision::Ask {
            reason: format!("matches your ask pattern `{p}`"),
        };
    }
    let mut tool_allow = settings.allow.iter().filter(|p| p.starts_with("tool:"));
    if let Some(p) = tool_allow.find(|p| fires(p, tool, &[])) {
        return Decision::Allow {
            reason: format!("matches your allow pattern `{p}`"),
        };
    }
    let covered = |p: &Part| {
        let core = if p.elevated {
            p.text.as_str()
        } else {
            p.core.as_str()
        };
        let mut plain = settings.allow.iter().filter(|a| !a.starts_with("tool:"));
        plain.any(|a| fires(a, tool, &[&p.text, core]))
    };
    if f.command.is_some() && !f.parts.is_empty() && f.parts.iter().all(covered) {
        return Decision::Allow {
            reason: "every part matches your allow patterns".into(),
        };
    }
    match settings.auto_approve_up_to {
        Some(max) if f.risk <= max => Decision::Allow {
            reason: format!("{} risk, auto-approved up to {max}", f.risk),
        },
        _ => Decision::Ask {
            reason: format!("{} risk: needs your approval", f.risk),
        },
    }
}

/// Whether a user pattern matches: `tool:` patterns the tool name, others a command text.
fn fires(pattern: &str, tool: &str, commands: &[&str]) -> bool {
    match pattern.strip_prefix("tool:") {
        Some(p) => glob(p, tool),
        None => commands.iter().any(|c| glob(pattern, c)),
    }
}

/// Glob match: `*` any text, `?` one character; whitespace runs compare as one space.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = squash(pattern).chars().collect();
    let t: Vec<char> = squash(text).chars().collect();
    let (mut pi, mut ti, mut star) = (0, 0, None);
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => (star, pi) = (Some((pi, ti)), pi + 1),
            Some(&c) if c == '?' || c == t[ti] => (pi, ti) = (pi + 1, ti + 1),
            _ => match star {
                Some((sp, st)) => (pi, ti, star) = (sp + 1, st + 1, Some((sp, st + 1))),
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn among(word: &str, list: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

// ---- What a call does ----

/// One part of a call: what it is, how risky, why, and what makes it a hard deny (`hard`) or
/// a write outside the project (`outside`).
struct Part {
    key: (usize, usize),
    text: String,
    /// The words without wrappers (`FOO=1`, `env`, `sudo`, `time`, `xargs`…).
    core: String,
    elevated: bool,
    risk: Risk,
    why: Vec<String>,
    hard: Vec<String>,
    outside: Vec<String>,
}

impl Part {
    fn new(text: &str, (risk, why): (Risk, &str)) -> Part {
        let (core, why, hard, outside) = (String::new(), vec![why.into()], vec![], vec![]);
        let (key, text, elevated) = ((0, 0), text.to_string(), false);
        Part {
            key,
            text,
            core,
            elevated,
            risk,
            why,
            hard,
            outside,
        }
    }
    fn raise(&mut self, risk: Risk, why: String) {
        if risk > self.risk {
            (self.risk, self.why) = (risk, Vec::new());
        }
        if risk == self.risk {
            self.why.push(why);
        }
    }
    fn deny(&mut self, why: String) {
        self.raise(High, why.clone());
        self.hard.push(why);
    }
}

struct Facts {
    kind: Kind,
    command: Option<String>,
    risk: Risk,
    parts: Vec<Part>,
    reasons: Vec<String>,
    hard: Vec<String>,
    outside: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Loc {
    Inside,
    /// Strictly inside `.git`.
    Git,
    /// The project root itself, or its `.git`.
    Root,
    Outside,
    Unknown,
    Harmless,
    Device,
}

/// What a program reads, writes (recursively or not), runs, or does that is never allowed.
#[derive(Default)]
struct Effects {
    reads: Vec<String>,
    writes: Vec<String>,
    recursive: bool,
    hard: Option<&'static str>,
    inner: Vec<String>,
}

struct Ctx {
    kind: Kind,
    command: Option<String>,
    root: PathBuf,
    cwd: Option<PathBuf>,
    parts: Vec<Part>,
}

impl Ctx {
    fn new(root: &Path, kind: Kind) -> Ctx {
        let root = normalize(&std::path::absolute(root).unwrap_or_else(|_| root.into()));
        let cwd = Some(root.clone());
        Ctx {
            kind,
            command: None,
            root,
            cwd,
            parts: Vec::new(),
        }
    }

    fn finish(mut self) -> Facts {
        self.parts.sort_by_key(|p| p.key);
        let risk = self.parts.iter().map(|p| p.risk).fold(Low, Risk::max);
        let (mut reasons, mut hard, mut outside) = (Vec::new(), Vec::new(), Vec::new());
        for p in &self.parts {
            reasons.push(format!("`{}`: {}", p.text, p.why.join("; ")));
            hard.extend(p.hard.iter().map(|h| format!("`{}`: {h}", p.text)));
            outside.extend(p.outside.iter().map(|o| format!("`{}`: {o}", p.text)));
        }
        let (kind, command, parts) = (self.kind, self.command, self.parts);
        Facts {
            kind,
            command,
            risk,
            parts,
            reasons,
            hard,
            outside,
        }
    }

    fn tool(&mut self, tool: &str, arguments: &Value) {
        let mut paths = vec![tool.to_string()];
        for key in PATH_KEYS.split_whitespace() {
            match arguments.get(key) {
                Some(Value::String(s)) => paths.push(s.clone()),
                Some(Value::Array(a)) => {
                    paths.extend(a.iter().flat_map(Value::as_str).map(Into::into))
                }
                _ => {}
            }
        }
        let mut part = Part::new(
            &paths.join(" "),
            match self.kind {
                Kind::Read => (Low, "reads the project"),
                Kind::Edit if tool == "delete_file" => (Medium, "deletes a file in the project"),
                Kind::Edit => (Medium, "edits files in the project"),
                Kind::Mcp => (Medium, "an MCP tool: what it does is up to its server"),
                Kind::Shell => (High, "no `command` to run"),
                Kind::Other => (High, "unknown tool"),
            },
        );
        for path in &paths[1..] {
            match self.kind {
                Kind::Read => self.judge_read(path, false, &mut part),
                Kind::Edit => self.judge_write(path, false, false, &mut part),
                _ => {}
            }
        }
        self.parts.push(part);
    }

    /// The normalised absolute path `raw` names from the current directory, if knowable.
    fn anchor(&self, raw: &str, shell: bool) -> Option<PathBuf> {
        let raw = raw.trim();
        let home = ["~", "$HOME", "${HOME}"]
            .iter()
            .find_map(|h| raw.strip_prefix(h));
        let path = match home.filter(|rest| rest.is_empty() || rest.starts_with('/')) {
            Some(rest) => PathBuf::from(format!("{HOME}{rest}")),
            None if raw.starts_with('~') => Path::new(HOME).join(&raw[1..]),
            None if raw.is_empty() || (shell && raw.contains(['$', '`'])) => return None,
            None => self.cwd.as_ref()?.join(raw),
        };
        Some(normalize(&path))
    }

    fn locate(&self, raw: &str, shell: bool) -> Loc {
        if let Some(dev) = raw.trim().strip_prefix("/dev/") {
            let disk = DISKS.split_whitespace().any(|d| dev.starts_with(d));
            return match dev {
                _ if among(dev, HARMLESS) || dev.starts_with("fd/") => Loc::Harmless,
                _ if disk => Loc::Device,
                _ => Loc::Outside,
            };
        }
        let git = self.root.join(".git");
        match self.anchor(raw, shell) {
            None => Loc::Unknown,
            Some(p) if p == self.root || p == git => Loc::Root,
            Some(p) if p.starts_with(&git) => Loc::Git,
            Some(p) if p.starts_with(&self.root) => Loc::Inside,
            Some(_) => Loc::Outside,
        }
    }

    fn judge_read(&self, target: &str, shell: bool, part: &mut Part) {
        if self.locate(target, shell) == Loc::Outside {
            part.raise(Medium, format!("reads outside the project (`{target}`)"));
        }
    }

    fn judge_write(&self, target: &str, recursive: bool, shell: bool, part: &mut Part) {
        let t = target;
        match self.locate(t, shell) {
            Loc::Harmless => {}
            Loc::Device => part.deny(format!("writes to the device `{t}`")),
            Loc::Outside if recursive => part.deny(format!(
                "recursively deletes or changes `{t}`, outside the project"
            )),
            Loc::Root if recursive => part.deny(format!(
                "recursively deletes or changes the whole project or its history (`{t}`)"
            )),
            Loc::Outside => {
                let why = format!("writes outside the project (`{t}`)");
                part.raise(High, why.clone());
                part.outside.push(why);
            }
            Loc::Root | Loc::Git => {
                part.raise(High, format!("changes the project root or .git (`{t}`)"))
            }
            Loc::Unknown => part.raise(
                High,
                format!("writes a path known only at run time (`{t}`)"),
            ),
            Loc::Inside => part.raise(Medium, format!("writes `{t}`")),
        }
    }

    /// Parses and classifies `command`; `outer` is the start of the part holding it.
    fn run(&mut self, command: &str, depth: usize, outer: Option<usize>) {
        let chars: Vec<char> = command.chars().collect();
        let mut parser = Parser::new(&chars);
        parser.list(None, 0, &[]);
        for (n, cmd) in parser.out.iter().enumerate() {
            let key = outer.map_or((cmd.start, 0), |o| (o, n + 1));
            self.part(cmd, &parser, key, depth);
        }
        if fork_bomb(command) {
            let mut part = Part::new(command.trim(), (High, "a fork bomb"));
            (part.key, part.hard) = ((usize::MAX, 0), vec!["a fork bomb".into()]);
            self.parts.push(part);
        }
    }

    /// Classifies one command of `parsed`, and what runs inside it.
    fn part(&mut self, cmd: &Cmd, parsed: &Parser<'_>, key: (usize, usize), depth: usize) {
        let (at, elevated) = unwrap(&cmd.words);
        let words = cmd.words.get(at..).unwrap_or_default();
        let name = words.first().map_or("", |w| program(w));
        let args = words.get(1..).unwrap_or_default();
        let mut fx = Effects::default();
        let base = if name.is_empty() {
            (Low, "no command")
        } else {
            classify(name, args, &mut fx)
        };
        let mut part = Part::new(&cmd.text, base);
        (part.key, part.core, part.elevated) = (key, words.join(" "), elevated);
        if elevated {
            part.raise(High, "runs as root".into());
        }
        let runs_input = among(name, RUNNERS);
        for (op, target) in &cmd.redirects {
            let fd = target == "-" || target.chars().all(|c| c.is_ascii_digit());
            match op.as_str() {
                "<<<" if runs_input => fx.inner.push(target.clone()),
                "<" => fx.reads.push(target.clone()),
                _ if op.contains('>') && !(fd && op.contains('&')) => {
                    fx.writes.push(target.clone())
                }
                _ => {}
            }
        }
        let body = |slot: &usize| parsed.bodies.get(*slot);
        for (text, expand) in cmd.heredocs.iter().filter_map(body) {
            if runs_input {
                fx.inner.push(text.clone());
            } else if *expand {
                // An unquoted here-document delimiter: `$(…)` and backticks in the body run.
                let chars: Vec<char> = text.chars().collect();
                let mut inner = Parser::new(&chars);
                inner.word(&mut Cmd::default(), None, 0, true);
                for cmd in &inner.out {
                    self.part(cmd, &inner, (key.0, 1), depth + 1);
                }
            }
        }
        // What flows into a program that runs its input: downloads, echoed text, here-documents.
        let ranges = cmd.upstream.iter().filter(|_| runs_input);
        for up in ranges.flat_map(|&(a, b)| parsed.out.get(a..b).unwrap_or_default()) {
            let (at, _) = unwrap(&up.words);
            if up.sub_download || is_download(up) {
                part.deny("runs downloaded code".into());
            }
            if up
                .words
                .get(at)
                .is_some_and(|w| among(program(w), "echo printf"))
            {
                fx.inner.push(up.words[at + 1..].join(" "));
            }
            fx.inner
                .extend(up.heredocs.iter().filter_map(body).map(|b| b.0.clone()));
        }
        for target in &fx.writes {
            self.judge_write(target, fx.recursive, true, &mut part);
        }
        for target in &fx.reads {
            self.judge_read(target, true, &mut part);
        }
        if let Some(why) = fx.hard {
            part.deny(why.into());
        }
        if runs_input && cmd.sub_download {
            part.deny("runs downloaded code".into());
        }
        if among(name, "cd pushd popd") {
            self.cwd = match args.iter().find(|a| !a.starts_with('-')) {
                _ if name == "popd" => None,
                None => Some(PathBuf::from(HOME)),
                Some(dir) => self.anchor(dir, true),
            };
        }
        self.push(part, depth > 0);
        for inner in fx.inner {
            if depth < 4 {
                self.run(&inner, depth + 1, Some(key.0));
            } else {
                let mut part = Part::new(&inner, (High, "nested too deeply to check"));
                part.key = (key.0, usize::MAX);
                self.parts.push(part);
            }
        }
    }

    /// Adds a part; a nested part repeating a recent one (`sh -c "$(x)"`) merges into it.
    fn push(&mut self, part: Part, nested: bool) {
        let recent = self
            .parts
            .iter_mut()
            .rev()
            .take(if nested { 64 } else { 0 });
        match recent.into_iter().find(|p| p.text == part.text) {
            Some(p) => {
                p.risk = p.risk.max(part.risk);
                p.hard.extend(part.hard);
                p.outside.extend(part.outside);
            }
            None => self.parts.push(part),
        }
    }
}

/// Lexical normalisation: `.` dropped, `..` pops (never above `/`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => _ = out.pop(),
            c => out.push(c),
        }
    }
    out
}

/// `f(){ f|f& };f` under any name and spacing.
fn fork_bomb(command: &str) -> bool {
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    compact.match_indices("(){").any(|(at, _)| {
        let head = &compact[..at];
        let name = &head[head.rfind(|c| ";&|(){}".contains(c)).map_or(0, |i| i + 1)..];
        !name.is_empty() && compact[at..].contains(&format!("{name}|{name}"))
    })
}

// ---- The shell lexer ----

/// One simple command: its words (unquoted), redirections and how its input is fed.
#[derive(Default)]
struct Cmd {
    start: usize,
    end: usize,
    text: String,
    words: Vec<String>,
    starts: Vec<usize>,
    redirects: Vec<(String, String)>,
    heredocs: Vec<usize>,
    /// The commands (ranges of `out`) before it in its pipelines: they feed its input.
    upstream: Vec<(usize, usize)>,
    /// A `$(…)`, backtick or `<(…)` in it runs a download.
    sub_download: bool,
}

impl Cmd {
    fn begin(&mut self, at: usize) {
        if self.words.is_empty() && self.redirects.is_empty() {
            self.start = at;
        }
    }
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
    out: Vec<Cmd>,
    /// Here-documents whose bodies start after the next newline: (body slot, delimiter).
    pending: Vec<(usize, String)>,
    /// Here-document bodies, and whether `$(…)` in them runs.
    bodies: Vec<(String, bool)>,
}

impl<'a> Parser<'a> {
    fn new(s: &'a [char]) -> Parser<'a> {
        Parser {
            s,
            i: 0,
            out: Vec::new(),
            pending: Vec::new(),
            bodies: Vec::new(),
        }
    }

    fn at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn slice(&self, from: usize, to: usize) -> String {
        self.s.get(from..to).unwrap_or_default().iter().collect()
    }

    /// A command list, up to `end` (consumed) or the end of the input.
    fn list(&mut self, end: Option<char>, depth: usize, feeders: &[(usize, usize)]) {
        if depth > MAX_NESTING {
            self.i = self.s.len();
            let text = "(nested too deeply)".to_string();
            self.out.push(Cmd {
                words: vec![text.clone()],
                text,
                ..Cmd::default()
            });
            return;
        }
        let (mut cur, mut feed) = (Cmd::default(), feeders.to_vec());
        let mut pipeline = self.out.len();
        while let Some(c) = self.at(0) {
            let next = self.at(1);
            if Some(c) == end {
                self.i += 1;
                break;
            }
            match c {
                ' ' | '\t' | '\r' | ')' => self.i += 1,
                '\\' if next == Some('\n') => self.i += 2,
                '#' => self.i += self.s[self.i..].iter().take_while(|&&c| c != '\n').count(),
                '&' if next == Some('>') => self.redirect(&mut cur, end, depth),
                '\n' | ';' | '&' | '|' => {
                    self.finish(&mut cur, &feed);
                    let pipe = c == '|' && next != Some('|');
                    feed = feeders.to_vec();
                    if pipe {
                        feed.push((pipeline, self.out.len()));
                    } else {
                        pipeline = self.out.len();
                    }
                    let two = if pipe {
                        next == Some('&')
                    } else {
                        c != '\n' && next == Some(c)
                    };
                    self.i += 1 + usize::from(two);
                    if c == '\n' {
                        self.heredoc_bodies();
                    }
                }
                '(' => {
                    self.finish(&mut cur, &feed);
                    self.i += 1;
                    self.list(Some(')'), depth + 1, &feed);
                }
                '<' | '>' if next != Some('(') => self.redirect(&mut cur, end, depth),
                _ if c.is_ascii_digit() && self.fd_redirect() => {
                    self.redirect(&mut cur, end, depth)
                }
                _ => {
                    let start = self.i;
                    let word = self.word(&mut cur, end, depth, false);
                    if self.i == start {
                        self.i += 1;
                        continue;
                    }
                    cur.begin(start);
                    cur.words.push(word);
                    cur.starts.push(start);
                    cur.end = self.i;
                }
            }
        }
        self.finish(&mut cur, &feed);
    }

    /// Ends the current command: leading reserved words (`if`, `then`, `{`…) are dropped.
    fn finish(&mut self, cur: &mut Cmd, feed: &[(usize, usize)]) {
        let mut cmd = take(cur);
        let skip = cmd.words.iter().take_while(|w| among(w, RESERVED)).count();
        cmd.words.drain(..skip);
        cmd.starts.drain(..skip);
        if let (true, Some(&s)) = (skip > 0, cmd.starts.first()) {
            cmd.start = s;
        }
        if cmd.words.is_empty() && cmd.redirects.is_empty() {
            return;
        }
        cmd.text = self.slice(cmd.start, cmd.end).trim().to_string();
        cmd.upstream = feed.to_vec();
        self.out.push(cmd);
    }

    fn fd_redirect(&self) -> bool {
        let digits = self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        matches!(self.at(digits), Some('<' | '>'))
    }

    fn redirect(&mut self, cur: &mut Cmd, end: Option<char>, depth: usize) {
        cur.begin(self.i);
        self.i += self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let mut op = String::new();
        while let Some(c) = self.at(0) {
            let more = match op.as_str() {
                "" => "<>&",
                "&" | "&>" => ">",
                ">" => ">|&",
                "<" => "<&>",
                "<<" => "<-",
                _ => "",
            };
            if !more.contains(c) {
                break;
            }
            op.push(c);
            self.i += 1;
        }
        self.i += self.s[self.i..]
            .iter()
            .take_while(|&&c| c == ' ' || c == '\t')
            .count();
        let from = self.i;
        let target = match self.at(0) {
            Some(c) if !";&|<>()\n".contains(c) => self.word(cur, end, depth, false),
            _ => String::new(),
        };
        if op == "<<" || op == "<<-" {
            let quoted = self.slice(from, self.i).contains(['\'', '"', '\\']);
            cur.heredocs.push(self.bodies.len());
            self.pending.push((self.bodies.len(), target.clone()));
            self.bodies.push((String::new(), !quoted));
        }
        cur.redirects.push((op, target));
        cur.end = self.i;
    }

    fn heredoc_bodies(&mut self) {
        for (slot, delim) in take(&mut self.pending) {
            let mut body = String::new();
            while self.i < self.s.len() {
                let len = self.s[self.i..].iter().take_while(|&&c| c != '\n').count();
                let line = self.slice(self.i, self.i + len);
                self.i = (self.i + len + 1).min(self.s.len());
                if line.trim() == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if let Some(b) = self.bodies.get_mut(slot) {
                b.0 = body;
            }
        }
    }

    /// One word, unquoted; `body` reads a here-document body to the end instead. Commands in
    /// substitutions go to `out`; the word keeps their text.
    fn word(&mut self, cur: &mut Cmd, end: Option<char>, depth: usize, body: bool) -> String {
        let (mut w, mut dq, mut braces) = (String::new(), body, 0usize);
        while let Some(c) = self.at(0) {
            let (next, open, quoted) = (self.at(1), self.i, dq || braces > 0);
            let escapes = !dq || matches!(next, Some('$' | '`' | '"' | '\\' | '\n'));
            match c {
                '<' | '>' if !quoted && w.is_empty() && next == Some('(') => {
                    self.i += 2;
                    self.sub(cur, open, ')', depth, &mut w);
                }
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' if !quoted => {
                    break;
                }
                '`' if end == Some('`') => break,
                '\'' if !dq => {
                    let rest = self.s.get(open + 1..).unwrap_or_default();
                    let len = rest.iter().take_while(|&&q| q != '\'').count();
                    w.extend(&rest[..len]);
                    self.i = (open + len + 2).min(self.s.len());
                }
                '"' if !body => (dq, self.i) = (!dq, self.i + 1),
                '\\' if escapes => {
                    w.extend(next.filter(|&n| n != '\n'));
                    self.i = (open + 2).min(self.s.len());
                }
                '$' if next == Some('{') => (w, braces, self.i) = (w + "${", braces + 1, open + 2),
                '}' if braces > 0 => (w, braces, self.i) = (w + "}", braces - 1, open + 1),
                '$' if next == Some('(') => {
                    if self.at(2) != Some('(') || !self.arithmetic(&mut w) {
                        self.i += 2;
                        self.sub(cur, open, ')', depth, &mut w);
                    }
                }
                '`' => {
                    self.i += 1;
                    self.sub(cur, open, '`', depth, &mut w);
                }
                _ => (w, self.i) = (w + c.encode_utf8(&mut [0; 4]), open + 1),
            }
        }
        w
    }

    /// `$((…))` with no parentheses or backticks inside: arithmetic, copied as text. (Bash
    /// reads `$((a) )` as a command substitution; anything unusual is parsed as one here too.)
    fn arithmetic(&mut self, w: &mut String) -> bool {
        let rest = self.s.get(self.i + 3..).unwrap_or_default();
        let len = rest.iter().take_while(|&&c| !"()`".contains(c)).count();
        if rest.get(len..len + 2) != Some(&[')', ')']) {
            return false;
        }
        w.extend(&self.s[self.i..self.i + len + 5]);
        self.i += len + 5;
        true
    }

    fn sub(&mut self, cur: &mut Cmd, open: usize, close: char, depth: usize, w: &mut String) {
        let mark = self.out.len();
        self.list(Some(close), depth + 1, &[]);
        let inner = self.out.get(mark..).unwrap_or_default();
        cur.sub_download |= inner.iter().any(is_download);
        w.push_str(&self.slice(open, self.i));
    }
}

fn is_download(cmd: &Cmd) -> bool {
    let (at, _) = unwrap(&cmd.words);
    cmd.words
        .get(at)
        .is_some_and(|w| among(program(w), DOWNLOADERS))
}

/// The program a word names: `/usr/bin/rm` is `rm`, but `./ls` is a script, not `ls`.
fn program(word: &str) -> &str {
    match word.rsplit_once('/') {
        Some((dir, name)) if among(dir, BIN_DIRS) => name,
        _ => word,
    }
}

fn is_assignment(word: &str) -> bool {
    let name = word.split_once('=').map_or("", |(k, _)| k);
    let ident = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident && name.starts_with(|c: char| !c.is_ascii_digit())
}

/// How many leading `-options` (with the values of `with_value` ones) `rest` has.
fn options(rest: &[String], with_value: &str) -> usize {
    let mut k = 0;
    while let Some(a) = rest.get(k) {
        if a == "--" {
            return k + 1;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        k += if among(a, with_value) { 2 } else { 1 };
    }
    k.min(rest.len())
}

/// Skips assignments and wrappers (`env`, `sudo`, `nohup`, `time`, `xargs`…): the index of
/// the program that really runs, and whether it runs as root.
fn unwrap(words: &[String]) -> (usize, bool) {
    let (mut i, mut elevated) = (0, false);
    while let Some(w) = words.get(i) {
        let rest = words.get(i + 1..).unwrap_or_default();
        i += 1 + match program(w) {
            _ if is_assignment(w) => 0,
            "sudo" | "doas" => {
                elevated = true;
                options(rest, "-u -g -h -p -C -U -r -t -D")
            }
            "env" => {
                let k = options(rest, "-u -C -S --unset --chdir --split-string");
                k + rest[k..].iter().take_while(|a| is_assignment(a)).count()
            }
            "command" if rest.first().is_some_and(|a| a == "-v" || a == "-V") => break,
            "nohup" | "exec" | "builtin" | "command" | "unbuffer" => options(rest, "-a"),
            "time" => options(rest, "-f -o"),
            "nice" | "ionice" | "stdbuf" => options(rest, "-n -c -p"),
            "timeout" => {
                let k = options(rest, "-s -k --signal --kill-after");
                k + usize::from(k < rest.len())
            }
            "xargs" => options(rest, "-I -n -P -L -d -E -s -a --delimiter --arg-file"),
            _ => break,
        };
    }
    (i.min(words.len()), elevated)
}

/// The non-option arguments, skipping the values of `with_value` options.
fn operands(args: &[String], with_value: &str) -> Vec<String> {
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

fn option_value(args: &[String], names: &str) -> Option<String> {
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

fn quote(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%{}".contains(c));
    match plain && !word.is_empty() {
        true => word.to_string(),
        false => format!("'{}'", word.replace('\'', r"'\''")),
    }
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

/// The risk of running `name args`, noting what it reads, writes and runs in `fx`.
fn classify(name: &str, args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    let has = |flags: &str| args.iter().any(|a| among(a, flags));
    match name {
        "sed" | "grep" | "egrep" | "fgrep" | "rg" | "ag" => {
            // The first operand is the script or pattern, unless one came with -e or -f.
            let script = "-e --expression --regexp -f --file";
            let mut files = operands(args, script);
            let given = args.windows(2).filter(|w| among(&w[0], "-e --expression"));
            let mut code: Vec<String> = given.map(|w| w[1].clone()).collect();
            if !args.iter().any(|a| among(a, script)) && !files.is_empty() {
                code.push(files.remove(0));
            }
            let sed_file = name == "sed" && has("-f --file");
            if sed_file || (name == "sed" && code.iter().any(|c| sed_acts(c))) {
                return (High, "a sed script that runs commands or writes files");
            }
            if name == "rg" && args.iter().any(|a| a.starts_with("--pre")) {
                return (High, "runs a preprocessor command");
            }
            let in_place = |a: &String| a.starts_with("-i") || a == "--in-place";
            if name == "sed" && args.iter().any(in_place) {
                fx.writes = files;
                return (Medium, "edits files in place");
            }
            fx.reads = files;
        }
        "sort" => fx.writes.extend(option_value(args, "-o --output")),
        "touch" | "mkdir" | "tee" | "truncate" | "mv" => fx.writes = operands(args, "-s -m"),
        "cp" | "ln" | "install" | "rsync" => {
            let mut files = operands(args, "-t --target-directory -S -m -o -g -e");
            let remote = |f: &String| f.split_once(':').is_some_and(|(h, _)| !h.contains('/'));
            if name == "rsync" && files.iter().any(remote) {
                return (High, "copies over the network");
            }
            let target = option_value(args, "-t --target-directory");
            fx.writes.extend(target.or_else(|| files.pop()));
            fx.reads = files;
        }
        "rm" | "rmdir" | "unlink" | "shred" | "chmod" | "chown" | "chgrp" => {
            let perms = name.starts_with("ch");
            fx.writes = operands(args, "")
                .into_iter()
                .skip(usize::from(perms))
                .collect();
            let short = |a: &String| a.starts_with('-') && !a.starts_with("--");
            let letter = |a: &String| a.contains('R') || (!perms && a.contains('r'));
            fx.recursive = args
                .iter()
                .any(|a| a == "--recursive" || (short(a) && letter(a)));
        }
        "curl" | "wget" => {
            let out = if name == "curl" {
                "-o --output"
            } else {
                "-O --output-document"
            };
            fx.writes
                .extend(option_value(args, out).filter(|f| f != "-"));
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
            return classify(&args[1], &args[2..], fx);
        }
        _ if among(name, RUNNERS) && has("--version -V") => return (Low, "read-only"),
        "eval" => {
            let code = args.join(" ");
            if code.contains(['$', '`']) {
                return (High, "evaluates code built at run time");
            }
            fx.inner.push(code);
            return (Low, "evaluates a command");
        }
        _ if among(name, SHELLS) => return shell(args, fx),
        _ if among(name, FORMATTERS) => return formatter(name, args),
        _ if among(name, "git cargo npm pnpm yarn bun go pip pip3 make") => {
            // `git -C dir`, `make -C dir`: the work happens in `dir`.
            let found = if name == "make" {
                (Medium, "runs build recipes")
            } else {
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
    if found.1 == "reads files" {
        fx.reads = operands(args, "-n -c -o");
    }
    found
}

fn never(fx: &mut Effects, why: &'static str) -> (Risk, &'static str) {
    fx.hard = Some(why);
    (High, why)
}

fn shell(args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    let flag = |a: &String| a.starts_with('-') && !a.starts_with("--") && a.contains('c');
    match args.iter().position(flag).and_then(|c| args.get(c + 1)) {
        Some(code) => {
            fx.inner.push(code.clone());
            (Low, "runs a command in a shell")
        }
        None if operands(args, "").is_empty() => (High, "runs shell commands from its input"),
        None => (High, "runs a shell script"),
    }
}

fn formatter(name: &str, args: &[String]) -> (Risk, &'static str) {
    let has = |flags: &str| args.iter().any(|a| among(a, flags));
    let ruff_format = name == "ruff" && args.first().is_some_and(|a| a == "format");
    let by_default = among(name, "rustfmt black isort") || ruff_format;
    let check = has("--check -l --list-different -d --diff --dry-run");
    match has("-w --write -i --fix --in-place") || (by_default && !check) {
        true => (Medium, "formats files"),
        false => (Low, "checks formatting or lints"),
    }
}

fn find(args: &[String], fx: &mut Effects) -> (Risk, &'static str) {
    let n = args
        .iter()
        .take_while(|a| !a.starts_with('-') && !among(a, "( !"))
        .count();
    let mut starts = args[..n].to_vec();
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
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-delete" => {
                fx.writes.extend(below.iter().cloned());
                fx.recursive = true;
                risk = (High, "deletes files");
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let rest = &args[i + 1..];
                let len = rest.iter().take_while(|a| !among(a, "; +")).count();
                let words = rest[..len].iter().map(|w| {
                    if w == "{}" {
                        below[0].clone()
                    } else {
                        quote(w)
                    }
                });
                fx.inner.push(words.collect::<Vec<_>>().join(" "));
                i += len + 1;
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                fx.writes.extend(args.get(i + 1).cloned());
                risk = risk.max((Medium, "writes files"));
            }
            _ => {}
        }
        i += 1;
    }
    risk
}

/// git, cargo, npm (pnpm, yarn, bun), go, pip: by subcommand and a few telling flags.
fn family(name: &str, args: &[String]) -> (Risk, &'static str) {
    let fam = match name {
        "pnpm" | "yarn" | "bun" => "npm",
        "pip3" => "pip",
        _ => name,
    };
    let ops = operands(args, "-C -c --git-dir --work-tree --namespace");
    let mut ops = ops
        .iter()
        .map(String::as_str)
        .filter(|o| !o.starts_with('+'));
    let (sub, second) = (
        ops.next().unwrap_or_default(),
        ops.next().unwrap_or_default(),
    );
    let before = args.iter().take_while(|a| *a != sub);
    let tail = args.iter().skip_while(|a| *a != sub).skip(1);
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
            Some((Medium, "changes git settings"))
        }
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

/// Whether a sed script may run commands (`e`, `s///e`) or write files (`w`, `W`, `s///w`).
fn sed_acts(code: &str) -> bool {
    let c: Vec<char> = code.chars().collect();
    // The index after a field ending in an unescaped `d`.
    let field = |mut k: usize, d: char| {
        while k < c.len() && c[k] != d {
            k += 1 + usize::from(c[k] == '\\');
        }
        k + 1
    };
    let mut k = 0;
    while let Some(&ch) = c.get(k) {
        k = match ch {
            '/' => field(k + 1, '/'),
            '\\' => c.get(k + 1).map_or(c.len(), |&d| field(k + 2, d)),
            's' | 'y' => {
                let Some(&d) = c.get(k + 1) else { return false };
                let mut end = field(field(k + 2, d), d);
                while end < c.len() && !";\n}".contains(c[end]) {
                    if ch == 's' && "ew".contains(c[end]) {
                        return true;
                    }
                    end += 1;
                }
                end
            }
            'e' | 'w' | 'W' => return true,
            // Commands whose argument (text, label, file) runs to the end of the command.
            'a' | 'i' | 'c' | ':' | 'b' | 't' | 'T' | 'r' | 'R' | 'q' | 'Q' | 'l' | 'L' => {
                let len = c[k..]
                    .iter()
                    .take_while(|&&x| x != ';' && x != '\n')
                    .count();
                k + len + 1
            }
            _ => k + 1,
        };
    }
    false
}

/// A package.json script: checks (`test`, `lint`, `typecheck`, `…:check`) are low risk.
fn script(name: &str) -> (Risk, &'static str) {
    let head = name.split(':').next().unwrap_or_default();
    let checks =
        among(head, "test lint check typecheck type-check tsc") || name.ends_with(":check");
    let changes = ["fix", "write", "update"].iter().any(|w| name.contains(w));
    match name {
        "" => (Low, "lists scripts"),
        _ if checks && !changes => (Low, "runs a check script"),
        _ => (Medium, "runs a project script"),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
