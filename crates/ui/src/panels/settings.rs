//! The settings window: providers and keys, chat defaults, context globs, the agent (in
//! `agent_settings`), appearance.

use crate::agent_commands::AgentCommand;
use crate::command::Command;
use crate::model::agent_state::CliAgentView;
use crate::model::state::{AppState, SendKey, Theme};
use crate::widgets::theme;
use tandem_core::llm::ProviderKind;

pub fn show(ctx: &egui::Context, state: &mut AppState, commands: &mut Vec<Command>) {
    if !state.settings_open {
        return;
    }
    let mut open = true;
    // Taller than the window otherwise (providers, chat, agent, appearance): it scrolls.
    let height = (ctx.content_rect().height() - 80.0).max(200.0);
    egui::Window::new("Settings")
        .open(&mut open)
        .default_width(560.0)
        .default_height(height.min(720.0))
        .max_height(height)
        .vscroll(true)
        .show(ctx, |ui| {
            // Each section in its own id scope: what arrives late in one (a provider's
            // keys, the model's profile) must not renumber the widgets of the next, or a
            // field being typed in loses its focus.
            type Section = fn(&mut egui::Ui, &mut AppState, &mut Vec<Command>);
            let sections: [(&str, Section); 7] = [
                ("providers", providers),
                ("model", model),
                ("chat", chat),
                ("prompts", crate::panels::prompt_library::show),
                ("prices", crate::panels::usage::prices),
                ("agent", crate::panels::agent_settings::show),
                ("appearance", |ui, state, commands| {
                    appearance(ui, state, commands)
                }),
            ];
            for (i, (name, section)) in sections.into_iter().enumerate() {
                if i > 0 {
                    ui.separator();
                }
                ui.push_id(name, |ui| section(ui, state, commands));
            }
        });
    if !open {
        commands.push(Command::CloseSettings);
    }
}

fn providers(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.heading("Providers");
    ui.push_id("list", |ui| provider_list(ui, state, commands));
    provider_form(ui, state, commands);
}

/// The configured providers, each with its models' state and its keys or login.
fn provider_list(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    for provider in &state.providers {
        ui.horizontal(|ui| {
            ui.strong(&provider.name);
            ui.label(format!("{} · {}", provider.kind, provider.base_url));
            // A CLI agent's models come from its own configuration, whether or not it is
            // installed: its login line below says whether it can run.
            match state.models.get(&provider.name) {
                Some(Ok(_)) if provider.kind.is_cli_agent() => {}
                Some(Ok(models)) => {
                    let count = match models.len() {
                        1 => "✔ 1 model".to_string(),
                        n => format!("✔ {n} models"),
                    };
                    ui.colored_label(theme::OK, count);
                }
                Some(Err(e)) => {
                    ui.colored_label(theme::ERROR, "✖").on_hover_text(e);
                }
                None => {}
            }
            if provider.kind.is_cli_agent() {
                if ui.small_button("Check login").clicked() {
                    commands.push(AgentCommand::CliAgentStatus(provider.name.clone()).into());
                }
            } else if ui.small_button("Test connection").clicked() {
                commands.push(Command::TestProvider(provider.name.clone()));
            }
            if ui.small_button("Edit").clicked() {
                commands.push(Command::EditProvider(provider.id));
            }
            if ui.small_button("Remove").clicked() {
                commands.push(Command::DeleteProvider(provider.id));
            }
        });
        if let Some(Err(error)) = state.models.get(&provider.name) {
            ui.colored_label(theme::ERROR, error);
        }
        if provider.kind.is_cli_agent() {
            cli_agent(
                ui,
                &provider.name,
                state.agent.cli_agents.get(&provider.name),
                commands,
            );
        } else if let Some(keys) = state.provider_keys.get(&provider.name) {
            keys_row(ui, &provider.name, keys, commands);
        }
    }
}

/// Adding a provider, or editing one.
fn provider_form(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.add_space(6.0);
    let form = &mut state.settings;
    ui.strong(if form.editing.is_some() {
        "Edit provider"
    } else {
        "Add a provider"
    });
    egui::Grid::new("provider_form")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("Name");
            ui.text_edit_singleline(&mut form.name);
            ui.end_row();
            ui.label("Kind");
            egui::ComboBox::new("kind", "")
                .selected_text(
                    ProviderKind::ALL[form.kind_index.min(ProviderKind::ALL.len() - 1)].as_str(),
                )
                .show_index(ui, &mut form.kind_index, ProviderKind::ALL.len(), |i| {
                    ProviderKind::ALL[i].as_str()
                });
            ui.end_row();
            let kind = ProviderKind::ALL[form.kind_index.min(ProviderKind::ALL.len() - 1)];
            ui.label(if kind.is_cli_agent() {
                "Program"
            } else {
                "Base URL"
            });
            ui.add(
                egui::TextEdit::singleline(&mut form.base_url).hint_text(
                    ProviderKind::ALL[form.kind_index.min(ProviderKind::ALL.len() - 1)]
                        .default_base_url(&tandem_core::environment::Environment::default()),
                ),
            );
            ui.end_row();
            ui.label("Default model");
            ui.text_edit_singleline(&mut form.model);
            ui.end_row();
            ui.label("Context length override");
            ui.add(
                egui::TextEdit::singleline(&mut form.context_length)
                    .hint_text("tokens (empty: as reported)"),
            );
            ui.end_row();
            ui.label("API key");
            ui.vertical(|ui| {
                ui.add(
                    egui::TextEdit::singleline(&mut form.key)
                        .password(true)
                        .hint_text("stored in the OS keychain, else a 0600 file"),
                );
                ui.checkbox(
                    &mut form.add_key,
                    "Add to its keys (rotate on quota errors)",
                );
            });
            ui.end_row();
        });
    ui.horizontal(|ui| {
        if ui
            .button(if form.editing.is_some() {
                "Save provider"
            } else {
                "Add provider"
            })
            .clicked()
        {
            if !form.key.trim().is_empty() {
                commands.push(Command::SaveKey(form.name.trim().to_string()));
            }
            commands.push(Command::SaveProvider);
        }
        if form.editing.is_some() && ui.button("Cancel").clicked() {
            *form = Default::default();
        }
    });
    ui.weak("Keys can also come from OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY. They are never stored in the database.");
}

/// A provider's keys by fingerprint: the one in use marked, stored ones removable.
fn keys_row(
    ui: &mut egui::Ui,
    name: &str,
    keys: &[tandem_core::app::KeyInfo],
    commands: &mut Vec<Command>,
) {
    if keys.is_empty() {
        return;
    }
    ui.indent(("keys", name), |ui| {
        ui.horizontal_wrapped(|ui| {
            ui.weak(match keys.len() {
                1 => "Key:".to_string(),
                n => format!("{n} keys (rotated on quota errors):"),
            });
            for key in keys {
                let text = egui::RichText::new(&key.fingerprint).monospace();
                match key.in_use {
                    true => ui
                        .label(text.strong())
                        .on_hover_text(format!("in use · {}", key.source)),
                    false => ui.label(text).on_hover_text(&key.source),
                };
                if key.in_use && keys.len() > 1 {
                    ui.weak("in use");
                }
                if key.source == "stored"
                    && ui
                        .small_button("✖")
                        .on_hover_text("Remove this key")
                        .clicked()
                {
                    commands.push(Command::RemoveKey {
                        provider: name.to_string(),
                        fingerprint: key.fingerprint.clone(),
                    });
                }
            }
        });
    });
}

/// A CLI agent provider: installed and logged in, its login (the code and the link it
/// prints), and where its work happens.
fn cli_agent(
    ui: &mut egui::Ui,
    name: &str,
    view: Option<&CliAgentView>,
    commands: &mut Vec<Command>,
) {
    use tandem_core::app::LoginStatus;
    ui.indent(("cli_agent", name), |ui| {
        let status = view.and_then(|v| v.status.as_ref());
        let first = |s: &str| s.lines().next().unwrap_or("").to_string();
        let logging_in = view.is_some_and(|v| v.logging_in);
        ui.horizontal_wrapped(|ui| {
            match status {
                None => {
                    ui.weak("Runs in a scratch copy of the project; its changes come back as a proposal.");
                }
                Some(LoginStatus::Missing(why)) => {
                    ui.colored_label(theme::ERROR, format!("✖ not installed: {why}"));
                }
                Some(LoginStatus::LoggedIn(said)) => {
                    ui.colored_label(theme::OK, format!("✔ logged in ({})", first(said)));
                }
                Some(LoginStatus::LoggedOut(said)) => {
                    ui.colored_label(theme::WARN, format!("not logged in ({})", first(said)));
                }
                Some(LoginStatus::Unknown(said)) => {
                    ui.weak(said);
                }
            }
            if logging_in {
                ui.spinner();
            } else if matches!(status, Some(LoginStatus::LoggedOut(_)))
                && ui.small_button("Log in").clicked()
            {
                commands.push(AgentCommand::CliAgentLogin(name.to_string()).into());
            }
        });
        if let Some(view) = view.filter(|v| !v.login_lines.is_empty()) {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                for line in &view.login_lines {
                    ui.add(egui::Label::new(egui::RichText::new(line).monospace()).selectable(true));
                }
            });
        }
    });
}

/// The chosen model: what the check-up found, and the person's settings for it.
fn model(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.heading("Model");
    let chosen = match (&state.provider, &state.model) {
        (Some(p), Some(m)) => format!("{p} · {m}"),
        _ => "the default model".to_string(),
    };
    let form = &mut state.settings;
    ui.horizontal(|ui| {
        ui.strong(chosen);
        if ui
            .button("Check model")
            .on_hover_text(
                "Asks the server for the context window and capabilities, and tries one native tool call",
            )
            .clicked()
        {
            commands.push(Command::CheckModel);
        }
    });
    if let Some(profile) = &form.profile {
        let window = match (profile.context_length(), &profile.info.context_source) {
            (Some(n), Some(source)) if profile.settings.context_length.is_none() => {
                format!("{n} tokens (from {source})")
            }
            (Some(n), _) => format!("{n} tokens"),
            (None, _) => "unknown: 8192 assumed".to_string(),
        };
        let tools = match profile.tools_probe {
            Some(true) => "native (a probe call came back)",
            Some(false) => "text protocol (the probe got no native call)",
            None if profile.info.supports_tools => "native, as the server says (not probed)",
            None => "not probed yet",
        };
        egui::Grid::new("model_profile")
            .num_columns(2)
            .show(ui, |ui| {
                ui.label("Context window");
                ui.label(window);
                ui.end_row();
                ui.label("Tool calls");
                ui.label(tools);
                ui.end_row();
                ui.label("Images");
                ui.label(if profile.info.supports_images {
                    "yes"
                } else {
                    "no"
                });
                ui.end_row();
                if let Some(ratio) = profile.token_ratio {
                    ui.label("Tokens");
                    ui.label(format!("its server counts {ratio:.2}× Tandem's estimate"))
                        .on_hover_text(
                            "Each request keeps the difference free, so the prompt fits the \
                             window as the server counts it.",
                        );
                    ui.end_row();
                }
                if profile.edit_blocks > 0 {
                    ui.label("Search-replace edits");
                    ui.label(format!(
                        "{} of {} failed",
                        profile.edit_failures, profile.edit_blocks
                    ));
                    ui.end_row();
                }
            });
    }
    egui::Grid::new("model_settings")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("Context length");
            ui.add(
                egui::TextEdit::singleline(&mut form.model_context)
                    .hint_text("tokens (empty: as found)"),
            );
            ui.end_row();
            ui.label("Temperature");
            ui.add(
                egui::TextEdit::singleline(&mut form.model_temperature)
                    .hint_text("0–2 (empty: the model's)"),
            );
            ui.end_row();
            ui.label("Max output");
            ui.add(
                egui::TextEdit::singleline(&mut form.model_max_output)
                    .hint_text("tokens (empty: a quarter of the window)"),
            );
            ui.end_row();
            ui.label("Reasoning effort")
                .on_hover_text("For reasoning models that take it (OpenAI o-series, GPT-5)");
            let shown = form.model_effort.map_or("default", |e| e.as_str());
            egui::ComboBox::from_id_salt("model_effort")
                .selected_text(shown)
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut form.model_effort, None, "default");
                    for effort in tandem_core::llm::ReasoningEffort::ALL {
                        ui.selectable_value(&mut form.model_effort, Some(effort), effort.as_str());
                    }
                });
            ui.end_row();
        });
    if ui.button("Save model settings").clicked() {
        commands.push(Command::SaveModelSettings);
    }
}

fn chat(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.heading("Chat");
    ui.horizontal(|ui| {
        ui.label("History turns sent with each prompt");
        ui.add(
            egui::TextEdit::singleline(&mut state.settings.history_turns)
                .hint_text("10")
                .desired_width(50.0),
        );
        if ui.button("Save").clicked() {
            commands.push(Command::SaveHistoryTurns);
        }
    });
    let mut auto = state.auto_approve;
    if ui
        .checkbox(
            &mut auto,
            "Auto-approve: apply each proposal when the reply ends",
        )
        .changed()
    {
        commands.push(Command::ToggleAutoApprove);
    }
    if let Some(project) = &state.project {
        ui.strong(format!("Context for {}", project.project.name));
        if state.settings.include.is_empty() && state.settings.exclude.is_empty() {
            state.settings.include = project.project.settings.context_include.join(", ");
            state.settings.exclude = project.project.settings.context_exclude.join(", ");
        }
        let form = &mut state.settings;
        let mut edited = false;
        egui::Grid::new("globs").num_columns(2).show(ui, |ui| {
            ui.label("Include globs");
            edited |= ui
                .add(
                    egui::TextEdit::singleline(&mut form.include)
                        .hint_text("src/**, docs/*.md (empty: all)"),
                )
                .changed();
            ui.end_row();
            ui.label("Exclude globs");
            edited |= ui
                .add(
                    egui::TextEdit::singleline(&mut form.exclude)
                        .hint_text("**/*.snap, fixtures/**"),
                )
                .changed();
            ui.end_row();
        });
        if edited || form.glob_counts.is_none() && form.globs_edited.is_none() {
            form.globs_edited = Some(std::time::Instant::now());
        }
        // The counts for exactly the globs shown (they follow the text as you type).
        match &form.glob_counts {
            Some((include, exclude, counts))
                if *include == form.include && *exclude == form.exclude =>
            {
                match counts {
                    Ok(counts) => ui.label(format!("Selected: {counts}")),
                    Err(e) => ui.colored_label(crate::widgets::theme::ERROR, e),
                };
            }
            _ => {
                ui.weak("Counting…");
            }
        }
        if ui.button("Save").clicked() {
            commands.push(Command::SaveContextGlobs);
        }
        ui.strong(format!("Check for {}", project.project.name));
        ui.weak(
            "Run on every Build proposal in a scratch copy before you see it; a failure goes \
             back to the model.",
        );
        let form = &mut state.settings;
        if !form.check_edited {
            form.check_command = project
                .project
                .settings
                .check_command
                .clone()
                .unwrap_or_default();
        }
        ui.horizontal(|ui| {
            let edit = egui::TextEdit::singleline(&mut form.check_command)
                .hint_text("e.g. cargo check, npx tsc --noEmit (empty: none)");
            if ui.add(edit).changed() {
                form.check_edited = true;
            }
            if ui.button("Save").clicked() {
                commands.push(Command::SaveCheckCommand);
            }
        });
    }
    crate::panels::project_rules::show(ui, state, commands);
}

fn appearance(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    ui.heading("Appearance and keys");
    ui.horizontal(|ui| {
        ui.label("Theme");
        for (theme, label) in [
            (Theme::Dark, "Dark"),
            (Theme::Light, "Light"),
            (Theme::System, "Follow system"),
        ] {
            if ui
                .selectable_label(state.prefs.theme == theme, label)
                .clicked()
            {
                commands.push(Command::SetTheme(theme));
            }
        }
    });
    ui.horizontal(|ui| {
        ui.label("Font size");
        let mut size = state.prefs.font_size;
        if ui.add(egui::Slider::new(&mut size, 10.0..=24.0)).changed() {
            commands.push(Command::SetFontSize(size));
        }
    });
    ui.horizontal(|ui| {
        ui.label("Send with");
        for (key, label) in [
            (SendKey::Enter, "Enter"),
            (SendKey::CtrlEnter, "Ctrl+Enter"),
        ] {
            if ui
                .selectable_label(state.prefs.send_key == key, label)
                .clicked()
            {
                commands.push(Command::SetSendKey(key));
            }
        }
    });
}
