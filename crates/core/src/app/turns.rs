//! Starting turns: a prompt sent in a chat (switched to the turn's mode first), a redo, a new
//! chat with its first prompt, and the turns that follow from what a chat holds (implement a
//! plan, fix the check's problems, fix a security finding). The window and the CLI start every
//! turn here.

use super::{App, AppError, Result};
use crate::chat::follow_ups::{self, LastCheck};
use crate::chat::{SendOptions, TurnOutcome};
use crate::store::{Chat, ChatMode, Message, Role};

/// A turn that has started: its reply streams as [`ChatEvent`](crate::chat::ChatEvent)s
/// until `outcome` resolves.
pub struct StartedTurn {
    pub chat_id: i64,
    pub reply_id: i64,
    /// The person's new message (`None` for a redo, which keeps the old one).
    pub user: Option<Message>,
    pub outcome: tokio::task::JoinHandle<TurnOutcome>,
}

impl StartedTurn {
    /// Waits for the turn to end.
    pub async fn finish(self) -> Result<TurnOutcome> {
        self.outcome
            .await
            .map_err(|e| AppError::Task(format!("the reply task failed: {e}")))
    }
}

/// A chat made for a first prompt and not sent in yet: it is deleted again unless
/// [`NewChat::send`] starts the turn (a failed send leaves no empty chat behind).
pub struct NewChat<'a> {
    app: &'a App,
    pub chat: Chat,
    sent: bool,
}

impl NewChat<'_> {
    /// Sends the first prompt. On failure the chat is gone when the error returns.
    pub async fn send(mut self, prompt: &str, options: SendOptions) -> Result<StartedTurn> {
        let started = self.app.send(self.chat.id, None, prompt, options).await?;
        self.sent = true;
        Ok(started)
    }
}

impl Drop for NewChat<'_> {
    fn drop(&mut self) {
        if !self.sent {
            // Best effort: a chat left over would only be empty.
            let _ = self.app.delete_chat(self.chat.id);
        }
    }
}

impl App {
    /// A new chat in the project for a first prompt (see [`NewChat`]).
    pub fn start_chat(&self, project_id: i64, mode: ChatMode) -> Result<NewChat<'_>> {
        Ok(NewChat {
            app: self,
            chat: self.new_chat(project_id, mode)?,
            sent: false,
        })
    }

    /// Sends `prompt` in the chat, switched to `mode` first when given (so the turn cannot
    /// start in the old mode). The reply streams as [`ChatEvent`](crate::chat::ChatEvent)s.
    pub async fn send(
        &self,
        chat_id: i64,
        mode: Option<ChatMode>,
        prompt: &str,
        options: SendOptions,
    ) -> Result<StartedTurn> {
        let chat = self.chat(chat_id)?;
        if let Some(mode) = mode
            && chat.mode != mode
        {
            self.set_chat_mode(chat_id, mode)?;
        }
        let project_id = chat.project_id;
        let handle = self.chat.send(chat_id, prompt, options).await?;
        let user = match handle.user_message_id {
            Some(id) => Some(self.message(id)?),
            None => None,
        };
        Ok(StartedTurn {
            chat_id,
            reply_id: handle.message_id,
            user,
            outcome: self.said_when_it_ends((project_id, chat_id), handle.outcome),
        })
    }

    /// Asks again for the reply to the chat's last prompt. The old reply stays until the new
    /// one is complete.
    pub async fn redo(&self, chat_id: i64, options: SendOptions) -> Result<StartedTurn> {
        let project_id = self.chat(chat_id)?.project_id;
        let handle = self.chat.redo(chat_id, None, options).await?;
        Ok(StartedTurn {
            chat_id,
            reply_id: handle.message_id,
            user: None,
            outcome: self.said_when_it_ends((project_id, chat_id), handle.outcome),
        })
    }

    /// Asks Agent mode, in the same chat, to implement the plan that reply `message_id` made.
    pub async fn implement_plan(
        &self,
        message_id: i64,
        options: SendOptions,
    ) -> Result<StartedTurn> {
        let reply = self.message(message_id)?;
        let prompt = (reply.role == Role::Assistant)
            .then(|| follow_ups::implement_plan_prompt(&reply.content))
            .flatten()
            .ok_or_else(|| {
                AppError::Invalid(format!("message {message_id} holds no plan to implement"))
            })?;
        self.send(reply.chat_id, Some(ChatMode::Agent), &prompt, options)
            .await
    }

    /// The newest run of the project's check in the chat (any reply's).
    pub fn last_check(&self, chat_id: i64) -> Result<Option<LastCheck>> {
        for message in self.messages(chat_id)?.iter().rev() {
            let steps = self.agent_steps(message.id)?;
            if let Some(check) = LastCheck::newest(steps.iter().rev()) {
                return Ok(Some(check));
            }
        }
        Ok(None)
    }

    /// Asks Build mode, in the same chat, to fix what the chat's newest check reported.
    pub async fn fix_problems(&self, chat_id: i64, options: SendOptions) -> Result<StartedTurn> {
        let check = (self.last_check(chat_id)?)
            .ok_or_else(|| AppError::Invalid("no check has run in this chat".into()))?;
        if check.passed {
            return Err(AppError::Invalid(format!(
                "the last check (`{}`) passed: there is nothing to fix",
                check.command
            )));
        }
        let prompt = follow_ups::fix_problems_prompt(&check);
        self.send(chat_id, Some(ChatMode::Build), &prompt, options)
            .await
    }

    /// The chat's newest security review: the reply's id and its findings, most severe first.
    pub fn latest_findings(
        &self,
        chat_id: i64,
    ) -> Result<Option<(i64, Vec<crate::edits::SecurityFinding>)>> {
        let messages = self.messages(chat_id)?;
        Ok((messages.iter().rev())
            .filter(|m| m.role == Role::Assistant)
            .find_map(|m| {
                let found = crate::edits::security_findings(&m.content);
                (!found.is_empty()).then_some((m.id, found))
            }))
    }

    /// Asks Build mode, in the same chat, to fix finding `index` (most severe first) of the
    /// chat's newest security review.
    pub async fn fix_finding(
        &self,
        chat_id: i64,
        index: usize,
        options: SendOptions,
    ) -> Result<StartedTurn> {
        let (_, findings) = (self.latest_findings(chat_id)?)
            .ok_or_else(|| AppError::Invalid("this chat has no security findings".into()))?;
        let finding = findings.get(index).ok_or_else(|| {
            AppError::Invalid(format!(
                "this chat's review has {} findings: there is no number {}",
                findings.len(),
                index + 1
            ))
        })?;
        let prompt = follow_ups::fix_finding_prompt(finding);
        self.send(chat_id, Some(ChatMode::Build), &prompt, options)
            .await
    }
}
