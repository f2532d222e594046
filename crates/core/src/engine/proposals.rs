//! Proposals: store a reply with its edit plan, review it against the disk as it is now,
//! approve (all or a selection) as one commit, or reject.

use serde::Serialize;

use super::{Engine, EngineError, Result, partial};
use crate::edits::apply::{ApplyError, Selection, check_writes};
use crate::edits::deps::{
    InstallReport, MANIFESTS, install_command, install_confinement, run_install,
};
use crate::edits::plan::{EditPlan, FileChangeKind, plan_actions};
use crate::store::{
    AgentStep, ApprovalNote, ApprovalState, Chat, ChatMode, Message, MessageStatus, NewMessage,
    PlanBase, Project, Role,
};
use crate::vcs::{self, PathContent};
use crate::workspace::{FileState, read_state, resolve};

/// A stored reply with its plan.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    pub message: Message,
    pub chat: Chat,
    pub plan: EditPlan,
}

/// A reply's plan recomputed against the disk now, with files that changed since the
/// proposal marked as conflicts.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    pub message: Message,
    pub project: Project,
    pub plan: EditPlan,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ApproveOutcome {
    /// The commit with the approved changes (`None` when nothing needed changing).
    pub commit: Option<String>,
    /// A commit of the user's uncommitted edits to the same files, made first.
    pub manual_commit: Option<String>,
    pub install: Option<InstallReport>,
    pub install_commit: Option<String>,
    /// Why dependencies could not be installed at all (no manifest, no package manager).
    pub install_error: Option<String>,
}

/// Longest chat title.
pub const TITLE_CHARS: usize = 80;

impl Engine {
    /// Stores `prompt` (if any) and `reply` in a chat (a new build-mode chat when `chat_id` is
    /// `None`) and plans the reply. A reply that proposes changes waits as `pending`.
    pub fn propose(
        &self,
        project: &Project,
        chat_id: Option<i64>,
        prompt: Option<&str>,
        reply: &str,
    ) -> Result<Proposal> {
        let head = vcs::head(&vcs::open(&project.path)?)?;
        let chat = match chat_id {
            Some(id) => {
                let chat = self.store.chat(id)?;
                if chat.project_id != project.id {
                    return Err(EngineError::ChatNotInProject {
                        chat: id,
                        project: project.name.clone(),
                    });
                }
                chat
            }
            None => self
                .store
                .create_chat(project.id, ChatMode::Build, head.as_deref())?,
        };
        if let Some(prompt) = prompt {
            self.store
                .insert_message(&NewMessage::new(chat.id, Role::User, prompt))?;
            if chat.title.is_empty() {
                self.store
                    .rename_chat(chat.id, &title_from_prompt(prompt))?;
            }
        }
        let message = self.store.insert_message(&NewMessage {
            source_commit_hash: head.as_deref(),
            ..NewMessage::new(chat.id, Role::Assistant, reply)
        })?;
        let plan = self.record_plan(project, &message)?;
        Ok(Proposal {
            message: self.store.message(message.id)?,
            chat: self.store.chat(chat.id)?,
            plan,
        })
    }

    /// Plans a finished assistant reply and records it for review: the files' hashes as read
    /// now, and `pending` if it proposes anything. Ask and Security chats never propose.
    pub fn record_plan(&self, project: &Project, message: &Message) -> Result<EditPlan> {
        let mut plan = self.plan_message(project, message)?;
        let chat = self.store.chat(message.chat_id)?;
        // A chat's workspace knows each file as it was when the agent first changed it: a
        // file the person changed since is a conflict, not overwritten.
        if let Some(data_dir) = self.data_dir()
            && crate::layer::Layer::of(data_dir, chat.id).exists()
        {
            let bases = crate::layer::Layer::of(data_dir, chat.id).bases();
            let mut first = plan.base.clone();
            for (path, hash) in first.iter_mut() {
                if let Some(base) = bases.get(path) {
                    *hash = base.clone();
                }
            }
            // `plan.base` is the tree now; the proposal keeps the first bases, so the
            // conflict stays marked whenever it is reviewed.
            mark_conflicts(&mut plan, &first);
            plan.base = first;
        }
        if plan.is_proposal() && chat.mode.proposes_changes() {
            self.store.set_plan_base(message.id, &plan.base)?;
            self.store
                .set_approval(message.id, ApprovalState::Pending, None)?;
        }
        Ok(plan)
    }

    /// A reply's plan, made now: the edit tool calls its agent steps made (those that ran),
    /// then the edit tags in its text. Kept for [`Engine::planned_message`].
    pub fn plan_message(&self, project: &Project, message: &Message) -> Result<EditPlan> {
        let steps = self.store.agent_steps(message.id)?;
        let plan = self.plan_from(project, message, &steps)?;
        let inputs = super::plans::inputs(&project.path, message, &steps);
        self.plans.put(message.id, inputs, &plan);
        Ok(plan)
    }

    /// A reply's plan as [`Engine::plan_message`] made it last, when neither the reply nor any
    /// path it touches has changed since; else made now.
    pub fn planned_message(&self, project: &Project, message: &Message) -> Result<EditPlan> {
        let steps = self.store.agent_steps(message.id)?;
        let inputs = super::plans::inputs(&project.path, message, &steps);
        if let Some(plan) = self.plans.get(message.id, inputs) {
            return Ok(plan);
        }
        let plan = self.plan_from(project, message, &steps)?;
        self.plans.put(message.id, inputs, &plan);
        Ok(plan)
    }

    /// How many plans this engine has made (not counting those reused).
    pub fn plans_made(&self) -> u64 {
        self.plans.made()
    }

    fn plan_from(
        &self,
        project: &Project,
        message: &Message,
        steps: &[AgentStep],
    ) -> Result<EditPlan> {
        let mut actions = Vec::new();
        for step in steps {
            let (Some(tool), Some(arguments)) = (&step.tool, &step.arguments) else {
                continue;
            };
            let ran = step.decision.is_some_and(|d| d.ran()) && !step.is_error;
            if ran && let Ok(action) = crate::agent::tools::edit_action(tool, arguments) {
                actions.push(Ok(action));
            }
        }
        actions.extend(crate::edits::actions(&crate::edits::parse(
            &message.content,
        )));
        Ok(plan_actions(&project.path, actions)?)
    }

    /// The message, its project and its plan against the disk now (made again only when the
    /// reply or a path it touches changed since it was last made), conflicts marked.
    pub fn review(&self, message_id: i64) -> Result<Review> {
        let (project, message) = self.message_and_project(message_id)?;
        let message = match applying(&message) {
            true => self.locked(&project.path, || self.settle_applying(&project, message_id))?,
            false => message,
        };
        let plan = self.planned_message(&project, &message)?;
        Ok(self.review_of(project, message, plan))
    }

    /// A message with its project.
    fn message_and_project(&self, message_id: i64) -> Result<(Project, Message)> {
        let message = self.store.message(message_id)?;
        let chat = self.store.chat(message.chat_id)?;
        Ok((self.store.project(chat.project_id)?, message))
    }

    /// A review of `message` with `plan`, conflicts marked.
    fn review_of(&self, project: Project, message: Message, mut plan: EditPlan) -> Review {
        if let Some(base) = &message.plan_base {
            mark_conflicts(&mut plan, base);
        }
        Review {
            message,
            project,
            plan,
        }
    }

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
    fn discard_workspace_of(&self, message_id: i64) {
        let Some(data_dir) = self.data_dir() else {
            return;
        };
        let Ok(message) = self.store.message(message_id) else {
            return;
        };
        let _ = crate::layer::Layer::of(data_dir, message.chat_id).discard();
    }

    /// Settles a proposal an approval left "applying" (pending, with the commit it was being
    /// applied as) from git: approved when that commit is in HEAD's history — the change
    /// landed, only its record is missing — else pending again, the mark cleared, since HEAD
    /// never moved. Any other message is returned as it is. Call with the project locked,
    /// so no approval is between its steps.
    fn settle_applying(&self, project: &Project, message_id: i64) -> Result<Message> {
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
        // The commit holds the change; a stale index only costs git a re-hash.
        let _ = vcs::refresh_index(&repo, &paths);
        // Landed: a record left behind by a failure here only refreshes the index later.
        let _ = vcs::landing::finish(&repo);
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

    /// Rejects a pending proposal; nothing on disk changes. Locked, so it cannot slip in
    /// while an approval of the same proposal is being applied.
    /// The person's `reason`, if given, is told to the model on the next turn.
    pub fn reject(&self, message_id: i64, reason: Option<&str>) -> Result<()> {
        let (project, _) = self.message_and_project(message_id)?;
        self.locked(&project.path, || {
            let message = self.settle_applying(&project, message_id)?;
            pending(&message)?;
            if reason.is_some_and(|r| !r.trim().is_empty()) {
                let plan = self.plan_message(&project, &message)?;
                let review = self.review_of(project.clone(), message, plan);
                let note = partial::rejection_note(&review.plan, reason);
                self.store.set_approval_note(message_id, note.as_ref())?;
            }
            self.store
                .set_approval(message_id, ApprovalState::Rejected, None)?;
            Ok(())
        })?;
        self.discard_workspace_of(message_id);
        Ok(())
    }

    fn pending_project(&self, message_id: i64) -> Result<Project> {
        let message = self.store.message(message_id)?;
        pending(&message)?;
        let chat = self.store.chat(message.chat_id)?;
        Ok(self.store.project(chat.project_id)?)
    }
}

/// Pending, but with the commit an interrupted approval was applying it as.
fn applying(message: &Message) -> bool {
    message.approval_state == Some(ApprovalState::Pending) && message.commit_hash.is_some()
}

/// Only a complete assistant reply that is pending review can be approved or rejected.
fn pending(message: &Message) -> Result<()> {
    let reason = match (message.role, message.status, message.approval_state) {
        (Role::Assistant, MessageStatus::Complete, Some(ApprovalState::Pending)) => return Ok(()),
        (Role::Assistant, MessageStatus::Complete, Some(state)) => format!("is already {state}"),
        (Role::Assistant, MessageStatus::Complete, None) => "proposes no changes".to_string(),
        (Role::Assistant, status, _) => format!("is {status}, not a complete reply"),
        (role, _, _) => format!("is a {role} message, not a reply"),
    };
    Err(EngineError::NotReviewable {
        id: message.id,
        reason,
    })
}

/// Marks files whose disk content changed since `base` was recorded.
pub(crate) fn mark_conflicts(plan: &mut EditPlan, base: &PlanBase) {
    let now = plan.base.clone();
    for file in &mut plan.files {
        let paths = std::iter::once(&file.path).chain(file.old_path.as_ref());
        let changed: Vec<&String> = paths
            .filter(|path| base.get(*path) != now.get(*path))
            .collect();
        if !changed.is_empty() {
            file.conflict = Some(format!(
                "{} changed on disk since the proposal was made",
                changed
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
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

/// A chat title from a prompt's first words (until the model suggests a better one).
pub fn title_from_prompt(prompt: &str) -> String {
    let words = prompt
        .split_whitespace()
        .take(12)
        .collect::<Vec<_>>()
        .join(" ");
    truncate(&words, TITLE_CHARS)
}

/// At most `max` characters, an ellipsis marking a cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}
