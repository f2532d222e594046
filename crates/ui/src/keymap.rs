//! Each command's label and shortcut, in one place: the command palette lists them, the key
//! handling binds them, tooltips show them. A shortcut drawn somewhere is a shortcut that works.

use egui::{Key, KeyboardShortcut, Modifiers};

use crate::command::{AgentCommand, Command, SymbolCommand, WorkspaceCommand};
use crate::model::state::{AppState, BottomTab, Theme};
use tandem_core::agent::runner::Answer;
use tandem_core::store::ChatMode;

/// Where a shortcut works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere in the window.
    Window,
    /// While the open chat's reply streams (Esc would otherwise belong to the focused widget).
    Streaming,
    /// While a tool call of the open chat waits for an answer.
    ToolCallWaiting,
    /// While a proposal is reviewed and no text field has the keyboard.
    Review,
    /// While a file is open in the editor (bound by the editor, which owns its tabs).
    Editor,
}

const fn key(modifiers: Modifiers, key: Key) -> KeyboardShortcut {
    KeyboardShortcut::new(modifiers, key)
}

const CTRL: Modifiers = Modifiers::COMMAND;
const CTRL_SHIFT: Modifiers = Modifiers::COMMAND.plus(Modifiers::SHIFT);

impl Command {
    /// What the palette and tooltips call this command (`None`: not offered by name).
    pub fn label(&self) -> Option<&'static str> {
        Some(match self {
            Command::OpenFolderDialog => "Open folder…",
            Command::NewChat => "New chat",
            Command::Send => "Send prompt",
            Command::Cancel => "Cancel reply",
            Command::Redo => "Redo last reply",
            Command::Approve => "Approve checked changes",
            Command::Reject => "Reject proposal",
            Command::NextHunk => "Next hunk",
            Command::PrevHunk => "Previous hunk",
            Command::ToggleSideBySide => "Toggle side-by-side diff",
            Command::Save => "Save file",
            Command::CloseActiveTab => "Close tab",
            Command::ToggleFind => "Find in file",
            Command::Symbol(SymbolCommand::GoToDefinition) => "Go to definition",
            Command::Symbol(SymbolCommand::FindReferences) => "Find references",
            Command::Undo => "Undo last AI change",
            Command::SetMode(ChatMode::Build) => "Mode: Build",
            Command::SetMode(ChatMode::Ask) => "Mode: Ask",
            Command::SetMode(ChatMode::Agent) => "Mode: Agent",
            Command::SetMode(ChatMode::Plan) => "Mode: Plan",
            Command::SetMode(ChatMode::Security) => "Mode: Security",
            Command::Agent(AgentCommand::AnswerWaiting(Answer::Approve)) => {
                "Approve the waiting tool call"
            }
            Command::Agent(AgentCommand::AnswerWaiting(Answer::Reject)) => {
                "Reject the waiting tool call"
            }
            Command::Agent(AgentCommand::AnswerWaiting(Answer::AlwaysAllow)) => {
                "Always allow calls like the waiting one"
            }
            Command::Workspace(WorkspaceCommand::Run) => "Run the command in the chat's workspace",
            Command::ToggleAutoApprove => "Toggle auto-approve",
            Command::RefreshModels => "Refresh models",
            Command::ShowBottom(BottomTab::History) => "Show history",
            Command::ShowBottom(BottomTab::Log) => "Show log",
            Command::ShowBottom(BottomTab::Approvals) => "Show approval requests",
            Command::ShowBottom(BottomTab::Problems) => "Show problems (last check)",
            Command::ShowBottom(BottomTab::Usage) => "Show usage (tokens and cost per model)",
            Command::ShowBottom(BottomTab::Findings) => "Show security findings",
            Command::ShowBottom(BottomTab::Search) => "Search the project's files",
            Command::FixProblems => "Fix the last check's problems",
            Command::CheckModel => "Check the chosen model (window, tools, images)",
            Command::SummarizeIntoNewChat => "Summarize into a new chat",
            Command::ToggleBottom => "Toggle bottom panel",
            Command::OpenSettings => "Settings",
            Command::AttachFiles => "Attach files or images…",
            Command::ToggleFollowAgent => "Toggle following the agent in the editor",
            Command::PasteImage => "Attach the clipboard's image",
            Command::OpenPalette => "Command palette",
            Command::SetTheme(Theme::Dark) => "Theme: dark",
            Command::SetTheme(Theme::Light) => "Theme: light",
            Command::SetTheme(Theme::System) => "Theme: follow system",
            _ => return None,
        })
    }

    /// The key that runs this command, and where it works. (Sending is the composer's own
    /// key, chosen in Settings.)
    pub fn shortcut(&self) -> Option<(KeyboardShortcut, Scope)> {
        use Scope::*;
        Some(match self {
            Command::OpenPalette => (key(CTRL_SHIFT, Key::P), Window),
            Command::Approve => (key(CTRL_SHIFT, Key::Enter), Window),
            Command::OpenFolderDialog => (key(CTRL, Key::O), Window),
            Command::NewChat => (key(CTRL, Key::N), Window),
            Command::Redo => (key(CTRL, Key::R), Window),
            Command::ToggleBottom => (key(CTRL, Key::J), Window),
            Command::OpenSettings => (key(CTRL, Key::Comma), Window),
            Command::Cancel => (key(Modifiers::NONE, Key::Escape), Streaming),
            Command::Agent(AgentCommand::AnswerWaiting(answer)) => {
                let letter = match answer {
                    Answer::Approve => Key::Y,
                    Answer::Reject => Key::N,
                    Answer::AlwaysAllow => Key::A,
                };
                (key(Modifiers::ALT, letter), ToolCallWaiting)
            }
            Command::NextHunk => (key(Modifiers::NONE, Key::N), Review),
            Command::PrevHunk => (key(Modifiers::NONE, Key::P), Review),
            Command::Save => (key(CTRL, Key::S), Editor),
            Command::ToggleFind => (key(CTRL, Key::F), Editor),
            Command::CloseActiveTab => (key(CTRL, Key::W), Editor),
            Command::Symbol(SymbolCommand::GoToDefinition) => {
                (key(Modifiers::NONE, Key::F12), Editor)
            }
            Command::Symbol(SymbolCommand::FindReferences) => {
                (key(Modifiers::SHIFT, Key::F12), Editor)
            }
            _ => return None,
        })
    }

    /// The commands the palette offers, in its order.
    pub fn palette() -> Vec<Command> {
        let mut all = vec![
            Command::OpenFolderDialog,
            Command::NewChat,
            Command::Send,
            Command::Cancel,
            Command::Redo,
            Command::Approve,
            Command::Reject,
            Command::NextHunk,
            Command::PrevHunk,
            Command::ToggleSideBySide,
            Command::Save,
            Command::CloseActiveTab,
            Command::ToggleFind,
            SymbolCommand::GoToDefinition.into(),
            SymbolCommand::FindReferences.into(),
            Command::Undo,
            WorkspaceCommand::Run.into(),
        ];
        all.extend(
            [
                ChatMode::Build,
                ChatMode::Ask,
                ChatMode::Agent,
                ChatMode::Plan,
                ChatMode::Security,
            ]
            .map(Command::SetMode),
        );
        all.extend(
            [Answer::Approve, Answer::Reject, Answer::AlwaysAllow]
                .map(|a| AgentCommand::AnswerWaiting(a).into()),
        );
        all.extend([
            Command::ToggleAutoApprove,
            Command::RefreshModels,
            Command::ShowBottom(BottomTab::History),
            Command::ShowBottom(BottomTab::Log),
            Command::ShowBottom(BottomTab::Approvals),
            Command::ShowBottom(BottomTab::Problems),
            Command::ShowBottom(BottomTab::Usage),
            Command::ShowBottom(BottomTab::Findings),
            Command::ShowBottom(BottomTab::Search),
            Command::FixProblems,
            Command::CheckModel,
            Command::SummarizeIntoNewChat,
            Command::AttachFiles,
            Command::PasteImage,
            Command::ToggleFollowAgent,
            Command::ToggleBottom,
            Command::OpenSettings,
            Command::SetTheme(Theme::Dark),
            Command::SetTheme(Theme::Light),
            Command::SetTheme(Theme::System),
        ]);
        all
    }

    /// Every command with a shortcut (for binding; the palette's list plus the palette).
    fn bound() -> impl Iterator<Item = (Command, KeyboardShortcut, Scope)> {
        Command::palette()
            .into_iter()
            .chain([Command::OpenPalette])
            .filter_map(|c| c.shortcut().map(|(s, scope)| (c, s, scope)))
    }
}

/// The shortcut of `command` as the person types it here ("Ctrl+R"), if it has one.
pub fn shortcut_text(ctx: &egui::Context, command: &Command) -> Option<String> {
    command.shortcut().map(|(s, _)| ctx.format_shortcut(&s))
}

/// The shortcut of `command` for a tooltip ("" when it has none).
pub fn hint(ui: &egui::Ui, command: &Command) -> String {
    shortcut_text(ui.ctx(), command).unwrap_or_default()
}

/// Binds the window's shortcuts (every scope but the editor's) for this frame.
pub fn window_shortcuts(ui: &egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    let typing = ui.ctx().text_edit_focused();
    let chat = state.chat();
    let waiting = chat.is_some_and(|c| state.agent.first_waiting(c.chat.id).is_some());
    // Esc cancels a streaming reply unless a dialog or the palette has it.
    let streaming = chat.is_some_and(|c| c.streaming.is_some())
        && state.palette.is_none()
        && state.confirm.is_none();
    let reviewing = !typing && state.review().is_some();
    ui.input_mut(|input| {
        for (command, shortcut, scope) in Command::bound() {
            let active = match scope {
                Scope::Window => true,
                Scope::Streaming => streaming,
                Scope::ToolCallWaiting => waiting,
                Scope::Review => reviewing,
                Scope::Editor => false,
            };
            if active && input.consume_shortcut(&shortcut) {
                commands.push(command);
            }
        }
    });
}

/// Whether `command`'s editor shortcut was pressed this frame (consuming it).
pub fn editor_shortcut(ui: &egui::Ui, command: &Command) -> bool {
    match command.shortcut() {
        Some((shortcut, Scope::Editor)) => ui.input_mut(|i| i.consume_shortcut(&shortcut)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_palette_command_has_a_label_and_no_two_share_a_shortcut() {
        let mut seen: Vec<(KeyboardShortcut, Scope, Command)> = Vec::new();
        for command in Command::palette() {
            assert!(command.label().is_some(), "{command:?} has no label");
            if let Some((shortcut, scope)) = command.shortcut() {
                if let Some((_, _, other)) = seen
                    .iter()
                    .find(|(s, sc, _)| *s == shortcut && *sc == scope)
                {
                    panic!("{command:?} and {other:?} share a shortcut");
                }
                seen.push((shortcut, scope, command));
            }
        }
    }

    #[test]
    fn redo_is_bound_to_the_key_the_palette_shows() {
        let ctx = egui::Context::default();
        assert_eq!(
            shortcut_text(&ctx, &Command::Redo).as_deref(),
            Some("Ctrl+R")
        );
        assert!(Command::bound().any(|(c, _, _)| c == Command::Redo));
    }
}
