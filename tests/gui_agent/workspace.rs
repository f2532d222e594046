//! The chat's workspace in the review: a command run in it, cleaned from settings.

use super::*;

/// The review's Run button runs its command (prefilled with the project's check command) in
/// the Agent chat's workspace, where the proposal already is, and shows the output; Settings
/// lists the workspace with its size and cleans it; the proposal stays to be reviewed.
#[test]
fn the_review_runs_a_command_in_the_chats_workspace_and_settings_clean_it() {
    let (world, prefs) = agent_world(vec![
        ollama_tool_call(
            "write_file",
            json!({"path": "src/greet.rs", "content": "pub fn greet() {}\n",
                   "description": "add a greeting"}),
        ),
        text("I added `src/greet.rs`."),
    ]);
    {
        let store = world.store();
        let policy = tandem_core::agent::policy::PolicySettings {
            auto_approve_up_to: Some(tandem_core::agent::policy::Risk::Medium),
            ..Default::default()
        };
        store
            .set_setting(tandem_core::store::keys::AGENT_POLICY, &policy)
            .unwrap();
        let mut project = store.projects().unwrap().remove(0);
        project.settings.check_command = Some("cat src/greet.rs".into());
        store
            .update_project_settings(project.id, &project.settings)
            .unwrap();
    }
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Agent", "add a greeting");
    wait_until(&mut harness, "the proposal", |a| {
        a.state.review().is_some() && a.state.chat().is_some_and(|c| c.streaming.is_none())
    });
    harness.step();
    let chat = app(&harness).state.chat().unwrap().chat.id;
    assert!(
        harness
            .query_all_by_value("cat src/greet.rs")
            .next()
            .is_some()
    );
    harness.get_by_label("Run").click();
    harness.step();
    wait_until(&mut harness, "the run's output", |a| {
        a.state
            .workspaces
            .runs
            .get(&chat)
            .is_some_and(|r| r.last.is_some())
    });
    harness.step();
    let run = app(&harness).state.workspaces.runs[&chat].clone();
    let ran = run.last.unwrap().unwrap();
    // The command saw the proposed file, which the project does not have yet.
    assert_eq!(
        (ran.exit_code, ran.stdout.as_str()),
        (Some(0), "pub fn greet() {}\n")
    );
    assert!(!world.root.join("src/greet.rs").exists());
    harness.get_by_label("exit code 0");
    let layer = world.data.join("workspaces").join(chat.to_string());
    assert!(layer.is_dir(), "the chat's workspace");

    harness.get_by_label("⚙ Settings").click();
    wait_until(&mut harness, "the workspaces listed", |a| {
        a.state
            .workspaces
            .list
            .as_ref()
            .is_some_and(|l| l.iter().any(|w| w.chat_id == chat && w.bytes > 0))
    });
    harness.run_steps(2);
    harness.get_by_label("Clean").click_accesskit();
    wait_until(&mut harness, "the workspace cleaned", |a| {
        a.state.workspaces.list.as_ref().is_some_and(Vec::is_empty)
    });
    assert!(!layer.exists());
    assert!(app(&harness).state.review().is_some(), "the proposal stays");
}

/// A Build chat's proposal is written only when approved: its review has no Run panel.
#[test]
fn a_build_chats_review_has_no_run_panel() {
    let (world, prefs) = agent_world(vec![text(
        "<tandem-write path=\"src/greet.rs\" description=\"greet\">pub fn greet() {}\n</tandem-write>",
    )]);
    let mut harness = harness(&world.data, prefs);
    start(&mut harness, "Build", "add a greeting");
    wait_until(&mut harness, "the proposal", |a| a.state.review().is_some());
    harness.run_steps(2);
    assert!(has_label(&harness, "Proposal (1 files)"));
    assert!(harness.query_by_label("Run").is_none());
}
