//! The chats' workspaces in the background: cleaning them (Settings → Agent).

use super::{Backend, Event};
use tandem_core::app::CleanScope;

impl Backend {
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
