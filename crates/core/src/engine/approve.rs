//! Approving a proposal: under the project's lock, plan it again against the tree as it is,
//! write what was selected and commit it as one version, then install its dependencies; and
//! settling, from git, an approval a killed process left half-way.

use serde::Serialize;

use super::proposals::{Review, applying, pending, truncate};
use super::{Engine, EngineError, Result, partial};
use crate::edits::apply::{ApplyError, Selection, check_writes};
use crate::edits::deps::{
    InstallReport, MANIFESTS, install_command, install_confinement, run_install,
};
use crate::edits::plan::{EditPlan, FileChangeKind};
use crate::folder::{FileState, read_state, resolve};
use crate::store::{ApprovalNote, ApprovalState, Message, Project};
use crate::vcs::{self, PathContent};

#[derive(Debug, Clone, Default, Serialize)]
pub struct ApproveOutcome {
    /// The project the proposal was for (and landed in).
    pub project_id: i64,
    /// The commit with the approved changes (`None` when nothing needed changing).
    pub commit: Option<String>,
    /// A commit of the user's uncommitted edits to the same files, made first.
    pub manual_commit: Option<String>,
    pub install: Option<InstallReport>,
    pub install_commit: Option<String>,
    /// Why dependencies could not be installed at all (no manifest, no package manager).
    pub install_error: Option<String>,
}

impl Engine {
    /// Applies a pending proposal — everything, or `selection` — as one commit, then installs
    /// its dependencies. With no selection, any failed operation or conflict refuses the
    /// whole approval and nothing is touched.
    pub fn approve(
        &self,
        message_id: i64,
        selection: Option<&Selection>,
    ) -> Result<ApproveOutcome> {
        self.approve_with_reason(message_id, selection, None)
    }

    /// [`Engine::approve`], with the person's reason for what they left out (told to the
    /// model on the next turn, with what was left out).
    pub fn approve_with_reason(
        &self,
        message_id: i64,
        selection: Option<&Selection>,
        reason: Option<&str>,
    ) -> Result<ApproveOutcome> {
        let project = self.pending_project(message_id)?;
        let outcome = self.locked(&project.path, || {
            let message = self.settle_applying(&project, message_id)?;
            pending(&message)?;
            // Planned again under the lock: what lands is what the tree holds now.
            let plan = self.plan_message(&project, &message)?;
            let review = self.review_of(project.clone(), message, plan);
            self.approve_locked(&review, selection, reason)
        })?;
        // What was approved landed; what was left out goes with the workspace.
        self.discard_workspace_of(message_id);
        Ok(outcome)
    }

    /// Removes the workspace a decided proposal's chat had: a chat that goes on starts a
    /// fresh one on the tree as it now is. A failure leaves a layer the start-up
    /// clean removes later.
    pub(super) fn discard_workspace_of(&self, message_id: i64) {
        let Some(data_dir) = self.data_dir() else {
            return;
        };
        let Ok(message) = self.store.message(message_id) else {
            return;
        };
        // Never under a run or a turn that has it open: then it stays, stale, for the next
        // start's clean.
        let _ = crate::layer::Layer::of(data_dir, message.chat_id).discard_unused();
    }

    /// Settles a proposal an approval left "applying" (pending, with the commit it was being
    /// applied as) from git: approved when that commit is in HEAD's history — the change
    /// landed, only its record is missing — else pending again, the mark cleared, since HEAD
    /// never moved. Any other message is returned as it is. Call with the project locked,
    /// so no approval is between its steps.
    pub(super) fn settle_applying(&self, project: &Project, message_id: i64) -> Result<Message> {
        let message = self.store.message(message_id)?;
        let Some(commit) = message
            .commit_hash
            .as_deref()
            .filter(|_| applying(&message))
        else {
            return Ok(message);
        };
        let repo = vcs::open(&project.path)?;
        if vcs::in_history(&repo, commit)? {
            self.store
                .set_approval(message_id, ApprovalState::Approved, Some(commit))?;
        } else {
            self.store.set_applying(message_id, None)?;
        }
        Ok(self.store.message(message_id)?)
    }

    /// Settles the changes a killed process left landing in each project's repository (see
    /// `vcs::landing`), at start-up, before the proposals are settled from git. Best effort:
    /// a project whose folder cannot be opened now is settled before its next change.
    pub(super) fn recover_all_landings(&self) {
        let Ok(projects) = self.store.projects() else {
            return;
        };
        // A project whose lock another process holds is changing right now: what looks
        // left half-way is in flight, and is that process's to finish.
        for project in projects {
            let _ = self.locked_if_free(&project.path, || {
                let repo = vcs::open(&project.path)?;
                Ok(vcs::landing::recover(&repo)?)
            });
        }
    }

    /// Settles every proposal left applying, at start-up. Best effort: one that cannot be
    /// settled now is settled when it is next reviewed, approved or rejected.
    pub(super) fn settle_all_applying(&self) {
        let Ok(applying) = self.store.applying_messages() else {
            return;
        };
        for (project_id, message) in applying {
            if let Ok(project) = self.store.project(project_id) {
                // Held elsewhere: that process is applying it now.
                let _ = self
                    .locked_if_free(&project.path, || self.settle_applying(&project, message.id));
            }
        }
    }

    fn approve_locked(
        &self,
        review: &Review,
        selection: Option<&Selection>,
        reason: Option<&str>,
    ) -> Result<ApproveOutcome> {
        let plan = &review.plan;
        if selection.is_none() {
            let problems: Vec<String> = plan
                .errors()
                .map(|op| format!("- {}: {}", op.path, op.error.as_deref().unwrap_or("failed")))
                .chain(plan.conflicts().map(|f| {
                    format!(
                        "- {}: {}",
                        f.path,
                        f.conflict.as_deref().unwrap_or("conflict")
                    )
                }))
                .collect();
            if !problems.is_empty() {
                return Err(EngineError::Unapprovable(problems));
            }
        }
        let writes = plan.writes(selection)?;
        let repo = vcs::open(&plan.root)?;
        // A change a killed process left half-way is settled before this one is checked.
        vcs::landing::recover(&repo)?;
        let checked = check_writes(&writes)?;

        // Uncommitted manual edits to these files get their own commit first, so the AI
        // change stays a separate, revertible commit.
        let mut manual: Vec<PathContent<'_>> = Vec::new();
        for (write, before) in checked.before() {
            let head = vcs::head_blob(&repo, &write.rel)?;
            if head.as_deref() != before.bytes() {
                let content = match before {
                    FileState::Missing => None,
                    FileState::File { bytes, mode } => Some((bytes.as_slice(), *mode)),
                };
                manual.push((write.rel.as_str(), content));
            }
        }
        let changes: Vec<PathContent<'_>> = writes
            .iter()
            .map(|w| {
                (
                    w.rel.as_str(),
                    w.new.as_ref().map(|(b, m)| (b.as_slice(), *m)),
                )
            })
            .collect();
        let note = partial::approval_note(plan, selection, reason);
        let mut message = commit_message(plan, &writes);
        if let Some(part) = note.as_ref().and_then(ApprovalNote::part_applied) {
            message.push_str(&format!(" ({part})"));
        }
        let id = review.message.id;
        let head = vcs::head_oid(&repo)?;
        // The commits are written first without moving HEAD, so the approval's commit is
        // known before anything lands: the message is marked applying as that commit and the
        // commit recorded as landing in the repository, then the files are written, then HEAD
        // moves (one atomic step that makes both commits part of history), then the approval
        // is recorded. Wherever a failure or a kill stops this, the next start (or the next
        // look at this proposal) tells from git which state is true: the landing record puts
        // back files written for a commit HEAD never reached, settle_applying the message.
        let manual_commit = match manual.is_empty() {
            true => None,
            false => {
                let paths: Vec<&str> = manual.iter().map(|(p, _)| *p).collect();
                let text = format!(
                    "[tandem] Save manual edits before AI changes: {}",
                    paths.join(", ")
                );
                vcs::prepare_commit(&repo, head, &manual, &text)?
            }
        };
        let commit = vcs::prepare_commit(&repo, manual_commit.or(head), &changes, &message)?;
        let mut marked = false;
        self.store.set_approval_note(id, note.as_ref())?;
        if let Some(commit) = commit {
            self.store.set_applying(id, Some(&commit.to_string()))?;
            marked = true;
            crate::failpoint::hit("approve-before-landing");
            if let Err(e) = vcs::landing::begin(&repo, commit) {
                let _ = self.store.set_applying(id, None);
                return Err(e.into());
            }
        }
        let unmark = |engine: &Self| {
            if marked {
                // HEAD did not move; if clearing the mark fails too, settle_applying clears
                // it later for the same reason.
                let _ = engine.store.set_applying(id, None);
            }
        };
        let applied = match checked.apply(self.fs.as_ref()) {
            Ok(applied) => applied,
            Err(e) => {
                // Rolled back: nothing to recover. Not wholly: the record stays, and the
                // next start puts back what still holds the change.
                if !matches!(e, ApplyError::RollbackIncomplete { .. }) {
                    let _ = vcs::landing::finish(&repo);
                }
                unmark(self);
                return Err(e.into());
            }
        };
        if let Some(tip) = commit.or(manual_commit) {
            let moved = vcs::advance_head(&repo, head, tip, &message);
            // A failure reported after the reference was updated still landed.
            if let Err(e) = moved
                && vcs::head_oid(&repo).ok().flatten() != Some(tip)
            {
                if applied.rollback(self.fs.as_ref()).is_empty() {
                    let _ = vcs::landing::finish(&repo);
                }
                unmark(self);
                return Err(e.into());
            }
        }
        crate::failpoint::hit("approve-after-head");
        let paths: Vec<&str> = writes.iter().map(|w| w.rel.as_str()).collect();
        // Landed. An index git could not take (another git holds it) would show the change
        // as undone and staged: the record stays, and the next start (or change) refreshes
        // the index from it. A record left by a failure to remove it does the same.
        if vcs::refresh_index(&repo, &paths).is_ok() {
            let _ = vcs::landing::finish(&repo);
        }
        crate::failpoint::hit("commit-before-record");
        let commit = commit.map(|oid| oid.to_string());
        if let Err(source) = self
            .store
            .set_approval(id, ApprovalState::Approved, commit.as_deref())
        {
            // The change is on disk and in history: say so. The applying mark lets
            // settle_applying record it once the database works again.
            return Err(match commit {
                Some(commit) => EngineError::ApprovalNotRecorded { commit, source },
                None => source.into(),
            });
        }

        let mut outcome = ApproveOutcome {
            project_id: review.project.id,
            commit,
            manual_commit: manual_commit.map(|oid| oid.to_string()),
            ..ApproveOutcome::default()
        };
        if !plan.dependencies.is_empty() && selection.is_none_or(|s| s.dependencies) {
            self.install(&repo, plan, &mut outcome);
        }
        Ok(outcome)
    }

    fn install(&self, repo: &git2::Repository, plan: &EditPlan, outcome: &mut ApproveOutcome) {
        let argv = match install_command(&plan.root, &plan.dependencies) {
            Ok(argv) => argv,
            Err(e) => {
                outcome.install_error = Some(e.to_string());
                return;
            }
        };
        // The install runs in the agent's sandbox, with the network and the package caches.
        let temp = match tempfile::Builder::new().prefix("tandem-install-").tempdir() {
            Ok(temp) => temp,
            Err(e) => {
                outcome.install_error = Some(format!("cannot create a temp dir: {e}"));
                return;
            }
        };
        let base = self
            .sandbox_settings()
            .confinement(&plan.root, temp.path(), true);
        let confinement = install_confinement(base);
        let timeout = self.install_timeout;
        let report = match run_install(&plan.root, &argv, timeout, Some(&confinement)) {
            Ok(report) => report,
            Err(e) => {
                outcome.install_error = Some(e.to_string());
                return;
            }
        };
        if report.success {
            let states: Vec<(&str, FileState)> = MANIFESTS
                .iter()
                // Resolved like every project path: a manifest linked elsewhere in the project
                // is read where it lies, one linked outside is not (and `read_state` opens
                // only a regular file, never following a final link).
                .filter_map(|name| {
                    let resolved = resolve(&plan.root, name).ok()?;
                    Some((*name, read_state(&resolved.abs).ok()?))
                })
                .filter(|(_, state)| *state != FileState::Missing)
                .collect();
            let changes: Vec<PathContent<'_>> = states
                .iter()
                .map(|(name, state)| (*name, state.bytes().zip(state.mode())))
                .collect();
            let text = format!("[tandem] Add dependencies: {}", plan.dependencies.join(" "));
            match vcs::commit_paths(repo, &changes, &text) {
                Ok(commit) => {
                    let names: Vec<&str> = states.iter().map(|(n, _)| *n).collect();
                    let _ = vcs::refresh_index(repo, &names);
                    outcome.install_commit = commit.map(|oid| oid.to_string());
                }
                Err(e) => outcome.install_error = Some(e.to_string()),
            }
        }
        outcome.install = Some(report);
    }
}

fn commit_message(plan: &EditPlan, writes: &[crate::edits::apply::PathWrite]) -> String {
    let touched = |path: &str| writes.iter().any(|w| w.rel == path);
    let (mut wrote, mut renamed, mut deleted) = (0, 0, 0);
    for file in plan.files.iter().filter(|f| touched(&f.path)) {
        match file.kind {
            FileChangeKind::Added | FileChangeKind::Modified => wrote += 1,
            FileChangeKind::Renamed => renamed += 1,
            FileChangeKind::Deleted => deleted += 1,
        }
    }
    let summary = plan
        .summary
        .as_deref()
        .and_then(|s| s.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("Apply AI changes");
    format!(
        "[tandem] {} — wrote {wrote}, renamed {renamed}, deleted {deleted} file(s)",
        truncate(summary, 100)
    )
}
