//! Everything the window shows, as plain data. Panels render it; commands and background
//! events change it. No egui here.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use tandem_core::app::ContextBreakdown;
use tandem_core::llm::ModelInfo;
use tandem_core::store::{Chat, ChatMode, Project, ProviderRecord};
use tandem_core::vcs::Version;

use crate::model::file_tree::FileTree;
use crate::model::review::Review;
// `panels::context_meter` names the chat's view model from here.
pub use crate::model::chat_state::ChatState;

/// Remembered between runs (eframe storage): layout and choices, never data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prefs {
    pub last_project: Option<i64>,
    pub last_chat: Option<i64>,
    pub open_tabs: Vec<String>,
    pub theme: Theme,
    pub font_size: f32,
    pub send_key: SendKey,
    pub side_by_side: bool,
    pub show_bottom: bool,
    /// The file an agent reads or edits opens in the editor at the lines it touched.
    pub follow_agent: bool,
}

impl Default for Prefs {
    fn default() -> Self {
        Prefs {
            last_project: None,
            last_chat: None,
            open_tabs: Vec::new(),
            theme: Theme::Dark,
            font_size: 14.0,
            send_key: SendKey::Enter,
            side_by_side: false,
            show_bottom: true,
            follow_agent: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Theme {
    Dark,
    Light,
    System,
}

/// Which key sends the composer's text (the other inserts a newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SendKey {
    Enter,
    CtrlEnter,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Loading,
    Ready,
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BottomTab {
    History,
    Log,
    /// The approval gateway's requests.
    Approvals,
    /// The last check's problems.
    Problems,
    /// Tokens per model and day, and their cost.
    Usage,
    /// The security findings of the chat's last review.
    Findings,
    /// Searching the project's files.
    Search,
}

/// The Search tab: what is typed, and the results for the query they were found for.
#[derive(Debug, Clone, Default)]
pub struct SearchView {
    pub query: SearchKey,
    /// When the query last changed and its search is not asked for yet.
    pub edited: Option<Instant>,
    pub results: Option<(SearchKey, Result<tandem_core::app::SearchResult, String>)>,
}

/// A search as the person set it up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchKey {
    pub text: String,
    pub regex: bool,
    pub match_case: bool,
    pub glob: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    Restore(String),
    DeleteChat(i64),
    DeleteFile(String),
}

#[derive(Debug, Clone)]
pub struct Toast {
    pub text: String,
    pub error: bool,
    pub at: Instant,
}

pub struct AppState {
    pub status: Status,
    pub prefs: Prefs,
    pub projects: Vec<Project>,
    pub providers: Vec<ProviderRecord>,
    pub models: BTreeMap<String, Result<Vec<ModelInfo>, String>>,
    /// Each provider's keys by fingerprint (never the keys), when listed.
    pub provider_keys: BTreeMap<String, Vec<tandem_core::app::KeyInfo>>,
    /// The latest usage report applied (older ones arriving late are dropped).
    pub usage_seq: u64,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub auto_approve: bool,
    pub project: Option<ProjectState>,
    pub composer: String,
    /// When the composer last changed and its context estimate is not asked for yet.
    pub composer_edited: Option<Instant>,
    /// The context estimate for the composer's text (the prompt it was made for).
    pub preview: Option<(String, Result<ContextBreakdown, String>)>,
    /// The editor's tabs and selection the estimate was made for, and as they are now (see
    /// [`crate::model::selection::focus_key`]): the meter shows an estimate made for both.
    pub preview_focus: u64,
    pub focus_key: u64,
    pub mode: ChatMode,
    pub toasts: Vec<Toast>,
    pub log: Vec<String>,
    pub bottom: BottomTab,
    pub settings_open: bool,
    pub settings: SettingsForm,
    pub palette: Option<Palette>,
    pub confirm: Option<Confirm>,
    /// The welcome view's folder field (usable where no file dialog runs).
    pub path_input: String,
    /// Open files to re-read from disk (after a restore or undo).
    pub pending_reloads: Vec<String>,
    /// The open chat is to be read again: its messages changed, or its project's tree did
    /// (its proposal is planned against it).
    pub chat_stale: bool,
    /// The central area shows the pending proposal (else the editor).
    pub show_review: bool,
    /// Waiting tool calls, the approval gateway, the agent settings.
    pub agent: crate::model::agent_state::AgentView,
    /// A dirty tab (its path) the person asked to close: the dialog asks Save / Discard.
    pub closing: Option<String>,
    /// Unsaved buffers kept from the last run, put back when their file opens.
    pub drafts: Vec<crate::model::unsaved::Draft>,
    /// The file (and line) to open next: set by the agent's steps when following it, and by
    /// a go to definition with one answer.
    pub follow: Option<(String, usize)>,
    /// An approval request arrived: the window asks for the person's attention if it is not
    /// focused (taken each frame).
    pub wants_attention: bool,
    /// The prompt library (`@prompt:NAME`).
    pub prompts: Vec<tandem_core::app::SavedPrompt>,
    /// The Usage tab's report (of every project when `usage_all`), and the price table.
    pub usage: Option<tandem_core::app::UsageReport>,
    pub usage_all: bool,
    pub prices: tandem_core::app::Prices,
    pub search: SearchView,
    /// Files and images attached to the prompt being written.
    pub attachments: Vec<tandem_core::app::Attach>,
    /// The levels the Findings tab hides.
    pub findings_filter: crate::model::findings::LevelFilter,
    /// The composer's `@` suggestions: which one is highlighted, and the `@` (byte offset)
    /// whose suggestions the person closed with Esc.
    pub mention_selected: usize,
    pub mention_dismissed: Option<usize>,
    /// The review's Run panels and the workspaces' list in Settings.
    pub workspaces: crate::model::workspaces::WorkspacesView,
}

/// The provider form and key field in settings. `editing` is the provider being edited
/// (`None`: the form adds a new one).
#[derive(Debug, Clone, Default)]
pub struct SettingsForm {
    pub editing: Option<i64>,
    pub name: String,
    pub kind_index: usize,
    pub base_url: String,
    pub model: String,
    pub context_length: String,
    pub key: String,
    /// Store the typed key after the provider's keys instead of in their place.
    pub add_key: bool,
    pub history_turns: String,
    pub include: String,
    pub exclude: String,
    /// When the globs last changed and their counts are not asked for yet.
    pub globs_edited: Option<Instant>,
    /// What the globs select: (include, exclude, "N files, ~T tokens" or the error).
    pub glob_counts: Option<(String, String, Result<String, String>)>,
    /// The project's check command as typed (`check_edited`: typed since it was shown).
    pub check_command: String,
    pub check_edited: bool,
    /// The chosen model's profile, and its settings as typed.
    pub profile: Option<tandem_core::app::ModelProfile>,
    pub model_context: String,
    pub model_temperature: String,
    pub model_max_output: String,
    pub model_effort: Option<tandem_core::llm::ReasoningEffort>,
    /// The prompt library's editor: the prompt being edited (`None`: a new one).
    pub prompt_editing: Option<i64>,
    pub prompt_name: String,
    pub prompt_text: String,
    /// The per-mode rules editor: the mode shown, its text, and whether it was typed in.
    pub rules_mode: ChatMode,
    pub rules_text: String,
    pub rules_edited: bool,
    /// The price table's new row as typed: model, input and output per million tokens.
    pub price_model: String,
    pub price_input: String,
    pub price_output: String,
}

/// Globs as typed in settings: separated by commas or line breaks.
pub fn split_globs(text: &str) -> Vec<String> {
    text.split([',', '\n'])
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect()
}

#[derive(Debug, Clone, Default)]
pub struct Palette {
    pub query: String,
    pub selected: usize,
}

pub struct ProjectState {
    pub project: Project,
    pub chats: Vec<Chat>,
    /// Archived chats, listed when `show_archived`.
    pub archived: Vec<Chat>,
    pub show_archived: bool,
    pub chat_filter: String,
    /// When the filter last changed and its search of messages is not asked for yet.
    pub chat_filter_edited: Option<Instant>,
    /// Messages matching the filter: (the query they were found for, the hits).
    pub chat_hits: Option<(String, Vec<tandem_core::app::MessageHit>)>,
    pub chat: Option<ChatState>,
    pub files: FileTree,
    pub tabs: Vec<Tab>,
    pub active_tab: Option<usize>,
    pub history: Vec<Version>,
    pub selected_version: Option<String>,
    pub version_diff: Option<(String, String)>,
    pub renaming_chat: Option<(i64, String)>,
    pub new_file: Option<String>,
    /// A file being renamed in the tree: (old path, the new path as typed).
    pub renaming_file: Option<(String, String)>,
    /// The chat to show on opening was asked for (once per project load).
    pub chat_requested: bool,
    /// A line to bring into view in a file once its tab is showing: (path, 1-based line).
    pub goto: Option<(String, usize)>,
    /// Go to definition, find references, the filter's symbols.
    pub symbols: crate::model::symbols::Symbols,
}

impl ProjectState {
    pub fn new(
        project: Project,
        chats: Vec<Chat>,
        files: Vec<String>,
        history: Vec<Version>,
    ) -> Self {
        ProjectState {
            project,
            chats,
            archived: Vec::new(),
            show_archived: false,
            chat_filter: String::new(),
            chat_filter_edited: None,
            chat_hits: None,
            chat: None,
            files: FileTree::new(files),
            tabs: Vec::new(),
            active_tab: None,
            history,
            selected_version: None,
            version_diff: None,
            renaming_chat: None,
            new_file: None,
            renaming_file: None,
            chat_requested: false,
            goto: None,
            symbols: Default::default(),
        }
    }
}

/// An open file.
pub struct Tab {
    pub path: String,
    pub text: String,
    pub saved: String,
    pub read_only: Option<String>,
    /// Bumped on every edit: the highlighter caches by it.
    pub revision: u64,
    pub find: Option<String>,
    /// The file changed on disk while this buffer had unsaved edits: the disk's text, until
    /// the person reloads or keeps theirs.
    pub disk_changed: Option<String>,
    /// A save was refused because the file changed on disk: the disk's blob hash then
    /// (`None`: the file was gone), which an explicit "Overwrite" expects.
    pub save_refused: Option<Option<String>>,
    /// Close the tab once this text is saved (the close dialog's "Save").
    pub close_after_save: bool,
    /// Where the editor's cursor is (a character index), as last drawn; `None` in the
    /// virtualised view of a large file.
    pub cursor: Option<usize>,
    /// The lines selected (1-based, inclusive), as the selection bar last showed them;
    /// `None` when nothing is, and in the virtualised view of a large file.
    pub selection: Option<(usize, usize)>,
}

impl Tab {
    pub fn new(path: String, text: String, read_only: Option<String>) -> Self {
        Tab {
            path,
            saved: text.clone(),
            text,
            read_only,
            revision: 0,
            find: None,
            disk_changed: None,
            save_refused: None,
            close_after_save: false,
            cursor: None,
            selection: None,
        }
    }
}

impl Tab {
    pub fn dirty(&self) -> bool {
        self.read_only.is_none() && self.text != self.saved
    }
}

impl AppState {
    pub fn new(prefs: Prefs) -> Self {
        AppState {
            status: Status::Loading,
            prefs,
            projects: Vec::new(),
            providers: Vec::new(),
            models: BTreeMap::new(),
            provider_keys: BTreeMap::new(),
            usage_seq: 0,
            provider: None,
            model: None,
            auto_approve: false,
            project: None,
            composer: String::new(),
            composer_edited: None,
            preview: None,
            preview_focus: 0,
            focus_key: 0,
            mode: ChatMode::Build,
            toasts: Vec::new(),
            log: Vec::new(),
            bottom: BottomTab::History,
            settings_open: false,
            settings: SettingsForm::default(),
            palette: None,
            confirm: None,
            path_input: String::new(),
            pending_reloads: Vec::new(),
            chat_stale: false,
            show_review: true,
            agent: Default::default(),
            closing: None,
            drafts: Vec::new(),
            prompts: Vec::new(),
            follow: None,
            wants_attention: false,
            usage: None,
            usage_all: false,
            prices: Default::default(),
            findings_filter: Default::default(),
            search: Default::default(),
            attachments: Vec::new(),
            mention_selected: 0,
            mention_dismissed: None,
            workspaces: Default::default(),
        }
    }

    pub fn chat(&self) -> Option<&ChatState> {
        self.project.as_ref()?.chat.as_ref()
    }

    /// The open project, when it is project `id`.
    pub fn project_mut(&mut self, id: i64) -> Option<&mut ProjectState> {
        self.project.as_mut().filter(|p| p.project.id == id)
    }

    pub fn chat_mut(&mut self) -> Option<&mut ChatState> {
        self.project.as_mut()?.chat.as_mut()
    }

    pub fn review(&self) -> Option<&Review> {
        self.chat()?.review.as_ref()
    }

    pub fn review_mut(&mut self) -> Option<&mut Review> {
        self.chat_mut()?.review.as_mut()
    }

    pub fn toast(&mut self, text: impl Into<String>, error: bool) {
        let text = text.into();
        if error {
            self.log.push(format!("error: {text}"));
        }
        self.toasts.push(Toast {
            text,
            error,
            at: Instant::now(),
        });
    }

    /// A toast with the notes below it; the notes also go to the log, which keeps them.
    pub fn toast_with_notes(&mut self, text: String, notes: Vec<String>) {
        for note in &notes {
            self.log.push(format!("note: {note}"));
        }
        let text = std::iter::once(text)
            .chain(notes)
            .collect::<Vec<_>>()
            .join("\n");
        self.toast(text, false);
    }

    /// Paths changed by the pending proposal (the file tree marks them).
    pub fn proposed_paths(&self) -> BTreeSet<&str> {
        self.review()
            .map(|r| r.plan.files.iter().map(|f| f.path.as_str()).collect())
            .unwrap_or_default()
    }
}
