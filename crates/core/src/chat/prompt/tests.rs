//! Prompt assembly: modes, rules, history, and fitting the window.

use super::*;
use crate::store::{ApprovalState, Message};

/// The project's files as a turn walks them (sizes asked while packing).
fn walk(root: &std::path::Path) -> Walk {
    let options = ContextOptions {
        budget_tokens: 0,
        ..ContextOptions::default()
    };
    Walk::new(root, &options).unwrap()
}

fn message(id: i64, role: Role, content: &str, status: MessageStatus) -> Message {
    Message {
        id,
        chat_id: 1,
        role,
        content: content.into(),
        status,
        approval_state: None::<ApprovalState>,
        commit_hash: None,
        source_commit_hash: None,
        error: None,
        model: None,
        input_tokens: None,
        output_tokens: None,
        plan_base: None,
        reverted_by: None,
        approval_note: None,
        created_at: 0,
        updated_at: 0,
    }
}

#[test]
fn modes_have_their_prompts_and_rules_are_appended() {
    let none = ProjectRules::default();
    let build = system_prompt(ChatMode::Build, &none);
    assert!(build.contains("<tandem-write"));
    let tabs = ProjectRules {
        all_modes: Some("Use tabs.\n"),
        ..none
    };
    let ask = system_prompt(ChatMode::Ask, &tabs);
    assert!(ask.contains("never change files"));
    assert!(ask.ends_with("Use tabs.\n"));
    assert!(ask.contains("AI_RULES.md"));
    let blank = ProjectRules {
        all_modes: Some("  "),
        this_mode: Some("\n"),
        ..none
    };
    assert_eq!(system_prompt(ChatMode::Build, &blank), build);
}

#[test]
fn mode_rules_follow_the_project_rules_and_security_gets_its_rules_and_the_last_change() {
    let rules = ProjectRules {
        all_modes: Some("Use tabs."),
        this_mode: Some("Never touch migrations."),
        security: Some("All SQL goes through parameters."),
        last_change: Some((
            "commit abc1234 \"add login\"",
            "+let q = format!(\"{id}\");\n",
        )),
    };
    let build = system_prompt(ChatMode::Build, &rules);
    let (tabs, own) = (
        build.find("Use tabs.").unwrap(),
        build.find("Never touch").unwrap(),
    );
    assert!(tabs < own, "{build}");
    assert!(build.contains("rules for build mode"));
    // Security rules and the diff only in Security mode.
    assert!(!build.contains("SECURITY_RULES.md") && !build.contains("add login"));
    let security = system_prompt(ChatMode::Security, &rules);
    assert!(security.contains("<tandem-security-finding"));
    assert!(security.contains("All SQL goes through parameters."));
    assert!(security.contains("commit abc1234 \"add login\""));
    assert!(security.contains("```diff\n+let q = format!"));
    let long = "x".repeat(LAST_CHANGE_MAX_CHARS + 10);
    let cut = system_prompt(
        ChatMode::Security,
        &ProjectRules {
            last_change: Some(("commit 1", &long)),
            ..ProjectRules::default()
        },
    );
    assert!(cut.contains("The diff is cut here"));
}

#[test]
fn history_strips_thinking_and_skips_unfinished_turns() {
    let messages = vec![
        message(1, Role::User, "first", MessageStatus::Complete),
        message(
            2,
            Role::Assistant,
            "<think>secret plan</think>Answer one",
            MessageStatus::Complete,
        ),
        message(3, Role::User, "second (failed)", MessageStatus::Complete),
        message(4, Role::Assistant, "", MessageStatus::Error),
        message(5, Role::User, "third", MessageStatus::Complete),
        message(6, Role::Assistant, "partial", MessageStatus::Cancelled),
    ];
    let turns = history(&messages, 10);
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].0.content, "first");
    assert_eq!(turns[0].1.content, "Answer one");
    assert_eq!(turns[1].1.content, "partial");
    assert_eq!(history(&messages, 1).len(), 1);
    assert_eq!(history(&messages, 1)[0].0.content, "third");
}

fn project(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    dir
}

fn turn(i: usize, size: usize) -> (ChatMessage, ChatMessage) {
    (
        ChatMessage::new(ChatRole::User, format!("question {i} {}", "q".repeat(size))),
        ChatMessage::new(
            ChatRole::Assistant,
            format!("answer {i} {}", "a".repeat(size)),
        ),
    )
}

#[test]
fn everything_fits_in_a_large_window() {
    let dir = project(&[("src/main.rs", "fn main() {}\n".into())]);
    let cache = ContextCache::default();
    let (messages, breakdown) = assemble(
        PromptInputs {
            system: "SYSTEM".into(),
            history: vec![turn(1, 10)],
            prompt: "do it",
            window: 100_000,
            reply_reserve: 4_000,
            estimate_scale: 1.0,
            walk: &walk(dir.path()),
            context: ContextOptions::default(),
        },
        &cache,
    )
    .unwrap();
    assert_eq!(messages.len(), 4);
    assert!(messages[0].content.starts_with("SYSTEM"));
    assert!(messages[0].content.contains("src/main.rs"));
    assert_eq!(messages[3].content, "do it");
    assert_eq!(breakdown.turns_dropped, 0);
    assert_eq!(breakdown.files_included, 1);
    assert!(breakdown.fits());
}

#[test]
fn a_tight_window_drops_old_history_then_lists_files_by_path() {
    let big = "x".repeat(4_000);
    let dir = project(&[
        ("a_big.rs", big.clone()),
        ("b_big.rs", big.clone()),
        ("c_small.rs", "small\n".into()),
    ]);
    let cache = ContextCache::default();
    let history: Vec<_> = (0..6).map(|i| turn(i, 400)).collect();
    let (messages, breakdown) = assemble(
        PromptInputs {
            system: "S".into(),
            history,
            prompt: "fix it",
            window: 2_500,
            reply_reserve: 500,
            estimate_scale: 1.0,
            walk: &walk(dir.path()),
            context: ContextOptions::default(),
        },
        &cache,
    )
    .unwrap();
    assert!(breakdown.turns_dropped > 0, "{breakdown:?}");
    assert!(!breakdown.files_listed.is_empty(), "{breakdown:?}");
    assert!(breakdown.fits(), "{breakdown:?}");
    // The newest turns are the ones kept.
    let kept_turns = (messages.len() - 2) / 2;
    assert_eq!(kept_turns + breakdown.turns_dropped, 6);
    if kept_turns > 0 {
        assert!(messages[messages.len() - 2].content.starts_with("answer 5"));
    }
    assert!(
        messages[0].content.contains("a_big.rs")
            || breakdown.files_listed.contains(&"a_big.rs".to_string())
    );
}

#[test]
fn a_prompt_larger_than_the_window_is_a_clear_error() {
    let dir = project(&[]);
    let cache = ContextCache::default();
    let prompt = "word ".repeat(10_000);
    let err = assemble(
        PromptInputs {
            system: "S".into(),
            history: Vec::new(),
            prompt: &prompt,
            window: 4_096,
            reply_reserve: 1_024,
            estimate_scale: 1.0,
            walk: &walk(dir.path()),
            context: ContextOptions::default(),
        },
        &cache,
    )
    .unwrap_err();
    assert!(matches!(err, PromptError::TooLarge { .. }), "{err}");
}

#[test]
fn thousands_of_paths_become_an_outline_that_fits_a_small_window() {
    let mut files: Vec<(String, String)> = Vec::new();
    for d in 0..60 {
        for f in 0..50 {
            files.push((
                format!("src/module_{d:02}/file_{f:02}.rs"),
                format!("pub fn f_{f}() {{ /* {} */ }}\n", "x".repeat(2000)),
            ));
        }
    }
    let refs: Vec<(&str, String)> = files.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
    let dir = project(&refs);
    let cache = ContextCache::default();
    for (mode_budget, what) in [(usize::MAX, "Build"), (0, "Agent: paths only")] {
        let (messages, breakdown) = assemble(
            PromptInputs {
                system: "SYSTEM".into(),
                history: Vec::new(),
                prompt: "fix src/module_42/file_07.rs",
                window: 8192,
                reply_reserve: 2048,
                estimate_scale: 1.0,
                walk: &walk(dir.path()),
                context: ContextOptions {
                    budget_tokens: mode_budget,
                    priority: vec!["src/module_42/file_07.rs".into()],
                    ..ContextOptions::default()
                },
            },
            &cache,
        )
        .unwrap();
        assert!(breakdown.fits(), "{what}: {breakdown:?}");
        let system = &messages[0].content;
        assert!(
            crate::tokens::estimate(system) <= 8192 - 2048,
            "{what}: {} tokens",
            crate::tokens::estimate(system)
        );
        assert!(system.contains("by folder"), "{what}: {system}");
        // Counted, not dropped: every file is included, listed or in a folder's count.
        let listed = breakdown.files_listed.len();
        assert!(
            system.contains(&format!("- src/ ({listed} files)")),
            "{what}: {system}"
        );
        assert_eq!(
            breakdown.files_listed.len() + breakdown.files_included,
            3000
        );
        // The folder of the file the prompt is about is opened first.
        assert!(
            system.contains("- src/module_42/file_07.rs\n")
                || system.contains("src/module_42/file_07.rs\n```"),
            "{what}: {system}"
        );
    }
}

#[test]
fn the_names_not_sent_take_a_sixteenth_when_files_are_ranked_a_quarter_in_the_agents_modes() {
    let mut files: Vec<(String, String)> = Vec::new();
    for d in 0..60 {
        for f in 0..50 {
            files.push((
                format!("src/module_{d:02}/file_{f:02}.rs"),
                format!("pub fn f_{f}() {{ /* {} */ }}\n", "x".repeat(200)),
            ));
        }
    }
    let refs: Vec<(&str, String)> = files.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
    let dir = project(&refs);
    let cache = ContextCache::default();
    let listing = |budget_tokens, only_priority| {
        let (messages, breakdown) = assemble(
            PromptInputs {
                system: "SYSTEM".into(),
                history: Vec::new(),
                prompt: "fix it",
                window: 32_768,
                reply_reserve: 8_192,
                estimate_scale: 1.0,
                walk: &walk(dir.path()),
                context: ContextOptions {
                    budget_tokens,
                    only_priority,
                    ..ContextOptions::default()
                },
            },
            &cache,
        )
        .unwrap();
        assert!(breakdown.fits(), "{breakdown:?}");
        let system = &messages[0].content;
        let start = system.find("Other files").expect("a listing");
        crate::tokens::estimate(&system[start..])
    };
    // The room for the codebase: the window less the reply, the system prompt and the prompt.
    let room = 32_768 - 8_192 - 20;
    let build = listing(usize::MAX, false);
    assert!(
        build <= room / 16 && build > room / 32,
        "Build: {build} tokens"
    );
    for (budget, only) in [(0, false), (usize::MAX, true)] {
        let agent = listing(budget, only);
        assert!(
            agent > room / 8 && agent <= room / 4,
            "Agent: {agent} tokens"
        );
    }
}

#[test]
fn the_meter_counts_what_is_sent_and_the_reply_reserve_against_the_window() {
    let breakdown = ContextBreakdown {
        window: 32_768,
        reply_reserve: 8_192,
        system: 400,
        codebase: 200,
        history: 50,
        prompt: 11,
        ..ContextBreakdown::default()
    };
    // 661 + 8192 = 8853 of 32768: 27%, the figure the percentage stands for.
    assert_eq!(
        breakdown.meter(),
        "661 sent + 8192 reserved for the reply, of 32768 tokens (27%)"
    );
    assert!((breakdown.used_fraction() - 8853.0 / 32768.0).abs() < 1e-6);
    let over = ContextBreakdown {
        window: 1_000,
        reply_reserve: 500,
        prompt: 700,
        ..ContextBreakdown::default()
    };
    assert!(!over.fits());
    assert_eq!(
        over.meter(),
        "700 sent + 500 reserved for the reply, of 1000 tokens (120%)"
    );
}

#[test]
fn a_model_that_counts_more_gets_a_margin_and_the_meter_says_so() {
    let body = "fn helper() -> u32 { 42 }\n".repeat(400);
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("src/f{i:02}.rs"), body.clone()))
        .collect();
    let refs: Vec<(&str, String)> = files.iter().map(|(p, b)| (p.as_str(), b.clone())).collect();
    let dir = project(&refs);
    let cache = ContextCache::default();
    let packed = |scale: f64| {
        assemble(
            PromptInputs {
                system: "SYSTEM".into(),
                history: Vec::new(),
                prompt: "do it",
                window: 32_768,
                reply_reserve: 8_192,
                estimate_scale: scale,
                walk: &walk(dir.path()),
                context: ContextOptions::default(),
            },
            &cache,
        )
        .unwrap()
        .1
    };
    let plain = packed(1.0);
    assert_eq!(plain.margin, 0);
    assert!(plain.fits());
    // A server that counted 1.25 tokens per estimated one: the sent estimate times 1.25
    // fits the window with the reply's room, and the rest of the room is kept free.
    let counted = packed(1.25);
    let room = 32_768 - 8_192;
    assert_eq!(counted.margin, room - (room as f64 / 1.25).floor() as usize);
    assert!(counted.total() as f64 * 1.25 <= room as f64, "{counted:?}");
    assert!(
        counted.files_included < plain.files_included,
        "fewer files fit"
    );
    assert!(counted.fits());
    assert!(
        counted.meter().contains(&format!(
            "+ {} kept free (this model counts more tokens than estimated)",
            counted.margin
        )),
        "{}",
        counted.meter()
    );
    // A scale under 1 (or not a number) is no scale.
    assert_eq!(packed(0.5).margin, 0);
    assert_eq!(packed(f64::NAN).margin, 0);
}

/// Thousands of tiny files in one folder: each costs more in its header (path, fences) than
/// in its content. Counted with each file, they fill the room and the rest are listed; counted
/// after the packing (as before), the shrinking to fit gave up at nothing sent at all.
#[test]
fn thousands_of_tiny_files_fill_the_room_and_the_rest_are_listed() {
    let files: Vec<(String, String)> = (0..4_000)
        .map(|i| (format!("many/m{i}.txt"), format!("{i}\n")))
        .collect();
    let files: Vec<(&str, String)> = files.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
    let dir = project(&files);
    let cache = ContextCache::default();
    let (_, breakdown) = assemble(
        PromptInputs {
            system: "S".into(),
            history: Vec::new(),
            prompt: "fix it",
            window: 8_192,
            reply_reserve: 1_024,
            estimate_scale: 1.0,
            walk: &walk(dir.path()),
            context: ContextOptions::default(),
        },
        &cache,
    )
    .unwrap();
    assert!(breakdown.fits(), "{breakdown:?}");
    assert!(
        breakdown.included.len() > 300,
        "{}",
        breakdown.included.len()
    );
    assert_eq!(
        breakdown.included.len() + breakdown.files_listed.len(),
        4_000
    );
    // Most of the room is used.
    assert!(breakdown.codebase > 8_192 / 2, "{breakdown:?}");
}
