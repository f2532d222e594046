//! Every user action is a [`Command`]: buttons, shortcuts, the command palette and tests all
//! send the same values, applied in one place after the frame's UI has been laid out.

use std::path::PathBuf;

pub use crate::agent_commands::AgentCommand;
use crate::backend::{Backend, Event};
use crate::calls::open_file;
use crate::model::state::{AppState, BottomTab, Confirm, Palette, SendKey, Theme};
use crate::model::unsaved::CloseChoice;
pub use crate::workspace_commands::WorkspaceCommand;
pub use symbols::SymbolCommand;
use tandem_core::app::SendOptions;
use tandem_core::store::ChatMode;

// The handlers of the review panel's and the Settings window's commands.
mod review;
mod settings;
mod symbols;

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    OpenFolderDialog,
    OpenProject(PathBuf),
    NewProject(PathBuf),
    SwitchProject(i64),
    NewChat,
    SelectChat(i64),
    RenameChat(i64, String),
    /// Starts a new chat from a summary of the open one.
    SummarizeIntoNewChat,
    DeleteChat(i64),
    /// Archives (`true`) or unarchives a chat.
    ArchiveChat(i64, bool),
    /// Shows or hides the archived chats in the sidebar.
    ToggleArchived,
    /// Saves a prompt of the library (`id`: the one being edited).
    SavePrompt {
        id: Option<i64>,
        name: String,
        text: String,
    },
    RemovePrompt(String),
    /// Puts the editor's selected lines into the prompt: to ask about them (Ask mode) or to
    /// have them changed (Build mode).
    SelectionToChat {
        path: String,
        first: usize,
        last: usize,
        change: bool,
    },
    /// Follows the agent: each file it reads or edits opens at the lines it touched.
    ToggleFollowAgent,
    /// Opens the file dialog to attach files or images to the prompt.
    AttachFiles,
    /// Attaches the clipboard's image.
    PasteImage,
    RemoveAttachment(usize),
    /// Proposes text attachment `index` as a new file of the project (and takes it off the
    /// prompt).
    AddAttachmentToProject(usize),
    /// Reloads the Usage tab (`true`: every project, else the open one).
    LoadUsage(bool),
    /// Sets (`None`: removes) a model's price per million tokens.
    SetPrice(String, Option<tandem_core::app::Price>),
    SetMode(ChatMode),
    SelectModel {
        provider: String,
        model: String,
    },
    RefreshModels,
    ToggleAutoApprove,
    Send,
    Cancel,
    Redo,
    ToggleFile(usize),
    ToggleHunk(usize, usize),
    ToggleDependencies,
    /// Why the person leaves part (or all) of the proposal out (told to the model).
    SetReviewReason(String),
    NextHunk,
    PrevHunk,
    ToggleSideBySide,
    Approve,
    Reject,
    OpenFile(String),
    /// Opens a file with `line` (1-based) in view (a problem of the last check).
    OpenFileAt {
        path: String,
        line: usize,
    },
    /// Sends the last check's problems to the model in Build mode.
    FixProblems,
    /// Sends finding `index` of the chat's last review to Build mode.
    FixFinding(usize),
    /// Shows or hides one level of findings (index in `findings::LEVELS`).
    ToggleFindingLevel(usize),
    /// Closes a tab; a dirty one asks first (Save / Discard / Cancel).
    CloseTab(usize),
    CloseActiveTab,
    /// The answer to the close dialog.
    CloseChoice(CloseChoice),
    SelectTab(usize),
    Save,
    ToggleFind,
    CreateFile(String),
    DeleteFile(String),
    RenameFile {
        from: String,
        to: String,
    },
    SelectVersion(String),
    Restore(String),
    Undo,
    Confirm,
    Dismiss,
    ShowBottom(BottomTab),
    ToggleBottom,
    OpenSettings,
    /// Loads what Settings shows per provider: its keys, or a CLI agent's login state.
    LoadProviderDetails,
    CloseSettings,
    SetTheme(Theme),
    SetFontSize(f32),
    SetSendKey(SendKey),
    OpenPalette,
    ClosePalette,
    /// The open file changed on disk: take the disk's text (`true`) or keep the buffer.
    ResolveDiskChange(bool),
    /// A save was refused (the file changed on disk): write the buffer over it anyway.
    OverwriteOnDisk,
    /// A save was refused: put the question away, keep the buffer (the next save asks again).
    KeepEditing,
    /// Saves the provider form (adds, or updates the one being edited).
    SaveProvider,
    EditProvider(i64),
    DeleteProvider(i64),
    TestProvider(String),
    /// Runs the chosen model's check-up (window, native tool calls, images).
    CheckModel,
    /// Saves the chosen model's settings as typed.
    SaveModelSettings,
    SaveKey(String),
    /// Removes a provider's stored key, named by its fingerprint.
    RemoveKey {
        provider: String,
        fingerprint: String,
    },
    SaveHistoryTurns,
    SaveContextGlobs,
    /// Saves the project's check command as typed (empty: none).
    SaveCheckCommand,
    /// Saves the rules typed for the mode shown in Settings.
    SaveModeRules,
    /// Writes a starter AI_RULES.md for the project.
    WriteStarterRules,
    /// Agent mode: approvals, plans, agent settings, the approval gateway.
    Agent(AgentCommand),
    /// The chats' workspaces: the review's Run panel, the list in Settings.
    Workspace(WorkspaceCommand),
    /// Go to definition, find references.
    Symbol(SymbolCommand),
}

impl From<AgentCommand> for Command {
    fn from(command: AgentCommand) -> Self {
        Command::Agent(command)
    }
}

impl From<SymbolCommand> for Command {
    fn from(command: SymbolCommand) -> Self {
        Command::Symbol(command)
    }
}

impl From<WorkspaceCommand> for Command {
    fn from(command: WorkspaceCommand) -> Self {
        Command::Workspace(command)
    }
}

impl AppState {
    pub fn apply(&mut self, command: Command, backend: &Backend) {
        match command {
            Command::OpenFolderDialog => {
                // The native dialog blocks its own thread, never the UI's.
                backend.pick_folder();
            }
            Command::OpenProject(path) => backend.open_project(path),
            Command::NewProject(path) => backend.new_project(path),
            Command::SwitchProject(id) => backend.switch_project(id),
            Command::NewChat => {
                if let Some(project) = &self.project {
                    backend.new_chat(project.project.id, self.mode);
                }
            }
            Command::SelectChat(id) => {
                self.prefs.last_chat = Some(id);
                backend.load_chat(id);
            }
            Command::RenameChat(id, title) => {
                if let Some(project) = &mut self.project {
                    project.renaming_chat = None;
                }
                backend.run("renaming the chat", move |app| app.rename_chat(id, &title));
            }
            Command::DeleteChat(id) => self.confirm = Some(Confirm::DeleteChat(id)),
            Command::ArchiveChat(id, archived) => {
                let action = match archived {
                    true => "archiving the chat",
                    false => "unarchiving the chat",
                };
                // Both lists come again on the app's stream.
                backend.run(action, move |app| app.set_chat_archived(id, archived));
            }
            Command::ToggleArchived => {
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
            Command::SavePrompt { id, name, text } => {
                // A new prompt (`id` `None`), or prompt `id` renamed and rewritten.
                backend.run("saving the prompt", move |app| match id {
                    Some(id) => app.update_prompt(id, &name, &text),
                    None => app.save_prompt(&name, &text),
                });
            }
            Command::RemovePrompt(name) => {
                backend.run("removing the prompt", move |app| app.remove_prompt(&name));
            }
            Command::SetMode(mode) => {
                self.mode = mode;
                if let Some(chat) = self.chat() {
                    let chat_id = chat.chat.id;
                    backend.run("changing the mode", move |app| {
                        app.set_chat_mode(chat_id, mode)
                    });
                }
            }
            Command::SelectModel { provider, model } => {
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
            Command::RefreshModels => {
                for provider in &self.providers {
                    refresh_models(backend, provider.name.clone());
                }
            }
            Command::ToggleAutoApprove => {
                self.auto_approve = !self.auto_approve;
                let on = self.auto_approve;
                backend.run("saving a setting", move |app| {
                    app.update_chat_settings(move |s| s.auto_approve = on)
                });
            }
            Command::Send => self.send(backend, false),
            Command::Redo => self.send(backend, true),
            Command::Cancel => {
                if self.palette.take().is_some() {
                } else if let Some(chat) = self.chat().filter(|c| c.streaming.is_some()) {
                    backend.cancel(chat.chat.id);
                }
            }
            Command::ToggleFile(file) => self.toggle_file(file),
            Command::ToggleHunk(file, hunk) => self.toggle_hunk(file, hunk),
            Command::ToggleDependencies => self.toggle_dependencies(),
            Command::SetReviewReason(reason) => self.set_review_reason(reason),
            Command::NextHunk => self.move_cursor(1),
            Command::PrevHunk => self.move_cursor(-1),
            Command::ToggleSideBySide => self.prefs.side_by_side = !self.prefs.side_by_side,
            Command::Approve => self.approve(backend),
            Command::Reject => self.reject(backend),
            Command::OpenFileAt { path, line } => {
                if let Some(project) = &mut self.project {
                    project.goto = Some((path.clone(), line));
                }
                self.apply(Command::OpenFile(path), backend);
            }
            Command::SummarizeIntoNewChat => {
                let Some(chat) = self.chat() else {
                    return;
                };
                backend.summarize_into_new_chat(chat.chat.id, self.send_options());
            }
            Command::FixProblems => {
                let Some(chat) = self.chat() else { return };
                let chat_id = chat.chat.id;
                self.mode = ChatMode::Build;
                let options = self.send_options();
                backend.turn("asking to fix the problems", move |app| async move {
                    app.fix_problems(chat_id, options).await
                });
            }
            Command::FixFinding(index) => {
                let Some(chat) = self.chat() else { return };
                let chat_id = chat.chat.id;
                self.mode = ChatMode::Build;
                let options = self.send_options();
                backend.turn("asking to fix the finding", move |app| async move {
                    app.fix_finding(chat_id, index, options).await
                });
            }
            Command::ToggleFindingLevel(level) => {
                if let Some(hidden) = self.findings_filter.hidden.get_mut(level) {
                    *hidden = !*hidden;
                }
            }
            Command::OpenFile(path) => {
                self.show_review = false;
                let Some(project) = &mut self.project else {
                    return;
                };
                match project.tabs.iter().position(|t| t.path == path) {
                    Some(index) => project.active_tab = Some(index),
                    None => open_file(backend, project.project.clone(), path),
                }
            }
            Command::CloseTab(index) => self.close_tab(index),
            Command::CloseActiveTab => self.close_active_tab(),
            Command::CloseChoice(choice) => self.close_choice(choice, backend),
            Command::OverwriteOnDisk => self.overwrite_on_disk(backend),
            Command::KeepEditing => self.keep_editing(),
            Command::SelectTab(index) => {
                if let Some(project) = &mut self.project {
                    project.active_tab = (index < project.tabs.len()).then_some(index);
                }
            }
            Command::Save => self.save_active(backend),
            Command::ToggleFind => {
                let tab = self.project.as_mut().and_then(|p| {
                    let index = p.active_tab?;
                    p.tabs.get_mut(index)
                });
                if let Some(tab) = tab {
                    tab.find = match tab.find.take() {
                        Some(_) => None,
                        None => Some(String::new()),
                    };
                }
            }
            Command::CreateFile(path) => {
                if let Some(project) = &mut self.project {
                    project.new_file = None;
                    // An existing file is left as it is (reported as a conflict).
                    backend.save_file(project.project.clone(), path.clone(), String::new(), None);
                    open_file(backend, project.project.clone(), path);
                }
            }
            Command::DeleteFile(path) => self.confirm = Some(Confirm::DeleteFile(path)),
            Command::RenameFile { from, to } => {
                if let Some(project) = &mut self.project {
                    project.renaming_file = None;
                    if from != to && !to.trim().is_empty() {
                        for tab in project.tabs.iter_mut().filter(|t| t.path == from) {
                            tab.path = to.clone();
                        }
                        let project = project.project.clone();
                        backend.run("renaming the file", move |app| {
                            app.rename_file(&project, &from, &to)
                        });
                    }
                }
            }
            Command::SelectVersion(hash) => {
                if let Some(project) = &mut self.project {
                    project.selected_version = Some(hash.clone());
                    let (project, commit) = (project.project.clone(), hash.clone());
                    backend.query(
                        "reading the version",
                        move |app| app.version_diff(&project, &hash),
                        move |diff| Event::VersionDiff { commit, diff },
                    );
                }
            }
            Command::Restore(hash) => self.confirm = Some(Confirm::Restore(hash)),
            Command::Undo => {
                if let Some(project) = &self.project {
                    let project = project.project.clone();
                    backend.query(
                        "undoing the last change",
                        move |app| app.undo(&project),
                        Event::Undone,
                    );
                }
            }
            Command::Confirm => self.confirmed(backend),
            Command::Dismiss => {
                self.confirm = None;
                self.closing = None;
                self.palette = None;
            }
            Command::ShowBottom(tab) => {
                self.bottom = tab;
                self.prefs.show_bottom = true;
                if tab == BottomTab::Usage {
                    self.load_usage(backend, self.usage_all);
                }
            }
            Command::LoadUsage(all) => self.load_usage(backend, all),
            Command::SelectionToChat {
                path,
                first,
                last,
                change,
            } => {
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
            Command::ToggleFollowAgent => self.prefs.follow_agent = !self.prefs.follow_agent,
            Command::AttachFiles => backend.pick_attachments(),
            Command::PasteImage => backend.paste_image(),
            Command::RemoveAttachment(index) => {
                if index < self.attachments.len() {
                    self.attachments.remove(index);
                }
            }
            Command::AddAttachmentToProject(index) => {
                let Some(project) = &self.project else { return };
                if index < self.attachments.len() {
                    let attach = self.attachments.remove(index);
                    let chat = project.chat.as_ref().map(|c| c.chat.id);
                    self.show_review = true;
                    backend.propose_attachment(project.project.clone(), chat, attach);
                }
            }
            Command::SetPrice(model, price) => {
                let scope = self.usage_scope();
                backend.set_price(model, price, scope);
            }
            Command::ToggleBottom => self.prefs.show_bottom = !self.prefs.show_bottom,
            Command::OpenSettings => self.open_settings(backend),
            Command::LoadProviderDetails => self.load_provider_details(backend),
            Command::CheckModel => {
                let (provider, model) = (self.provider.clone(), self.model.clone());
                backend.query_async(
                    "checking the model",
                    move |app| async move {
                        app.check_model(provider.as_deref(), model.as_deref()).await
                    },
                    Event::ModelProfile,
                );
            }
            Command::SaveModelSettings => self.save_model_settings(backend),
            Command::CloseSettings => self.settings_open = false,
            Command::SetTheme(theme) => self.prefs.theme = theme,
            Command::SetFontSize(size) => self.prefs.font_size = size.clamp(9.0, 28.0),
            Command::SetSendKey(key) => self.prefs.send_key = key,
            Command::OpenPalette => self.palette = Some(Palette::default()),
            Command::SaveProvider => self.save_provider(backend),
            Command::ResolveDiskChange(reload) => {
                let tab = self
                    .project
                    .as_mut()
                    .and_then(|p| p.active_tab.and_then(|i| p.tabs.get_mut(i)));
                if let Some(tab) = tab
                    && let Some(disk) = tab.disk_changed.take()
                {
                    tab.save_refused = None;
                    if reload {
                        tab.text = disk.clone();
                        tab.revision += 1;
                    }
                    // Either way the buffer now knows what is on disk.
                    tab.saved = disk;
                }
            }
            Command::EditProvider(id) => self.edit_provider(id),
            Command::DeleteProvider(id) => self.delete_provider(id, backend),
            Command::TestProvider(name) => refresh_models(backend, name),
            Command::SaveKey(provider) => self.save_key(provider, backend),
            Command::RemoveKey {
                provider,
                fingerprint,
            } => backend.run("removing the key", move |app| {
                app.remove_key(&provider, &fingerprint)
            }),
            Command::SaveHistoryTurns => self.save_history_turns(backend),
            Command::SaveCheckCommand => self.save_check_command(backend),
            Command::SaveModeRules => self.save_mode_rules(backend),
            Command::WriteStarterRules => self.write_starter_rules(backend),
            Command::SaveContextGlobs => self.save_context_globs(backend),
            Command::ClosePalette => self.palette = None,
            Command::Agent(command) => self.apply_agent(command, backend),
            Command::Workspace(command) => self.apply_workspace(command, backend),
            Command::Symbol(command) => self.apply_symbol(command, backend),
        }
    }

    /// The project the Usage tab is about (`None`: every project).
    fn usage_scope(&self) -> Option<i64> {
        match self.usage_all {
            true => None,
            false => self.project.as_ref().map(|p| p.project.id),
        }
    }

    fn load_usage(&mut self, backend: &Backend, all: bool) {
        self.usage_all = all;
        backend.usage(self.usage_scope());
    }

    fn send(&mut self, backend: &Backend, redo: bool) {
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
    pub(super) fn send_options(&self) -> SendOptions {
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

    fn confirmed(&mut self, backend: &Backend) {
        let Some(confirm) = self.confirm.take() else {
            return;
        };
        let Some(project) = &self.project else { return };
        match confirm {
            Confirm::Restore(hash) => {
                let project = project.project.clone();
                backend.query(
                    "restoring the version",
                    move |app| app.restore(&project, &hash),
                    Event::Restored,
                );
            }
            Confirm::DeleteChat(id) => {
                backend.run("deleting the chat", move |app| app.delete_chat(id));
            }
            Confirm::DeleteFile(path) => {
                let project = project.project.clone();
                backend.run("deleting the file", move |app| {
                    app.delete_file(&project, &path)
                });
            }
        }
    }
}

/// Lists provider `name`'s models (which also tests that it answers).
fn refresh_models(backend: &Backend, name: String) {
    let provider = name.clone();
    backend.query_async(
        "listing models",
        move |app| async move { anyhow::Ok(app.models(&name).await.map_err(|e| e.to_string())) },
        move |models| Event::Models { provider, models },
    );
}
