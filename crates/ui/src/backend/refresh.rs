//! Sending the window the state of what changed: the project's files and history, or a chat
//! with its pending review. The handlers of `chats` and `projects` both end with these.

use tandem_core::app::App;
use tandem_core::store::Project;

use super::{Emit, Event};

/// Loads a chat with its messages and the review of its pending proposal, if any.
pub(super) fn reload_chat(app: &App, emit: &Emit, chat_id: i64) -> anyhow::Result<()> {
    emit.send(Event::ChatLoaded(Box::new(app.load_chat(chat_id)?)));
    Ok(())
}

/// Sends the project's files and history as they are now.
pub(super) fn refresh_project(app: &App, emit: &Emit, project: &Project) -> anyhow::Result<()> {
    for event in self::project(app, project)? {
        emit.send(event);
    }
    Ok(())
}

/// The project's files and history as they are now.
pub(super) fn project(app: &App, project: &Project) -> anyhow::Result<[Event; 2]> {
    let project_id = project.id;
    Ok([
        Event::Files {
            project_id,
            files: app.files(project)?,
        },
        Event::History {
            project_id,
            history: app.recent_history(project)?,
        },
    ])
}
