//! What a call does, as the facts `policy` decides on: the call's parts (each command of a
//! shell line, or the tool call itself), each with a risk and reasons, and which of them are
//! hard denies or write outside the project. Paths are judged lexically from the project root
//! and from wherever `cd` moved; nothing here touches the disk.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::policy::Risk::{self, High, Low, Medium};
use super::shell::{Cmd, Parser, among, program, unwrap};
use super::shell_rules::{Effects, RUNNERS, classify, is_download, uses_network};

const PATH_KEYS: &str = "path paths from to file file_path source destination target old_path \
                         new_path dir directory";
const DISKS: &str = "sd hd vd xvd nvme mmcblk disk loop mapper/ md dm- mem kmem port";
const HARMLESS: &str = "null zero stdin stdout stderr tty random urandom";

/// `~` and `$HOME` stand for this pseudo-directory: outside any project.
const HOME: &str = "/~";

/// What kind of tool is called, which decides how the call is judged.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Read,
    Edit,
    Shell,
    Mcp,
    Other,
}

impl Kind {
    pub(super) fn of(tool: &str) -> Kind {
        match tool {
            "list_files" | "read_file" | "grep" => Kind::Read,
            "write_file" | "search_replace" | "rename_file" | "delete_file" => Kind::Edit,
            "run_shell" => Kind::Shell,
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
    /// The words without wrappers (`FOO=1`, `env`, `sudo`, `time`, `xargs`…).
    pub(super) core: String,
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

/// Collects the parts of one call; `cwd` follows `cd` so later paths are judged from there.
pub(super) struct Ctx {
    pub(super) kind: Kind,
    pub(super) command: Option<String>,
    root: PathBuf,
    /// `None` once the directory is unknown (`cd $DIR`, `popd`).
    pub(super) cwd: Option<PathBuf>,
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
            parts: Vec::new(),
        }
    }

    pub(super) fn finish(mut self) -> Facts {
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

    pub(super) fn tool(&mut self, tool: &str, arguments: &Value) {
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
    pub(super) fn anchor(&self, raw: &str, shell: bool) -> Option<PathBuf> {
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
    pub(super) fn run(&mut self, command: &str, depth: usize, outer: Option<usize>) {
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
        part.network = uses_network(name, args, base.1);
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
                p.network |= part.network;
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
