//! The use cases several command handlers call alike: each one run of the backend's generic
//! runners, with the words its failure is reported with, written once.

use crate::backend::{Backend, Event};
use tandem_core::store::Project;

/// Opens file `path` of `project` in a tab.
pub(crate) fn open_file(backend: &Backend, project: Project, path: String) {
    backend.query(
        "opening the file",
        move |app| app.read_file(&project, &path),
        |(path, content)| Event::FileOpened { path, content },
    );
}

/// Saves a project's settings as they are.
pub(crate) fn save_project_settings(backend: &Backend, project: Project) {
    backend.run("saving the project settings", move |app| {
        app.save_project_settings(&project)
    });
}

/// Asks whether CLI agent provider `name` is installed and logged in.
pub(crate) fn cli_agent_status(backend: &Backend, name: String) {
    let provider = name.clone();
    backend.query_async(
        "asking the CLI agent",
        move |app| async move { app.agent_status(&name).await },
        move |status| Event::CliAgentStatus { provider, status },
    );
}
