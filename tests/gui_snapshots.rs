//! PNG snapshots of the main views, painted headless with wgpu (on machines without a GPU,
//! Mesa's llvmpipe through GL). They catch what the accessibility-tree tests cannot: layout,
//! colours, diff highlighting. `UPDATE_SNAPSHOTS=1 CONFIRM_UPDATE_SNAPSHOTS=1 cargo test --test
//! gui_snapshots` rewrites them in `tests/snapshots/` (`UPDATE_SNAPSHOTS` alone fails the tests,
//! and CI never rewrites); a failing run leaves `*.new.png` and `*.diff.png` beside them.

#![allow(clippy::unwrap_used)] // tests state their expectations with unwrap

mod common;
mod fake_provider;
mod gui_harness;

use std::time::Duration;

use egui_kittest::SnapshotOptions;
use egui_kittest::kittest::Queryable;
use fake_provider::ollama_stream;
use gui_harness::{open_chat, painting_harness, send, wait_until};
use tandem_ui::model::state::Prefs;

/// Per-pixel colour tolerance for another Mesa version's anti-aliasing; no pixel may exceed
/// it, so a moved widget or a changed colour still fails.
fn options() -> SnapshotOptions {
    SnapshotOptions::new().threshold(2.0)
}

/// Why the snapshots may not be rewritten now, when `UPDATE_SNAPSHOTS` (as egui_kittest
/// reads it) asks for it: an inherited one would turn every difference into a pass. It is
/// honoured only with `CONFIRM_UPDATE_SNAPSHOTS=1` beside it, and never under CI.
fn rewrite_refused(
    update: Option<&str>,
    confirm: Option<&str>,
    ci: Option<&str>,
) -> Option<&'static str> {
    let asked = update.is_some_and(|v| !matches!(v, "false" | "0" | "no" | "off"));
    if !asked {
        None
    } else if ci.is_some_and(|v| !v.is_empty()) {
        Some("UPDATE_SNAPSHOTS is set under CI: there the snapshots are compared, never rewritten")
    } else if confirm != Some("1") {
        Some(
            "UPDATE_SNAPSHOTS is set (inherited?): to rewrite the snapshots, set \
             CONFIRM_UPDATE_SNAPSHOTS=1 too; to compare them, unset it",
        )
    } else {
        None
    }
}

/// Compares the view with `tests/snapshots/NAME.png` (rewrites it only when explicitly
/// asked: see [`rewrite_refused`]).
fn snapshot(harness: &mut gui_harness::H, name: &str) {
    let var = |name: &str| std::env::var(name).ok();
    let refused = rewrite_refused(
        var("UPDATE_SNAPSHOTS").as_deref(),
        var("CONFIRM_UPDATE_SNAPSHOTS").as_deref(),
        var("CI").as_deref(),
    );
    if let Some(why) = refused {
        panic!("{why}");
    }
    harness.snapshot_options(name, &options());
}

#[test]
fn rewriting_the_snapshots_needs_an_explicit_opt_in() {
    assert_eq!(rewrite_refused(None, None, None), None);
    assert_eq!(rewrite_refused(Some("0"), None, Some("true")), None);
    assert_eq!(rewrite_refused(Some("1"), Some("1"), None), None);
    assert_eq!(rewrite_refused(Some("force"), Some("1"), Some("")), None);
    for (update, confirm, ci) in [
        (Some("1"), None, None),
        (Some("true"), Some("yes"), None),
        (Some("force"), Some("0"), None),
        (Some("1"), Some("1"), Some("true")),
        (Some("1"), None, Some("1")),
    ] {
        assert!(
            rewrite_refused(update, confirm, ci).is_some(),
            "{update:?} {confirm:?} {ci:?}"
        );
    }
}

const NOTES: &str = "# Notes\n\nfn greet(name: &str) -> String {\n    format!(\"Hello, {name}!\")\n}\n\nfn main() {\n    println!(\"{}\", greet(\"world\"));\n}\n";

#[test]
fn welcome_screen() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The default Ollama provider points at a port nothing listens on: the status line is
    // the same on every machine.
    let store = tandem_core::store::Store::open_dir(&data).unwrap();
    store
        .insert_provider(
            "ollama",
            tandem_core::llm::ProviderKind::Ollama,
            "http://127.0.0.1:9",
            None,
            &Default::default(),
        )
        .unwrap();
    drop(store);
    let mut harness = painting_harness(&data, Prefs::default());
    wait_until(&mut harness, "the model status", |a| {
        a.state.models.contains_key("ollama")
    });
    harness.run_steps(4);
    snapshot(&mut harness, "welcome");
}

#[test]
fn proposal_review_with_the_chat_beside_it() {
    let (world, prefs) = gui_harness::world(&[("src/notes.rs", NOTES)]);
    let changed = NOTES.replace("Hello", "Hi").replace("world", "Tandem");
    let reply = [
        "I'll make the greeting shorter and greet Tandem.\n".to_string(),
        format!("<tandem-write path=\"src/notes.rs\" description=\"shorter greeting\">\n{changed}"),
        "</tandem-write>\n<tandem-chat-summary>Shorter greeting</tandem-chat-summary>".to_string(),
    ];
    let pieces: Vec<&str> = reply.iter().map(String::as_str).collect();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&pieces, Duration::from_millis(5)),
    );
    let mut harness = painting_harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "shorter greeting");
    wait_until(&mut harness, "the proposal", |a| {
        a.state.review().is_some() && a.state.chat().is_some_and(|c| c.streaming.is_none())
    });
    harness.run_steps(4);
    snapshot(&mut harness, "proposal_review");
}

#[test]
fn a_failing_check_with_its_problems_and_the_repair_round() {
    let (world, prefs) = gui_harness::world(&[("src/notes.rs", NOTES)]);
    {
        let store = world.store();
        let mut project = store.projects().unwrap().remove(0);
        // Fails, naming the place, while a source line still says "world".
        project.settings.check_command = Some("! grep -rHn world src".into());
        store
            .update_project_settings(project.id, &project.settings)
            .unwrap();
        let scratch = world.data.parent().unwrap().join("scratch");
        store
            .set_setting("checks.scratch_dir", &scratch.to_string_lossy())
            .unwrap();
        store.set_setting("chat.repair_rounds", &1).unwrap();
    }
    // Both rounds keep "world": the check fails twice, the second is what the person sees.
    let changed = NOTES.replace("Hello", "Hi");
    let reply = format!(
        "Shorter greeting.\n<tandem-write path=\"src/notes.rs\" description=\"shorter greeting\">\n{changed}</tandem-write>\n"
    );
    for _ in 0..2 {
        world.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&[reply.as_str()], Duration::from_millis(5)),
        );
    }
    let mut harness = painting_harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "shorter greeting");
    wait_until(&mut harness, "the proposal, checked twice", |a| {
        a.state.review().is_some()
            && a.state.chat().is_some_and(|c| {
                c.streaming.is_none()
                    && c.messages.iter().any(|m| {
                        m.steps
                            .iter()
                            .filter(|s| s.kind == tandem_core::store::StepKind::Check)
                            .count()
                            == 2
                    })
            })
    });
    harness.run_steps(2);
    harness.get_by_label("Problems (1)").click();
    harness.run_steps(4);
    snapshot(&mut harness, "problems");
}

#[test]
fn at_mention_suggestions_and_chips_in_the_composer() {
    let (world, prefs) = gui_harness::world(&[
        ("src/notes.rs", NOTES),
        ("src/greet.rs", "pub fn greet() {}\n"),
        ("docs/guide.md", "# Guide\n"),
    ]);
    world
        .store()
        .save_prompt("review", "Review the change for bugs and missing tests.")
        .unwrap();
    let mut harness = painting_harness(&world.data, prefs);
    open_chat(&mut harness);
    wait_until(&mut harness, "the prompt library", |a| {
        a.state.prompts.len() == 1
    });
    harness
        .get_by_role(egui::accesskit::Role::MultilineTextInput)
        .focus();
    harness.step();
    harness
        .get_by_role(egui::accesskit::Role::MultilineTextInput)
        .type_text("@prompt:review Rename greet in @src/notes.rs and @gre");
    for _ in 0..10 {
        if harness
            .query_all_by_label_contains("src/greet.rs")
            .next()
            .is_some()
        {
            break;
        }
        harness.step();
    }
    harness.run_steps(4);
    snapshot(&mut harness, "mentions");
}

#[test]
fn usage_per_day_and_model() {
    let (world, prefs) = gui_harness::world(&[("src/notes.rs", NOTES)]);
    for reply in ["One.", "Two."] {
        world.server.push(
            "POST",
            "/api/chat",
            ollama_stream(&[reply], Duration::from_millis(5)),
        );
    }
    let mut harness = painting_harness(&world.data, prefs);
    open_chat(&mut harness);
    for (i, prompt) in ["first", "second"].into_iter().enumerate() {
        send(&mut harness, prompt);
        wait_until(&mut harness, "the reply", |a| {
            a.state
                .chat()
                .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2 * (i + 1))
        });
    }
    harness.get_by_label("Usage").click();
    wait_until(&mut harness, "the usage report", |a| {
        a.state.usage.as_ref().is_some_and(|u| !u.models.is_empty())
    });
    harness.run_steps(4);
    snapshot(&mut harness, "usage");
}

#[test]
fn a_security_review_with_its_findings() {
    let (world, prefs) = gui_harness::world(&[("src/notes.rs", NOTES)]);
    let review = "Two problems, one serious.\n\
<tandem-security-finding title=\"Format string built from input\" level=\"high\" path=\"src/notes.rs\" lines=\"3-5\">`greet` formats `name` into its output unchecked; if the output reaches HTML or a shell, escape or validate it there.</tandem-security-finding>\n\
<tandem-security-finding title=\"No input length limit\" level=\"low\" path=\"src/notes.rs\" lines=\"3\">A huge `name` is copied whole; cap it where it is read.</tandem-security-finding>\n\
Overall: small surface, one real risk at the output boundary.";
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&[review], Duration::from_millis(5)),
    );
    let mut harness = painting_harness(&world.data, prefs);
    gui_harness::start(&mut harness, "Security", "review the project");
    wait_until(&mut harness, "the review", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    harness.get_by_label("Findings (2)").click();
    harness.run_steps(4);
    snapshot(&mut harness, "security_review");
}

#[test]
fn an_image_sent_with_a_prompt_and_another_attached() {
    let (world, prefs) = gui_harness::world(&[("src/notes.rs", NOTES)]);
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["A red square on its own."], Duration::from_millis(5)),
    );
    let dir = tempfile::tempdir().unwrap();
    let square = |name: &str, rgba: [u8; 4]| {
        let image = image::RgbaImage::from_pixel(48, 32, image::Rgba(rgba));
        let path = dir.path().join(name);
        image
            .save_with_format(&path, image::ImageFormat::Png)
            .unwrap();
        path
    };
    let (red, blue) = (
        square("red.png", [220, 40, 40, 255]),
        square("blue.png", [40, 80, 220, 255]),
    );
    let notes = dir.path().join("spec.md");
    std::fs::write(&notes, "# Spec\n").unwrap();
    let mut harness = painting_harness(&world.data, prefs);
    open_chat(&mut harness);
    let attach = |h: &mut gui_harness::H, paths: Vec<std::path::PathBuf>, count: usize| {
        h.state_mut().as_mut().unwrap().backend.attach_paths(paths);
        wait_until(h, "the attachments", |a| a.state.attachments.len() == count);
    };
    attach(&mut harness, vec![red], 1);
    send(&mut harness, "what is this?");
    wait_until(&mut harness, "the reply", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    let chat_id = gui_harness::app(&harness).state.chat().unwrap().chat.id;
    harness
        .state_mut()
        .as_mut()
        .unwrap()
        .backend
        .load_chat(chat_id);
    wait_until(&mut harness, "the thumbnail", |a| {
        a.state
            .chat()
            .is_some_and(|c| !c.messages[0].attachments.is_empty())
    });
    attach(&mut harness, vec![blue, notes], 2);
    harness.run_steps(4);
    snapshot(&mut harness, "attachments");
}

#[test]
fn settings_with_several_keys_and_a_cli_agent() {
    // Addresses nothing listens on and a program that is not there: the rows read the same on
    // every machine.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = tandem_core::store::Store::open_dir(&data).unwrap();
    for (name, kind, url) in [
        (
            "ollama",
            tandem_core::llm::ProviderKind::Ollama,
            "http://127.0.0.1:9",
        ),
        (
            "cloud",
            tandem_core::llm::ProviderKind::Openai,
            "http://127.0.0.1:9/v1",
        ),
        (
            "codex",
            tandem_core::llm::ProviderKind::Codex,
            "/nonexistent/codex",
        ),
    ] {
        store
            .insert_provider(name, kind, url, None, &Default::default())
            .unwrap();
    }
    drop(store);
    let app = tandem_core::app::App::open_in(Some(&data), common::environment()).unwrap();
    app.add_key("cloud", "sk-first-key-0001").unwrap();
    app.add_key("cloud", "sk-second-key-0002").unwrap();
    drop(app);
    let mut harness = painting_harness(&data, Prefs::default());
    wait_until(&mut harness, "the model status", |a| {
        a.state.models.contains_key("ollama") && a.state.models.contains_key("cloud")
    });
    harness.get_by_label("⚙ Settings").click();
    wait_until(&mut harness, "the keys and the agent's state", |a| {
        a.state
            .provider_keys
            .get("cloud")
            .is_some_and(|k| k.len() == 2)
            && a.state
                .agent
                .cli_agents
                .get("codex")
                .is_some_and(|c| c.status.is_some())
    });
    harness.run_steps(4);
    snapshot(&mut harness, "settings_providers");
}

/// The agent's workspace in the window: the test failed, the agent fixed the code, the test
/// passed against the fix, and the file the passing command wrote is part of the proposal,
/// labelled with the command.
#[test]
fn an_agent_proposal_holding_a_file_its_command_made() {
    use fake_provider::ollama_tool_call;
    use serde_json::json;
    let util = "add() { echo $(($1 - $2)); }\n";
    let test = ". ./src/util.sh\n[ \"$(add 2 3)\" = 5 ] || { echo \"add 2 3 gave $(add 2 3)\"; exit 1; }\necho PASS\n";
    let (world, prefs) = gui_harness::world(&[("src/util.sh", util), ("test.sh", test)]);
    let store = world.store();
    store
        .set_setting(tandem_core::store::keys::TOOL_CALLING, "native")
        .unwrap();
    let policy = tandem_core::agent::policy::PolicySettings {
        auto_approve_up_to: Some(tandem_core::agent::policy::Risk::High),
        ..Default::default()
    };
    store
        .set_setting(tandem_core::store::keys::AGENT_POLICY, &policy)
        .unwrap();
    for reply in [
        ollama_tool_call("run_shell", json!({"command": "sh test.sh"})),
        ollama_tool_call(
            "write_file",
            json!({"path": "src/util.sh", "content": "add() { echo $(($1 + $2)); }\n", "description": "add adds"}),
        ),
        ollama_tool_call(
            "run_shell",
            json!({"command": "sh test.sh && echo '2 + 3 = 5, checked by test.sh' > CHECKED.md"}),
        ),
        gui_harness::text("The test passes now: `add` subtracted instead of adding."),
    ] {
        world.server.push("POST", "/api/chat", reply);
    }
    let mut harness = painting_harness(&world.data, prefs);
    gui_harness::start(&mut harness, "Agent", "make the tests pass");
    wait_until(&mut harness, "the proposal", |a| {
        a.state.review().is_some() && a.state.chat().is_some_and(|c| c.streaming.is_none())
    });
    harness.run_steps(2);
    harness
        .get_all_by_label("CHECKED.md")
        .next()
        .unwrap()
        .click();
    // Durations differ run to run: the picture shows fixed ones.
    {
        let app = harness.state_mut().as_mut().unwrap();
        for message in &mut app.state.chat_mut().unwrap().messages {
            for step in &mut message.steps {
                step.duration_ms = step.duration_ms.map(|_| 12);
            }
        }
    }
    harness.run_steps(4);
    assert!(!world.root.join("CHECKED.md").exists());
    snapshot(&mut harness, "agent_workspace");
}
