//! The Settings window's commands (`panels::settings`): providers and their keys, the chosen
//! model's settings, and the project's check command, rules and context globs.

use crate::backend::Backend;
use crate::model::state::AppState;

impl AppState {
    /// Opens the Settings window and loads what it shows.
    pub(super) fn open_settings(&mut self, backend: &Backend) {
        self.settings_open = true;
        // The price table comes with the usage report.
        backend.usage(self.usage_scope());
        backend.load_agent_settings();
        backend.load_workspaces();
        // Without a chosen model there is no profile to show (nor an error to make).
        if self.model.is_some() {
            backend.model_profile(self.provider.clone(), self.model.clone(), false);
        }
        self.load_provider_details(backend);
    }

    pub(super) fn load_provider_details(&self, backend: &Backend) {
        for provider in &self.providers {
            match provider.kind.is_cli_agent() {
                true => backend.cli_agent_status(provider.name.clone()),
                false => backend.provider_keys(provider.name.clone()),
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
                backend.save_model_settings(
                    self.provider.clone(),
                    self.model.clone(),
                    tandem_core::app::GenerationSettings {
                        context_length,
                        temperature,
                        max_output_tokens,
                        reasoning_effort: form.model_effort,
                    },
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
            backend.delete_provider(p.name.clone());
        }
    }

    pub(super) fn save_key(&mut self, provider: String, backend: &Backend) {
        let key = std::mem::take(&mut self.settings.key);
        if !key.trim().is_empty() {
            backend.set_key(provider, key, self.settings.add_key);
        }
    }

    pub(super) fn save_history_turns(&mut self, backend: &Backend) {
        match self.settings.history_turns.trim().parse::<usize>() {
            Ok(turns) => backend.update_chat_settings(move |s| s.history_turns = Some(turns)),
            Err(_) => self.toast("History turns must be a whole number", true),
        }
    }

    pub(super) fn save_check_command(&mut self, backend: &Backend) {
        if let Some(project) = &mut self.project {
            let command = self.settings.check_command.trim();
            project.project.settings.check_command =
                (!command.is_empty()).then(|| command.to_string());
            self.settings.check_edited = false;
            backend.save_project_settings(project.project.clone());
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
            backend.save_project_settings(project.project.clone());
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
            backend.save_project_settings(project.project.clone());
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
                backend.update_provider(record);
            }
            None => backend.add_provider(form.name.trim().to_string(), kind, base_url, settings),
        }
        self.settings = crate::model::state::SettingsForm::default();
    }
}
