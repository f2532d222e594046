//! The chats' commands (the sidebar, the chat panel): a chat made, opened, renamed,
//! archived or unarchived, the archived ones listed, and one summarised into a new chat.

use crate::backend::{Backend, Event};
use crate::model::state::AppState;

impl AppState {
    pub(super) fn new_chat(&self, backend: &Backend) {
        if let Some(project) = &self.project {
            backend.new_chat(project.project.id, self.mode);
        }
    }

    pub(super) fn select_chat(&mut self, id: i64, backend: &Backend) {
        self.prefs.last_chat = Some(id);
        backend.load_chat(id);
    }

    pub(super) fn rename_chat(&mut self, id: i64, title: String, backend: &Backend) {
        if let Some(project) = &mut self.project {
            project.renaming_chat = None;
        }
        backend.run("renaming the chat", move |app| app.rename_chat(id, &title));
    }

    /// Shows or hides the archived chats (listed when shown).
    pub(super) fn toggle_archived(&mut self, backend: &Backend) {
        if let Some(project) = &mut self.project {
            project.show_archived = !project.show_archived;
            if project.show_archived {
                let project_id = project.project.id;
                backend.query(
                    "listing archived chats",
                    move |app| app.archived_chats(project_id),
                    move |chats| Event::ArchivedChats { project_id, chats },
                );
            }
        }
    }

    /// Starts a new chat from a summary of the open one.
    pub(super) fn summarize_into_new_chat(&self, backend: &Backend) {
        let Some(chat) = self.chat() else {
            return;
        };
        backend.summarize_into_new_chat(chat.chat.id, self.send_options());
    }
}

/// Archives (`archived`) or unarchives chat `id`.
pub(super) fn archive_chat(id: i64, archived: bool, backend: &Backend) {
    let action = match archived {
        true => "archiving the chat",
        false => "unarchiving the chat",
    };
    // Both lists come again on the app's stream.
    backend.run(action, move |app| app.set_chat_archived(id, archived));
}
