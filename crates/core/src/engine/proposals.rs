//! Proposals: store a reply with its edit plan, review it against the disk as it is now, or
//! reject it. Approving one is `approve.rs`.

use serde::Serialize;

use super::{Engine, EngineError, Result, partial};
use crate::edits::plan::{EditPlan, plan_actions};
use crate::store::{
    AgentStep, ApprovalState, Chat, ChatMode, Message, MessageStatus, NewMessage, PlanBase,
    Project, Role,
};
use crate::vcs;

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
    pub(super) fn review_of(
        &self,
        project: Project,
        message: Message,
        mut plan: EditPlan,
    ) -> Review {
        if let Some(base) = &message.plan_base {
            mark_conflicts(&mut plan, base);
        }
        Review {
            message,
            project,
            plan,
        }
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

    pub(super) fn pending_project(&self, message_id: i64) -> Result<Project> {
        let message = self.store.message(message_id)?;
        pending(&message)?;
        let chat = self.store.chat(message.chat_id)?;
        Ok(self.store.project(chat.project_id)?)
    }
}

/// Pending, but with the commit an interrupted approval was applying it as.
pub(super) fn applying(message: &Message) -> bool {
    message.approval_state == Some(ApprovalState::Pending) && message.commit_hash.is_some()
}

/// Only a complete assistant reply that is pending review can be approved or rejected.
pub(super) fn pending(message: &Message) -> Result<()> {
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
