//! Versions: the project's history, restoring the tree to an earlier commit, and undoing the
//! last approved change. Both add commits; nothing is rewritten.

use serde::Serialize;

use super::{Engine, EngineError, Result};
use crate::store::{ApprovalState, Project};
use crate::vcs::{self, Version};

#[derive(Debug, Clone, Serialize)]
pub struct RestoreOutcome {
    /// The full hash of the version restored.
    pub restored: String,
    /// The new commit; `None` when the tree already was that version.
    pub commit: Option<String>,
    /// Chat messages removed because they came after the restored version.
    pub removed_messages: usize,
    /// Paths the version has that were left as they are on disk (and out of the restore
    /// commit) because a file git does not track — ignored, or a secret — is there.
    pub kept: Vec<String>,
    /// Secret-looking untracked files not committed when uncommitted work was saved first.
    pub left_out: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UndoOutcome {
    /// The message whose change was undone.
    pub message_id: i64,
    /// The commit that was reverted.
    pub reverted: String,
    pub commit: String,
    /// Secret-looking untracked files not committed when uncommitted work was saved first.
    pub left_out: Vec<String>,
}

/// What the person should know a restore or undo did not touch: files left as they are on
/// disk, and secret-looking files kept out of the commit. One line each, empty when none.
pub fn untouched_notes(kept: &[String], left_out: &[String]) -> Vec<String> {
    let mut notes = Vec::new();
    if !kept.is_empty() {
        notes.push(format!(
            "left as it is on disk (a file git does not track, ignored or secret, is there): {}",
            kept.join(", ")
        ));
    }
    if !left_out.is_empty() {
        notes.push(format!(
            "not committed, because it looks like a secret (still on disk, untracked): {}",
            left_out.join(", ")
        ));
    }
    notes
}

impl RestoreOutcome {
    pub fn notes(&self) -> Vec<String> {
        untouched_notes(&self.kept, &self.left_out)
    }
}

impl UndoOutcome {
    pub fn notes(&self) -> Vec<String> {
        untouched_notes(&[], &self.left_out)
    }
}

impl Engine {
    /// The newest `limit` versions, newest first.
    pub fn log(&self, project: &Project, limit: usize) -> Result<Vec<Version>> {
        Ok(vcs::log(&vcs::open(&project.path)?, limit)?)
    }

    /// A version's diff against its parent, as unified diff text.
    pub fn version_diff(&self, project: &Project, commit: &str) -> Result<String> {
        Ok(vcs::commit_patch(&vcs::open(&project.path)?, commit)?)
    }

    /// Brings the project back to `commit` as a new commit. Uncommitted work is committed
    /// first. Messages that describe changes the restore removed go: the chat that produced
    /// `commit` loses the messages after it, and a chat that started at `commit` and made
    /// changes since loses all of them. Chats that changed nothing keep every message, and a
    /// restore that changes no file (the project already is at `commit`) removes nothing.
    pub fn restore(&self, project: &Project, commit: &str) -> Result<RestoreOutcome> {
        self.locked(&project.path, || {
            let repo = vcs::open(&project.path)?;
            let restored = vcs::restore(&repo, commit)?;
            let removed = match restored.commit {
                Some(_) => self.remove_messages_after(project, &restored.restored)?,
                // No file changed, so no message describes a change that is gone.
                None => 0,
            };
            Ok(RestoreOutcome {
                restored: restored.restored,
                commit: restored.commit,
                removed_messages: removed,
                kept: restored.kept,
                left_out: restored.left_out,
            })
        })
    }

    /// Removes the messages whose changes a restore to `restored` took away; returns how many.
    fn remove_messages_after(&self, project: &Project, restored: &str) -> Result<usize> {
        let mut removed = 0;
        if let Some(message) = self.store.message_by_commit(project.id, restored)? {
            removed += self
                .store
                .delete_messages_after(message.chat_id, message.id)?;
        }
        for chat in self.store.chats(project.id)? {
            if chat.initial_commit.as_deref() != Some(restored) {
                continue;
            }
            // Only a chat that committed something since its start lost anything: a chat
            // that asked questions, or whose proposals are still pending (even one an
            // interrupted approval marked with a commit), is left as it is.
            let changed = self.store.messages(chat.id)?.iter().any(|m| {
                m.approval_state == Some(ApprovalState::Approved) && m.commit_hash.is_some()
            });
            if changed {
                removed += self.store.clear_chat(chat.id)?;
            }
        }
        Ok(removed)
    }

    /// Reverts the newest approved change that is still in place (three-way, so later
    /// unrelated edits stay) as a new commit.
    ///
    /// The undo's commit is made first without moving HEAD and recorded on the message as
    /// in flight, then it lands, then the message is marked reverted by it. Wherever a kill
    /// stops this, the next start (or the next undo) settles the message from git.
    pub fn undo(&self, project: &Project) -> Result<UndoOutcome> {
        self.locked(&project.path, || {
            self.settle_undoing(project.id)?;
            let message = self
                .store
                .last_undoable_message(project.id)?
                .ok_or(EngineError::NothingToUndo)?;
            let reverted = message
                .commit_hash
                .clone()
                .ok_or(EngineError::NothingToUndo)?;
            let repo = vcs::open(&project.path)?;
            let original = vcs::find_commit(&repo, &reverted)?;
            let summary =
                String::from_utf8_lossy(original.summary_bytes().unwrap_or_default()).into_owned();
            let summary = summary.strip_prefix("[tandem] ").unwrap_or(&summary);
            let text = format!("[tandem] Undo {}: {summary}", vcs::short(&reverted));
            drop(original);
            let unlanded = vcs::prepare_revert(&repo, &reverted, &text)?;
            let commit = unlanded.commit.to_string();
            self.store.set_undoing(message.id, Some(&commit))?;
            if let Err(e) = vcs::land(&repo, &unlanded) {
                // HEAD did not move: the mark goes (or the next settle clears it).
                let _ = self.settle_undoing(project.id);
                return Err(e.into());
            }
            crate::failpoint::hit("undo-before-record");
            self.store.set_reverted_by(message.id, &commit)?;
            Ok(UndoOutcome {
                message_id: message.id,
                reverted,
                commit,
                left_out: unlanded.left_out,
            })
        })
    }

    /// Settles the undos a killed process left in flight in `project` from git: an undo
    /// whose commit is in HEAD's history is recorded on its message; one that never landed
    /// loses its mark. Call with the project locked.
    fn settle_undoing(&self, project_id: i64) -> Result<()> {
        let undoing = self.store.undoing(Some(project_id))?;
        if undoing.is_empty() {
            return Ok(());
        }
        let repo = vcs::open(&self.store.project(project_id)?.path)?;
        for (_, message, commit) in undoing {
            match vcs::in_history(&repo, &commit)? {
                true => self.store.set_reverted_by(message, &commit)?,
                false => self.store.set_undoing(message, None)?,
            }
        }
        Ok(())
    }

    /// Settles every undo left in flight, at start-up. Best effort: a project that cannot
    /// be settled now is settled before its next undo.
    pub(super) fn settle_all_undoing(&self) {
        let Ok(undoing) = self.store.undoing(None) else {
            return;
        };
        let mut projects: Vec<i64> = undoing.iter().map(|(project, ..)| *project).collect();
        projects.dedup();
        for id in projects {
            // Held elsewhere: that process is undoing it now.
            if let Ok(project) = self.store.project(id) {
                let _ = self.locked_if_free(&project.path, || self.settle_undoing(id));
            }
        }
    }
}
