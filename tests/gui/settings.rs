//! Settings and the usage tab: context globs, rules files, provider keys, token costs.

use super::*;

#[test]
fn settings_count_what_the_context_globs_select_as_they_change() {
    let (world, prefs) = gui_harness::world(&[
        ("notes.txt", ORIGINAL),
        ("src/a.rs", "fn a() {}\n"),
        ("src/b.rs", "fn b() {}\n"),
    ]);
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    // Ctrl+, opens settings.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Comma);
    let counted = |a: &tandem_ui::TandemApp, include: &str| {
        a.state
            .settings
            .glob_counts
            .as_ref()
            .is_some_and(|(i, _, _)| i == include)
    };
    wait_until(&mut harness, "the first count", |a| counted(a, ""));
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("Selected: 3 files")
            .next()
            .is_some()
    );
    // Typing a glob (the form's text, as the field edits it) recounts after a pause.
    {
        let app = harness.state_mut().as_mut().unwrap();
        app.state.settings.include = "src/**".into();
        app.state.settings.globs_edited = Some(std::time::Instant::now());
    }
    wait_until(&mut harness, "the new count", |a| counted(a, "src/**"));
    harness.step();
    assert!(
        harness
            .query_all_by_label_contains("Selected: 2 files")
            .next()
            .is_some()
    );
    {
        let app = harness.state_mut().as_mut().unwrap();
        app.state.settings.include = "src/[".into();
        app.state.settings.globs_edited = Some(std::time::Instant::now());
    }
    wait_until(&mut harness, "the glob error", |a| counted(a, "src/["));
    let (_, _, counts) = app(&harness).state.settings.glob_counts.clone().unwrap();
    assert!(counts.is_err(), "{counts:?}");
    // Nothing was saved.
    let project = world.store().projects().unwrap().remove(0);
    assert!(project.settings.context_include.is_empty());
}

#[test]
fn the_usage_tab_plots_tokens_per_model_and_costs_them_from_the_price_table() {
    let (world, prefs) = world();
    world.server.push(
        "POST",
        "/api/chat",
        ollama_stream(&["Sure."], Duration::from_millis(5)),
    );
    let mut harness = harness(&world.data, prefs);
    open_chat(&mut harness);
    send(&mut harness, "hello");
    wait_until(&mut harness, "the reply", |a| {
        a.state
            .chat()
            .is_some_and(|c| c.streaming.is_none() && c.messages.len() == 2)
    });
    harness.get_by_label("Usage").click();
    wait_until(&mut harness, "the usage report", |a| {
        a.state.usage.as_ref().is_some_and(|u| !u.models.is_empty())
    });
    harness.run_steps(3);
    let (input, output) = (
        fake_provider::INPUT_TOKENS.to_string(),
        fake_provider::OUTPUT_TOKENS.to_string(),
    );
    assert!(harness.query_by_label("tokens per day by model").is_some());
    // The model in the top bar and in the totals.
    let named = harness.query_all_by_label("fake · test-model").count();
    assert_eq!(named, 2);
    assert!(harness.query_all_by_label(&input).next().is_some());
    assert!(harness.query_all_by_label(&output).next().is_some());
    assert!(harness.query_by_label("no price").is_some());

    // A price set in Settings costs the model's tokens.
    harness.get_by_label("⚙ Settings").click();
    harness.run_steps(3);
    for (field, typed) in [
        ("Price of", "test-model"),
        ("input", "1000000"),
        ("output", "0"),
    ] {
        harness.get_by_label(field).focus();
        harness.step();
        harness.get_by_label(field).type_text(typed);
        harness.step();
    }
    // (Through the accessibility tree: the settings window is taller than the test's.)
    harness.get_by_label("Set price").click_accesskit();
    wait_until(&mut harness, "the price", |a| {
        a.state.prices.contains_key("test-model")
    });
    let cost = app(&harness).state.usage.as_ref().unwrap().cost;
    assert_eq!(cost, Some(fake_provider::INPUT_TOKENS as f64));
}

#[test]
fn settings_offer_a_starter_rules_file_and_keep_rules_per_mode() {
    let (world, prefs) = world();
    let mut harness = harness(&world.data, prefs);
    wait_until(&mut harness, "the project", |a| a.state.project.is_some());
    harness.get_by_label("⚙ Settings").click();
    harness.run_steps(3);
    harness
        .get_by_label("Create a starter AI_RULES.md")
        .click_accesskit();
    wait_until(&mut harness, "the rules file", |a| {
        a.state
            .project
            .as_ref()
            .is_some_and(|p| p.tabs.iter().any(|t| t.path == "AI_RULES.md"))
    });
    let written = std::fs::read_to_string(world.root.join("AI_RULES.md")).unwrap();
    assert!(written.starts_with("# Rules for AI assistants"));
    assert_eq!(common::git(&world.root, &["status", "--porcelain"]), "");

    harness.get_by_label("security").click_accesskit();
    harness.run_steps(2);
    let field = "Sent after AI_RULES.md in security mode only (empty: none)";
    harness.get_by_label(field).focus();
    harness.step();
    harness
        .get_by_label(field)
        .type_text("Check every SQL query.");
    harness.step();
    harness.get_by_label("Save rules").click_accesskit();
    let project_id = app(&harness).state.project.as_ref().unwrap().project.id;
    let start = std::time::Instant::now();
    loop {
        harness.step();
        let saved = world
            .store()
            .project(project_id)
            .unwrap()
            .settings
            .mode_rules;
        if saved.get("security").map(String::as_str) == Some("Check every SQL query.") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "saved: {saved:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn settings_show_a_providers_keys_by_fingerprint_and_remove_one() {
    let (world, prefs) = world();
    let app = tandem_core::app::App::open_in(Some(&world.data), common::environment()).unwrap();
    app.add_key("fake", "sk-first-key-0001").unwrap();
    app.add_key("fake", "sk-second-key-0002").unwrap();
    let keys = app.provider_keys("fake").unwrap();
    assert_eq!(keys.len(), 2);
    drop(app);
    let mut harness = harness(&world.data, prefs);
    harness.get_by_label("⚙ Settings").click();
    wait_until(&mut harness, "the keys", |a| {
        a.state
            .provider_keys
            .get("fake")
            .is_some_and(|k| k.len() == 2)
    });
    harness.run_steps(3);
    assert!(
        harness
            .query_by_label("2 keys (rotated on quota errors):")
            .is_some()
    );
    // Each key by its fingerprint; never the key itself.
    for key in &keys {
        assert!(
            harness.query_by_label(&key.fingerprint).is_some(),
            "{key:?}"
        );
    }
    assert!(!shown_containing(&mut harness, "sk-first"));
    // The ✖ on the second key's row, just right of its fingerprint.
    let second = harness.get_by_label(&keys[1].fingerprint).rect();
    let remove = harness
        .query_all_by_label("✖")
        .filter(|b| (b.rect().center().y - second.center().y).abs() < 4.0)
        .filter(|b| b.rect().left() >= second.right())
        .min_by(|a, b| a.rect().left().total_cmp(&b.rect().left()))
        .expect("a remove button beside the second key");
    remove.click_accesskit();
    wait_until(&mut harness, "one key left", |a| {
        a.state
            .provider_keys
            .get("fake")
            .is_some_and(|k| k.len() == 1)
    });
    let app = tandem_core::app::App::open_in(Some(&world.data), common::environment()).unwrap();
    let left = app.provider_keys("fake").unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].fingerprint, keys[0].fingerprint);
}
