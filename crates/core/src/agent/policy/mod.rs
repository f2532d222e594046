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
//! symlinks with `folder::resolve`). A shell command is split into parts (chains, pipes,
//! subshells, `$(…)`, backticks, here-documents, `sh -c`, `eval`, `find -exec`, `xargs`), each
//! part is classified, and the command is as risky as its riskiest part.
//!
//! Judgement calls: `~` and `$HOME` always count as outside the project; a path only known at
//! run time (`$DIR/x`) makes a write high risk but is never a hard deny; `cd` moves the
//! directory later relative paths are judged from; recursively deleting the project root or
//! its `.git` is a hard deny like deleting `/`; reading outside the project is medium risk;
//! feeding downloaded code to any interpreter (`| sh`, `bash <(curl …)`, `eval "$(curl …)"`) is
//! a hard deny, not just `curl … | sh`; MCP and unknown tools are denied under read-only trust.
//!
//! Failing closed (the kernel sandbox is the boundary; this only decides what to ask):
//! anything the checker cannot read with certainty is at least medium, so asked by default —
//! control and invisible characters, `$'…'`, `${x%…}`, here-documents, `eval`, `case`, `alias`,
//! `trap`, `exec`, patterns as the program; variables set for a command or for later ones
//! unless harmless (`RUST_LOG`, `CI`…); options of "read-only" programs that run code, write or
//! read a path (one table per program in `options`, every spelling of an option, and any
//! abbreviation counts as the riskiest option it may stand for: `sort --out`, `sed --in-pl`);
//! any option git's low-risk subcommands, test runners, package scripts, formatters, awk and
//! `find` do not list as harmless, and what cargo and npm pass on after `--`; sed and awk
//! scripts that run, write or read files, or that are built at run time; brace expansions the
//! checker cannot make (those it can are made first: `rm {-rf,~}` is `rm -rf ~`), and a command
//! name made by one; arithmetic on anything but literal numbers (`$((x))`, `((x))`,
//! `[[ x -eq 1 ]]`, `unset a[i]`, `declare -i`), as bash evaluates a variable's text there and
//! its array subscripts run commands;
//! wrapper options nobody knows (`env -S` is split and judged as a command); reading a path
//! outside the project or only known at run time (`$X`, `~user`, `src/..` when `src` may be a
//! symlink, `{..,x}`, `.*`); running after `cd` to such a place; a `cwd` outside the project
//! (refused under Scoped trust). Such parts are pinned: no allow pattern approves them.
//!
//! This module holds the types and the precedence. The rest lives in private child modules,
//! whose public functions are re-exported here: `shell` parses commands (`shell::words` reads
//! a command's words and wrappers, `shell::expand` makes brace expansions and checks
//! arithmetic), `options` knows which options run code, write or read (`options::table` and its
//! `git` and `tools` parts), `rules` says what each program does (`rules::programs`,
//! `rules::find`, `rules::scripts` for sed and awk, `rules::family` for git, cargo, npm…),
//! `facts` turns a call into parts with risks and reasons (`facts::paths` judges where paths
//! lie), and `patterns` matches the user's patterns.

mod facts;
mod options;
mod patterns;
mod rules;
mod shell;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::facts::{Ctx, Facts, Kind, Part};
use self::patterns::fires;

pub use self::facts::{classify_shell, split_command};
pub use self::patterns::allow_pattern_for;
pub use crate::trust::{Risk, Trust};

use Risk::Low;

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
    /// The allow came from the person's allow patterns, not from the risk level: they chose
    /// it, as if they had approved this call.
    pub by_pattern: bool,
    /// Some part needs the network (downloads, ssh, git push/pull/fetch/clone, package
    /// installs, `npx`…): the sandbox opens the network only to such calls, once approved.
    pub network: bool,
}

/// Patterns are globs (`*` any text, `?` one character, whitespace runs compare as one space).
/// `tool:NAME` patterns match tool names (`tool:delete_file`, `tool:github/*`); the others match
/// shell commands: the whole command, each part, and each part without wrappers (`FOO=1`, `env`,
/// `time`, `nohup`, `xargs`; also `sudo` for deny and ask, never for allow) and without harmless
/// global options (`git -C dir push` is `git push`); deny and ask patterns also see the part
/// without any global options (`git -c x=y push`). A deny or ask pattern fires when any of these
/// matches; allow patterns approve a command only when every part matches one and none is
/// pinned (see the module docs).
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

impl Decision {
    pub fn reason(&self) -> &str {
        let (Decision::Allow { reason } | Decision::Ask { reason } | Decision::Deny { reason }) =
            self;
        reason
    }
}

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
                // Judged exactly where the dispatcher will run it; a refused directory is
                // still followed lexically, so what the command would do there counts too.
                match resolve_cwd(project_root, Some(cwd)) {
                    Ok(dir) => ctx.cwd = Some(dir),
                    Err(why) => (ctx.cwd, ctx.cwd_error) = (ctx.anchor(cwd, true), Some(why)),
                }
            }
            ctx.command = Some(command.to_string());
            ctx.run(command, 0, None);
        }
        None => ctx.tool(call.tool, args),
    }
    let facts = ctx.finish();
    let (decision, by_pattern) = decide(&facts, call.tool, trust, settings);
    let shell = facts.command.is_some();
    let network = facts.parts.iter().any(|p| p.network);
    let parts = facts.parts.iter().filter(|_| shell).map(|p| p.text.clone());
    let (risk, reasons, parts) = (facts.risk, facts.reasons, parts.collect());
    Assessment {
        risk,
        decision,
        reasons,
        parts,
        by_pattern,
        network,
    }
}

/// The decision, and whether one of the person's allow patterns made it.
fn decide(f: &Facts, tool: &str, trust: Trust, settings: &PolicySettings) -> (Decision, bool) {
    let deny = |reason| (Decision::Deny { reason }, false);
    if !f.hard.is_empty() {
        return deny(format!("never allowed: {}", f.hard.join("; ")));
    }
    if let (Trust::Scoped, Some(why)) = (trust, &f.cwd_error) {
        return deny(format!(
            "the working directory must be inside the project: {why}"
        ));
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
                .flat_map(|p| [p.text.as_str(), p.core.as_str(), p.bare.as_str()]),
        );
    }
    let hit = |patterns: &[String]| patterns.iter().find(|p| fires(p, tool, &all)).cloned();
    if let Some(p) = hit(&settings.deny) {
        return deny(format!("matches your deny pattern `{p}`"));
    }
    if let Some(p) = hit(&settings.ask) {
        let reason = format!("matches your ask pattern `{p}`");
        return (Decision::Ask { reason }, false);
    }
    let mut tool_allow = settings.allow.iter().filter(|p| p.starts_with("tool:"));
    if let Some(p) = tool_allow.find(|p| fires(p, tool, &[])) {
        let reason = format!("matches your allow pattern `{p}`");
        return (Decision::Allow { reason }, true);
    }
    // A part whose risk comes from variables, options that run code, unreadable syntax or
    // paths outside the project is never approved by a pattern; nor is a refused directory.
    let covered = |p: &Part| {
        if p.pinned || f.cwd_error.is_some() {
            return false;
        }
        let core = if p.elevated {
            p.text.as_str()
        } else {
            p.core.as_str()
        };
        let mut plain = settings.allow.iter().filter(|a| !a.starts_with("tool:"));
        plain.any(|a| fires(a, tool, &[&p.text, core]))
    };
    if f.command.is_some() && !f.parts.is_empty() && f.parts.iter().all(covered) {
        let reason = "every part matches your allow patterns".into();
        return (Decision::Allow { reason }, true);
    }
    let decision = match settings.auto_approve_up_to {
        Some(max) if f.risk <= max => Decision::Allow {
            reason: format!("{} risk, auto-approved up to {max}", f.risk),
        },
        _ => Decision::Ask {
            reason: format!("{} risk: needs your approval", f.risk),
        },
    };
    (decision, false)
}

/// The working directory a `run_shell` call names (`None`: the project root), resolved
/// lexically from `root`: `.` and `..` are applied, and the result must stay inside the
/// project. `~`, variables and substitutions are refused: they are only known at run time,
/// and the command must run exactly where it was judged.
pub fn resolve_cwd(root: &Path, cwd: Option<&str>) -> Result<PathBuf, String> {
    let lexical = facts::normalize;
    let root = lexical(&std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf()));
    let Some(raw) = cwd.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(root);
    };
    if raw.starts_with('~') || raw.contains(['$', '`']) || raw.chars().any(char::is_control) {
        return Err(format!(
            "the working directory `{raw}` is only known at run time; give a path inside the \
             project"
        ));
    }
    let dir = lexical(&root.join(raw));
    match dir.starts_with(&root) {
        true => Ok(dir),
        false => Err(format!(
            "the working directory `{raw}` is outside the project; commands run inside it"
        )),
    }
}

#[cfg(test)]
mod tests;
