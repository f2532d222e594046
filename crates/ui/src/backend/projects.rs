//! Projects in the background: opening and watching them, their open files (reloaded, saved
//! against conflicts), the folder dialog.

use std::path::PathBuf;
use std::sync::Arc;

use super::refresh::{refresh_project, reload_chat};
use super::{Backend, Emit, Event};
use tandem_core::app::{App, SaveOutcome};
use tandem_core::store::Project;

impl Backend {
    /// Adds (or reopens) a folder as a project and loads it.
    pub fn open_project(&self, path: PathBuf) {
        self.spawn("opening the project", move |app, emit| {
            let added = app.add_project(&path, None)?;
            if added.initialized_git {
                emit.send(Event::Log(format!(
                    "{} was not a git repository: ran git init and made an initial commit",
                    path.display()
                )));
            }
            load_project(&app, &emit, added.project)
        });
    }

    /// Creates a folder (with a git repository) and opens it.
    pub fn new_project(&self, path: PathBuf) {
        self.spawn("creating the project", move |app, emit| {
            let added = app.create_project(&path)?;
            load_project(&app, &emit, added.project)
        });
    }

    pub fn switch_project(&self, id: i64) {
        self.spawn("opening the project", move |app, emit| {
            let project = app.project_by_id(id)?;
            load_project(&app, &emit, project)
        });
    }

    /// Watches `project` (the one now open) for changes made outside the window: they
    /// arrive as [`Event::ChangedOutside`]. The watch on the project open before stops.
    pub fn watch_project(&self, project: Project) {
        let slot = Arc::clone(&self.watch);
        self.spawn(
            "watching the project for outside changes",
            move |app, emit| {
                let id = project.id;
                let sender = emit.clone();
                let watch = app.watch_project(&project, move |changed| {
                    sender.send(Event::ChangedOutside {
                        project_id: id,
                        changed,
                    });
                })?;
                if watch.unwatched > 0 {
                    emit.send(Event::Log(format!(
                        "{} folders of {} are not watched for outside changes (the system's \
                     limit on watches): changes there show after the next refresh",
                        watch.unwatched, project.name
                    )));
                }
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((id, watch));
                Ok(())
            },
        );
    }

    /// After an outside change: the files and history again, the chats (a proposal the
    /// CLI approved), and the open chat when `chat` is given (not while it streams).
    pub fn refresh_outside_change(&self, project: Project, chat: Option<i64>) {
        self.spawn("reading an outside change", move |app, emit| {
            refresh_project(&app, &emit, &project)?;
            let (project_id, chats) = (project.id, app.chats(project.id)?);
            emit.send(Event::ChatsChanged { project_id, chats });
            if let Some(chat) = chat {
                reload_chat(&app, &emit, chat)?;
            }
            Ok(())
        });
    }

    /// Compares open files with what their tabs last loaded or saved (`known`); reports
    /// the ones that changed on disk.
    pub fn check_open_files(&self, project: Project, known: Vec<(String, String)>) {
        self.spawn("checking open files", move |app, emit| {
            for (path, text) in app.changed_on_disk(&project, known) {
                emit.send(Event::FileChangedOnDisk { path, text });
            }
            Ok(())
        });
    }

    /// Saves `text` if the file on disk still has the blob hash `expected` (what the buffer
    /// was loaded from; `None`: no file); otherwise reports [`Event::SaveConflict`].
    pub fn save_file(
        &self,
        project: Project,
        path: String,
        text: String,
        expected: Option<String>,
    ) {
        self.spawn("saving the file", move |app, emit| {
            let outcome =
                app.save_file_checked(&project, &path, text.as_bytes(), expected.as_deref())?;
            match outcome {
                SaveOutcome::Saved { commit } => {
                    emit.send(Event::FileSaved { path, text, commit });
                    Ok(())
                }
                SaveOutcome::ChangedOnDisk { disk } => {
                    let disk = disk.map(|b| String::from_utf8_lossy(&b).into_owned());
                    emit.send(Event::SaveConflict { path, disk });
                    Ok(())
                }
            }
        });
    }

    /// Writes a starter AI_RULES.md (committed) and opens it.
    pub fn write_starter_rules(&self, project: Project) {
        self.spawn("writing AI_RULES.md", move |app, emit| {
            app.write_starter_rules(&project)?;
            let path = tandem_core::app::RULES_FILE.to_string();
            let (path, content) = app.read_file(&project, &path)?;
            emit.send(Event::FileOpened { path, content });
            Ok(())
        });
    }

    /// Shows the native folder dialog on a background thread; the chosen folder comes back
    /// as [`Event::FolderPicked`].
    /// Where no desktop portal runs the dialog returns nothing and the path field remains.
    pub fn pick_folder(&self) {
        let emit = self.emit();
        self.runtime.spawn(async move {
            let picked = rfd::AsyncFileDialog::new()
                .set_title("Open a project folder")
                .pick_folder()
                .await;
            let Some(folder) = picked else {
                emit.send_async(Event::Log(
                    "no folder chosen (if no dialog appeared, type the folder's path)".into(),
                ))
                .await;
                return;
            };
            // Opened like a typed path: one code path adds and loads a project.
            emit.send_async(Event::FolderPicked(folder.path().to_path_buf()))
                .await;
        });
    }
}

fn load_project(app: &App, emit: &Emit, project: Project) -> anyhow::Result<()> {
    let opened = app.open_project(project)?;
    emit.send(Event::ProjectOpened(Box::new(opened)));
    Ok(())
}
