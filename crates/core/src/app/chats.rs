//! Chats: their messages and agent steps, the proposals replies make (review, approve,
//! reject), and the agent's tool calls waiting for the person (turns start in `turns.rs`).

use std::collections::HashMap;

use super::{App, AppError, AppEvent, Result};
use crate::agent::runner::Answer;
use crate::chat::{ContextBreakdown, PendingPermission, SendOptions};
use crate::edits::{EditPlan, Selection};
use crate::engine::{ApproveOutcome, EngineError, Proposal, Review};
use crate::store::{
    AgentStep, ApprovalState, Chat, ChatMode, ChatSummary, Message, MessageHit, Project, Role,
};

/// A chat with everything its view shows.
#[derive(Debug, Clone)]
pub struct LoadedChat {
    pub chat: Chat,
    pub messages: Vec<Message>,
    /// Agent steps by message id (replies of agent turns only).
    pub steps: HashMap<i64, Vec<AgentStep>>,
    /// The pending proposal's message id and its plan against the disk as it is now.
    pub review: Option<(i64, EditPlan)>,
    /// Tool calls waiting for the person now (every chat's).
    pub approvals: Vec<PendingPermission>,
    /// What older turns were compacted into, oldest first (the last one is sent now).
    pub summaries: Vec<ChatSummary>,
    /// What was attached to the person's messages, by message id.
    pub attachments: HashMap<i64, Vec<ShownAttachment>>,
}

/// An attachment as the chat shows it: an image's bytes for its thumbnail.
#[derive(Debug, Clone)]
pub struct ShownAttachment {
    pub attachment: crate::store::Attachment,
    /// Images only; `None` when the bytes are gone from the data directory.
    pub image: Option<std::sync::Arc<[u8]>>,
}

impl App {
    /// The project's chats, most recently active first, archived ones left out.
    pub fn chats(&self, project_id: i64) -> Result<Vec<Chat>> {
        let mut chats = self.store().chats(project_id)?;
        chats.retain(|c| c.archived_at.is_none());
        Ok(chats)
    }

    /// The project's archived chats, most recently active first.
    pub fn archived_chats(&self, project_id: i64) -> Result<Vec<Chat>> {
        let mut chats = self.store().chats(project_id)?;
        chats.retain(|c| c.archived_at.is_some());
        Ok(chats)
    }

    /// Archives (hides, keeping everything) or unarchives a chat; stops its reply first when
    /// archiving. Returns it.
    pub fn set_chat_archived(&self, chat_id: i64, archived: bool) -> Result<Chat> {
        if archived {
            self.chat.cancel(chat_id);
            // Its pending proposal stays (it is its steps); the workspace's view and build
            // output go.
            let _ = self.chat.discard_workspace(chat_id);
        }
        self.store().set_chat_archived(chat_id, archived)?;
        let chat = self.chat(chat_id)?;
        self.chats_changed(chat.project_id);
        Ok(chat)
    }

    /// Messages of the project's chats containing `query` (ignoring case), newest first.
    pub fn search_chats(&self, project_id: i64, query: &str) -> Result<Vec<MessageHit>> {
        if query.trim().is_empty() {
            return Ok(Vec::new());
        }
        Ok(self
            .store()
            .search_messages(project_id, query.trim(), 200)?)
    }

    pub fn chat(&self, chat_id: i64) -> Result<Chat> {
        Ok(self.store().chat(chat_id)?)
    }

    /// A new chat in the project, starting at its current commit.
    pub fn new_chat(&self, project_id: i64, mode: ChatMode) -> Result<Chat> {
        let chat = self.chat.new_chat(project_id, mode)?;
        self.chats_changed(project_id);
        Ok(chat)
    }

    /// Chat `chat_id` of `project`, switched to `mode` when given; an error when the chat
    /// belongs to another project.
    pub fn chat_in_project(
        &self,
        project: &Project,
        chat_id: i64,
        mode: Option<ChatMode>,
    ) -> Result<Chat> {
        let chat = self.chat(chat_id)?;
        if chat.project_id != project.id {
            return Err(EngineError::ChatNotInProject {
                chat: chat_id,
                project: project.name.clone(),
            }
            .into());
        }
        match mode {
            Some(mode) if mode != chat.mode => self.set_chat_mode(chat_id, mode),
            _ => Ok(chat),
        }
    }

    /// Renames a chat; returns it.
    pub fn rename_chat(&self, chat_id: i64, title: &str) -> Result<Chat> {
        self.store().rename_chat(chat_id, title)?;
        let chat = self.chat(chat_id)?;
        self.chats_changed(chat.project_id);
        Ok(chat)
    }

    /// Switches a chat's mode; returns it.
    pub fn set_chat_mode(&self, chat_id: i64, mode: ChatMode) -> Result<Chat> {
        self.store().set_chat_mode(chat_id, mode)?;
        let chat = self.chat(chat_id)?;
        self.chats_changed(chat.project_id);
        Ok(chat)
    }

    /// Stops the chat's reply if one streams, then deletes the chat with its messages.
    /// Returns the chat as it was.
    pub fn delete_chat(&self, chat_id: i64) -> Result<Chat> {
        let chat = self.chat(chat_id)?;
        self.chat.cancel(chat_id);
        self.store().delete_chat(chat_id)?;
        // Its workspace goes with it (a failure leaves it to the start-up clean).
        let _ = self.chat.discard_workspace(chat_id);
        self.chats_changed(chat.project_id);
        Ok(chat)
    }

    pub fn messages(&self, chat_id: i64) -> Result<Vec<Message>> {
        Ok(self.store().messages(chat_id)?)
    }

    pub fn message(&self, message_id: i64) -> Result<Message> {
        Ok(self.store().message(message_id)?)
    }

    /// The agent steps of a reply, in order.
    pub fn agent_steps(&self, message_id: i64) -> Result<Vec<AgentStep>> {
        Ok(self.store().agent_steps(message_id)?)
    }

    /// A chat with its messages, agent steps, and the review of its pending proposal.
    pub fn load_chat(&self, chat_id: i64) -> Result<LoadedChat> {
        let chat = self.chat(chat_id)?;
        let messages = self.messages(chat_id)?;
        let pending = messages.iter().rev().find(|m| {
            m.role == Role::Assistant && m.approval_state == Some(ApprovalState::Pending)
        });
        let review = match pending {
            Some(message) => Some((message.id, self.review(message.id)?.plan)),
            None => None,
        };
        let mut attachments = HashMap::new();
        for message in messages.iter().filter(|m| m.role == Role::User) {
            let list = self.store().attachments(message.id)?;
            if list.is_empty() {
                continue;
            }
            let shown = list
                .into_iter()
                .map(|attachment| ShownAttachment {
                    image: (attachment.kind == crate::store::AttachmentKind::Image)
                        .then(|| crate::chat::attachments::read(self.store(), &attachment))
                        .flatten()
                        .map(Into::into),
                    attachment,
                })
                .collect();
            attachments.insert(message.id, shown);
        }
        let mut steps = HashMap::new();
        for message in messages.iter().filter(|m| m.role == Role::Assistant) {
            let list = self.agent_steps(message.id)?;
            if !list.is_empty() {
                steps.insert(message.id, list);
            }
        }
        Ok(LoadedChat {
            chat,
            messages,
            steps,
            review,
            approvals: self.chat.pending_approvals(),
            summaries: self.store().chat_summaries(chat_id)?,
            attachments,
        })
    }

    /// Stops the chat's streaming reply (what arrived is kept). False when none streams.
    pub fn cancel(&self, chat_id: i64) -> bool {
        self.chat.cancel(chat_id)
    }

    /// The person's answer to an agent's waiting tool call. False when nothing waits for it
    /// any more (the turn ended meanwhile).
    pub fn answer(&self, approval_id: u64, answer: Answer) -> bool {
        self.chat.answer(approval_id, answer)
    }

    /// The agent's tool calls waiting for the person now.
    pub fn pending_approvals(&self) -> Vec<PendingPermission> {
        self.chat.pending_approvals()
    }

    /// What sending `prompt` would put in the model's window: in `chat_id` (its mode and
    /// history), else as the first message of a new Build chat in `project`.
    pub async fn preview(
        &self,
        project: &Project,
        chat_id: Option<i64>,
        prompt: &str,
        options: &SendOptions,
    ) -> Result<ContextBreakdown> {
        Ok(match chat_id {
            Some(id) => self.chat.preview_in_chat(id, prompt, options).await?,
            None => self.chat.preview(project, prompt, options).await?,
        })
    }

    /// Records `reply` (a model's answer written elsewhere) as a proposal in a chat of the
    /// project (a new one unless `chat_id` is given).
    pub fn propose(
        &self,
        project: &Project,
        chat_id: Option<i64>,
        prompt: Option<&str>,
        reply: &str,
    ) -> Result<Proposal> {
        let proposal = self.engine().propose(project, chat_id, prompt, reply)?;
        // A new message (and maybe a new chat) moves the chat up the list.
        self.chats_changed(project.id);
        let chat_id = proposal.chat.id;
        self.changed(AppEvent::ChatChanged { chat_id });
        Ok(proposal)
    }

    /// Proposes a text attachment as a new file of the project (in `chat_id`, else a new
    /// chat), reviewed like any proposal. Refused for images, for text that would end the
    /// write tag early, and for a name that is not a plain file name.
    pub fn propose_new_file(
        &self,
        project: &Project,
        chat_id: Option<i64>,
        attach: &crate::chat::attachments::Attach,
    ) -> Result<Proposal> {
        let (kind, _) = attach.kind()?;
        if kind != crate::store::AttachmentKind::File {
            return Err(AppError::Invalid(format!(
                "{} is an image: only text files can be added to the project this way",
                attach.name
            )));
        }
        let text = String::from_utf8_lossy(&attach.bytes);
        if text.contains("</tandem-write") || text.contains("</dyad-write") {
            return Err(AppError::Invalid(format!(
                "{} contains a closing write tag; add it from the editor instead",
                attach.name
            )));
        }
        let path = crate::folder::normalize_relative(&attach.name)?;
        let reply = format!(
            "<tandem-write path=\"{path}\" description=\"attached file\">\n{text}</tandem-write>\n"
        );
        let prompt = format!("Add the attached file {path} to the project");
        self.propose(project, chat_id, Some(&prompt), &reply)
    }

    /// A proposal's plan against the disk as it is now.
    pub fn review(&self, message_id: i64) -> Result<Review> {
        Ok(self.engine().review(message_id)?)
    }

    /// Applies a proposal (all, or `selection`) as one commit; `reason` says why the rest
    /// was left out (told to the model on the next turn).
    pub fn approve(
        &self,
        message_id: i64,
        selection: Option<&Selection>,
        reason: Option<&str>,
    ) -> Result<ApproveOutcome> {
        let outcome = self
            .engine()
            .approve_with_reason(message_id, selection, reason)?;
        // It landed: the project's tree and history are read again.
        self.changed(AppEvent::ProjectChanged {
            project_id: outcome.project_id,
        });
        Ok(outcome)
    }

    /// A new chat (same project and mode) that starts from a summary of this one.
    pub async fn summarize_into_new_chat(
        &self,
        chat_id: i64,
        options: &SendOptions,
    ) -> Result<Chat> {
        let chat = self.chat.summarize_into_new_chat(chat_id, options).await?;
        self.chats_changed(chat.project_id);
        Ok(chat)
    }

    /// Rejects a proposal; `reason` is told to the model on the next turn.
    pub fn reject(&self, message_id: i64, reason: Option<&str>) -> Result<()> {
        self.engine().reject(message_id, reason)?;
        // Rejected: the chat is read again if it can still be found (else no one shows it).
        if let Ok(message) = self.store().message(message_id) {
            let chat_id = message.chat_id;
            self.changed(AppEvent::ChatChanged { chat_id });
        }
        Ok(())
    }
}
