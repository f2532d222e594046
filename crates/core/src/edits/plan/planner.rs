//! Running a reply's actions against an in-memory overlay of the files they touch, into an
//! [`EditPlan`]: each file's text before and after, with hunks, as of its blob hash on disk.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use super::{EditPlan, FileChange, FileChangeKind, OpKind, OpStatus, Operation, SqlStatement};
use crate::edits::actions::{Action, MissingAttribute};
use crate::edits::diff::{hunks, line_counts};
use crate::edits::findings::SecurityFinding;
use crate::edits::parser::TagKind;
use crate::edits::search_replace::{BlockOutcome, apply_blocks_as_read, parse_blocks};
use crate::folder::{FileState, read_state, resolve};

const NEW_FILE_MODE: u32 = 0o644;

/// A file as the operations so far have left it.
#[derive(Clone)]
pub(super) struct Slot {
    pub(super) original: FileState,
    pub(super) current: Option<(Vec<u8>, u32)>,
    pub(super) error: Option<String>,
}

/// The plan being built, and the files it touched so far in the order they were first touched.
pub(super) struct Planner {
    pub(super) plan: EditPlan,
    pub(super) order: Vec<String>,
    pub(super) slots: HashMap<String, Slot>,
    pub(super) renames: Vec<(String, String)>,
}

impl Planner {
    pub(super) fn new(root: PathBuf) -> Self {
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

    pub(super) fn run(&mut self, action: Result<Action, MissingAttribute>) {
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

    pub(super) fn finish(mut self) -> EditPlan {
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
