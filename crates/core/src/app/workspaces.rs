//! The chats' workspaces: listing them with their size, cleaning them, and the person's own
//! run of a command in one (`tandem run`, the review's Run button). A run happens where the
//! agent's commands do — in its container, the workspace at the project's path — on what the
//! review shows: the chat's pending proposal is put into the workspace first where the
//! workspace does not hold it (a Build reply's), see [`Workspace::hold`]. What a run changes
//! stays in the workspace: it never joins the proposal by itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{App, AppError, Result};
use crate::checks::CheckError;
use crate::edits::{FileSelection, Selection};
use crate::engine::Engine;
use crate::layer::{Ending, Held, Kind, Layer, LayerError, LeftOut, Workspace};
use crate::store::StoreError;
use crate::store::keys::CHECK_TIMEOUT_SECS;

pub use crate::engine::{CleanScope, Cleaned, WorkspaceInfo};

/// Characters kept of each stream of a run (head and tail): a person reads it, not a model.
pub const RUN_OUTPUT_CAP: usize = 200_000;

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("no chat {0}: `tandem chats --project P` lists a project's chats")]
    NoChat(i64),
    #[error(
        "nothing to run: give a command, or set the project's check command \
         (`tandem project config --project P --check-command CMD`)"
    )]
    NoCommand,
    #[error(
        "the agent's container cannot be built here ({0}), and only there is the workspace at \
         the project's path: the command would change the project itself, so it was not run"
    )]
    NoContainer(String),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Run(#[from] CheckError),
}

/// A command run in a chat's workspace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkspaceRun {
    pub chat_id: i64,
    pub command: String,
    /// `None`: killed (by a signal, the timeout or a cancel).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration_ms: u64,
    /// What confined it, as agent steps show it (`confined`, protections, `gaps`).
    pub sandbox: serde_json::Value,
    /// How the workspace is kept: `overlay` or `copy`.
    pub kind: &'static str,
    /// The pending proposal the run saw (`None`: the chat has none, and nothing of an
    /// earlier one had to be taken back).
    pub proposal: Option<RunProposal>,
}

/// The chat's pending proposal in a run's workspace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunProposal {
    /// Its reply (`None`: none is pending; what an earlier one put was taken back).
    pub message_id: Option<i64>,
    #[serde(flatten)]
    pub held: Held,
}

impl RunProposal {
    /// What a person should know of the run's view, one line a file: where it is not the
    /// proposal's (the workspace's own version, or the project's).
    pub fn notes(&self) -> Vec<String> {
        // A path left out may be anything a model wrote: shown with what would not show
        // escaped, on one line.
        let shown = |path: &str| crate::display::visible(path).replace('\n', "\\n");
        let kept = (self.held.kept.iter()).map(|path| {
            let path = shown(path);
            format!("{path}: the workspace's own version ran, not the proposal's")
        });
        let left_out = (self.held.left_out.iter()).map(|file| {
            format!(
                "{}: not in the run ({}); the project's version ran",
                shown(&file.path),
                file.reason
            )
        });
        kept.chain(left_out).collect()
    }
}

impl WorkspaceRun {
    /// Whether the command ran to the end and exited 0.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

impl App {
    /// Where the chats' workspaces live (the data directory the chats use).
    fn layers_home(&self) -> PathBuf {
        self.chat.layers_home()
    }

    /// Every chat's workspace, with its size and whether its chat has a pending proposal.
    pub fn workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        Ok(self.engine().workspaces(&self.layers_home())?)
    }

    /// Removes the workspaces of `scope` (never one a turn or a run has open).
    pub fn clean_workspaces(&self, scope: CleanScope) -> Result<Cleaned> {
        Ok(self.engine().clean_workspaces(&self.layers_home(), scope)?)
    }

    /// What a run in the chat's workspace runs when given no command: its project's check
    /// command (`None`: it has none).
    pub fn default_run_command(&self, chat_id: i64) -> Result<Option<String>> {
        let chat = self.chat_or_refuse(chat_id)?;
        let project = self.store().project(chat.project_id)?;
        Ok(project
            .settings
            .check_command
            .filter(|c| !c.trim().is_empty()))
    }

    fn chat_or_refuse(&self, chat_id: i64) -> Result<crate::store::Chat> {
        match self.store().chat(chat_id) {
            Ok(chat) => Ok(chat),
            Err(StoreError::NotFound { .. }) => Err(WorkspaceError::NoChat(chat_id).into()),
            Err(e) => Err(e.into()),
        }
    }

    /// Runs `command` (a shell command line; `None` or blank: the project's check command)
    /// in chat `chat_id`'s workspace, opening it (made from the project if it has none), in
    /// the agent's container at the project's path, within the check's timeout.
    pub async fn run_in_workspace(
        &self,
        chat_id: i64,
        command: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<WorkspaceRun> {
        let command = match command.map(str::trim).filter(|c| !c.is_empty()) {
            Some(command) => command.to_string(),
            None => self
                .default_run_command(chat_id)?
                .ok_or(WorkspaceError::NoCommand)?,
        };
        let chat = self.chat_or_refuse(chat_id)?;
        let project = self.store().project(chat.project_id)?;
        let protections = self.sandbox();
        if !protections.container {
            let why = match protections.notes.join("; ") {
                notes if notes.is_empty() => "no user namespaces".to_string(),
                notes => notes,
            };
            return Err(WorkspaceError::NoContainer(why).into());
        }
        let layer = Layer::of(&self.layers_home(), chat_id);
        let pending = self.store().pending_proposal(chat_id)?;
        let engine = Arc::clone(&self.engine);
        let opened = tokio::task::spawn_blocking(move || {
            let workspace =
                Workspace::open(layer, &project.path, false).map_err(WorkspaceError::Layer)?;
            let proposal = hold_pending(&engine, &workspace, pending)?;
            Ok::<_, AppError>((workspace, proposal))
        })
        .await
        .map_err(|e| AppError::Task(e.to_string()))?;
        let (workspace, proposal) = opened?;
        let settings = crate::checks::CheckSettings {
            command: command.clone(),
            timeout: self
                .store()
                .setting::<u64>(CHECK_TIMEOUT_SECS)
                .ok()
                .flatten()
                .map_or(crate::checks::DEFAULT_CHECK_TIMEOUT, Duration::from_secs),
            sandbox: self.chat.sandbox_settings(),
            scratch_base: None,
        };
        let outcome =
            crate::checks::run_in_workspace(&workspace, &settings, RUN_OUTPUT_CAP, cancel)
                .await
                .map_err(WorkspaceError::Run)?;
        let kind = match workspace.kind() {
            Kind::Overlay => "overlay",
            Kind::Copy => "copy",
        };
        // Closing it (the overlay's holder) waits on a process: not on the runtime's thread.
        let _ = tokio::task::spawn_blocking(move || drop(workspace)).await;
        Ok(WorkspaceRun {
            chat_id,
            command,
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            timed_out: outcome.timed_out,
            cancelled: outcome.cancelled,
            duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            sandbox: outcome.sandbox.to_json(),
            kind,
            proposal,
        })
    }
}

/// Puts the chat's pending proposal `pending` into `workspace`, as the review shows it
/// (what it cannot hold, an error or a conflict, left out with why); with none pending,
/// takes back what an earlier one put.
fn hold_pending(
    engine: &Engine,
    workspace: &Workspace,
    pending: Option<i64>,
) -> Result<Option<RunProposal>> {
    let (mut endings, mut unusable) = (Vec::new(), Vec::new());
    if let Some(message_id) = pending {
        let plan = engine.review(message_id)?.plan;
        let mut files = Vec::new();
        for file in &plan.files {
            match file.error.as_ref().or(file.conflict.as_ref()) {
                Some(reason) => unusable.push(LeftOut {
                    path: file.path.clone(),
                    reason: reason.clone(),
                }),
                None => files.push(FileSelection {
                    path: file.path.clone(),
                    hunks: None,
                }),
            }
        }
        // An edit that failed on a file it alone touches leaves no file change: said too.
        for op in &plan.operations {
            let file = op.op != crate::edits::plan::OpKind::AddDependency;
            if file
                && op.status == crate::edits::plan::OpStatus::Error
                && plan.file(&op.path).is_none()
                && !unusable.iter().any(|u: &LeftOut| u.path == op.path)
            {
                unusable.push(LeftOut {
                    path: op.path.clone(),
                    reason: op.error.clone().unwrap_or_else(|| "the edit failed".into()),
                });
            }
        }
        let selection = Selection {
            files,
            dependencies: false,
        };
        let writes = (plan.writes(Some(&selection))).map_err(crate::engine::EngineError::from)?;
        endings = (writes.into_iter())
            .map(|write| Ending {
                path: write.rel,
                content: write.new,
            })
            .collect();
    }
    let held = workspace
        .hold(&endings, &unusable)
        .map_err(WorkspaceError::Layer)?;
    if pending.is_none() && held == Held::default() {
        return Ok(None);
    }
    Ok(Some(RunProposal {
        message_id: pending,
        held,
    }))
}

/// A size as people read it: `812 B`, `4.2 MB`, `1.3 GB` (powers of 1000, as file managers
/// show them).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::{RunProposal, human_bytes};
    use crate::layer::{Held, LeftOut};

    /// A left-out path is what a model wrote: a bidi override or a line break in it would
    /// make the note read otherwise, or forge a note of its own.
    #[test]
    fn a_note_shows_a_path_as_it_is_on_one_line() {
        let proposal = RunProposal {
            message_id: Some(1),
            held: Held {
                kept: vec!["src/\u{202e}txt.exe".into()],
                left_out: vec![LeftOut {
                    path: "../a\ntandem: src/main.rs".into(),
                    reason: "the path leaves the project".into(),
                }],
                ..Held::default()
            },
        };
        let notes = proposal.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("src/\\u{202e}txt.exe: "), "{notes:?}");
        assert!(
            notes[1].starts_with("../a\\ntandem: src/main.rs: "),
            "{notes:?}"
        );
        assert!(
            notes.iter().all(|n| !n.contains(['\n', '\u{202e}'])),
            "{notes:?}"
        );
    }

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(4_200_000), "4.2 MB");
        assert_eq!(human_bytes(1_300_000_000), "1.3 GB");
    }
}
