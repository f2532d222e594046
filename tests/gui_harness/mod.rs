//! The desktop app driven headless with egui_kittest for `tests/gui*.rs`: a project in a temp
//! git repository, a fake Ollama-speaking provider as the default, and the real `TandemApp`
//! (state, backend, engine) stepped frame by frame.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use tandem_core::llm::ProviderKind;
use tandem_core::store::{ProviderSettings, Store};
use tandem_ui::TandemApp;
use tandem_ui::model::state::Prefs;
use tandem_ui::model::unsaved::Draft;

use crate::common;
use crate::fake_provider::{FakeProvider, Reply, ollama_stream};

pub type H = Harness<'static, App>;

/// The project file agent tests read.
pub const MAIN: &str = "fn main() {\n    println!(\"hi\");\n}\n";

pub struct World {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
    pub server: FakeProvider,
    pub runtime: tokio::runtime::Runtime,
}

impl World {
    /// The database, for settings a test wants in place before the app starts.
    pub fn store(&self) -> Store {
        Store::open_dir(&self.data).unwrap()
    }
}

/// A project with `files`, a fake Ollama-speaking provider as the default, and the project
/// remembered as the last one opened (so the app opens it by itself).
pub fn world(files: &[(&str, &str)]) -> (World, Prefs) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    common::repo_with(&root, files);
    let data = dir.path().join("data");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeProvider::start());
    let engine = tandem_core::Engine::open(Some(&data)).unwrap();
    let project = engine.add_project(&root, None).unwrap().project;
    let store: &Store = engine.store();
    tandem_core::chat::ensure_default_provider(store, &common::environment()).unwrap();
    let settings = ProviderSettings {
        default_model: Some("test-model".into()),
        context_length: Some(16_384),
    };
    store
        .insert_provider("fake", ProviderKind::Ollama, &server.url(), None, &settings)
        .unwrap();
    store.set_setting("chat.default_provider", "fake").unwrap();
    store
        .set_setting("chat.default_model", "test-model")
        .unwrap();
    store.set_setting("chat.generate_titles", &false).unwrap();
    let prefs = Prefs {
        last_project: Some(project.id),
        ..Prefs::default()
    };
    let root = root.canonicalize().unwrap();
    (
        World {
            _dir: dir,
            root,
            data,
            server,
            runtime,
        },
        prefs,
    )
}

pub type App = Option<TandemApp>;

pub fn harness(data: &Path, prefs: Prefs) -> Harness<'static, App> {
    build(
        egui_kittest::HarnessBuilder::default(),
        data,
        prefs,
        Vec::new(),
    )
}

/// The app started again with what a previous run persisted (preferences, unsaved buffers).
pub fn restarted(data: &Path, prefs: Prefs, drafts: Vec<Draft>) -> Harness<'static, App> {
    build(egui_kittest::HarnessBuilder::default(), data, prefs, drafts)
}

/// A harness that paints with wgpu (Mesa's software rasteriser when there is no GPU), for
/// PNG snapshots.
pub fn painting_harness(data: &Path, prefs: Prefs) -> Harness<'static, App> {
    build(
        egui_kittest::HarnessBuilder::default().wgpu(),
        data,
        prefs,
        Vec::new(),
    )
}

fn build(
    builder: egui_kittest::HarnessBuilder<App>,
    data: &Path,
    prefs: Prefs,
    drafts: Vec<Draft>,
) -> Harness<'static, App> {
    let data = data.to_path_buf();
    builder
        .with_size(egui::vec2(1400.0, 900.0))
        // Commit messages and chat text are anyone's Unicode: the real app shows a box for a
        // glyph the fonts lack. Tandem's own UI strings are checked by tests/glyphs.rs.
        .allow_missing_glyphs()
        .build_ui_state(
            move |ui, app: &mut App| {
                let app = app.get_or_insert_with(|| {
                    let (data, env) = (Some(data.clone()), common::environment());
                    let mut app = TandemApp::with_prefs(ui.ctx(), data, env, prefs.clone());
                    app.state.drafts = drafts.clone();
                    app
                });
                app.update_state(&ui.ctx().clone());
                app.frame(ui);
            },
            None,
        )
}

/// Steps frames until `done` holds (background work runs on its own threads meanwhile).
pub fn wait_until(
    harness: &mut Harness<'static, App>,
    what: &str,
    done: impl Fn(&TandemApp) -> bool,
) {
    let start = Instant::now();
    loop {
        harness.step();
        if harness.state().as_ref().is_some_and(&done) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}\n{}",
            summary(app(harness))
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the app shows, for a timeout's message.
fn summary(app: &TandemApp) -> String {
    let state = &app.state;
    let chat = state.chat().map(|c| {
        let messages: Vec<_> = c
            .messages
            .iter()
            .map(|m| (m.message.role, m.message.status, m.message.content.clone()))
            .collect();
        format!(
            "chat mode {:?}, streaming {}, messages {messages:?}",
            c.chat.mode,
            c.streaming.is_some()
        )
    });
    let toasts: Vec<_> = state.toasts.iter().map(|t| t.text.clone()).collect();
    format!(
        "mode {:?}; {chat:?}\napprovals {:?}\nlog {:?}\ntoasts {toasts:?}",
        state.mode, state.agent.approvals, state.log
    )
}

pub fn app<'h>(harness: &'h Harness<'static, App>) -> &'h TandemApp {
    harness.state().as_ref().unwrap()
}

pub fn open_chat(harness: &mut Harness<'static, App>) {
    wait_until(harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label("+ New").click();
    wait_until(harness, "a chat", |a| a.state.chat().is_some());
}

pub fn send(harness: &mut Harness<'static, App>, prompt: &str) {
    harness.get_by_role(Role::MultilineTextInput).focus();
    harness.step();
    harness
        .get_by_role(Role::MultilineTextInput)
        .type_text(prompt);
    harness.step();
    harness.get_by_label("Send").click();
    harness.step();
}

pub fn text(reply: &str) -> Reply {
    ollama_stream(&[reply], Duration::from_millis(5))
}

/// A project with src/main.rs, native tool calling, and `replies` scripted for /api/chat.
pub fn agent_world(replies: Vec<Reply>) -> (World, Prefs) {
    let (world, prefs) = world(&[("src/main.rs", MAIN)]);
    world
        .store()
        .set_setting(tandem_core::store::keys::TOOL_CALLING, "native")
        .unwrap();
    for reply in replies {
        world.server.push("POST", "/api/chat", reply);
    }
    (world, prefs)
}

/// Picks `mode` in the top bar, then starts a chat (in that mode) and sends `prompt`.
pub fn start(harness: &mut H, mode: &str, prompt: &str) {
    wait_until(harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label(mode).click();
    harness.step();
    open_chat(harness);
    send(harness, prompt);
}
