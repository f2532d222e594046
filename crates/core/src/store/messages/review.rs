//! A reply's review state: pending, approved or rejected, what the person left out and why
//! ([`ApprovalNote`]), the commit an approval made or an undo reverted, and the files' blob
//! hashes as planned ([`PlanBase`]).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{COLUMNS, finish, from_row, from_row_at, plan_base_json};
use crate::store::{Message, Result, Store, StoreError, now_ms, text_enum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    Pending,
    Approved,
    Rejected,
}
text_enum!(ApprovalState { Pending => "pending", Approved => "approved", Rejected => "rejected" });

/// What the person decided about a proposal beyond approved/rejected: the part they left
/// out and why. Told back to the model on the next turn so it does not propose the same
/// thing again unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApprovalNote {
    /// Hunks applied, of all the proposal's hunks (text files; a binary or deleted file
    /// counts as one).
    pub hunks_applied: usize,
    pub hunks_total: usize,
    /// What was left out, file by file.
    pub left_out: Vec<LeftOut>,
    /// The person's words, if they gave any.
    pub reason: Option<String>,
}

/// One file's part that was not applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeftOut {
    pub path: String,
    /// The file's whole change was left out (not only some of its hunks).
    pub whole: bool,
    /// The hunks left out as unified-diff text (header and lines, shortened); empty for a
    /// binary file or the dependencies.
    pub hunks: Vec<String>,
}

/// How a proposal's dependencies show in its note's `left_out` (in place of a path).
const DEPENDENCIES: &str = "(dependencies: ";

impl LeftOut {
    /// The proposal's dependencies (`packages`) were left out: not installed.
    pub fn dependencies(packages: &[String]) -> Self {
        Self {
            path: format!("{DEPENDENCIES}{})", packages.join(" ")),
            whole: true,
            hunks: Vec::new(),
        }
    }

    /// This stands for the dependencies, not a file.
    pub fn is_dependencies(&self) -> bool {
        self.path.starts_with(DEPENDENCIES)
    }
}

impl ApprovalNote {
    /// What was left out of the file at `path` (as the plan names it: relative,
    /// normalised), if anything.
    pub fn left_out_of(&self, path: &str) -> Option<&LeftOut> {
        self.left_out.iter().find(|l| l.path == path)
    }

    /// The dependencies were left out (not installed).
    pub fn dependencies_left_out(&self) -> bool {
        self.left_out.iter().any(LeftOut::is_dependencies)
    }

    /// Only part of the proposal was applied.
    pub fn partial(&self) -> bool {
        self.hunks_applied < self.hunks_total
    }

    /// "1 of 2 hunks" (for a commit message or a chat card), when only part was applied.
    pub fn part_applied(&self) -> Option<String> {
        self.partial()
            .then(|| format!("{} of {} hunks", self.hunks_applied, self.hunks_total))
    }
}

/// Path → git blob hash of each file a proposal touches, as it was when planned (`None`: the
/// file did not exist).
pub type PlanBase = BTreeMap<String, Option<String>>;

impl Store {
    /// Records a review decision; `commit` is the commit an approval produced.
    pub fn set_approval(&self, id: i64, state: ApprovalState, commit: Option<&str>) -> Result<()> {
        self.update(
            id,
            "approval_state = ?2, commit_hash = COALESCE(?4, commit_hash)",
            params![id, state, now_ms(), commit],
        )
    }

    /// Records (or clears) what the person decided beyond approved/rejected.
    pub fn set_approval_note(&self, id: i64, note: Option<&ApprovalNote>) -> Result<()> {
        let json = note
            .map(serde_json::to_string)
            .transpose()
            .map_err(|source| StoreError::Json {
                what: "approval note",
                source,
            })?;
        self.update(id, "approval_note = ?2", params![id, json, now_ms()])
    }

    /// Marks a pending proposal as being applied as `commit` (before HEAD moves to it), or
    /// clears that mark (`None`). A pending message with a commit is "applying": if the
    /// process stops before the approval is recorded, the engine settles it from git. Only a
    /// pending message changes.
    pub fn set_applying(&self, id: i64, commit: Option<&str>) -> Result<()> {
        self.change_row(
            "pending proposal",
            id,
            "UPDATE messages SET commit_hash = ?2, updated_at = ?3
             WHERE id = ?1 AND approval_state = 'pending'",
            params![id, commit, now_ms()],
        )
    }

    /// Every proposal left applying (pending with a commit), with its chat's project id.
    pub fn applying_messages(&self) -> Result<Vec<(i64, Message)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT c.project_id, m.{} FROM messages m JOIN chats c ON c.id = m.chat_id
             WHERE m.approval_state = 'pending' AND m.commit_hash IS NOT NULL ORDER BY m.id",
            COLUMNS.replace(", ", ", m.")
        ))?;
        let rows = stmt.query_map([], |row| {
            let project: i64 = row.get(0)?;
            let rest = from_row_at(row, 1)?;
            Ok((project, rest))
        })?;
        rows.map(|row| {
            let (project, message) = row?;
            Ok((project, finish(message)?))
        })
        .collect()
    }

    pub fn set_plan_base(&self, id: i64, base: &PlanBase) -> Result<()> {
        let json = plan_base_json(Some(base))?;
        self.update(id, "plan_base = ?2", params![id, json, now_ms()])
    }

    /// Records that `commit` undid the message's change (and that no undo of it is in
    /// flight any more).
    pub fn set_reverted_by(&self, id: i64, commit: &str) -> Result<()> {
        self.update(
            id,
            "reverted_by = ?2, undoing = NULL",
            params![id, commit, now_ms()],
        )
    }

    /// The message in a project that carries `commit` (full hash), if any.
    pub fn message_by_commit(&self, project_id: i64, commit: &str) -> Result<Option<Message>> {
        let row = self
            .conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM messages WHERE commit_hash = ?2 AND chat_id IN
                     (SELECT id FROM chats WHERE project_id = ?1) ORDER BY id DESC LIMIT 1"
                ),
                params![project_id, commit],
                from_row,
            )
            .optional()?;
        row.map(finish).transpose()
    }

    /// The newest approved change in a project that has not been undone.
    pub fn last_undoable_message(&self, project_id: i64) -> Result<Option<Message>> {
        let row = self
            .conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM messages WHERE approval_state = 'approved'
                     AND commit_hash IS NOT NULL AND reverted_by IS NULL AND chat_id IN
                     (SELECT id FROM chats WHERE project_id = ?1)
                     ORDER BY updated_at DESC, id DESC LIMIT 1"
                ),
                [project_id],
                from_row,
            )
            .optional()?;
        row.map(finish).transpose()
    }
}
