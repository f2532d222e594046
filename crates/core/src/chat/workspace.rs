//! The chat's workspace in a turn: opened when an Agent turn starts (a Plan turn reads it
//! when it exists), dropped when the turn ends (the layer stays on disk with the pending
//! proposal). Changes a workspace still holds from an earlier turn whose proposal was not
//! decided join this turn's proposal, which replaces that one: one workspace, one proposal.

use std::sync::Arc;

use super::turn::Turn;
use super::{ChatEventKind, ChatService};
use crate::layer::{Change, Layer, LayerError, Tracker, Workspace};
use crate::store::{ApprovalState, ChatMode, NewStep, StepDecision, StepKind};

/// The label of changes carried from an earlier turn.
const CARRIED: &str = "carried from an earlier turn (its proposal was not decided)";

impl ChatService {
    /// The chat's workspace for `turn`: `Ok(None)` for a Plan turn of a chat without one, and
    /// why when it could not be opened. The agent works only in its workspace, so that what
    /// it and its commands change comes back as a proposal: an Agent turn without one does not
    /// start (a Plan turn, which changes nothing, reads the project instead).
    pub(super) async fn open_workspace(&self, turn: &Turn) -> Result<Option<Arc<Tracker>>, String> {
        let plan = turn.chat.mode == ChatMode::Plan;
        let layer = Layer::of(&self.layers_home(), turn.chat.id);
        if plan && !layer.exists() {
            return Ok(None);
        }
        // The person's own run may have it open (`tandem run`, the review's Run): the turn
        // waits for it rather than work on the project itself.
        let opened = loop {
            let (layer, project) = (layer.clone(), turn.project.path.clone());
            let opened = tokio::task::spawn_blocking(move || {
                let workspace = Workspace::open(layer, &project, false)?;
                Tracker::start(Arc::new(workspace))
            })
            .await;
            if !matches!(opened, Ok(Err(LayerError::Busy))) {
                break opened;
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => {}
                _ = turn.cancel.cancelled() => break opened,
            }
        };
        let (tracker, carried) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => return Err(format!("The chat's workspace could not be opened: {e}")),
            Err(e) => return Err(format!("The chat's workspace could not be opened: {e}")),
        };
        if !plan && !carried.is_empty() {
            self.carry(turn, &carried, CARRIED);
        }
        Ok(Some(Arc::new(tracker)))
    }

    /// Makes `carried` part of this turn's proposal, each change saying `label`; the earlier
    /// undecided proposals of the chat give way to it once it is one
    /// ([`ChatService::give_way`]).
    pub(super) fn carry(&self, turn: &Turn, carried: &[Change], label: &str) {
        let store = self.engine.store();
        for change in carried {
            let (tool, arguments) = match change {
                Change::Write { path, content } => (
                    "write_file",
                    serde_json::json!({ "path": path, "content": content, "description": label }),
                ),
                Change::Delete { path } => ("delete_file", serde_json::json!({ "path": path })),
                Change::Skipped { .. } => continue,
            };
            let step = NewStep {
                tool: Some(tool),
                arguments: Some(&arguments),
                decision: Some(StepDecision::Allowed),
                reason: Some(label),
                result: Some(label),
                ..NewStep::default()
            };
            if let Ok(step) = store.add_agent_step(turn.message_id, StepKind::Tool, &step) {
                self.event(turn, ChatEventKind::Step { step });
            }
        }
    }

    /// When this turn's reply carried an earlier turn's changes and is now a proposal, the
    /// chat's earlier undecided proposals give way to it: one workspace, one proposal. Not
    /// before: a turn that fails leaves them pending, and their workspace with them.
    pub(super) fn give_way(&self, turn: &Turn) {
        let store = self.engine.store();
        let carried = (store
            .agent_steps(turn.message_id)
            .ok()
            .into_iter()
            .flatten())
        .any(|step| step.reason.as_deref() == Some(CARRIED));
        if !carried {
            return;
        }
        if let Ok(messages) = store.messages(turn.chat.id) {
            for message in messages {
                if message.id != turn.message_id
                    && message.approval_state == Some(ApprovalState::Pending)
                {
                    let _ = store.set_approval(message.id, ApprovalState::Rejected, None);
                }
            }
        }
    }

    /// Removes a chat's workspace (its proposal was decided, or the chat went), unless a run
    /// or a turn has it open: then it stays, stale, for the next start's clean.
    pub fn discard_workspace(&self, chat_id: i64) -> Result<(), crate::layer::LayerError> {
        Layer::of(&self.layers_home(), chat_id)
            .discard_unused()
            .map(|_| ())
    }

    /// Where the chats' workspaces live: below the engine's data directory (the database's),
    /// else the service's.
    pub(crate) fn layers_home(&self) -> std::path::PathBuf {
        self.engine
            .data_dir()
            .map_or_else(|| self.data_dir.clone(), std::path::Path::to_path_buf)
    }
}
