//! The desktop window (eframe/egui). It renders [`model::state::AppState`] every frame and
//! turns clicks, keys and palette choices into [`command::Command`]s; all work happens in
//! [`backend::Backend`] (which calls `tandem_core::app`) on the background runtime, reported back as
//! events drained each frame (`events.rs`).
//!
//! `model/` holds the view models (no egui), `panels/` one file (or folder) per area of the
//! window, `widgets/` the drawing they share; `command/`, `keymap.rs` and `unsaved.rs` are
//! what the person can do, how it is bound, and how their typing is kept safe.
//!
//! Here, [`TandemApp`]: made, persisted and run. Each frame is `update.rs` (the background's
//! events applied, and what they ask for done, before the UI), then `frame.rs` (the panels
//! laid out and the commands they produced applied); `typing.rs` holds what is asked of the
//! background once the person stops typing.

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

mod frame;
mod typing;
mod update;

use std::path::PathBuf;
use std::sync::Arc;

use backend::Backend;
use command::Command;
use model::state::{AppState, Prefs, SendKey};

const PREFS_KEY: &str = "tandem.prefs";

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
