//! Running one approved tool call: read tools on a blocking thread, edit tools into the turn's
//! proposal (checked against the edits before them, never written to disk), `run_shell`
//! through the executor in the kernel sandbox (see `sandbox`), MCP tools through their server
//! (a stdio server runs in the same sandbox, in the workspace: what a call of its changes
//! there joins the proposal as a command's changes do).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::mcp::McpHub;
use super::policy;
use super::tools::{self, CodeIndexes};
use crate::edits::Action;
use crate::edits::plan::EditChecker;
use crate::layer::Change;
use crate::layer::Tracker;
use crate::process::{self, Sandbox, ShellRequest};
use crate::sandbox;

/// What a call needs from its turn.
pub struct Context<'a> {
    pub root: &'a Path,
    /// How a `run_shell` call may run (decided by the runner from trust and approval).
    pub shell: ShellGrant,
    pub sandbox: &'a sandbox::Settings,
    pub shell_timeout: Duration,
    pub mcp: Option<&'a McpHub>,
    pub cancel: &'a CancellationToken,
    /// The edits the turn has proposed so far (a new edit is checked on top of them).
    pub edits: &'a [Action],
    /// The turn's checker of edits, holding them checked (`None`: build it from `edits`, as
    /// after a command that may have changed files on disk).
    pub checker: &'a Arc<Mutex<Option<EditChecker>>>,
    /// The chat's workspace, when the agent works in one: tools read and write its view,
    /// commands run in it, and what they change joins the proposal.
    pub workspace: Option<&'a Arc<Tracker>>,
    /// The code indexes the symbol tools ask.
    pub indexes: &'a CodeIndexes,
}

/// How one `run_shell` call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellGrant {
    /// In the kernel sandbox (always under scoped trust; for auto-approved calls otherwise).
    pub confine: bool,
    /// With the network: only a call the person approved (or a pattern they saved allowed)
    /// that the policy classified as using the network.
    pub network: bool,
}

/// A call's result as the model will read it.
#[derive(Debug, Clone, Default)]
pub struct Dispatched {
    pub text: String,
    pub is_error: bool,
    pub exit_code: Option<i64>,
    /// An edit that joins the proposal.
    pub edit: Option<Action>,
    /// For commands: the protections they ran under (`SandboxStatus::to_json`).
    pub sandbox: Option<Value>,
    /// For commands in a workspace: what they created, changed or deleted there.
    pub changes: Vec<Change>,
}

fn error(text: impl Into<String>) -> Dispatched {
    Dispatched {
        text: text.into(),
        is_error: true,
        ..Dispatched::default()
    }
}

fn ok(text: String) -> Dispatched {
    Dispatched {
        text,
        ..Dispatched::default()
    }
}

pub async fn run(context: &Context<'_>, tool: &str, arguments: &Value) -> Dispatched {
    let root = reading_root(context);
    let args = arguments.clone();
    match tool {
        "list_files" | "read_file" | "grep" | "find_definitions" | "find_references"
        | "outline" => {
            let name = tool.to_string();
            let project = context.root.to_path_buf();
            let indexes = context.indexes.clone();
            let tracker = context.workspace.cloned();
            let result = tokio::task::spawn_blocking(move || match name.as_str() {
                "list_files" => tools::list_files(&root, &args),
                "read_file" => tools::read_file(&root, &args),
                "grep" => tools::grep(&root, &args),
                "outline" => tools::outline(&root, &args),
                _ => {
                    // What the workspace changed overrides the index of the person's tree.
                    let changed = tracker
                        .map(|t| t.workspace().layer().bases().into_keys().collect())
                        .unwrap_or_default();
                    let code = tools::CodeView {
                        project: &project,
                        view: &root,
                        changed: &changed,
                        indexes: &indexes.indexes,
                        files: &indexes.files,
                    };
                    match name.as_str() {
                        "find_definitions" => tools::find_definitions(&code, &args),
                        _ => tools::find_references(&code, &args),
                    }
                }
            })
            .await;
            match result {
                Ok(Ok(text)) => ok(text),
                Ok(Err(e)) => error(format!("Error: {e}")),
                Err(e) => error(format!("Error: the tool stopped unexpectedly: {e}")),
            }
        }
        "write_file" | "search_replace" | "rename_file" | "delete_file" => {
            edit(context, tool, arguments).await
        }
        "run_shell" => shell(context, arguments).await,
        "fetch_url" => fetch(context, arguments).await,
        _ => match context
            .mcp
            .filter(|hub| hub.tools().iter().any(|t| t.qualified() == tool))
        {
            Some(hub) => mcp(context, hub, tool, args).await,
            None => error(format!(
                "Error: there is no tool `{tool}`. Use one of the tools you were given."
            )),
        },
    }
}

/// Calls an MCP tool; what it changed in the workspace (a stdio server works there) joins
/// the proposal.
async fn mcp(context: &Context<'_>, hub: &McpHub, tool: &str, args: Value) -> Dispatched {
    let mut called = match hub.call(tool, args, context.cancel.clone()).await {
        Ok(output) => Dispatched {
            text: output.text,
            is_error: output.is_error,
            ..Dispatched::default()
        },
        Err(e) => error(format!("Error: {e}")),
    };
    // Even a failed call may have written before it failed.
    if hub.runs_here(tool) {
        called.changes = collect(context, &mut called.text).await;
    }
    called
}

/// Fetches a web page as text (the call was approved: it reaches the network).
async fn fetch(context: &Context<'_>, arguments: &Value) -> Dispatched {
    let Some(url) = arguments.get("url").and_then(Value::as_str) else {
        return error("Error: the required argument \"url\" is missing: give an http(s) URL");
    };
    let max = arguments
        .get("max_chars")
        .and_then(Value::as_u64)
        .map_or(crate::web::DEFAULT_MAX_CHARS, |n| {
            (n as usize).clamp(200, 100_000)
        });
    let fetched = tokio::select! {
        fetched = crate::web::fetch_text(url, max) => fetched,
        _ = context.cancel.cancelled() => return error("Error: cancelled"),
    };
    match fetched {
        Ok(page) => {
            let note = match page.truncated {
                true => " (cut: ask for less with max_chars, or fetch a more specific page)",
                false => "",
            };
            ok(format!("Fetched {}{note}:\n\n{}", page.url, page.text))
        }
        Err(e) => error(format!("Error: {e}")),
    }
}

/// Where tools read: the workspace's view, else the project.
fn reading_root(context: &Context<'_>) -> std::path::PathBuf {
    match context.workspace {
        Some(tracker) => tracker.workspace().view().to_path_buf(),
        None => context.root.to_path_buf(),
    }
}

/// The path an edit names first (for its error message).
fn action_path(action: &Action) -> String {
    match action {
        Action::Write { path, .. }
        | Action::Delete { path }
        | Action::SearchReplace { path, .. } => path.clone(),
        Action::Rename { from, .. } => from.clone(),
        _ => String::new(),
    }
}

/// Checks an edit on top of the turn's earlier edits; a clean one joins the proposal.
async fn edit(context: &Context<'_>, tool: &str, arguments: &Value) -> Dispatched {
    let action = match tools::edit_action(tool, arguments) {
        Ok(action) => action,
        Err(e) => return error(format!("Error: {e}")),
    };
    let root = reading_root(context);
    let checker = Arc::clone(context.checker);
    // In a workspace the earlier edits are in the view already: nothing is replayed.
    let earlier = match context.workspace {
        Some(_) => Vec::new(),
        None => context.edits.to_vec(),
    };
    let candidate = action.clone();
    let path = action_path(&action);
    let checked = tokio::task::spawn_blocking(move || {
        let mut checker = checker.lock().unwrap_or_else(|p| p.into_inner());
        if checker.is_none() {
            // Built once per turn (again after a command): the earlier edits replayed.
            let mut fresh = EditChecker::new(&root).map_err(|e| e.to_string())?;
            for edit in earlier {
                let _ = fresh.check(edit);
            }
            *checker = Some(fresh);
        }
        match checker.as_mut() {
            Some(checker) => Ok(checker.check(candidate)),
            None => Err("internal: no edit checker".to_string()),
        }
    })
    .await;
    let op = match checked {
        Ok(Ok(Ok(op))) => op,
        Ok(Ok(Err(problem))) => {
            return error(format!(
                "Error: this edit cannot be applied to {path}: {problem}"
            ));
        }
        Ok(Err(e)) => return error(format!("Error: {e}")),
        Err(e) => return error(format!("Error: the check stopped unexpectedly: {e}")),
    };
    let what = match &action {
        Action::Rename { from, to } => format!("rename {from} to {to}"),
        Action::Delete { path } => format!("delete {path}"),
        _ => format!("{} (+{} −{} lines)", op.path, op.added, op.removed),
    };
    // A loose match is said, so the model can stop doing what made it loose.
    let what = match &op.note {
        Some(note) => format!("{what} (note: {note})"),
        None => what,
    };
    let (text, changes) = match context.workspace {
        Some(tracker) => match write_into(tracker, action.clone()).await {
            Ok(others) => (
                format!(
                    "Added to the proposal: {what}. It is in your workspace now: read_file and \
                     commands see it; the user's own files stay unchanged until they approve."
                ),
                others,
            ),
            Err(e) => return error(format!("Error: the edit could not be written: {e}")),
        },
        None => (
            format!(
                "Added to the proposal: {what}. The user reviews all changes when your turn \
                 ends; until then the file on disk is unchanged."
            ),
            Vec::new(),
        ),
    };
    Dispatched {
        text,
        edit: Some(action),
        changes,
        ..Dispatched::default()
    }
}

/// Writes a checked edit into the workspace's view, and notes it as seen (its own step
/// carries it into the proposal). What else changed there meanwhile (a stdio server at work
/// in the background) is returned, to be proposed as its own.
async fn write_into(tracker: &Arc<Tracker>, action: Action) -> Result<Vec<Change>, String> {
    let tracker = Arc::clone(tracker);
    tokio::task::spawn_blocking(move || {
        let view = tracker.workspace().view().to_path_buf();
        // The paths the edit names, normalised: the proposal is planned on the project by them.
        let named: Vec<String> = match &action {
            Action::Rename { from, to } => vec![from.clone(), to.clone()],
            other => vec![action_path(other)],
        };
        let named: Vec<String> = (named.iter())
            .filter_map(|p| crate::folder::normalize_relative(p).ok())
            .collect();
        let plan =
            crate::edits::plan::plan_actions(&view, [Ok(action)]).map_err(|e| e.to_string())?;
        let writes = plan.writes(None).map_err(|e| e.to_string())?;
        // A link in the workspace would have the edit land on another file than the one the
        // proposal names (the project has no such link): the model is told the real path.
        if let Some(write) = writes.iter().find(|w| !named.contains(&w.rel)) {
            return Err(format!(
                "the path leads through a link in the workspace to {}: edit {} itself",
                write.rel, write.rel
            ));
        }
        let workspace = tracker.workspace();
        for write in writes {
            let content = (write.new.as_ref()).map(|(bytes, mode)| (&bytes[..], *mode));
            (workspace.put(&write.rel, content)).map_err(|e| e.to_string())?;
        }
        tracker.absorb(&named).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

async fn shell(context: &Context<'_>, arguments: &Value) -> Dispatched {
    let Some(command) = arguments.get("command").and_then(Value::as_str) else {
        return error("Error: `command` (a string) is required");
    };
    let timeout = arguments
        .get("timeout_secs")
        .and_then(Value::as_u64)
        .map(Duration::from_secs)
        .map_or(context.shell_timeout, |t| t.min(context.shell_timeout));
    // The directory the policy judged, exactly: never one it did not see.
    let cwd_arg = ["cwd", "workdir"]
        .iter()
        .find_map(|k| arguments.get(k)?.as_str());
    let cwd = match policy::resolve_cwd(context.root, cwd_arg) {
        Ok(cwd) => cwd,
        Err(e) => return error(format!("Error: {e}")),
    };
    // Inside `.git` the command's directory would sit below the read-only bind mount.
    if cwd.starts_with(context.root.join(".git")) {
        return error("Error: commands cannot run inside .git; use the project directory");
    }
    // A private temp dir per call: the sandbox lets the command write there (and TMPDIR
    // points at it); it is removed afterwards.
    let temp = match tempfile::Builder::new().prefix("tandem-agent-").tempdir() {
        Ok(temp) => temp,
        Err(e) => return error(format!("Error: cannot create a temp dir: {e}")),
    };
    let grant = context.shell;
    // In a workspace a command always runs in its container: only there is the workspace
    // at the project's path (an approval under Trusted still opens the network).
    let sandbox = match (
        grant.confine || context.workspace.is_some(),
        context.workspace,
    ) {
        (true, workspace) => {
            let mut confinement =
                context
                    .sandbox
                    .confinement(context.root, temp.path(), grant.network);
            confinement.view = workspace.map(|t| t.workspace().project_view());
            Sandbox::Confined(confinement)
        }
        (false, _) => Sandbox::None,
    };
    let request = ShellRequest {
        timeout,
        sandbox,
        env_names: context.sandbox.env_names.clone(),
        ..ShellRequest::new(command, cwd)
    };
    let outcome = match process::run_shell(request, context.cancel.clone()).await {
        Ok(outcome) => outcome,
        Err(e) => return error(format!("Error: {e}")),
    };
    let mut text = outcome.render_for_model();
    let changes = collect(context, &mut text).await;
    Dispatched {
        text,
        is_error: outcome.exit_code != Some(0),
        exit_code: outcome.exit_code.map(i64::from),
        edit: None,
        sandbox: Some(outcome.sandbox.to_json()),
        changes,
    }
}

/// What a command or a server changed in the workspace since the last look, noted as the
/// proposal's and told to the model at the end of `text`.
async fn collect(context: &Context<'_>, text: &mut String) -> Vec<Change> {
    let Some(tracker) = context.workspace else {
        return Vec::new();
    };
    let changes = match changed_since_last_look(tracker).await {
        Ok(changes) => changes,
        Err(e) => {
            text.push_str(&format!("\nWhat the call changed could not be read: {e}"));
            Vec::new()
        }
    };
    if !changes.is_empty() {
        text.push_str(&changes_note(&changes));
    }
    changes
}

/// What changed in the workspace since the tracker last looked, noted as the proposal's. What
/// could not be read stays for the next look.
pub(crate) async fn changed_since_last_look(tracker: &Arc<Tracker>) -> Result<Vec<Change>, String> {
    let tracker = Arc::clone(tracker);
    match tokio::task::spawn_blocking(move || tracker.collect()).await {
        Ok(Ok(changes)) => Ok(changes),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// What the model is told of the files a command changed in its workspace.
fn changes_note(changes: &[Change]) -> String {
    let mut text = String::from("\n[files changed, now part of the proposal]\n");
    for change in changes {
        let line = match change {
            Change::Write { path, .. } => format!("- {path}\n"),
            Change::Delete { path } => format!("- {path} (deleted)\n"),
            Change::Skipped { path, reason } => {
                format!("- {path}: not proposed ({reason})\n")
            }
        };
        text.push_str(&line);
    }
    text
}
