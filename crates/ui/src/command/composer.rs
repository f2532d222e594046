//! The composer's commands (the composer, the top bar): the mode, the model and auto-approve
//! chosen, a prompt sent, redone or cancelled, the editor's selected lines put into it, its
//! attachments; and the turns sent with the same choices from the check's problems and the
//! findings.

use crate::backend::{Backend, Event};
use crate::model::state::AppState;
use tandem_core::app::SendOptions;
use tandem_core::store::ChatMode;

use super::Command;

impl AppState {
    pub(super) fn set_mode(&mut self, mode: ChatMode, backend: &Backend) {
        self.mode = mode;
        if let Some(chat) = self.chat() {
            let chat_id = chat.chat.id;
            backend.run("changing the mode", move |app| {
                app.set_chat_mode(chat_id, mode)
            });
        }
    }

    pub(super) fn select_model(&mut self, provider: String, model: String, backend: &Backend) {
        let (p, m) = (provider.clone(), model.clone());
        backend.run("saving a setting", move |app| {
            app.update_chat_settings(move |s| {
                s.default_provider = Some(p);
                s.default_model = Some(m);
            })
        });
        self.provider = Some(provider);
        self.model = Some(model);
    }

    pub(super) fn toggle_auto_approve(&mut self, backend: &Backend) {
        self.auto_approve = !self.auto_approve;
        let on = self.auto_approve;
        backend.run("saving a setting", move |app| {
            app.update_chat_settings(move |s| s.auto_approve = on)
        });
    }

    /// Closes the palette when it is open, else cancels the open chat's streaming reply.
    pub(super) fn cancel(&mut self, backend: &Backend) {
        if self.palette.take().is_some() {
        } else if let Some(chat) = self.chat().filter(|c| c.streaming.is_some()) {
            backend.cancel(chat.chat.id);
        }
    }

    pub(super) fn send(&mut self, backend: &Backend, redo: bool) {
        let prompt = self.composer.trim().to_string();
        let Some(project) = &self.project else {
            self.toast("Open a project first", true);
            return;
        };
        let mut options = self.send_options();
        if !redo {
            // The attachments go with a new prompt (a redo resends the old one's).
            options.attachments = self.attachments.clone();
        }
        let Some(chat) = &project.chat else {
            if !redo && !prompt.is_empty() {
                // No chat yet: start one with this prompt.
                backend.start_chat(project.project.id, self.mode, prompt, options);
                self.composer.clear();
                self.attachments.clear();
            }
            return;
        };
        if !redo && prompt.is_empty() {
            return;
        }
        backend.send(chat.chat.id, self.mode, prompt, options, redo);
        if !redo {
            self.composer.clear();
            self.attachments.clear();
        }
    }

    /// The model and auto-approve choices for a send, and what the editor shows (its tabs and
    /// selection). The GUI never pre-approves agent calls by risk: the policy and the person
    /// decide.
    pub(crate) fn send_options(&self) -> SendOptions {
        SendOptions {
            provider: self.provider.clone(),
            model: self.model.clone(),
            auto_approve: Some(self.auto_approve),
            allow_risk: None,
            attachments: Vec::new(),
            editor: (self.project.as_ref())
                .map(crate::model::selection::focus)
                .unwrap_or_default(),
        }
    }

    /// Puts the editor's selected lines at the start of the prompt, in Ask mode or (`change`)
    /// Build mode.
    pub(super) fn selection_to_chat(
        &mut self,
        path: String,
        first: usize,
        last: usize,
        change: bool,
        backend: &Backend,
    ) {
        let Some(project) = &self.project else { return };
        let Some(tab) = project.tabs.iter().find(|t| t.path == path) else {
            return;
        };
        let lines = crate::model::selection::selected_lines(&tab.text, first, last);
        let start = crate::model::selection::prompt(&path, first, last, &lines, change);
        // What was typed already stays after it.
        self.composer = format!("{start}{}", self.composer);
        self.composer_edited = Some(std::time::Instant::now());
        let mode = if change {
            ChatMode::Build
        } else {
            ChatMode::Ask
        };
        self.apply(Command::SetMode(mode), backend);
    }

    pub(super) fn remove_attachment(&mut self, index: usize) {
        if index < self.attachments.len() {
            self.attachments.remove(index);
        }
    }

    /// Proposes text attachment `index` as a new file of the project (and takes it off the
    /// prompt).
    pub(super) fn add_attachment_to_project(&mut self, index: usize, backend: &Backend) {
        let Some(project) = &self.project else { return };
        if index < self.attachments.len() {
            let attach = self.attachments.remove(index);
            let chat = project.chat.as_ref().map(|c| c.chat.id);
            self.show_review = true;
            backend.propose_attachment(project.project.clone(), chat, attach);
        }
    }

    /// Sends the last check's problems to the model in Build mode.
    pub(super) fn fix_problems(&mut self, backend: &Backend) {
        let Some(chat) = self.chat() else { return };
        let chat_id = chat.chat.id;
        self.mode = ChatMode::Build;
        let options = self.send_options();
        backend.turn("asking to fix the problems", move |app| async move {
            app.fix_problems(chat_id, options).await
        });
    }

    /// Sends finding `index` of the chat's last review to Build mode.
    pub(super) fn fix_finding(&mut self, index: usize, backend: &Backend) {
        let Some(chat) = self.chat() else { return };
        let chat_id = chat.chat.id;
        self.mode = ChatMode::Build;
        let options = self.send_options();
        backend.turn("asking to fix the finding", move |app| async move {
            app.fix_finding(chat_id, index, options).await
        });
    }
}

/// Lists provider `name`'s models (which also tests that it answers).
pub(super) fn refresh_models(backend: &Backend, name: String) {
    let provider = name.clone();
    backend.query_async(
        "listing models",
        move |app| async move { anyhow::Ok(app.models(&name).await.map_err(|e| e.to_string())) },
        move |models| Event::Models { provider, models },
    );
}
