//! The background jobs the UI can ask for. Each returns at once; results arrive as events.

use std::path::PathBuf;

use anyhow::Context as _;

use super::{Backend, EDITABLE_LIMIT, Event, FileContent};
use crate::chat::SendOptions;
use crate::edits::Selection;
use crate::engine::SaveOutcome;
use crate::store::{ApprovalState, ChatMode, Project, Role};

impl Backend {
    /// Adds (or reopens) a folder as a project and loads it.
    pub fn open_project(&self, path: PathBuf) {
        self.spawn("opening the project", move |service, emit| {
            let added = service.engine().add_project(&path, None)?;
            if added.initialized_git {
                emit.send(Event::Log(format!(
                    "{} was not a git repository: ran git init and made an initial commit",
                    path.display()
                )));
            }
            load_project(&service, &emit, added.project)
        });
    }

    /// Creates a folder (with a git repository) and opens it.
    pub fn new_project(&self, path: PathBuf) {
        self.spawn("creating the project", move |service, emit| {
            std::fs::create_dir_all(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            let added = service.engine().add_project(&path, None)?;
            load_project(&service, &emit, added.project)
        });
    }

    pub fn switch_project(&self, id: i64) {
        self.spawn("opening the project", move |service, emit| {
            let project = service.engine().store().project(id)?;
            load_project(&service, &emit, project)
        });
    }

    pub fn load_chat(&self, chat_id: i64) {
        self.spawn("loading the chat", move |service, emit| {
            send_chat(&service, &emit, chat_id)
        });
    }

    pub fn new_chat(&self, project_id: i64, mode: ChatMode) {
        self.spawn("creating a chat", move |service, emit| {
            let chat = service.new_chat(project_id, mode)?;
            emit.send(Event::ChatsChanged(
                service.engine().store().chats(project_id)?,
            ));
            send_chat(&service, &emit, chat.id)
        });
    }

    pub fn rename_chat(&self, chat_id: i64, title: String) {
        self.spawn("renaming the chat", move |service, emit| {
            let store = service.engine().store();
            store.rename_chat(chat_id, &title)?;
            let chat = store.chat(chat_id)?;
            emit.send(Event::ChatsChanged(store.chats(chat.project_id)?));
            Ok(())
        });
    }

    pub fn delete_chat(&self, chat_id: i64) {
        self.spawn("deleting the chat", move |service, emit| {
            let store = service.engine().store();
            let chat = store.chat(chat_id)?;
            service.cancel(chat_id);
            store.delete_chat(chat_id)?;
            emit.send(Event::ChatsChanged(store.chats(chat.project_id)?));
            Ok(())
        });
    }

    pub fn set_chat_mode(&self, chat_id: i64, mode: ChatMode) {
        self.spawn("changing the mode", move |service, emit| {
            let store = service.engine().store();
            store.set_chat_mode(chat_id, mode)?;
            let chat = store.chat(chat_id)?;
            emit.send(Event::ChatsChanged(store.chats(chat.project_id)?));
            Ok(())
        });
    }

    /// Sends a prompt in `mode` (the chat is switched first when it differs, in the same
    /// job, so the turn cannot start in the old mode); the reply streams in as
    /// [`Event::Chat`] events.
    pub fn send(
        &self,
        chat_id: i64,
        mode: ChatMode,
        prompt: String,
        options: SendOptions,
        redo: bool,
    ) {
        let handle = self.runtime.handle().clone();
        self.spawn("sending", move |service, emit| {
            let store = service.engine().store();
            let chat = store.chat(chat_id)?;
            if chat.mode != mode {
                store.set_chat_mode(chat_id, mode)?;
                emit.send(Event::ChatsChanged(store.chats(chat.project_id)?));
            }
            run_turn(&service, &emit, &handle, chat_id, &prompt, options, redo)
        });
    }

    /// Starts a chat in the project and sends the first prompt into it.
    pub fn start_chat(
        &self,
        project_id: i64,
        mode: ChatMode,
        prompt: String,
        options: SendOptions,
    ) {
        let handle = self.runtime.handle().clone();
        self.spawn("starting a chat", move |service, emit| {
            let chat = service.new_chat(project_id, mode)?;
            emit.send(Event::ChatsChanged(
                service.engine().store().chats(project_id)?,
            ));
            send_chat(&service, &emit, chat.id)?;
            run_turn(&service, &emit, &handle, chat.id, &prompt, options, false)
        });
    }

    /// Estimates the context a send of `prompt` would use (in the chat, else a new one).
    pub fn preview_context(
        &self,
        project: crate::store::Project,
        chat_id: Option<i64>,
        prompt: String,
        options: SendOptions,
    ) {
        let handle = self.runtime.handle().clone();
        self.spawn("estimating the context", move |service, emit| {
            let result = handle.block_on(async {
                match chat_id {
                    Some(id) => service.preview_in_chat(id, &prompt, &options).await,
                    None => service.preview(&project, &prompt, &options).await,
                }
            });
            let breakdown = result.map_err(|e| e.to_string());
            emit.send(Event::ContextPreview { prompt, breakdown });
            Ok(())
        });
    }

    /// Cancels a streaming reply (a flag and a token: no waiting).
    pub fn cancel(&self, chat_id: i64) {
        if let Some(service) = self.service.get() {
            service.cancel(chat_id);
        }
    }

    pub fn approve(&self, project: Project, chat_id: i64, message_id: i64, selection: Selection) {
        self.spawn("applying the changes", move |service, emit| {
            let outcome = service.engine().approve(message_id, Some(&selection))?;
            if let Some(report) = &outcome.install {
                emit.send(Event::Log(format!(
                    "$ {}\n{}",
                    report.command, report.output
                )));
            }
            if let Some(error) = &outcome.install_error {
                emit.send(Event::Log(format!("dependencies not installed: {error}")));
            }
            emit.send(Event::Approved {
                message_id,
                outcome,
            });
            refresh_project(&service, &emit, &project)?;
            send_chat(&service, &emit, chat_id)
        });
    }

    pub fn reject(&self, chat_id: i64, message_id: i64) {
        self.spawn("rejecting the changes", move |service, emit| {
            service.engine().reject(message_id)?;
            emit.send(Event::Rejected(message_id));
            send_chat(&service, &emit, chat_id)
        });
    }

    pub fn open_file(&self, project: Project, path: String) {
        self.spawn("opening the file", move |_service, emit| {
            let resolved = crate::workspace::resolve(&project.path, &path)?;
            let meta =
                std::fs::metadata(&resolved.abs).with_context(|| format!("reading {path}"))?;
            let content = if meta.len() > EDITABLE_LIMIT * 8 {
                FileContent::Binary { bytes: meta.len() }
            } else {
                let bytes =
                    std::fs::read(&resolved.abs).with_context(|| format!("reading {path}"))?;
                match String::from_utf8(bytes) {
                    Ok(text) if text.contains('\0') => FileContent::Binary { bytes: meta.len() },
                    Ok(text) if meta.len() > EDITABLE_LIMIT => FileContent::ReadOnly {
                        text,
                        reason: format!("this file is {} KiB: opened read-only", meta.len() / 1024),
                    },
                    Ok(text) => FileContent::Text(text),
                    Err(_) => FileContent::Binary { bytes: meta.len() },
                }
            };
            emit.send(Event::FileOpened {
                path: resolved.rel,
                content,
            });
            Ok(())
        });
    }

    /// Compares open files with what their tabs last loaded or saved (`known`); reports
    /// the ones that changed on disk.
    pub fn check_open_files(&self, project: Project, known: Vec<(String, String)>) {
        self.spawn("checking open files", move |_service, emit| {
            for (path, saved) in known {
                let Ok(resolved) = crate::workspace::resolve(&project.path, &path) else {
                    continue;
                };
                // A file that is gone or unreadable is left to the person: nothing reloads.
                let Ok(text) = std::fs::read_to_string(&resolved.abs) else {
                    continue;
                };
                if text != saved {
                    emit.send(Event::FileChangedOnDisk { path, text });
                }
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
        self.spawn("saving the file", move |service, emit| {
            let outcome = service.engine().save_file_checked(
                &project,
                &path,
                text.as_bytes(),
                expected.as_deref(),
            )?;
            match outcome {
                SaveOutcome::Saved { commit } => {
                    emit.send(Event::FileSaved { path, text, commit });
                    refresh_project(&service, &emit, &project)
                }
                SaveOutcome::ChangedOnDisk { disk } => {
                    let disk = disk.map(|b| String::from_utf8_lossy(&b).into_owned());
                    emit.send(Event::SaveConflict { path, disk });
                    Ok(())
                }
            }
        });
    }

    /// Creates an empty file; an existing file is left as it is (reported as a conflict).
    pub fn create_file(&self, project: Project, path: String) {
        self.save_file(project, path, String::new(), None);
    }

    pub fn rename_file(&self, project: Project, from: String, to: String) {
        self.spawn("renaming the file", move |service, emit| {
            service.engine().rename_file(&project, &from, &to)?;
            refresh_project(&service, &emit, &project)
        });
    }

    pub fn delete_file(&self, project: Project, path: String) {
        self.spawn("deleting the file", move |service, emit| {
            service.engine().delete_file(&project, &path)?;
            refresh_project(&service, &emit, &project)
        });
    }

    pub fn version_diff(&self, project: Project, commit: String) {
        self.spawn("reading the version", move |service, emit| {
            let diff = service.engine().version_diff(&project, &commit)?;
            emit.send(Event::VersionDiff { commit, diff });
            Ok(())
        });
    }

    pub fn restore(&self, project: Project, chat_id: Option<i64>, commit: String) {
        self.spawn("restoring the version", move |service, emit| {
            let outcome = service.engine().restore(&project, &commit)?;
            emit.send(Event::Restored(outcome));
            refresh_project(&service, &emit, &project)?;
            match chat_id {
                Some(chat_id) => send_chat(&service, &emit, chat_id),
                None => Ok(()),
            }
        });
    }

    pub fn undo(&self, project: Project, chat_id: Option<i64>) {
        self.spawn("undoing the last change", move |service, emit| {
            let outcome = service.engine().undo(&project)?;
            emit.send(Event::Undone(outcome));
            refresh_project(&service, &emit, &project)?;
            match chat_id {
                Some(chat_id) => send_chat(&service, &emit, chat_id),
                None => Ok(()),
            }
        });
    }
}

/// Sends (or redoes) a turn and reports it from start to finish.
fn run_turn(
    service: &std::sync::Arc<crate::chat::ChatService>,
    emit: &super::Emit,
    handle: &tokio::runtime::Handle,
    chat_id: i64,
    prompt: &str,
    options: SendOptions,
    redo: bool,
) -> anyhow::Result<()> {
    let started = handle.block_on(async {
        if redo {
            service.redo(chat_id, None, options).await
        } else {
            service.send(chat_id, prompt, options).await
        }
    })?;
    let store = service.engine().store();
    let user = match started.user_message_id {
        Some(id) if !redo => Some(store.message(id)?),
        _ => None,
    };
    emit.send(Event::TurnStarted {
        chat_id,
        user,
        reply_id: started.message_id,
    });
    let outcome = handle
        .block_on(started.outcome)
        .context("the reply task failed")?;
    emit.send(Event::TurnFinished(Box::new(outcome)));
    send_chat(service, emit, chat_id)?;
    if let Ok(chat) = store.chat(chat_id) {
        emit.send(Event::ChatsChanged(store.chats(chat.project_id)?));
    }
    Ok(())
}

fn load_project(
    service: &crate::chat::ChatService,
    emit: &super::Emit,
    project: Project,
) -> anyhow::Result<()> {
    let store = service.engine().store();
    store.touch_project(project.id)?;
    let chats = store.chats(project.id)?;
    let files = crate::workspace::list_files(&project.path)?;
    let history = service.engine().log(&project, 200)?;
    emit.send(Event::ProjectOpened {
        project,
        chats,
        files,
        history,
    });
    Ok(())
}

fn refresh_project(
    service: &crate::chat::ChatService,
    emit: &super::Emit,
    project: &Project,
) -> anyhow::Result<()> {
    emit.send(Event::Files(crate::workspace::list_files(&project.path)?));
    emit.send(Event::History(service.engine().log(project, 200)?));
    Ok(())
}

/// Loads a chat with its messages and the review of its pending proposal, if any.
fn send_chat(
    service: &crate::chat::ChatService,
    emit: &super::Emit,
    chat_id: i64,
) -> anyhow::Result<()> {
    let store = service.engine().store();
    let chat = store.chat(chat_id)?;
    let messages = store.messages(chat_id)?;
    let pending = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.approval_state == Some(ApprovalState::Pending));
    let review = match pending {
        Some(message) => Some((message.id, service.engine().review(message.id)?.plan)),
        None => None,
    };
    let mut steps = std::collections::HashMap::new();
    for message in messages.iter().filter(|m| m.role == Role::Assistant) {
        let list = store.agent_steps(message.id)?;
        if !list.is_empty() {
            steps.insert(message.id, list);
        }
    }
    emit.send(Event::ChatLoaded {
        chat,
        messages,
        steps,
        review,
        approvals: service.pending_approvals(),
    });
    Ok(())
}

impl Backend {
    /// Shows the native folder dialog on a background thread; the chosen folder comes back
    /// as [`Event::FolderPicked`].
    /// Where no desktop portal runs the dialog returns nothing and the path field remains.
    pub fn pick_folder(&self) {
        let emit = super::Emit {
            tx: self.tx.clone(),
            repaint: std::sync::Arc::clone(&self.repaint),
        };
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
