//! Frame CPU time of the real UI without painting: `egui::Context::run_ui` over the app's
//! `frame()` with a 500-message chat, a 20,000-line file open in the editor and a 1,000-line
//! diff in review; then the same while a reply streams in (a delta every frame); then a
//! 15,000-file tree, open, toggled and filtered. Reported as
//! median and p99, and as ratios against the welcome screen measured in the same run.
//!
//! Run: `cargo bench --bench frame`

use std::time::{Duration, Instant};

use tandem_core::edits::build_plan;
use tandem_core::store::{ChatMode, MessageStatus, NewMessage, Role, Store};
use tandem_ui::TandemApp;
use tandem_ui::model::chat_state::{ChatState, MessageView, Streaming};
use tandem_ui::model::review::Review;
use tandem_ui::model::state::{Prefs, ProjectState, Status, Tab};

const FRAMES: usize = 300;

fn input(frame: usize) -> egui::RawInput {
    egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(1400.0, 880.0),
        )),
        time: Some(frame as f64 / 60.0),
        ..Default::default()
    }
}

/// Runs `frames` frames, returning each frame's wall time (the UI thread's CPU work).
fn measure(
    ctx: &egui::Context,
    app: &mut TandemApp,
    frames: usize,
    mut each: impl FnMut(&mut TandemApp, usize),
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(frames);
    for frame in 0..frames {
        each(app, frame);
        let start = Instant::now();
        let mut output = ctx.run_ui(input(frame), |ui| app.frame(ui));
        times.push(start.elapsed());
        output.textures_delta.clear();
    }
    times
}

fn stats(mut times: Vec<Duration>) -> (Duration, Duration) {
    // The first frames build caches (fonts, highlighting): steady state is what scrolls.
    times.drain(..times.len() / 10);
    times.sort();
    let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    (p(0.5), p(0.99))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    let big: String = (0..20_000)
        .map(|i| format!("    let value_{i} = compute({i}, \"text\"); // line {i}\n"))
        .collect();
    let diff_old: String = (0..1_000)
        .map(|i| format!("fn item_{i}() -> u32 {{ {i} }}\n"))
        .collect();
    std::fs::write(root.join("src/big.rs"), &big).expect("write");
    std::fs::write(root.join("src/diff.rs"), &diff_old).expect("write");
    let diff_new: String = diff_old
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 4 == 0 {
                format!("{l} // changed\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let reply = format!("<tandem-write path=\"src/diff.rs\">\n{diff_new}</tandem-write>");
    let plan = build_plan(&root, &reply).expect("plan");

    let store = Store::open_in_memory().expect("store");
    let project = store.insert_project("bench", &root).expect("project");
    let chat = store
        .create_chat(project.id, ChatMode::Build, None)
        .expect("chat");
    let mut messages = Vec::new();
    for i in 0..500 {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        let text = format!(
            "Message {i}: here is some **markdown** with `code` and a list:\n\n- one\n- two\n\n```rust\nfn f{i}() {{}}\n```\n"
        );
        let m = store
            .insert_message(&NewMessage {
                status: MessageStatus::Complete,
                ..NewMessage::new(chat.id, role, &text)
            })
            .expect("message");
        messages.push(MessageView::new(m));
    }

    let ctx = egui::Context::default();
    let (data, env) = (
        Some(dir.path().join("data")),
        tandem_core::Environment::isolated(),
    );
    let mut app = TandemApp::with_prefs(&ctx, data, env, Prefs::default());
    app.state.status = Status::Ready;
    // Reference: the welcome screen.
    let welcome = stats(measure(&ctx, &mut app, FRAMES, |_, _| {}));

    let mut view = ProjectState::new(
        project.clone(),
        vec![chat.clone()],
        vec!["src/big.rs".into(), "src/diff.rs".into()],
        Vec::new(),
    );
    view.chat = Some(ChatState {
        chat: chat.clone(),
        messages,
        streaming: None,
        review: Some(Review::new(1, plan)),
        breakdown: None,
        summaries: Vec::new(),
    });
    view.tabs = vec![Tab::new("src/big.rs".into(), big, None)];
    view.active_tab = Some(0);
    view.chat_requested = true;
    app.state.project = Some(view);
    app.state.show_review = true;
    let review = stats(measure(&ctx, &mut app, FRAMES, |_, _| {}));
    app.state.show_review = false;
    let editor = stats(measure(&ctx, &mut app, FRAMES, |_, _| {}));
    app.state.show_review = true;
    let streaming = stats(measure(&ctx, &mut app, FRAMES, |app, frame| {
        if let Some(chat) = app.state.chat_mut() {
            let s = chat.streaming.get_or_insert_with(|| Streaming::new(9_999));
            s.parser.push(&format!("token{frame} "));
            if frame % 20 == 0 {
                s.parser.push("\n");
            }
        }
    }));

    // A 15,000-file project (150 folders of 100 files), every folder open: the tree has
    // 15,150 rows. Then a folder opened or closed every frame (the rows rebuilt), and a
    // different filter typed every frame (the matches recomputed).
    let files: Vec<String> = (0..150)
        .flat_map(|d| (0..100).map(move |f| format!("src/module_{d:03}/file_{f:03}.rs")))
        .collect();
    let mut view = ProjectState::new(project.clone(), vec![chat.clone()], files, Vec::new());
    view.chat_requested = true;
    view.files.toggle("src");
    for d in 0..150 {
        view.files.toggle(&format!("src/module_{d:03}"));
    }
    app.state.project = Some(view);
    app.state.show_review = false;
    let tree = stats(measure(&ctx, &mut app, FRAMES, |_, _| {}));
    let toggling = stats(measure(&ctx, &mut app, FRAMES, |app, frame| {
        if let Some(view) = &mut app.state.project {
            view.files.toggle(&format!("src/module_{:03}", frame % 150));
        }
    }));
    let filtering = stats(measure(&ctx, &mut app, FRAMES, |app, frame| {
        if let Some(view) = &mut app.state.project {
            view.files.filter = format!("module_{:02} file_0", frame % 15);
        }
    }));

    let row = |name: &str, (median, p99): (Duration, Duration)| {
        println!(
            "{name:<58} median {median:>9.2?}  p99 {p99:>9.2?}  ({:.1}x welcome median)",
            median.as_secs_f64() / welcome.0.as_secs_f64()
        );
    };
    println!("frame CPU time without painting, {FRAMES} frames each (first 10% dropped):");
    row("welcome screen (reference)", welcome);
    row("500-message chat + 1,000-line diff in review", review);
    row("500-message chat + 20,000-line file in the editor", editor);
    row("the same (review) while a reply streams in", streaming);
    row("15,000-file tree, every folder open", tree);
    row("the same, a folder opened or closed every frame", toggling);
    row("the same, the filter changed every frame", filtering);
}
