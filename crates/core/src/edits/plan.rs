//! Edit plans: what a complete reply would do to the project, computed without touching disk.
//!
//! Operations run in order against an in-memory overlay of the files they touch (a write then
//! a search-replace of the same file sees the written text), and the result is, per affected
//! file, its text before and after with diff hunks. The plan records each file's git blob
//! hash as read, so applying later can refuse a file that changed since.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::actions::{Action, MissingAttribute, actions};
use super::diff::{Hunk, hunks, line_counts, unified};
use super::parser::{TagKind, parse};
use super::search_replace::{BlockOutcome, apply_blocks_as_read, parse_blocks};
use crate::store::PlanBase;
use crate::workspace::{FileState, read_state, resolve};

const NEW_FILE_MODE: u32 = 0o644;

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

/// A problem a Security review found (`<tandem-security-finding>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecurityFinding {
    pub title: String,
    /// `critical`, `high`, `medium`, `low`, `info` (lowercased; `unknown` when not given).
    pub level: String,
    pub path: Option<String>,
    /// A line or range as the model wrote it (`40`, `40-52`).
    pub lines: Option<String>,
    pub body: String,
}

impl SecurityFinding {
    /// How severe, for sorting and filtering: 0 is critical, 5 unknown.
    pub fn rank(&self) -> u8 {
        match self.level.as_str() {
            "critical" => 0,
            "high" => 1,
            "medium" => 2,
            "low" => 3,
            "info" => 4,
            _ => 5,
        }
    }

    /// The first line it names, if any.
    pub fn first_line(&self) -> Option<usize> {
        let lines = self.lines.as_deref()?;
        let first = lines.split(['-', ',', ' ']).next()?;
        first
            .trim()
            .trim_start_matches('L')
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
    }
}

/// The security findings in a reply, most severe first (in reply order among equals).
pub fn security_findings(content: &str) -> Vec<SecurityFinding> {
    security_findings_in(&super::parse(content))
}

/// The same, from a reply already parsed.
pub fn security_findings_in(segments: &[super::Segment]) -> Vec<SecurityFinding> {
    let has_any = segments.iter().any(
        |s| matches!(s, super::Segment::Tag(tag) if tag.kind == super::TagKind::SecurityFinding),
    );
    if !has_any {
        return Vec::new();
    }
    let mut found: Vec<SecurityFinding> = super::actions(segments)
        .into_iter()
        .filter_map(|action| match action {
            Ok(Action::SecurityFinding {
                title,
                level,
                path,
                lines,
                body,
            }) => Some(SecurityFinding {
                title,
                level,
                path,
                lines,
                body,
            }),
            _ => None,
        })
        .collect();
    found.sort_by_key(SecurityFinding::rank);
    found
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
    let root = crate::workspace::root_path(root).map_err(|source| PlanError {
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
        let root = crate::workspace::root_path(root).map_err(|source| PlanError {
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

/// A file as the operations so far have left it.
#[derive(Clone)]
struct Slot {
    original: FileState,
    current: Option<(Vec<u8>, u32)>,
    error: Option<String>,
}

struct Planner {
    plan: EditPlan,
    order: Vec<String>,
    slots: HashMap<String, Slot>,
    renames: Vec<(String, String)>,
}

impl Planner {
    fn new(root: PathBuf) -> Self {
        Planner {
            plan: EditPlan {
                root,
                operations: Vec::new(),
                files: Vec::new(),
                dependencies: Vec::new(),
                summary: None,
                sql: Vec::new(),
                security_findings: Vec::new(),
                problem_reports: Vec::new(),
                base: BTreeMap::new(),
            },
            order: Vec::new(),
            slots: HashMap::new(),
            renames: Vec::new(),
        }
    }

    /// Resolves `raw` and loads its slot (reading the file the first time it is touched).
    fn slot(&mut self, raw: &str) -> Result<String, String> {
        let resolved = resolve(&self.plan.root, raw).map_err(|e| e.to_string())?;
        if !self.slots.contains_key(&resolved.rel) {
            let original = read_state(&resolved.abs)
                .map_err(|e| format!("cannot read {}: {e}", resolved.rel))?;
            let current = match &original {
                FileState::Missing => None,
                FileState::File { bytes, mode } => Some((bytes.clone(), *mode)),
            };
            self.order.push(resolved.rel.clone());
            self.slots.insert(
                resolved.rel.clone(),
                Slot {
                    original,
                    current,
                    error: None,
                },
            );
        }
        Ok(resolved.rel)
    }

    fn run(&mut self, action: Result<Action, MissingAttribute>) {
        let action = match action {
            Ok(action) => action,
            Err(missing) => {
                let op = match missing.kind {
                    TagKind::Rename => OpKind::Rename,
                    TagKind::Delete => OpKind::Delete,
                    TagKind::SearchReplace => OpKind::SearchReplace,
                    TagKind::AddDependency => OpKind::AddDependency,
                    _ => OpKind::Write,
                };
                self.push_op(op, String::new(), None, None, Err(missing.to_string()));
                return;
            }
        };
        match action {
            Action::Write {
                path,
                description,
                content,
            } => {
                let result = self.write(&path, content);
                self.push_op(OpKind::Write, path, None, description, result);
            }
            Action::Rename { from, to } => {
                let result = self.rename(&from, &to);
                self.push_op(OpKind::Rename, from, Some(to), None, result);
            }
            Action::Delete { path } => {
                let result = self.delete(&path);
                self.push_op(OpKind::Delete, path, None, None, result);
            }
            Action::SearchReplace {
                path,
                description,
                body,
            } => {
                let result = self.search_replace(&path, &body);
                let note = result.as_ref().ok().and_then(|(_, note)| note.clone());
                let result = result.map(|(done, _)| done);
                self.push_op(OpKind::SearchReplace, path, None, description, result);
                if let Some(op) = self.plan.operations.last_mut() {
                    op.note = note;
                }
            }
            Action::AddDependency { packages } => {
                let result = match packages.iter().find(|p| !valid_package(p)) {
                    Some(bad) => Err(format!("{bad:?} is not a package name")),
                    None if packages.is_empty() => Err("no packages named".to_string()),
                    None => {
                        self.plan.dependencies.extend(packages.iter().cloned());
                        Ok(Done::Changed(0, 0))
                    }
                };
                self.push_op(
                    OpKind::AddDependency,
                    packages.join(" "),
                    None,
                    None,
                    result,
                );
            }
            Action::ChatSummary { text } => self.plan.summary = Some(text),
            Action::ExecuteSql { description, sql } => {
                self.plan.sql.push(SqlStatement { description, sql });
            }
            Action::SecurityFinding {
                title,
                level,
                path,
                lines,
                body,
            } => {
                self.plan.security_findings.push(SecurityFinding {
                    title,
                    level,
                    path,
                    lines,
                    body,
                });
            }
            Action::ProblemReport { body } => self.plan.problem_reports.push(body),
        }
    }

    fn push_op(
        &mut self,
        op: OpKind,
        path: String,
        to: Option<String>,
        description: Option<String>,
        result: Result<Done, String>,
    ) {
        let (status, error, added, removed) = match result {
            Ok(Done::Changed(added, removed)) => (OpStatus::Ok, None, added, removed),
            Ok(Done::AlreadyApplied) => (OpStatus::AlreadyApplied, None, 0, 0),
            Err(error) => (OpStatus::Error, Some(error), 0, 0),
        };
        self.plan.operations.push(Operation {
            op,
            path,
            to,
            description,
            status,
            error,
            note: None,
            added,
            removed,
        });
    }

    /// Marks a file as failed so it cannot be applied, and passes the error on.
    fn fail(&mut self, rel: &str, error: String) -> String {
        if let Some(slot) = self.slots.get_mut(rel) {
            slot.error.get_or_insert_with(|| error.clone());
        }
        error
    }

    fn write(&mut self, raw: &str, content: String) -> Result<Done, String> {
        let rel = self.slot(raw)?;
        let slot = self.slots.get_mut(&rel).ok_or("internal: no slot")?;
        let (before, mode) = match &slot.current {
            Some((bytes, mode)) => (String::from_utf8_lossy(bytes).into_owned(), *mode),
            None => (String::new(), NEW_FILE_MODE),
        };
        let content = match_line_endings(&before, content);
        let (added, removed) = line_counts(&before, &content);
        slot.current = Some((content.into_bytes(), mode));
        Ok(Done::Changed(added, removed))
    }

    fn delete(&mut self, raw: &str) -> Result<Done, String> {
        let rel = self.slot(raw)?;
        let slot = self.slots.get_mut(&rel).ok_or("internal: no slot")?;
        match slot.current.take() {
            Some((bytes, _)) => Ok(Done::Changed(0, count_lines(&bytes))),
            None => Err(self.fail(&rel, format!("cannot delete {rel}: it does not exist"))),
        }
    }

    fn rename(&mut self, raw_from: &str, raw_to: &str) -> Result<Done, String> {
        let from = self.slot(raw_from)?;
        let to = self.slot(raw_to)?;
        if from == to {
            return Err(format!("cannot rename {from} to itself"));
        }
        if self.slots.get(&to).is_some_and(|s| s.current.is_some()) {
            let error = format!("cannot rename {from} to {to}: {to} already exists");
            return Err(self.fail(&from, error));
        }
        let Some(content) = self.slots.get_mut(&from).and_then(|s| s.current.take()) else {
            let error = format!("cannot rename {from}: it does not exist");
            return Err(self.fail(&from, error));
        };
        if let Some(slot) = self.slots.get_mut(&to) {
            slot.current = Some(content);
        }
        self.renames.push((from, to));
        Ok(Done::Changed(0, 0))
    }

    /// The edit, with the note its card shows when it applied only loosely.
    fn search_replace(&mut self, raw: &str, body: &str) -> Result<(Done, Option<String>), String> {
        let rel = self.slot(raw)?;
        let result = self.search_replace_slot(&rel, body);
        result.map_err(|error| self.fail(&rel, format!("{rel}: {error}")))
    }

    fn search_replace_slot(
        &mut self,
        rel: &str,
        body: &str,
    ) -> Result<(Done, Option<String>), String> {
        let slot = self.slots.get_mut(rel).ok_or("internal: no slot")?;
        let Some((bytes, mode)) = &slot.current else {
            return Err("the file does not exist (use a write tag to create it)".into());
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|_| "the file is not UTF-8 text, so it cannot be edited by search-replace")?;
        // Line numbers a model copied may be those of the file as it first read it, before
        // the earlier edits of this reply or turn.
        let read = match &slot.original {
            FileState::File { bytes, .. } => std::str::from_utf8(bytes).ok(),
            FileState::Missing => None,
        };
        let blocks = parse_blocks(body).map_err(|e| e.to_string())?;
        let (new_text, outcomes) =
            apply_blocks_as_read(text, &blocks, read).map_err(|e| e.to_string())?;
        if outcomes.iter().all(|o| *o == BlockOutcome::AlreadyApplied) {
            return Ok((Done::AlreadyApplied, None));
        }
        let (added, removed) = line_counts(text, &new_text);
        let mode = *mode;
        slot.current = Some((new_text.into_bytes(), mode));
        Ok((Done::Changed(added, removed), numbers_note(&outcomes)))
    }

    fn finish(mut self) -> EditPlan {
        let mut files: Vec<FileChange> = Vec::new();
        let mut consumed: Vec<&str> = Vec::new();
        for (from, to) in &self.renames {
            let (Some(src), Some(dst)) = (self.slots.get(from), self.slots.get(to)) else {
                continue;
            };
            let moved = src.current.is_none()
                && src.original != FileState::Missing
                && dst.original == FileState::Missing
                && dst.current.is_some();
            if moved && !consumed.contains(&from.as_str()) && !consumed.contains(&to.as_str()) {
                let error = src.error.clone().or_else(|| dst.error.clone());
                files.push(file_change(
                    to,
                    Some(from),
                    &src.original,
                    dst.current.as_ref(),
                    error,
                ));
                consumed.extend([from.as_str(), to.as_str()]);
            }
        }
        for rel in &self.order {
            let Some(slot) = self.slots.get(rel) else {
                continue;
            };
            self.plan.base.insert(rel.clone(), slot.original.hash());
            if consumed.contains(&rel.as_str()) || unchanged(slot) {
                continue;
            }
            files.push(file_change(
                rel,
                None,
                &slot.original,
                slot.current.as_ref(),
                slot.error.clone(),
            ));
        }
        // Present files in the order the reply first touched them.
        let position = |path: &str| self.order.iter().position(|p| p == path);
        files.sort_by_key(|f| position(f.old_path.as_deref().unwrap_or(&f.path)));
        self.plan.files = files;
        self.plan
    }
}

enum Done {
    Changed(usize, usize),
    AlreadyApplied,
}

fn unchanged(slot: &Slot) -> bool {
    match (&slot.original, &slot.current) {
        (FileState::Missing, None) => true,
        (FileState::File { bytes, .. }, Some((new, _))) => bytes == new,
        _ => false,
    }
}

fn file_change(
    path: &str,
    old_path: Option<&str>,
    original: &FileState,
    new: Option<&(Vec<u8>, u32)>,
    error: Option<String>,
) -> FileChange {
    let kind = match (old_path, original, new) {
        (Some(_), _, _) => FileChangeKind::Renamed,
        (None, FileState::Missing, _) => FileChangeKind::Added,
        (None, _, None) => FileChangeKind::Deleted,
        (None, _, Some(_)) => FileChangeKind::Modified,
    };
    let old_bytes = original.bytes().unwrap_or_default();
    let new_bytes = new.map(|(bytes, _)| bytes.as_slice()).unwrap_or_default();
    let texts = (
        std::str::from_utf8(old_bytes),
        std::str::from_utf8(new_bytes),
    );
    let (binary, old_text, new_text, hunks) = match texts {
        (Ok(old), Ok(new_text)) => (
            false,
            original.bytes().map(|_| old.to_string()),
            new.map(|_| new_text.to_string()),
            hunks(old, new_text),
        ),
        _ => (true, None, None, Vec::new()),
    };
    FileChange {
        path: path.to_string(),
        old_path: old_path.map(str::to_string),
        kind,
        binary,
        added: hunks.iter().map(|h| h.added).sum(),
        removed: hunks.iter().map(|h| h.removed).sum(),
        old_text,
        new_text,
        hunks,
        error,
        conflict: None,
        new_content: new.cloned(),
    }
}

fn count_lines(bytes: &[u8]) -> usize {
    let text = String::from_utf8_lossy(bytes);
    text.lines().count()
}

/// A file that uses CRLF keeps CRLF when the model rewrites it with LF lines.
fn match_line_endings(existing: &str, content: String) -> String {
    let crlf = existing.matches("\r\n").count();
    let lf = existing.matches('\n').count();
    if crlf == 0 || crlf * 2 < lf {
        return content;
    }
    content.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Package names go to a package manager's command line: no options, no control characters.
/// What the card of a search-replace says when its blocks carried line numbers.
fn numbers_note(outcomes: &[BlockOutcome]) -> Option<String> {
    let numbered: Vec<String> = outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, outcome)| {
            let BlockOutcome::Applied {
                numbers: Some((first, last)),
                ..
            } = outcome
            else {
                return None;
            };
            let lines = match first == last {
                true => first.to_string(),
                false => format!("{first}-{last}"),
            };
            Some(match outcomes.len() {
                1 => format!("SEARCH carried line numbers ({lines})"),
                _ => format!("block {}'s SEARCH carried line numbers ({lines})", i + 1),
            })
        })
        .collect();
    (!numbered.is_empty()).then(|| {
        format!(
            "{} copied from a file view; matched without them",
            numbered.join("; ")
        )
    })
}

fn valid_package(name: &str) -> bool {
    !name.starts_with('-') && !name.chars().any(|c| c.is_control() || c.is_whitespace())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
