//! The desktop window (eframe/egui). It renders [`model::state::AppState`] every frame and
//! turns clicks, keys and palette choices into [`command::Command`]s; all work happens in
//! [`backend::Backend`] (which calls `tandem_core::app`) on the background runtime, reported back as
//! events drained each frame (`events.rs`).
//!
//! `model/` holds the view models (no egui), `panels/` one file (or folder) per area of the
//! window, `widgets/` the drawing they share; `command/`, `keymap.rs` and `unsaved.rs` are
//! what the person can do, how it is bound, and how their typing is kept safe.

pub mod backend;
pub mod command;
mod events;
mod keymap;
pub mod unsaved;

mod agent_commands;
mod calls;
mod workspace_commands;

pub mod model;
pub mod panels;
pub mod widgets;

use std::path::PathBuf;
use std::sync::Arc;

use backend::Backend;
use command::Command;
use model::state::{AppState, Confirm, Prefs, SendKey, Status};

const PREFS_KEY: &str = "tandem.prefs";

/// Typing pause after which the composer's context estimate is computed.
const ESTIMATE_AFTER: std::time::Duration = std::time::Duration::from_millis(400);
/// The Search tab shows at most this many matches.
const SEARCH_MAX_MATCHES: usize = 1_000;
/// How often the open files are compared with the disk (sooner after an outside change).
const DISK_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// True once, when `edited` is [`ESTIMATE_AFTER`] old (it is then cleared); until then a
/// repaint is asked for the moment it will be.
fn typing_paused(
    edited: &mut Option<std::time::Instant>,
    ctx: &egui::Context,
    now: std::time::Instant,
) -> bool {
    let Some(at) = *edited else {
        return false;
    };
    let waited = now.duration_since(at);
    if waited < ESTIMATE_AFTER {
        ctx.request_repaint_after(ESTIMATE_AFTER - waited);
        return false;
    }
    *edited = None;
    true
}

pub struct TandemApp {
    pub state: AppState,
    pub backend: Backend,
    pub highlight: widgets::highlight::HighlightCache,
    markdown: egui_commonmark::CommonMarkCache,
    restored: bool,
    /// A folder to open at start (`tandem --open PATH`), instead of the last project.
    pub open_at_start: Option<PathBuf>,
    last_disk_check: std::time::Instant,
}

impl TandemApp {
    /// Builds the app without touching disk, git, the database or the network: the backend
    /// opens the database on its own thread and reports when ready.
    pub fn new(cc: &eframe::CreationContext<'_>, data_dir: Option<PathBuf>) -> Self {
        let prefs: Prefs = cc
            .storage
            .and_then(|s| eframe::get_value(s, PREFS_KEY))
            .unwrap_or_default();
        let env = tandem_core::environment::Environment::process();
        let mut app = Self::with_prefs(&cc.egui_ctx, data_dir, env, prefs);
        app.state.drafts = cc
            .storage
            .and_then(|s| eframe::get_value(s, model::unsaved::DRAFTS_KEY))
            .unwrap_or_default();
        app
    }

    /// What is kept between runs: the preferences and the unsaved buffers. The window's
    /// storage writes both on quit and every 30 s (eframe's auto-save).
    pub fn persisted(&mut self) -> (Prefs, Vec<model::unsaved::Draft>) {
        if let Some(project) = &self.state.project {
            self.state.prefs.open_tabs = project.tabs.iter().map(|t| t.path.clone()).collect();
            self.state.prefs.last_chat = project.chat.as_ref().map(|c| c.chat.id);
        }
        (self.state.prefs.clone(), unsaved::drafts(&self.state))
    }

    /// For tests and embedding: an app on `ctx` with the database in `data_dir`, reading
    /// `env` (tests give [`Environment::isolated`](tandem_core::environment::Environment::isolated)).
    pub fn with_prefs(
        ctx: &egui::Context,
        data_dir: Option<PathBuf>,
        env: tandem_core::environment::Environment,
        prefs: Prefs,
    ) -> Self {
        let repaint_ctx = ctx.clone();
        let repaint = Arc::new(move || repaint_ctx.request_repaint());
        let backend = Backend::start(data_dir, env, repaint);
        widgets::theme::apply(ctx, &prefs);
        TandemApp {
            state: AppState::new(prefs),
            backend,
            highlight: widgets::highlight::HighlightCache::default(),
            markdown: egui_commonmark::CommonMarkCache::default(),
            restored: false,
            open_at_start: None,
            last_disk_check: std::time::Instant::now(),
        }
    }

    /// Applies background events; called before each frame's UI.
    /// Counts what the settings' context globs select once typing pauses.
    fn ask_for_glob_counts(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        let form = &mut self.state.settings;
        if !typing_paused(&mut form.globs_edited, ctx, now) {
            return;
        }
        if let Some(project) = &self.state.project {
            // The globs as typed, not yet saved.
            let (include, exclude) = (form.include.clone(), form.exclude.clone());
            let root = project.project.path.clone();
            let split = model::state::split_globs;
            let (included, excluded) = (split(&include), split(&exclude));
            self.backend.query(
                "counting the context",
                move |app| {
                    let count = app.count_context(&root, included, excluded);
                    anyhow::Ok(count.map(|c| c.to_string()).map_err(|e| e.to_string()))
                },
                move |counts| backend::Event::ContextCounts {
                    include,
                    exclude,
                    counts,
                },
            );
        }
    }

    /// Searches the project's files for the Search tab once typing pauses.
    fn ask_for_project_search(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        if !typing_paused(&mut self.state.search.edited, ctx, now) {
            return;
        }
        let key = self.state.search.query.clone();
        if let Some(project) = &self.state.project
            && !key.text.is_empty()
        {
            let project = project.project.clone();
            self.backend.query(
                "searching",
                move |app| {
                    let glob = key.glob.trim();
                    let query = tandem_core::app::SearchQuery {
                        pattern: &key.text,
                        literal: !key.regex,
                        case_insensitive: !key.match_case,
                        glob: (!glob.is_empty()).then_some(glob),
                        start: None,
                        max_matches: SEARCH_MAX_MATCHES,
                    };
                    let result = app.search(&project, &query).map_err(|e| e.to_string());
                    anyhow::Ok((key, result))
                },
                |(key, result)| backend::Event::SearchResults { key, result },
            );
        }
    }

    /// Searches the chats' messages for the sidebar's filter once typing pauses.
    fn ask_for_chat_search(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        let Some(project) = &mut self.state.project else {
            return;
        };
        if !typing_paused(&mut project.chat_filter_edited, ctx, now) {
            return;
        }
        let query = project.chat_filter.trim().to_string();
        if !query.is_empty() {
            let (project_id, asked) = (project.project.id, query.clone());
            self.backend.query(
                "searching the chats",
                move |app| app.search_chats(project_id, &asked),
                move |hits| backend::Event::ChatHits { query, hits },
            );
        }
    }

    /// Asks for the composer's context estimate once typing pauses for [`ESTIMATE_AFTER`],
    /// and again when the editor's tabs or selection change (the estimate packs them too).
    fn ask_for_context_estimate(&mut self, ctx: &egui::Context, now: std::time::Instant) {
        let focus = (self.state.project.as_ref()).map_or(0, model::selection::focus_key);
        if focus != self.state.focus_key {
            self.state.focus_key = focus;
            if !self.state.composer.trim().is_empty() {
                self.state.composer_edited = Some(now);
            }
        }
        if !typing_paused(&mut self.state.composer_edited, ctx, now) {
            return;
        }
        let prompt = self.state.composer.trim().to_string();
        let Some(project) = &self.state.project else {
            return;
        };
        if prompt.is_empty() || self.state.chat().is_some_and(|c| c.streaming.is_some()) {
            return;
        }
        // In the chat, else in a new one, with the editor's state (whose fingerprint is
        // `focus`).
        let chat = self.state.chat().map(|c| c.chat.id);
        let options = self.state.send_options();
        let (project, focus) = (project.project.clone(), self.state.focus_key);
        self.backend.query_async(
            "estimating the context",
            move |app| async move {
                let breakdown = app.preview(&project, chat, &prompt, &options).await;
                anyhow::Ok((prompt, breakdown.map_err(|e| e.to_string())))
            },
            move |(prompt, breakdown)| backend::Event::ContextPreview {
                prompt,
                focus,
                breakdown,
            },
        );
    }

    /// The open project changed outside the window: its tree, history and chats are read
    /// again, and its open files compared with the disk now (a dirty buffer whose file
    /// changed asks what to keep).
    fn changed_outside(&mut self, project_id: i64, changed: tandem_core::app::Changed) {
        let Some(project) = &self.state.project else {
            return;
        };
        if project.project.id != project_id {
            return;
        }
        let chat = project
            .chat
            .as_ref()
            .filter(|c| changed.history && c.streaming.is_none())
            .map(|c| c.chat.id);
        self.backend
            .refresh_outside_change(project.project.clone(), chat);
        // The next frame looks at the open files (a report always says something changed).
        self.last_disk_check = std::time::Instant::now()
            .checked_sub(DISK_CHECK_EVERY)
            .unwrap_or(self.last_disk_check);
    }

    pub fn update_state(&mut self, ctx: &egui::Context) {
        // Files dropped on the window are attached to the prompt.
        let dropped: Vec<std::path::PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        if !dropped.is_empty() && self.state.project.is_some() {
            self.backend.attach_paths(dropped);
        }
        for event in self.backend.drain() {
            match event {
                backend::Event::FolderPicked(path) => self.backend.open_project(path),
                backend::Event::ChangedOutside {
                    project_id,
                    changed,
                } => self.changed_outside(project_id, changed),
                event => {
                    let opened = match &event {
                        backend::Event::ProjectOpened(opened) => Some(opened.project.clone()),
                        _ => None,
                    };
                    // Settings opened before the providers were known (or they changed).
                    let providers = matches!(
                        event,
                        backend::Event::Ready { .. } | backend::Event::Providers(_)
                    );
                    self.state.on_event(event);
                    if providers && self.state.settings_open {
                        self.state
                            .apply(Command::LoadProviderDetails, &self.backend);
                    }
                    if let Some(project) = opened {
                        self.backend.watch_project(project);
                    }
                }
            }
        }
        // A request for the person while they look elsewhere: flash the window / task bar.
        if std::mem::take(&mut self.state.wants_attention) && !ctx.input(|i| i.focused) {
            let attention = egui::UserAttentionType::Informational;
            ctx.send_viewport_cmd(egui::ViewportCommand::RequestUserAttention(attention));
        }
        // The executor's reconnect countdown stays current.
        if matches!(
            self.state.agent.approver.status,
            tandem_core::app::ApproverStatus::Reconnecting { .. }
        ) {
            ctx.request_repaint_after(std::time::Duration::from_secs(1));
        }
        if let Some((path, line)) = self.state.follow.take() {
            self.state
                .apply(Command::OpenFileAt { path, line }, &self.backend);
        }
        if !self.restored && self.state.status == Status::Ready {
            self.restored = true;
            // Probe the providers: the welcome view and the model picker show what is there.
            self.state.apply(Command::RefreshModels, &self.backend);
            if let Some(path) = self.open_at_start.take() {
                self.backend.open_project(path);
            } else if let Some(id) = self.state.prefs.last_project
                && self.state.projects.iter().any(|p| p.id == id)
            {
                self.backend.switch_project(id);
            }
        }
        // When a project has loaded, reopen its last chat (else its most recent one) once.
        if let Some(project) = &mut self.state.project
            && project.chat.is_none()
            && !project.chat_requested
        {
            project.chat_requested = true;
            let last = self
                .state
                .prefs
                .last_chat
                .filter(|id| project.chats.iter().any(|c| c.id == *id));
            if let Some(chat) = last.or_else(|| project.chats.first().map(|c| c.id)) {
                self.backend.load_chat(chat);
            }
            let mut paths = std::mem::take(&mut self.state.prefs.open_tabs);
            // Unsaved buffers kept from the last run come back with their files.
            for draft in &self.state.drafts {
                if draft.project_id == project.project.id && !paths.contains(&draft.path) {
                    paths.push(draft.path.clone());
                }
            }
            for path in paths {
                if project.files.contains(&path) {
                    calls::open_file(&self.backend, project.project.clone(), path);
                }
            }
        }
        if std::mem::take(&mut self.state.agent.reload_settings) {
            self.backend.load_agent_settings();
        }
        // The open chat read again when something said it changed (a reply still streaming
        // keeps its live view: see `Event::ChatLoaded`).
        if std::mem::take(&mut self.state.chat_stale)
            && let Some(chat) = self.state.chat()
        {
            self.backend.load_chat(chat.chat.id);
        }
        for path in std::mem::take(&mut self.state.pending_reloads) {
            if let Some(project) = &self.state.project {
                calls::open_file(&self.backend, project.project.clone(), path);
            }
        }
        let now = std::time::Instant::now();
        self.ask_for_context_estimate(ctx, now);
        self.ask_for_chat_search(ctx, now);
        self.ask_for_project_search(ctx, now);
        self.ask_for_symbol_matches(ctx, now);
        self.ask_for_glob_counts(ctx, now);
        // Every 2 s (and after an outside change), look for open files changed on disk (by another editor, git, a formatter).
        if now.duration_since(self.last_disk_check) >= DISK_CHECK_EVERY {
            self.last_disk_check = now;
            if let Some(project) = &self.state.project {
                let known: Vec<(String, String)> = project
                    .tabs
                    .iter()
                    .filter(|t| t.read_only.is_none() && t.disk_changed.is_none())
                    .map(|t| (t.path.clone(), t.saved.clone()))
                    .collect();
                if !known.is_empty() {
                    self.backend
                        .check_open_files(project.project.clone(), known);
                }
            }
            ctx.request_repaint_after(DISK_CHECK_EVERY);
        }
        self.state
            .toasts
            .retain(|t| now.duration_since(t.at).as_secs() < if t.error { 8 } else { 4 });
        if !self.state.toasts.is_empty() || self.state.chat().is_some_and(|c| c.streaming.is_some())
        {
            ctx.request_repaint_after(std::time::Duration::from_millis(250));
        }
    }

    /// Lays out one frame and applies the commands it produced.
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        let mut commands = Vec::new();
        keymap::window_shortcuts(ui, &self.state, &mut commands);
        let state = &mut self.state;
        panels::top_bar::show(ui, state, &mut commands);
        if state.project.is_none() {
            egui::CentralPanel::default()
                .show(ui, |ui| panels::welcome::show(ui, state, &mut commands));
        } else {
            if state.prefs.show_bottom {
                egui::Panel::bottom("bottom")
                    .resizable(true)
                    .default_size(200.0)
                    .show(ui, |ui| panels::bottom::show(ui, state, &mut commands));
            }
            egui::Panel::left("sidebar")
                .resizable(true)
                .default_size(250.0)
                .show(ui, |ui| panels::sidebar::show(ui, state, &mut commands));
            egui::Panel::right("chat")
                .resizable(true)
                .default_size(460.0)
                .show(ui, |ui| {
                    panels::chat_panel::show(
                        ui,
                        state,
                        &mut self.markdown,
                        &mut self.highlight,
                        &mut commands,
                    )
                });
            let prefs = state.prefs.clone();
            let proposed: std::collections::BTreeSet<String> = state
                .proposed_paths()
                .into_iter()
                .map(str::to_string)
                .collect();
            let review = state.chat().and_then(|c| c.review.as_ref()).is_some();
            egui::CentralPanel::default().show(ui, |ui| {
                if review {
                    ui.horizontal(|ui| {
                        let files = state.review().map_or(0, |r| r.plan.files.len());
                        ui.selectable_value(
                            &mut state.show_review,
                            true,
                            format!("Proposal ({files} files)"),
                        );
                        ui.selectable_value(&mut state.show_review, false, "Editor");
                    });
                    ui.separator();
                }
                if review && state.show_review {
                    if let Some(review) = state.review() {
                        // Only an Agent chat's proposal is in its workspace.
                        let run = state
                            .chat()
                            .filter(|c| c.chat.mode == tandem_core::store::ChatMode::Agent)
                            .map(|c| panels::review::RunPanel {
                                view: state.workspaces.runs.get(&c.chat.id),
                                default_command: state.default_run_command(),
                            });
                        let side_by_side = prefs.side_by_side;
                        panels::review::show(ui, review, side_by_side, run.as_ref(), &mut commands);
                    }
                } else if let Some(project) = &mut state.project {
                    let proposed = proposed.iter().map(String::as_str).collect();
                    panels::editor::show(
                        ui,
                        project,
                        &mut self.highlight,
                        &prefs,
                        &proposed,
                        &mut commands,
                    );
                }
            });
        }
        panels::settings::show(ui.ctx(), state, &mut commands);
        panels::palette::show(ui.ctx(), state, &mut commands);
        confirm_dialog(ui.ctx(), state, &mut commands);
        unsaved::close_dialog(ui.ctx(), state, &mut commands);
        toasts(ui.ctx(), state);
        let theme_before = (state.prefs.theme, state.prefs.font_size);
        for command in commands {
            state.apply(command, &self.backend);
        }
        if theme_before != (state.prefs.theme, state.prefs.font_size) {
            widgets::theme::apply(ui.ctx(), &state.prefs);
        }
    }

    /// Runs a command as if the person had clicked it (tests, the palette).
    pub fn command(&mut self, command: Command) {
        self.state.apply(command, &self.backend);
    }
}

impl eframe::App for TandemApp {
    fn logic(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        self.update_state(ctx);
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.frame(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        let (prefs, drafts) = self.persisted();
        eframe::set_value(storage, PREFS_KEY, &prefs);
        eframe::set_value(storage, model::unsaved::DRAFTS_KEY, &drafts);
    }
}

/// Opens the window. `data_dir` overrides where the database lives; `open` is a folder to
/// open as a project.
pub fn run(data_dir: Option<PathBuf>, open: Option<PathBuf>) -> eframe::Result {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Tandem")
            .with_inner_size([1400.0, 880.0])
            .with_min_inner_size([800.0, 500.0]),
        persist_window: true,
        ..Default::default()
    };
    eframe::run_native(
        "Tandem",
        options,
        Box::new(move |cc| {
            let mut app = TandemApp::new(cc, data_dir);
            app.open_at_start = open;
            Ok(Box::new(app))
        }),
    )
}

fn confirm_dialog(ctx: &egui::Context, state: &AppState, commands: &mut Vec<Command>) {
    let Some(confirm) = &state.confirm else {
        return;
    };
    let text = match confirm {
        Confirm::Restore(hash) => format!(
            "Restore the project to version {}?\n\nThe current files are committed first, so nothing is lost. \
             Messages of the chat that come after that version will be removed.",
            tandem_core::vcs::short(hash)
        ),
        Confirm::DeleteChat(_) => {
            "Delete this chat and its messages? Files are not touched.".to_string()
        }
        Confirm::DeleteFile(path) => {
            format!("Delete {path}? It is committed, so Restore brings it back.")
        }
    };
    egui::Modal::new(egui::Id::unique("confirm")).show(ctx, |ui| {
        ui.set_max_width(420.0);
        ui.label(text);
        ui.add_space(8.0);
        ui.horizontal(|ui| {
            if ui.button("Confirm").clicked() {
                commands.push(Command::Confirm);
            }
            if ui.button("Cancel").clicked() {
                commands.push(Command::Dismiss);
            }
        });
    });
}

fn toasts(ctx: &egui::Context, state: &AppState) {
    if state.toasts.is_empty() {
        return;
    }
    egui::Area::new(egui::Id::unique("toasts"))
        .anchor(egui::Align2::RIGHT_BOTTOM, [-16.0, -16.0])
        .order(egui::Order::Foreground)
        .show(ctx, |ui| {
            for toast in state.toasts.iter().rev().take(4) {
                let color = if toast.error {
                    widgets::theme::ERROR
                } else {
                    widgets::theme::ACCENT
                };
                egui::Frame::popup(ui.style())
                    .stroke(egui::Stroke::new(1.0, color))
                    .show(ui, |ui| {
                        ui.set_max_width(380.0);
                        ui.label(&toast.text);
                    });
            }
        });
}

/// The send key as configured: (sends, inserts a newline).
pub fn send_pressed(ui: &egui::Ui, key: SendKey) -> bool {
    ui.input(|i| {
        let enter = i.key_pressed(egui::Key::Enter);
        match key {
            SendKey::Enter => enter && !i.modifiers.shift && !i.modifiers.command,
            SendKey::CtrlEnter => enter && i.modifiers.command,
        }
    })
}
