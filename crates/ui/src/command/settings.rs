//! The Settings window's commands (`panels::settings`): providers and their keys, the chosen
//! model's settings and check-up, the prompt library, and the project's check command, rules
//! and context globs.

use crate::backend::{Backend, Event};
use crate::calls::{cli_agent_status, save_project_settings};
use crate::model::state::AppState;
use tandem_core::app::NewProvider;

impl AppState {
    /// Opens the Settings window and loads what it shows.
    pub(super) fn open_settings(&mut self, backend: &Backend) {
        self.settings_open = true;
        // The price table comes with the usage report.
        backend.usage(self.usage_scope());
        backend.load_agent_settings();
        crate::workspace_commands::load_workspaces(backend);
        // Without a chosen model there is no profile to show (nor an error to make).
        if self.model.is_some() {
            let (provider, model) = (self.provider.clone(), self.model.clone());
            backend.query_async(
                "loading the model's profile",
                move |app| async move {
                    app.model_profile(provider.as_deref(), model.as_deref())
                        .await
                },
                Event::ModelProfile,
            );
        }
        self.load_provider_details(backend);
    }

    pub(super) fn load_provider_details(&self, backend: &Backend) {
        for provider in &self.providers {
            let name = provider.name.clone();
            match provider.kind.is_cli_agent() {
                true => cli_agent_status(backend, name),
                false => {
                    let provider = name.clone();
                    backend.query(
                        "listing the provider's keys",
                        move |app| app.provider_keys(&name),
                        move |keys| Event::ProviderKeys { provider, keys },
                    );
                }
            }
        }
    }

    pub(super) fn save_model_settings(&mut self, backend: &Backend) {
        let form = &self.settings;
        let number = |text: &str, what: &str| -> Result<Option<u32>, String> {
            match text.trim() {
                "" => Ok(None),
                t => t
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map(Some)
                    .ok_or_else(|| format!("{what} must be a whole number above 0")),
            }
        };
        let temperature = match form.model_temperature.trim() {
            "" => Ok(None),
            t => t
                .parse::<f32>()
                .ok()
                .filter(|t| (0.0..=2.0).contains(t))
                .map(Some)
                .ok_or_else(|| "The temperature must be between 0 and 2".to_string()),
        };
        let parsed = (
            number(&form.model_context, "The context length"),
            temperature,
            number(&form.model_max_output, "The output limit"),
        );
        match parsed {
            (Ok(context_length), Ok(temperature), Ok(max_output_tokens)) => {
                let settings = tandem_core::app::GenerationSettings {
                    context_length,
                    temperature,
                    max_output_tokens,
                    reasoning_effort: form.model_effort,
                };
                let (provider, model) = (self.provider.clone(), self.model.clone());
                backend.query(
                    "saving the model's settings",
                    move |app| {
                        app.set_model_settings(provider.as_deref(), model.as_deref(), &settings)
                    },
                    Event::ModelProfile,
                );
            }
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => self.toast(e, true),
        }
    }

    /// Fills the provider form with provider `id`, to edit it.
    pub(super) fn edit_provider(&mut self, id: i64) {
        if let Some(p) = self.providers.iter().find(|p| p.id == id) {
            let form = &mut self.settings;
            form.editing = Some(id);
            form.name = p.name.clone();
            form.kind_index = tandem_core::llm::ProviderKind::ALL
                .iter()
                .position(|k| *k == p.kind)
                .unwrap_or(0);
            form.base_url = p.base_url.clone();
            form.model = p.settings.default_model.clone().unwrap_or_default();
            form.context_length = p
                .settings
                .context_length
                .map(|c| c.to_string())
                .unwrap_or_default();
        }
    }

    pub(super) fn delete_provider(&self, id: i64, backend: &Backend) {
        if let Some(p) = self.providers.iter().find(|p| p.id == id) {
            // Its stored key goes with it.
            let name = p.name.clone();
            backend.run("removing the provider", move |app| {
                app.remove_provider(&name)
            });
        }
    }

    pub(super) fn save_key(&mut self, provider: String, backend: &Backend) {
        let key = std::mem::take(&mut self.settings.key);
        if key.trim().is_empty() {
            return;
        }
        // In place of its keys, or with `add` after them (rotated to on quota errors).
        let add = self.settings.add_key;
        let name = provider.clone();
        backend.query(
            "storing the API key",
            move |app| match add {
                true => app.add_key(&name, &key),
                false => app.set_key(&name, &key),
            },
            move |stored| {
                let location = stored.location;
                Event::Log(match stored.keychain_unavailable {
                    Some(why) => format!(
                        "API key for {provider} stored in {location:?} (not in the OS keychain: {why})"
                    ),
                    None => format!("API key for {provider} stored in {location:?}"),
                })
            },
        );
    }

    pub(super) fn save_history_turns(&mut self, backend: &Backend) {
        match self.settings.history_turns.trim().parse::<usize>() {
            Ok(turns) => backend.run("saving a setting", move |app| {
                app.update_chat_settings(move |s| s.history_turns = Some(turns))
            }),
            Err(_) => self.toast("History turns must be a whole number", true),
        }
    }

    pub(super) fn save_check_command(&mut self, backend: &Backend) {
        if let Some(project) = &mut self.project {
            let command = self.settings.check_command.trim();
            project.project.settings.check_command =
                (!command.is_empty()).then(|| command.to_string());
            self.settings.check_edited = false;
            save_project_settings(backend, project.project.clone());
        }
    }

    pub(super) fn save_mode_rules(&mut self, backend: &Backend) {
        if let Some(project) = &mut self.project {
            let mode = self.settings.rules_mode.as_str().to_string();
            let text = self.settings.rules_text.clone();
            let rules = &mut project.project.settings.mode_rules;
            match text.trim().is_empty() {
                true => rules.remove(&mode),
                false => rules.insert(mode, text),
            };
            self.settings.rules_edited = false;
            save_project_settings(backend, project.project.clone());
        }
    }

    pub(super) fn write_starter_rules(&self, backend: &Backend) {
        if let Some(project) = &self.project {
            backend.write_starter_rules(project.project.clone());
        }
    }

    pub(super) fn save_context_globs(&mut self, backend: &Backend) {
        if let Some(project) = &mut self.project {
            let split = crate::model::state::split_globs;
            project.project.settings.context_include = split(&self.settings.include);
            project.project.settings.context_exclude = split(&self.settings.exclude);
            save_project_settings(backend, project.project.clone());
        }
    }

    pub(super) fn save_provider(&mut self, backend: &Backend) {
        let form = &self.settings;
        let kind = tandem_core::llm::ProviderKind::ALL
            .get(form.kind_index)
            .copied()
            .unwrap_or(tandem_core::llm::ProviderKind::Ollama);
        let context_length = match form.context_length.trim() {
            "" => None,
            text => match text.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    self.toast("Context length must be a whole number of tokens", true);
                    return;
                }
            },
        };
        let settings = tandem_core::store::ProviderSettings {
            default_model: Some(form.model.trim().to_string()).filter(|m| !m.is_empty()),
            context_length,
        };
        // Blank: the kind's usual URL (the application layer fills it in).
        let base_url = form.base_url.trim().to_string();
        if form.name.trim().is_empty() {
            self.toast("A provider needs a name", true);
            return;
        }
        match form
            .editing
            .and_then(|id| self.providers.iter().find(|p| p.id == id))
        {
            Some(existing) => {
                let mut record = existing.clone();
                record.name = form.name.trim().to_string();
                record.kind = kind;
                record.base_url = base_url;
                record.settings = settings;
                backend.run("saving the provider", move |app| {
                    app.update_provider(record)
                });
            }
            None => {
                let new = NewProvider {
                    name: form.name.trim().to_string(),
                    kind,
                    base_url: Some(base_url),
                    api_key_env: None,
                    settings,
                };
                backend.run("adding the provider", move |app| app.add_provider(new));
            }
        }
        self.settings = crate::model::state::SettingsForm::default();
    }

    /// Runs the chosen model's check-up (window, native tool calls, images).
    pub(super) fn check_model(&self, backend: &Backend) {
        let (provider, model) = (self.provider.clone(), self.model.clone());
        backend.query_async(
            "checking the model",
            move |app| async move { app.check_model(provider.as_deref(), model.as_deref()).await },
            Event::ModelProfile,
        );
    }
}

/// Saves a prompt of the library.
pub(super) fn save_prompt(id: Option<i64>, name: String, text: String, backend: &Backend) {
    // A new prompt (`id` `None`), or prompt `id` renamed and rewritten.
    backend.run("saving the prompt", move |app| match id {
        Some(id) => app.update_prompt(id, &name, &text),
        None => app.save_prompt(&name, &text),
    });
}

pub(super) fn remove_prompt(name: String, backend: &Backend) {
    backend.run("removing the prompt", move |app| app.remove_prompt(&name));
}

/// Removes a provider's stored key, named by its fingerprint.
pub(super) fn remove_key(provider: String, fingerprint: String, backend: &Backend) {
    backend.run("removing the key", move |app| {
        app.remove_key(&provider, &fingerprint)
    });
}
