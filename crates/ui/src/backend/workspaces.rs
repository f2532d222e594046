//! The chats' workspaces in the background: a run in one (the review's Run button), and the
//! list and its cleaning (Settings → Agent).

use tokio_util::sync::CancellationToken;

use super::{Backend, Event};
use tandem_core::app::CleanScope;

impl Backend {
    /// Runs `command` (blank: the project's check command) in chat `chat_id`'s workspace;
    /// reports [`Event::WorkspaceRun`], whatever happens.
    pub fn run_in_workspace(&self, chat_id: i64, command: String) {
        self.spawn_async("running in the workspace", move |app, emit| async move {
            let result = app
                .run_in_workspace(chat_id, Some(&command), CancellationToken::new())
                .await
                .map_err(|e| e.to_string());
            emit.send_async(Event::WorkspaceRun {
                chat_id,
                result: Box::new(result),
            })
            .await;
            Ok(())
        });
    }

    /// Lists the workspaces with their sizes ([`Event::Workspaces`]).
    pub fn load_workspaces(&self) {
        self.spawn("listing the workspaces", |app, emit| {
            emit.send(Event::Workspaces(app.workspaces()?));
            Ok(())
        });
    }

    /// Removes the workspaces of `scope`, then lists them again.
    pub fn clean_workspaces(&self, scope: CleanScope) {
        self.spawn("cleaning the workspaces", move |app, emit| {
            let cleaned = app.clean_workspaces(scope);
            // Listed again either way: what is on disk now.
            emit.send(Event::Workspaces(app.workspaces()?));
            emit.send(Event::WorkspacesCleaned(cleaned?));
            Ok(())
        });
    }
}
