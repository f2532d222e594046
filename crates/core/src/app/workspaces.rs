//! The chats' workspaces: listing them with their size, cleaning them, and the person's own
//! run of a command in one (`tandem run`, the review's Run button). A run happens where the
//! agent's commands do — in its container, the workspace at the project's path — and what
//! it changes stays in the workspace: it never joins the proposal.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{App, AppError, Result};
use crate::checks::CheckError;
use crate::layer::{Kind, Layer, LayerError, Workspace};
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
        let opened =
            tokio::task::spawn_blocking(move || Workspace::open(layer, &project.path, false))
                .await
                .map_err(|e| AppError::Task(e.to_string()))?;
        let workspace = opened.map_err(WorkspaceError::Layer)?;
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
        })
    }
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
    use super::human_bytes;

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(4_200_000), "4.2 MB");
        assert_eq!(human_bytes(1_300_000_000), "1.3 GB");
    }
}
