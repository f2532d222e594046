//! External coding agents as providers: the Codex CLI and Claude Code run a whole turn
//! themselves (reading files, running commands, editing), and Tandem reads what they print.
//!
//! Each agent is one small adapter ([`CliAgent`]): its program, the arguments of a run, the
//! login commands, and how one line of its JSON output becomes Tandem's [`AgentEvent`]s. The
//! rest is shared: [`run`] starts the program in its own process group inside the kernel
//! container, feeds it the prompt on stdin and reads its lines; the chat turn runs it in the
//! chat's workspace ([`crate::layer`], shown at the project's own path) and turns what changed
//! there into an ordinary proposal.

pub mod claude_code;
pub mod codex;
mod login;
mod provider;
mod run;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::llm::{ProviderKind, Usage};

pub use login::{LoginStatus, login, login_status};
pub use provider::{CliProvider, provider};
pub use run::{RunEnd, RunError, RunSpec, run};

/// What the agent may do in its run, mapped onto each agent's own sandbox flags. Tandem's
/// kernel sandbox confines the process as well, whatever the flags say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read and answer; no edits, no commands that write.
    ReadOnly,
    /// Edit files and run commands inside its working directory.
    Workspace,
    /// Its own approvals and sandbox off (only after the person confirmed it for the project).
    Bypass,
}

/// One item of the agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanItem {
    pub text: String,
    pub done: bool,
}

/// Something the agent did: a command, a tool call, a file change, a web search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// The agent's id for it (the same id starts and completes it).
    pub id: String,
    /// The tool as Tandem names it (`run_shell` for commands), else the agent's name for it.
    pub tool: String,
    pub arguments: serde_json::Value,
    /// Its output, once done.
    pub output: Option<String>,
    pub exit_code: Option<i64>,
    /// Still running (a later event with the same id completes it).
    pub running: bool,
    pub failed: bool,
}

/// What a line of the agent's output meant, in Tandem's terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum AgentEvent {
    /// The agent's session (thread) id.
    Session(String),
    /// Reply text for the person (a whole message, or the part since the last).
    Text(String),
    /// Reasoning the agent shared.
    Reasoning(String),
    /// The agent's plan as it stands now.
    Plan(Vec<PlanItem>),
    Action(Action),
    Usage(Usage),
    /// The agent reported an error it did not recover from.
    Failed(String),
    /// The agent reported a problem it is working around (Codex's "Reconnecting… 2/5"): shown
    /// while it runs, and the reason given if the run then fails without saying why.
    Notice(String),
    /// The run's final answer, as the agent summarises it (Claude Code's `result`).
    Result(String),
}

/// One CLI agent: how to start it and how to read it.
pub trait CliAgent: Send + Sync {
    /// Its name for the person (`Codex`, `Claude Code`).
    fn name(&self) -> &'static str;
    /// The arguments of one run (the prompt goes to stdin).
    fn args(&self, spec: &RunSpec) -> Vec<OsString>;
    /// The events one line of its output means (nothing for lines it does not know).
    fn parse(&self, line: &serde_json::Value) -> Vec<AgentEvent>;
    /// Arguments that ask whether it is logged in (exit 0: yes), if it has such a command.
    fn login_status_args(&self) -> &'static [&'static str];
    /// Arguments of its login that prints a code and a link (device authorisation).
    fn login_args(&self) -> &'static [&'static str];
    /// Where it keeps its own state and credentials below `home` (it may write there).
    fn state_paths(&self, home: &Path) -> Vec<PathBuf>;
    /// How to install it, for the error when it is missing.
    fn install_hint(&self) -> &'static str;
    /// How to log it in, for a run that failed as not logged in (`NAME`: the provider).
    fn login_hint(&self) -> &'static str;
    /// Models it is known to take (`default`: its own configured model, no flag).
    fn models(&self, home: Option<&Path>) -> Vec<String>;
}

/// The adapter of a CLI-agent kind; `None` for the HTTP kinds.
pub fn agent_for(kind: ProviderKind) -> Option<&'static dyn CliAgent> {
    match kind {
        ProviderKind::Codex => Some(&codex::Codex),
        ProviderKind::ClaudeCode => Some(&claude_code::ClaudeCode),
        _ => None,
    }
}

/// The model name that means "the agent's own default" (no model flag is passed).
pub const DEFAULT_MODEL: &str = "default";

/// Cuts `text` to at most `max` bytes (on a character boundary), saying how much was left out.
/// `error`, followed by how to log the agent in when it says it is not (`provider`: the
/// provider's name, for the commands).
pub fn with_login_hint(agent: &dyn CliAgent, provider: &str, error: String) -> String {
    let lower = error.to_lowercase();
    let signs = ["not logged in", "authentication", "unauthorized", "/login"];
    match signs.iter().any(|sign| lower.contains(sign)) {
        true => format!("{error} — {}", agent.login_hint().replace("NAME", provider)),
        false => error,
    }
}

pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} more bytes not shown)",
        &text[..end],
        text.len() - end
    )
}
