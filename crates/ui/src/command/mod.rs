//! Every user action is a [`Command`]: buttons, shortcuts, the command palette and tests all
//! send the same values, applied in one place after the frame's UI has been laid out.
//!
//! [`AppState::apply`] hands each command to its handler, kept with what it serves: the chats
//! (`chats`), the composer and the turns it sends (`composer`), the files and the editor's
//! tabs (`files`), the bottom panel's history and usage (`bottom`), the review panel
//! (`review`), the Settings window (`settings`) and the symbols (`symbols`); the agent's and
//! the workspaces' commands are [`AgentCommand`] and [`WorkspaceCommand`].

use std::path::PathBuf;

pub use crate::agent_commands::AgentCommand;
use crate::backend::{Backend, Event};
use crate::model::state::{AppState, BottomTab, Confirm, Palette, SendKey, Theme};
use crate::model::unsaved::CloseChoice;
pub use crate::workspace_commands::WorkspaceCommand;
pub use symbols::SymbolCommand;
use tandem_core::store::ChatMode;

// The handlers, by what they serve.
mod bottom;
mod chats;
mod composer;
mod files;
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
            Command::NewChat => self.new_chat(backend),
            Command::SelectChat(id) => self.select_chat(id, backend),
            Command::RenameChat(id, title) => self.rename_chat(id, title, backend),
            Command::DeleteChat(id) => self.confirm = Some(Confirm::DeleteChat(id)),
            Command::ArchiveChat(id, archived) => chats::archive_chat(id, archived, backend),
            Command::ToggleArchived => self.toggle_archived(backend),
            Command::SavePrompt { id, name, text } => {
                settings::save_prompt(id, name, text, backend)
            }
            Command::RemovePrompt(name) => settings::remove_prompt(name, backend),
            Command::SetMode(mode) => self.set_mode(mode, backend),
            Command::SelectModel { provider, model } => self.select_model(provider, model, backend),
            Command::RefreshModels => {
                for provider in &self.providers {
                    composer::refresh_models(backend, provider.name.clone());
                }
            }
            Command::ToggleAutoApprove => self.toggle_auto_approve(backend),
            Command::Send => self.send(backend, false),
            Command::Redo => self.send(backend, true),
            Command::Cancel => self.cancel(backend),
            Command::ToggleFile(file) => self.toggle_file(file),
            Command::ToggleHunk(file, hunk) => self.toggle_hunk(file, hunk),
            Command::ToggleDependencies => self.toggle_dependencies(),
            Command::SetReviewReason(reason) => self.set_review_reason(reason),
            Command::NextHunk => self.move_cursor(1),
            Command::PrevHunk => self.move_cursor(-1),
            Command::ToggleSideBySide => self.prefs.side_by_side = !self.prefs.side_by_side,
            Command::Approve => self.approve(backend),
            Command::Reject => self.reject(backend),
            Command::OpenFileAt { path, line } => self.open_file_at(path, line, backend),
            Command::SummarizeIntoNewChat => self.summarize_into_new_chat(backend),
            Command::FixProblems => self.fix_problems(backend),
            Command::FixFinding(index) => self.fix_finding(index, backend),
            Command::ToggleFindingLevel(level) => {
                if let Some(hidden) = self.findings_filter.hidden.get_mut(level) {
                    *hidden = !*hidden;
                }
            }
            Command::OpenFile(path) => self.open_file(path, backend),
            Command::CloseTab(index) => self.close_tab(index),
            Command::CloseActiveTab => self.close_active_tab(),
            Command::CloseChoice(choice) => self.close_choice(choice, backend),
            Command::OverwriteOnDisk => self.overwrite_on_disk(backend),
            Command::KeepEditing => self.keep_editing(),
            Command::SelectTab(index) => self.select_tab(index),
            Command::Save => self.save_active(backend),
            Command::ToggleFind => self.toggle_find(),
            Command::CreateFile(path) => self.create_file(path, backend),
            Command::DeleteFile(path) => self.confirm = Some(Confirm::DeleteFile(path)),
            Command::RenameFile { from, to } => self.rename_file(from, to, backend),
            Command::SelectVersion(hash) => self.select_version(hash, backend),
            Command::Restore(hash) => self.confirm = Some(Confirm::Restore(hash)),
            Command::Undo => self.undo(backend),
            Command::Confirm => self.confirmed(backend),
            Command::Dismiss => {
                self.confirm = None;
                self.closing = None;
                self.palette = None;
            }
            Command::ShowBottom(tab) => self.show_bottom(tab, backend),
            Command::LoadUsage(all) => self.load_usage(backend, all),
            Command::SelectionToChat {
                path,
                first,
                last,
                change,
            } => self.selection_to_chat(path, first, last, change, backend),
            Command::ToggleFollowAgent => self.prefs.follow_agent = !self.prefs.follow_agent,
            Command::AttachFiles => backend.pick_attachments(),
            Command::PasteImage => backend.paste_image(),
            Command::RemoveAttachment(index) => self.remove_attachment(index),
            Command::AddAttachmentToProject(index) => {
                self.add_attachment_to_project(index, backend)
            }
            Command::SetPrice(model, price) => self.set_price(model, price, backend),
            Command::ToggleBottom => self.prefs.show_bottom = !self.prefs.show_bottom,
            Command::OpenSettings => self.open_settings(backend),
            Command::LoadProviderDetails => self.load_provider_details(backend),
            Command::CheckModel => self.check_model(backend),
            Command::SaveModelSettings => self.save_model_settings(backend),
            Command::CloseSettings => self.settings_open = false,
            Command::SetTheme(theme) => self.prefs.theme = theme,
            Command::SetFontSize(size) => self.prefs.font_size = size.clamp(9.0, 28.0),
            Command::SetSendKey(key) => self.prefs.send_key = key,
            Command::OpenPalette => self.palette = Some(Palette::default()),
            Command::SaveProvider => self.save_provider(backend),
            Command::ResolveDiskChange(reload) => self.resolve_disk_change(reload),
            Command::EditProvider(id) => self.edit_provider(id),
            Command::DeleteProvider(id) => self.delete_provider(id, backend),
            Command::TestProvider(name) => composer::refresh_models(backend, name),
            Command::SaveKey(provider) => self.save_key(provider, backend),
            Command::RemoveKey {
                provider,
                fingerprint,
            } => settings::remove_key(provider, fingerprint, backend),
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

    /// What the confirm dialog asked, done once the person confirms.
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
