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
        self.locked(project.id, || {
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
    pub fn undo(&self, project: &Project) -> Result<UndoOutcome> {
        self.locked(project.id, || {
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
            let (commit, left_out) = vcs::revert(&repo, &reverted, &text)?;
            crate::failpoint::hit("undo-before-record");
            self.store.set_reverted_by(message.id, &commit)?;
            Ok(UndoOutcome {
                message_id: message.id,
                reverted,
                commit,
                left_out,
            })
        })
    }
}
