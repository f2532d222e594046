//! Where a stdio server runs: the world the agent's commands run in. It is started inside the
//! agent's container (see `sandbox`), confined as a `run_shell` call is, with the chat's
//! workspace at the project's path, so that what it changes there comes back as part of the
//! proposal and it reaches nothing the task does not need (no home directory, no credentials,
//! no other project, no network).

use std::path::{Path, PathBuf};

use crate::layer::Tracker;
use crate::sandbox::{self, Confinement, ProjectView};

/// The world a chat's stdio servers run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    /// The project's path: the servers' working directory, showing `view` when there is one.
    project: PathBuf,
    /// What the container shows at the project's path: the chat's workspace.
    view: Option<ProjectView>,
    /// The person's sandbox settings (readable and hidden paths, limits, variables).
    sandbox: sandbox::Settings,
}

impl World {
    /// The chat's workspace that `tracker` follows, as the agent's commands see it.
    pub fn workspace(tracker: &Tracker, sandbox: sandbox::Settings) -> World {
        let workspace = tracker.workspace();
        World {
            project: workspace.project().to_path_buf(),
            view: Some(workspace.project_view()),
            sandbox,
        }
    }

    /// `folder` itself, read-write at its own path (a scratch folder: the servers of tests
    /// and tools that work without a project).
    pub fn folder(folder: impl Into<PathBuf>) -> World {
        World {
            project: folder.into(),
            view: None,
            sandbox: sandbox::Settings::default(),
        }
    }

    /// The servers' working directory (the project's path).
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// The confinement of one server running `program` with the private temp dir `temp`:
    /// a command's, without the network (a server lives across many calls, and the network
    /// is only ever opened for one call the person approved).
    pub(super) fn confinement(&self, program: Option<&Path>, temp: &Path) -> Confinement {
        let mut confinement = self.sandbox.confinement(&self.project, temp, false);
        confinement.view = self.view.clone();
        if let Some(program) = program {
            confinement.run_program(program);
        }
        confinement
    }

    /// The variables passed besides the built-in list (`agent.sandbox_env`).
    pub(super) fn env_names(&self) -> &[String] {
        &self.sandbox.env_names
    }
}
