//! Every user action is a [`Command`]: buttons, shortcuts, the command palette and tests all
//! send the same values, applied in one place after the frame's UI has been laid out.

use std::path::PathBuf;

pub use crate::agent_commands::AgentCommand;
use crate::backend::Backend;
use crate::model::state::{AppState, BottomTab, Confirm, Palette, Review, SendKey, Theme};
pub use crate::unsaved::CloseChoice;
pub use crate::workspace_commands::WorkspaceCommand;
use tandem_core::app::SendOptions;
use tandem_core::store::ChatMode;

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
                backend.rename_chat(id, title);
            }
            Command::DeleteChat(id) => self.confirm = Some(Confirm::DeleteChat(id)),
            Command::ArchiveChat(id, archived) => backend.archive_chat(id, archived),
            Command::ToggleArchived => {
                if let Some(project) = &mut self.project {
                    project.show_archived = !project.show_archived;
                    if project.show_archived {
                        backend.archived_chats(project.project.id);
                    }
                }
            }
            Command::SavePrompt { id, name, text } => backend.save_prompt(id, name, text),
            Command::RemovePrompt(name) => backend.remove_prompt(name),
            Command::SetMode(mode) => {
                self.mode = mode;
                if let Some(chat) = self.chat() {
                    backend.set_chat_mode(chat.chat.id, mode);
                }
            }
            Command::SelectModel { provider, model } => {
                let (p, m) = (provider.clone(), model.clone());
                backend.update_chat_settings(move |s| {
                    s.default_provider = Some(p);
                    s.default_model = Some(m);
                });
                self.provider = Some(provider);
                self.model = Some(model);
            }
            Command::RefreshModels => {
                for provider in &self.providers {
                    backend.refresh_models(provider.name.clone());
                }
            }
            Command::ToggleAutoApprove => {
                self.auto_approve = !self.auto_approve;
                let on = self.auto_approve;
                backend.update_chat_settings(move |s| s.auto_approve = on);
            }
            Command::Send => self.send(backend, false),
            Command::Redo => self.send(backend, true),
            Command::Cancel => {
                if self.palette.take().is_some() {
                } else if let Some(chat) = self.chat().filter(|c| c.streaming.is_some()) {
                    backend.cancel(chat.chat.id);
                }
            }
            Command::ToggleFile(file) => {
                if let Some(choice) = self.review_mut().and_then(|r| r.files.get_mut(file)) {
                    choice.checked = !choice.checked;
                    let checked = choice.checked;
                    choice.hunks.iter_mut().for_each(|h| *h = checked);
                }
            }
            Command::ToggleHunk(file, hunk) => {
                if let Some(choice) = self.review_mut().and_then(|r| r.files.get_mut(file)) {
                    if let Some(h) = choice.hunks.get_mut(hunk) {
                        *h = !*h;
                    }
                    choice.checked = choice.hunks.iter().any(|h| *h);
                }
            }
            Command::ToggleDependencies => {
                if let Some(review) = self.review_mut() {
                    review.dependencies = !review.dependencies;
                }
            }
            Command::SetReviewReason(reason) => {
                if let Some(review) = self.review_mut() {
                    review.reason = reason;
                }
            }
            Command::NextHunk => self.move_cursor(1),
            Command::PrevHunk => self.move_cursor(-1),
            Command::ToggleSideBySide => self.prefs.side_by_side = !self.prefs.side_by_side,
            Command::Approve => {
                let (Some(project), Some(review)) = (&self.project, self.review()) else {
                    return;
                };
                if !review.anything_checked() {
                    self.toast("Nothing is checked to apply", true);
                    return;
                }
                if let Some(chat) = &project.chat {
                    backend.approve(
                        project.project.clone(),
                        chat.chat.id,
                        review.message_id,
                        review.selection(),
                        review.reason.clone(),
                    );
                }
            }
            Command::Reject => {
                if let (Some(chat), Some(review)) = (self.chat(), self.review()) {
                    backend.reject(chat.chat.id, review.message_id, review.reason.clone());
                }
            }
            Command::OpenFileAt { path, line } => {
                if let Some(project) = &mut self.project {
                    project.goto = Some((path.clone(), line));
                }
                self.apply(Command::OpenFile(path), backend);
            }
            Command::SummarizeIntoNewChat => {
                let (Some(project), Some(chat)) = (&self.project, self.chat()) else {
                    return;
                };
                let (project_id, chat_id) = (project.project.id, chat.chat.id);
                backend.summarize_into_new_chat(project_id, chat_id, self.send_options());
            }
            Command::FixProblems => {
                let Some(chat) = self.chat() else { return };
                let Some(check) = crate::model::problems::last_check(chat) else {
                    return self.toast("No check has run in this chat", true);
                };
                let chat_id = chat.chat.id;
                let prompt = crate::model::problems::fix_prompt(&check);
                self.mode = ChatMode::Build;
                backend.send(chat_id, ChatMode::Build, prompt, self.send_options(), false);
            }
            Command::FixFinding(index) => {
                let Some(chat) = self.chat() else { return };
                let Some((_, findings)) = crate::model::findings::latest(chat) else {
                    return self.toast("This chat has no security findings", true);
                };
                let Some(finding) = findings.get(index) else {
                    return;
                };
                let chat_id = chat.chat.id;
                let prompt = crate::model::findings::fix_prompt(finding);
                self.mode = ChatMode::Build;
                backend.send(chat_id, ChatMode::Build, prompt, self.send_options(), false);
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
                    None => backend.open_file(project.project.clone(), path),
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
                    backend.create_file(project.project.clone(), path.clone());
                    backend.open_file(project.project.clone(), path);
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
                        backend.rename_file(project.project.clone(), from, to);
                    }
                }
            }
            Command::SelectVersion(hash) => {
                if let Some(project) = &mut self.project {
                    project.selected_version = Some(hash.clone());
                    backend.version_diff(project.project.clone(), hash);
                }
            }
            Command::Restore(hash) => self.confirm = Some(Confirm::Restore(hash)),
            Command::Undo => {
                if let Some(project) = &self.project {
                    let chat = project.chat.as_ref().map(|c| c.chat.id);
                    backend.undo(project.project.clone(), chat);
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
            Command::OpenSettings => {
                self.settings_open = true;
                // The price table comes with the usage report.
                backend.usage(self.usage_scope());
                backend.load_agent_settings();
                backend.load_workspaces();
                // Without a chosen model there is no profile to show (nor an error to make).
                if self.model.is_some() {
                    backend.model_profile(self.provider.clone(), self.model.clone(), false);
                }
                self.apply(Command::LoadProviderDetails, backend);
            }
            Command::LoadProviderDetails => {
                for provider in &self.providers {
                    match provider.kind.is_cli_agent() {
                        true => backend.cli_agent_status(provider.name.clone()),
                        false => backend.provider_keys(provider.name.clone()),
                    }
                }
            }
            Command::CheckModel => {
                backend.model_profile(self.provider.clone(), self.model.clone(), true);
            }
            Command::SaveModelSettings => {
                let form = &self.settings;
                let number = |text: &str, what: &str| -> Result<Option<u32>, String> {
                    match text.trim() {
                        "" => Ok(None),
                        t => t
                            .parse::<u32>()
                            .ok()
                            .filter(|n| *n > 0)
                            .map(Some)
                            .ok_or_else(|| format!("{what} must be a whole number above 0")),
                    }
                };
                let temperature = match form.model_temperature.trim() {
                    "" => Ok(None),
                    t => t
                        .parse::<f32>()
                        .ok()
                        .filter(|t| (0.0..=2.0).contains(t))
                        .map(Some)
                        .ok_or_else(|| "The temperature must be between 0 and 2".to_string()),
                };
                let parsed = (
                    number(&form.model_context, "The context length"),
                    temperature,
                    number(&form.model_max_output, "The output limit"),
                );
                match parsed {
                    (Ok(context_length), Ok(temperature), Ok(max_output_tokens)) => {
                        backend.save_model_settings(
                            self.provider.clone(),
                            self.model.clone(),
                            tandem_core::app::GenerationSettings {
                                context_length,
                                temperature,
                                max_output_tokens,
                                reasoning_effort: form.model_effort,
                            },
                        );
                    }
                    (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => self.toast(e, true),
                }
            }
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
            Command::EditProvider(id) => {
                if let Some(p) = self.providers.iter().find(|p| p.id == id) {
                    let form = &mut self.settings;
                    form.editing = Some(id);
                    form.name = p.name.clone();
                    form.kind_index = tandem_core::llm::ProviderKind::ALL
                        .iter()
                        .position(|k| *k == p.kind)
                        .unwrap_or(0);
                    form.base_url = p.base_url.clone();
                    form.model = p.settings.default_model.clone().unwrap_or_default();
                    form.context_length = p
                        .settings
                        .context_length
                        .map(|c| c.to_string())
                        .unwrap_or_default();
                }
            }
            Command::DeleteProvider(id) => {
                if let Some(p) = self.providers.iter().find(|p| p.id == id) {
                    backend.delete_provider(p.name.clone());
                }
            }
            Command::TestProvider(name) => backend.refresh_models(name),
            Command::SaveKey(provider) => {
                let key = std::mem::take(&mut self.settings.key);
                if !key.trim().is_empty() {
                    backend.set_key(provider, key, self.settings.add_key);
                }
            }
            Command::RemoveKey {
                provider,
                fingerprint,
            } => backend.remove_key(provider, fingerprint),
            Command::SaveHistoryTurns => {
                match self.settings.history_turns.trim().parse::<usize>() {
                    Ok(turns) => {
                        backend.update_chat_settings(move |s| s.history_turns = Some(turns))
                    }
                    Err(_) => self.toast("History turns must be a whole number", true),
                }
            }
            Command::SaveCheckCommand => {
                if let Some(project) = &mut self.project {
                    let command = self.settings.check_command.trim();
                    project.project.settings.check_command =
                        (!command.is_empty()).then(|| command.to_string());
                    self.settings.check_edited = false;
                    backend.save_project_settings(project.project.clone());
                }
            }
            Command::SaveModeRules => {
                if let Some(project) = &mut self.project {
                    let mode = self.settings.rules_mode.as_str().to_string();
                    let text = self.settings.rules_text.clone();
                    let rules = &mut project.project.settings.mode_rules;
                    match text.trim().is_empty() {
                        true => rules.remove(&mode),
                        false => rules.insert(mode, text),
                    };
                    self.settings.rules_edited = false;
                    backend.save_project_settings(project.project.clone());
                }
            }
            Command::WriteStarterRules => {
                if let Some(project) = &self.project {
                    backend.write_starter_rules(project.project.clone());
                }
            }
            Command::SaveContextGlobs => {
                if let Some(project) = &mut self.project {
                    let split = split_globs;
                    project.project.settings.context_include = split(&self.settings.include);
                    project.project.settings.context_exclude = split(&self.settings.exclude);
                    backend.save_project_settings(project.project.clone());
                }
            }
            Command::ClosePalette => self.palette = None,
            Command::Agent(command) => self.apply_agent(command, backend),
            Command::Workspace(command) => self.apply_workspace(command, backend),
        }
    }

    fn save_provider(&mut self, backend: &Backend) {
        let form = &self.settings;
        let kind = tandem_core::llm::ProviderKind::ALL
            .get(form.kind_index)
            .copied()
            .unwrap_or(tandem_core::llm::ProviderKind::Ollama);
        let context_length = match form.context_length.trim() {
            "" => None,
            text => match text.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    self.toast("Context length must be a whole number of tokens", true);
                    return;
                }
            },
        };
        let settings = tandem_core::store::ProviderSettings {
            default_model: Some(form.model.trim().to_string()).filter(|m| !m.is_empty()),
            context_length,
        };
        // Blank: the kind's usual URL (the application layer fills it in).
        let base_url = form.base_url.trim().to_string();
        if form.name.trim().is_empty() {
            self.toast("A provider needs a name", true);
            return;
        }
        match form
            .editing
            .and_then(|id| self.providers.iter().find(|p| p.id == id))
        {
            Some(existing) => {
                let mut record = existing.clone();
                record.name = form.name.trim().to_string();
                record.kind = kind;
                record.base_url = base_url;
                record.settings = settings;
                backend.update_provider(record);
            }
            None => backend.add_provider(form.name.trim().to_string(), kind, base_url, settings),
        }
        self.settings = crate::model::state::SettingsForm::default();
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

    /// The model and auto-approve choices for a send. The GUI never pre-approves agent calls
    /// by risk: the policy and the person decide.
    pub(super) fn send_options(&self) -> SendOptions {
        SendOptions {
            provider: self.provider.clone(),
            model: self.model.clone(),
            auto_approve: Some(self.auto_approve),
            allow_risk: None,
            attachments: Vec::new(),
        }
    }

    fn move_cursor(&mut self, step: isize) {
        let Some(review) = self.review_mut() else {
            return;
        };
        let positions = review.positions();
        if positions.is_empty() {
            return;
        }
        let current = positions
            .iter()
            .position(|p| *p == review.cursor)
            .unwrap_or(0) as isize;
        let next = (current + step).rem_euclid(positions.len() as isize) as usize;
        review.cursor = positions[next];
        if let Some(choice) = review.files.get_mut(review.cursor.0) {
            choice.expanded = true;
        }
    }

    fn confirmed(&mut self, backend: &Backend) {
        let Some(confirm) = self.confirm.take() else {
            return;
        };
        let Some(project) = &self.project else { return };
        match confirm {
            Confirm::Restore(hash) => {
                let chat = project.chat.as_ref().map(|c| c.chat.id);
                backend.restore(project.project.clone(), chat, hash);
            }
            Confirm::DeleteChat(id) => backend.delete_chat(id),
            Confirm::DeleteFile(path) => backend.delete_file(project.project.clone(), path),
        }
    }

    /// Starts a fresh review of a plan (after a reply, or when a chat loads).
    pub fn set_review(&mut self, review: Option<(i64, tandem_core::edits::EditPlan)>) {
        if review.is_some() {
            self.show_review = true;
        }
        if let Some(chat) = self.chat_mut() {
            chat.review = review.map(|(id, plan)| Review::new(id, plan));
        }
    }
}

/// Globs as typed in settings: separated by commas or line breaks.
pub fn split_globs(text: &str) -> Vec<String> {
    text.split([',', '\n'])
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect()
}
