//! Workspace commands: the review's Run panel and the workspaces in Settings → Agent. Part
//! of [`Command`](crate::command::Command) (as `Command::Workspace`): buttons, the palette
//! and tests send the same values.

use crate::backend::{Backend, Event};
use crate::model::state::AppState;
use tandem_core::app::CleanScope;

#[derive(Debug, Clone, PartialEq)]
pub enum WorkspaceCommand {
    /// The open chat's Run field, as typed.
    SetRunCommand(String),
    /// Runs the open chat's Run field (as prefilled: the project's check command) in its
    /// workspace, in the background.
    Run,
    /// Puts the open chat's last run output away.
    ClearRun,
    /// Lists the workspaces with their sizes.
    Load,
    Clean(CleanScope),
}

impl AppState {
    /// The command the open project's Run fields start with: its check command, or nothing.
    pub fn default_run_command(&self) -> &str {
        self.project
            .as_ref()
            .and_then(|p| p.project.settings.check_command.as_deref())
            .unwrap_or_default()
    }

    pub(super) fn apply_workspace(&mut self, command: WorkspaceCommand, backend: &Backend) {
        let chat = self.chat().map(|c| c.chat.id);
        match command {
            WorkspaceCommand::SetRunCommand(text) => {
                if let Some(chat) = chat {
                    self.workspaces.runs.entry(chat).or_default().command = Some(text);
                }
            }
            WorkspaceCommand::Run => {
                let Some(chat) = chat else {
                    return self.toast("Open a chat first", true);
                };
                let default = self.default_run_command().to_string();
                let run = self.workspaces.runs.entry(chat).or_default();
                let line = run.command_or(&default).trim().to_string();
                if line.is_empty() {
                    return self.toast("Type a command to run", true);
                }
                if self.workspaces.start(chat) {
                    // Reported whatever happens.
                    backend.query_async(
                        "running in the workspace",
                        move |app| async move {
                            let cancel = tokio_util::sync::CancellationToken::new();
                            let run = app.run_in_workspace(chat, Some(&line), cancel).await;
                            anyhow::Ok(run.map_err(|e| e.to_string()))
                        },
                        move |result| Event::WorkspaceRun {
                            chat_id: chat,
                            result: Box::new(result),
                        },
                    );
                }
            }
            WorkspaceCommand::ClearRun => {
                if let Some(run) = chat.and_then(|c| self.workspaces.runs.get_mut(&c)) {
                    run.last = None;
                }
            }
            WorkspaceCommand::Load => load_workspaces(backend),
            WorkspaceCommand::Clean(scope) => backend.clean_workspaces(scope),
        }
    }
}

/// Lists the workspaces with their sizes.
pub(crate) fn load_workspaces(backend: &Backend) {
    backend.query(
        "listing the workspaces",
        |app| app.workspaces(),
        Event::Workspaces,
    );
}
