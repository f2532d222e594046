//! What a call does, as the facts `policy` decides on: the call's parts (each command of a
//! shell line, or the tool call itself), each with a risk and reasons, and which of them are
//! hard denies or write outside the project. Paths are judged lexically from the project root
//! and from wherever `cd` moved; nothing here touches the disk.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Risk::{self, High, Low, Medium};
use super::options::scan;
use super::rules::{Effects, RUNNERS, classify, subcommand, uses_network};
use super::shell::{Cmd, Parser, among, is_download, program, unwrap, unwrap_all};

// Where paths lie: `Ctx::anchor`, `locate` and the read and write judgements.
mod paths;

use paths::Loc;
pub(super) use paths::normalize;

const PATH_KEYS: &str = "path paths from to file file_path source destination target old_path \
                         new_path dir directory";
/// Variables that only change how programs report, never what they run or read: set in front
/// of a command (`RUST_LOG=debug cargo test`) they keep it low risk. Any other name (`PAGER`,
/// `GIT_SSH_COMMAND`, `LD_PRELOAD`, `BASH_ENV`, `RUSTC_WRAPPER`…) may run code.
const HARMLESS_VARS: &str = "RUST_LOG RUST_BACKTRACE RUST_LIB_BACKTRACE CI NO_COLOR TERM LANG \
                             LC_ALL TZ CARGO_TERM_COLOR FORCE_COLOR PYTHONDONTWRITEBYTECODE \
                             PYTHONUNBUFFERED DEBUG NODE_ENV COLUMNS";

/// `~` and `$HOME` stand for this pseudo-directory: outside any project.
const HOME: &str = "/~";

/// What kind of tool is called, which decides how the call is judged.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Read,
    Edit,
    Shell,
    Mcp,
    /// Reaches the network from Tandem itself (`fetch_url`).
    Web,
    Other,
}

impl Kind {
    pub(super) fn of(tool: &str) -> Kind {
        match tool {
            "list_files" | "read_file" | "grep" | "find_definitions" | "find_references"
            | "outline" => Kind::Read,
            "write_file" | "search_replace" | "rename_file" | "delete_file" => Kind::Edit,
            "run_shell" => Kind::Shell,
            "fetch_url" => Kind::Web,
            _ if tool.contains('/') => Kind::Mcp,
            _ => Kind::Other,
        }
    }
}

/// One part of a call: what it is, how risky, why, and what makes it a hard deny (`hard`) or
/// a write outside the project (`outside`).
pub(super) struct Part {
    key: (usize, usize),
    pub(super) text: String,
    /// The words without wrappers (`FOO=1`, `env`, `sudo`, `time`, `xargs`…) and without
    /// harmless global options (`git -C dir`): what allow patterns are matched against.
    pub(super) core: String,
    /// `core` without any global options (`git -c x=y push` is `git push`): deny and ask
    /// patterns match it too, so an option cannot slip a command past them.
    pub(super) bare: String,
    /// Its risk comes from something no allow pattern may lift: variables set for it,
    /// options that run code, syntax the checker cannot follow, reading outside the project.
    pub(super) pinned: bool,
    pub(super) elevated: bool,
    pub(super) risk: Risk,
    /// It needs the network (downloads, pushes, installs): the sandbox only opens the network
    /// to approved calls that have such a part.
    pub(super) network: bool,
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
            bare: core.clone(),
            pinned: false,
            core,
            elevated,
            risk,
            network: false,
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
    /// Raises the risk for a reason no allow pattern may lift.
    fn flag(&mut self, risk: Risk, why: String) {
        self.raise(risk, why);
        self.pinned = true;
    }
    fn deny(&mut self, why: String) {
        self.raise(High, why.clone());
        self.hard.push(why);
    }
}

/// A call's parts, and their reasons, hard denies and writes outside the project, each
/// prefixed with its part.
pub(super) struct Facts {
    pub(super) kind: Kind,
    /// The shell command, for `run_shell` calls that have one.
    pub(super) command: Option<String>,
    pub(super) risk: Risk,
    pub(super) parts: Vec<Part>,
    pub(super) reasons: Vec<String>,
    pub(super) hard: Vec<String>,
    pub(super) outside: Vec<String>,
    /// Why the `cwd` of a `run_shell` call is refused.
    pub(super) cwd_error: Option<String>,
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
///
/// This goes through the classifier, not just the lexer: only classifying finds the commands
/// hidden in arguments (`sh -c`, `eval`, `find -exec`, `xargs`). The root does not change the
/// parts, so any will do.
pub fn split_command(command: &str) -> Vec<String> {
    classify_shell(command, Path::new("/")).1
}

/// Collects the parts of one call; `cwd` follows `cd` so later paths are judged from there.
pub(super) struct Ctx {
    pub(super) kind: Kind,
    pub(super) command: Option<String>,
    root: PathBuf,
    /// `None` once the directory is unknown (`cd $DIR`, `popd`).
    pub(super) cwd: Option<PathBuf>,
    pub(super) cwd_error: Option<String>,
    parts: Vec<Part>,
}

impl Ctx {
    pub(super) fn new(root: &Path, kind: Kind) -> Ctx {
        let root = normalize(&std::path::absolute(root).unwrap_or_else(|_| root.into()));
        let cwd = Some(root.clone());
        Ctx {
            kind,
            command: None,
            root,
            cwd,
            cwd_error: None,
            parts: Vec::new(),
        }
    }

    pub(super) fn finish(mut self) -> Facts {
        self.parts.sort_by_key(|p| p.key);
        let mut risk = self.parts.iter().map(|p| p.risk).fold(Low, Risk::max);
        let (mut reasons, mut hard, mut outside) = (Vec::new(), Vec::new(), Vec::new());
        if self.parts.is_empty() {
            reasons.push("an empty command: nothing runs".to_string());
        }
        if let Some(why) = &self.cwd_error {
            risk = risk.max(Medium);
            reasons.push(format!("working directory: {why}"));
        }
        for p in &self.parts {
            reasons.push(format!("`{}`: {}", p.text, p.why.join("; ")));
            hard.extend(p.hard.iter().map(|h| format!("`{}`: {h}", p.text)));
            outside.extend(p.outside.iter().map(|o| format!("`{}`: {o}", p.text)));
        }
        let (kind, command, parts, cwd_error) =
            (self.kind, self.command, self.parts, self.cwd_error);
        Facts {
            kind,
            command,
            risk,
            parts,
            reasons,
            hard,
            outside,
            cwd_error,
        }
    }

    pub(super) fn tool(&mut self, tool: &str, arguments: &Value) {
        let mut paths = vec![tool.to_string()];
        if self.kind == Kind::Web
            && let Some(url) = arguments.get("url").and_then(Value::as_str)
        {
            paths.push(url.to_string());
        }
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
                Kind::Web => (Medium, "fetches a web page: reaches the network"),
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

    /// Parses and classifies `command`; `outer` is the start of the part holding it.
    pub(super) fn run(&mut self, command: &str, depth: usize, outer: Option<usize>) {
        let chars: Vec<char> = command.chars().collect();
        let mut parser = Parser::new(&chars);
        parser.list(None, 0, &[]);
        for (n, cmd) in parser.out.iter().enumerate() {
            let key = outer.map_or((cmd.start, 0), |o| (o, n + 1));
            self.part(cmd, &parser, key, depth);
        }
        if let (0, Some(c)) = (depth, command.chars().find(|&c| unreadable(c))) {
            let why = format!(
                "contains a control or invisible character (U+{:04X}) the shell may read \
                 differently from the checker",
                u32::from(c)
            );
            let mut part = Part::new(command.trim(), (Medium, "unreadable"));
            part.flag(Medium, why.clone());
            part.why = vec![why];
            part.key = (usize::MAX, 1);
            self.parts.push(part);
        }
        if fork_bomb(command) {
            let mut part = Part::new(command.trim(), (High, "a fork bomb"));
            (part.key, part.hard) = ((usize::MAX, 0), vec!["a fork bomb".into()]);
            self.parts.push(part);
        }
    }

    /// Classifies one command of `parsed`, and what runs inside it.
    fn part(&mut self, cmd: &Cmd, parsed: &Parser<'_>, key: (usize, usize), depth: usize) {
        let wrapped = unwrap_all(&cmd.words);
        let (at, elevated) = (wrapped.at, wrapped.elevated);
        let words = cmd.words.get(at..).unwrap_or_default();
        let name = words.first().map_or("", |w| program(w));
        let args = words.get(1..).unwrap_or_default();
        let marks = cmd.marks.get(at..).unwrap_or_default();
        let mut fx = Effects {
            expands: marks.iter().skip(1).any(|m| m.dynamic),
            ..Effects::default()
        };
        if cmd.marks.iter().take(at + 1).any(|m| m.braced) {
            let why = "a brace expansion makes the command name".to_string();
            fx.flags.push((Medium, why));
        }
        let base = if name.is_empty() {
            (Low, "no command")
        } else {
            classify(name, args, &mut fx)
        };
        let mut part = Part::new(&cmd.text, base);
        (part.key, part.core, part.elevated) = (key, words.join(" "), elevated);
        (part.core, part.bare) = normal_forms(name, words);
        part.network = uses_network(name, args, base.1);
        if elevated {
            part.raise(High, "runs as root".into());
        }
        let w = wrapped.scan;
        fx.reads.extend(w.reads);
        fx.writes.extend(w.writes);
        fx.flags.extend(w.flags);
        fx.inner.extend(w.inner);
        self.judge_syntax(cmd, name, &mut fx);
        if !name.is_empty() && matches!(self.locate(".", true), Loc::Outside | Loc::Unknown) {
            // After `cd /tmp` or `cd $X`, `ls` or `git log` read wherever that is.
            fx.flags.push((
                Medium,
                "runs outside the project or in an unknown directory".into(),
            ));
        }
        // Assigning alone (`x=1`) sets a shell variable, like `read x`; in front of a program
        // it goes into the program's environment.
        if wrapped.xargs && among(name, RUNNERS) {
            // `xargs sh -c 'x {}'`: the input's text becomes code.
            fx.flags
                .push((Medium, "runs code on text from its input".into()));
        }
        let mut prefix = wrapped.names;
        if name.is_empty() {
            fx.names.append(&mut prefix);
        }
        for n in prefix.iter().filter(|n| !among(n, HARMLESS_VARS)) {
            let why = format!("sets `{n}`, which can change what programs run or read");
            fx.flags.push((Medium, why));
        }
        let local = |n: &&String| {
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
                && !n.ends_with("_proxy")
        };
        let names = fx.names.iter().filter(|n| !local(n));
        for n in names
            .chain(&fx.exported)
            .filter(|n| !among(n, HARMLESS_VARS))
        {
            let why = format!("sets `{n}` for the commands after it");
            fx.flags.push((Medium, why));
        }
        for (risk, why) in std::mem::take(&mut fx.flags) {
            part.flag(risk, why);
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

    /// Risks from shell syntax the checker does not follow as the shell does.
    fn judge_syntax(&self, cmd: &Cmd, name: &str, fx: &mut Effects) {
        let flags = &mut fx.flags;
        flags.extend(cmd.odd.iter().map(|why| (Medium, (*why).to_string())));
        if !cmd.heredocs.is_empty() {
            flags.push((
                Medium,
                "a here-document, whose text the checker does not run".into(),
            ));
        }
        if name.contains(['*', '?', '[', '{', '$', '`']) && !among(name, "[ [[") {
            flags.push((
                Medium,
                format!("a pattern or variable as the program (`{name}`)"),
            ));
        }
        if among(name, "case coproc function alias trap eval source .") {
            let why = format!("`{name}`: shell syntax the checker does not follow");
            flags.push((Medium, why));
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
                p.network |= part.network;
                p.hard.extend(part.hard);
                p.outside.extend(part.outside);
            }
            None => self.parts.push(part),
        }
    }
}

/// The forms of a command patterns are matched against: without harmless global options
/// (`git -C dir push` is `git push`), and without any (`git -c x=y push` is `git push`).
fn normal_forms(name: &str, words: &[String]) -> (String, String) {
    let whole = words.join(" ");
    if !among(name, "git cargo npm pnpm yarn bun go pip pip3") {
        return (whole.clone(), whole);
    }
    let args = words.get(1..).unwrap_or_default();
    let (fam, at, _, _) = subcommand(name, args);
    let global = scan(
        &[fam],
        args.get(..at).unwrap_or_default(),
        fam == "go",
        false,
    );
    let mut bare = words.get(..1).unwrap_or_default().to_vec();
    bare.extend(args.get(at..).unwrap_or_default().iter().cloned());
    let bare = bare.join(" ");
    let risky = !global.flags.is_empty() || !global.reads.is_empty() || !global.writes.is_empty();
    (if risky { whole } else { bare.clone() }, bare)
}

/// Characters a terminal or the shell may show or read differently from what the checker
/// sees: control characters other than newline and tab, and those that do not show
/// (bidirectional overrides, zero-width joiners: [`crate::display::is_invisible`]).
fn unreadable(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || crate::display::is_invisible(c)
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
