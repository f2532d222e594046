//! Edit plans: what a complete reply would do to the project, computed without touching disk.
//!
//! Operations run in order against an in-memory overlay of the files they touch (a write then
//! a search-replace of the same file sees the written text), and the result is, per affected
//! file, its text before and after with diff hunks. The plan records each file's git blob
//! hash as read, so applying later can refuse a file that changed since.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::actions::{Action, MissingAttribute, actions};
use super::diff::{Hunk, unified};
use super::findings::SecurityFinding;
use super::parser::parse;
use crate::folder::resolve;
use crate::store::PlanBase;

mod planner;

use planner::{Planner, Slot};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    Write,
    Rename,
    Delete,
    SearchReplace,
    AddDependency,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpStatus {
    Ok,
    /// A search-replace whose every block is already in the file: nothing to do.
    AlreadyApplied,
    Error,
}

/// One tag of the reply, as planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operation {
    pub op: OpKind,
    /// The file (for a rename, its old path; for dependencies, the package list).
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub status: OpStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How an edit that applied had to be read to apply, for its card: a search-replace
    /// whose SEARCH lines carried line numbers, found once they were taken off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub added: usize,
    pub removed: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileChangeKind {
    Added,
    Modified,
    Deleted,
    Renamed,
}

/// The net effect of a reply on one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub kind: FileChangeKind,
    /// Either side is not UTF-8 text: no line diff, applied whole.
    pub binary: bool,
    #[serde(skip)]
    pub old_text: Option<String>,
    #[serde(skip)]
    pub new_text: Option<String>,
    pub hunks: Vec<Hunk>,
    pub added: usize,
    pub removed: usize,
    /// An operation on this file failed; the file cannot be applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The file changed on disk since the proposal was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
    #[serde(skip)]
    pub(crate) new_content: Option<(Vec<u8>, u32)>,
}

impl FileChange {
    pub fn applicable(&self) -> bool {
        self.error.is_none() && self.conflict.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SqlStatement {
    pub description: Option<String>,
    pub sql: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditPlan {
    /// The canonical project root the plan was computed against.
    #[serde(skip)]
    pub root: PathBuf,
    pub operations: Vec<Operation>,
    pub files: Vec<FileChange>,
    pub dependencies: Vec<String>,
    pub summary: Option<String>,
    pub sql: Vec<SqlStatement>,
    pub security_findings: Vec<SecurityFinding>,
    pub problem_reports: Vec<String>,
    /// Every touched path → its blob hash when planned (`None`: absent).
    #[serde(skip)]
    pub base: PlanBase,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read the project folder {path}: {source}")]
pub struct PlanError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl EditPlan {
    /// Whether the reply proposes anything to review (file changes or dependencies).
    pub fn is_proposal(&self) -> bool {
        !self.operations.is_empty()
    }

    pub fn errors(&self) -> impl Iterator<Item = &Operation> {
        self.operations
            .iter()
            .filter(|op| op.status == OpStatus::Error)
    }

    pub fn conflicts(&self) -> impl Iterator<Item = &FileChange> {
        self.files.iter().filter(|f| f.conflict.is_some())
    }

    pub fn file(&self, path: &str) -> Option<&FileChange> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The whole proposal as one unified diff.
    pub fn unified_diff(&self) -> String {
        let mut out = String::new();
        for file in &self.files {
            let old = match file.kind {
                FileChangeKind::Added => None,
                FileChangeKind::Renamed => file.old_path.as_deref(),
                _ => Some(file.path.as_str()),
            };
            let new = (file.kind != FileChangeKind::Deleted).then_some(file.path.as_str());
            if file.binary {
                let a = old.map_or("/dev/null".into(), |p| format!("a/{p}"));
                let b = new.map_or("/dev/null".into(), |p| format!("b/{p}"));
                out.push_str(&format!("Binary files {a} and {b} differ\n"));
            } else {
                out.push_str(&unified(old, new, &file.hunks));
            }
        }
        out
    }
}

/// Plans a complete reply against the project at `root`.
pub fn build_plan(root: &Path, reply: &str) -> Result<EditPlan, PlanError> {
    plan_actions(root, actions(&parse(reply)))
}

/// Plans actions in order (an agent's edit tool calls, a reply's tags) against `root`.
pub fn plan_actions(
    root: &Path,
    actions: impl IntoIterator<Item = Result<Action, MissingAttribute>>,
) -> Result<EditPlan, PlanError> {
    let root = crate::folder::root_path(root).map_err(|source| PlanError {
        path: root.to_path_buf(),
        source,
    })?;
    let mut planner = Planner::new(root);
    for action in actions {
        planner.run(action);
    }
    Ok(planner.finish())
}

/// Checks edits one at a time on top of the ones it accepted before: one planner for a whole
/// agent turn, each file read once (the disk as it was when the turn first touched it),
/// instead of re-planning every earlier edit from disk for each new one. A failed edit leaves
/// no trace, so later edits are checked as if it had never been proposed.
pub struct EditChecker {
    planner: Planner,
}

impl EditChecker {
    pub fn new(root: &Path) -> Result<Self, PlanError> {
        let root = crate::folder::root_path(root).map_err(|source| PlanError {
            path: root.to_path_buf(),
            source,
        })?;
        Ok(EditChecker {
            planner: Planner::new(root),
        })
    }

    /// Checks `action` on top of the accepted edits: its operation when it applies (it is
    /// then accepted), else why not (and nothing of it is kept).
    pub fn check(&mut self, action: Action) -> Result<Operation, String> {
        let p = &mut self.planner;
        let touched: Vec<String> = action_paths(&action)
            .into_iter()
            .filter_map(|raw| resolve(&p.plan.root, raw).ok().map(|r| r.rel))
            .collect();
        let saved: Vec<(String, Option<Slot>)> = touched
            .iter()
            .map(|rel| (rel.clone(), p.slots.get(rel).cloned()))
            .collect();
        let lengths = (
            p.order.len(),
            p.renames.len(),
            p.plan.operations.len(),
            p.plan.dependencies.len(),
        );
        p.run(Ok(action));
        let op = p.plan.operations.last().cloned();
        match op {
            Some(op) if op.error.is_none() && p.plan.operations.len() > lengths.2 => Ok(op),
            failed => {
                for (rel, slot) in saved {
                    match slot {
                        Some(slot) => p.slots.insert(rel, slot),
                        None => p.slots.remove(&rel),
                    };
                }
                p.order.truncate(lengths.0);
                p.renames.truncate(lengths.1);
                p.plan.operations.truncate(lengths.2);
                p.plan.dependencies.truncate(lengths.3);
                Err(failed
                    .and_then(|op| op.error)
                    .unwrap_or_else(|| "the edit did nothing".to_string()))
            }
        }
    }
}

/// The project paths an action reads or writes.
fn action_paths(action: &Action) -> Vec<&str> {
    match action {
        Action::Write { path, .. }
        | Action::Delete { path }
        | Action::SearchReplace { path, .. } => vec![path],
        Action::Rename { from, to } => vec![from, to],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
