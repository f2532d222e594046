//! Model providers with their keys (OS keychain, else the 0600 secrets file, or an
//! environment variable named on the provider), and the models they serve.

use serde::Serialize;

use super::{App, AppError, AppEvent, Result};
use crate::chat::{ChatError, provider_config};
use crate::cli_agents::{LoginStatus, provider};
use crate::llm::secrets::SecretLocation;
use crate::llm::{ModelInfo, ProviderKind};
use crate::store::{GenerationSettings, ModelProfile, ProviderRecord, ProviderSettings};

/// A provider to add.
#[derive(Debug, Clone)]
pub struct NewProvider {
    pub name: String,
    pub kind: ProviderKind,
    /// `None` or blank: the kind's usual URL.
    pub base_url: Option<String>,
    /// The environment variable that holds the key, if it comes from there.
    pub api_key_env: Option<String>,
    pub settings: ProviderSettings,
}

/// Where a provider's key comes from (never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Stored(SecretLocation),
    /// The environment variable named on the provider.
    Environment(String),
    None,
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Stored(location) => write!(f, "{location:?}"),
            KeySource::Environment(var) => write!(f, "environment ({var})"),
            KeySource::None => f.write_str("none"),
        }
    }
}

/// A provider and where its key comes from.
#[derive(Debug, Clone)]
pub struct ProviderRow {
    pub record: ProviderRecord,
    pub key: KeySource,
}

/// One of a provider's keys, named by its fingerprint (never the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    pub fingerprint: String,
    /// `stored` (keychain or file) or the environment variable it came from.
    pub source: String,
    /// The key requests go out with now (the last one not rate limited).
    pub in_use: bool,
}

/// Where a key was stored, and why not in the OS keychain when it was not.
#[derive(Debug, Clone, Serialize)]
pub struct KeyStored {
    pub location: SecretLocation,
    pub keychain_unavailable: Option<String>,
}

/// One provider's models, or why they could not be listed.
#[derive(Debug, Clone)]
pub struct ProviderModels {
    pub provider: String,
    pub models: Result<Vec<ModelInfo>, String>,
}

impl App {
    pub fn providers(&self) -> Result<Vec<ProviderRecord>> {
        Ok(self.store().providers()?)
    }

    pub fn provider(&self, name: &str) -> Result<ProviderRecord> {
        self.store()
            .provider_by_name(name)?
            .ok_or_else(|| ChatError::UnknownProvider(name.to_string()).into())
    }

    /// Every provider with where its key comes from.
    pub fn provider_rows(&self) -> Result<Vec<ProviderRow>> {
        let secrets = self.chat.secrets();
        self.providers()?
            .into_iter()
            .map(|record| {
                let config = provider_config(self.store(), secrets, &record)?;
                let key = if secrets.get(&record.name)?.is_some() {
                    KeySource::Stored(secrets.location())
                } else if !config.api_keys.is_empty() {
                    KeySource::Environment(config.api_key_env.clone().unwrap_or_default())
                } else {
                    KeySource::None
                };
                Ok(ProviderRow { record, key })
            })
            .collect()
    }

    /// Adds a provider; a blank base URL becomes the kind's usual one. A CLI agent's model
    /// is its own default unless one is named.
    pub fn add_provider(&self, mut new: NewProvider) -> Result<ProviderRecord> {
        let url = match new.base_url.as_deref().map(str::trim) {
            None | Some("") => new.kind.default_base_url(self.chat.environment()),
            Some(url) => url.to_string(),
        };
        if new.kind.is_cli_agent() && new.settings.default_model.is_none() {
            new.settings.default_model = Some(crate::cli_agents::DEFAULT_MODEL.to_string());
        }
        let added = self.store().insert_provider(
            new.name.trim(),
            new.kind,
            &url,
            new.api_key_env.as_deref(),
            &new.settings,
        )?;
        self.changed(AppEvent::ProvidersChanged);
        Ok(added)
    }

    /// Saves a provider's name, kind, URL and settings; a blank URL becomes the kind's usual.
    pub fn update_provider(&self, mut record: ProviderRecord) -> Result<()> {
        if record.base_url.trim().is_empty() {
            record.base_url = record.kind.default_base_url(self.chat.environment());
        }
        self.store().update_provider(&record)?;
        self.changed(AppEvent::ProvidersChanged);
        Ok(())
    }

    /// Removes a provider and its stored key (the key first: a keychain that refuses leaves
    /// both in place).
    pub fn remove_provider(&self, name: &str) -> Result<()> {
        let record = self.provider(name)?;
        self.chat.secrets().delete(&record.name)?;
        self.store().delete_provider(record.id)?;
        self.changed(AppEvent::ProvidersChanged);
        Ok(())
    }

    /// Stores a provider's key (OS keychain, else the 0600 secrets file).
    pub fn set_key(&self, name: &str, key: &str) -> Result<KeyStored> {
        let record = self.provider(name)?;
        let secrets = self.chat.secrets();
        let location = secrets.set(&record.name, key.trim())?;
        self.keys_changed(&record.name);
        Ok(KeyStored {
            location,
            keychain_unavailable: secrets.keychain_unavailable_reason().map(str::to_string),
        })
    }

    /// Adds a key to a provider's stored keys: requests rotate to the next key when the
    /// provider says one is rate limited or out of quota.
    pub fn add_key(&self, name: &str, key: &str) -> Result<KeyStored> {
        let record = self.provider(name)?;
        let secrets = self.chat.secrets();
        let location = secrets.add(&record.name, key)?;
        self.keys_changed(&record.name);
        Ok(KeyStored {
            location,
            keychain_unavailable: secrets.keychain_unavailable_reason().map(str::to_string),
        })
    }

    /// Removes the stored key with this fingerprint.
    pub fn remove_key(&self, name: &str, fingerprint: &str) -> Result<()> {
        let record = self.provider(name)?;
        match self.chat.secrets().remove_key(&record.name, fingerprint)? {
            true => {
                self.keys_changed(&record.name);
                Ok(())
            }
            false => Err(AppError::Invalid(format!(
                "{name} has no stored key with the fingerprint {fingerprint:?} (`tandem provider keys {name}` lists them)"
            ))),
        }
    }

    /// A provider's keys in the order they are tried: stored ones, then the environment's.
    pub fn provider_keys(&self, name: &str) -> Result<Vec<KeyInfo>> {
        let record = self.provider(name)?;
        let secrets = self.chat.secrets();
        let stored = secrets.keys(&record.name)?;
        let config = provider_config(self.store(), secrets, &record)?;
        let env = config.api_key_env.clone().unwrap_or_default();
        let count = config.api_keys.len();
        let in_use = crate::llm::key_in_use(&record.name) % count.max(1);
        Ok(config
            .api_keys
            .iter()
            .enumerate()
            .map(|(index, key)| KeyInfo {
                fingerprint: crate::llm::secrets::fingerprint(key),
                source: match stored.contains(key) {
                    true => "stored".to_string(),
                    false => format!("environment ({env})"),
                },
                in_use: index == in_use,
            })
            .collect())
    }

    /// The models a provider serves now.
    pub async fn models(&self, name: &str) -> Result<Vec<ModelInfo>> {
        let record = self.provider(name)?;
        let config = provider_config(self.store(), self.chat.secrets(), &record)?;
        Ok(provider(config).list_models().await?)
    }

    /// The models of `name`, or of every provider; each provider's failure is its own.
    pub async fn models_of(&self, name: Option<&str>) -> Result<Vec<ProviderModels>> {
        let names = match name {
            Some(name) => vec![self.provider(name)?.name],
            None => self.providers()?.into_iter().map(|p| p.name).collect(),
        };
        let mut all = Vec::new();
        for provider in names {
            let models = self.models(&provider).await.map_err(|e| e.to_string());
            all.push(ProviderModels { provider, models });
        }
        Ok(all)
    }

    /// What is known of a model of provider `provider` (the defaults when `None`): the
    /// server's answer, the last check-up, the person's settings, its edit record.
    pub async fn model_profile(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<ModelProfile> {
        Ok(self.chat.model_profile(provider, model).await?)
    }

    /// The model's stored profile as it is (no server asked; `None` when nothing is stored).
    pub fn model_profile_stored(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<Option<ModelProfile>> {
        let choice = self.chat.model_choice(provider, model)?;
        Ok(self
            .store()
            .model_profile(choice.record.id, &choice.model)?)
    }

    /// Runs the model check-up now (window, native tool calls, images) and stores it.
    pub async fn check_model(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<ModelProfile> {
        Ok(self.chat.check_model(provider, model).await?)
    }

    /// Saves the person's settings for a model (context override, temperature, output
    /// limit); `None`s restore the defaults.
    pub fn set_model_settings(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
        settings: &GenerationSettings,
    ) -> Result<ModelProfile> {
        if settings
            .temperature
            .is_some_and(|t| !(0.0..=2.0).contains(&t))
        {
            return Err(AppError::Invalid(
                "the temperature must be between 0 and 2".into(),
            ));
        }
        if settings.context_length == Some(0) || settings.max_output_tokens == Some(0) {
            return Err(AppError::Invalid(
                "a context length or output limit must be above 0".into(),
            ));
        }
        let choice = self.chat.model_choice(provider, model)?;
        let store = self.store();
        store.set_generation_settings(choice.record.id, &choice.model, settings)?;
        store
            .model_profile(choice.record.id, &choice.model)?
            .ok_or_else(|| AppError::Invalid("the model's profile was not saved".into()))
    }

    /// A CLI-agent provider's program and adapter.
    fn cli_agent(&self, name: &str) -> Result<(String, &'static dyn crate::cli_agents::CliAgent)> {
        let record = self.provider(name)?;
        let agent = crate::cli_agents::agent_for(record.kind).ok_or_else(|| {
            AppError::Invalid(format!(
                "{name} is a {} provider, not a CLI agent (codex, claude-code)",
                record.kind
            ))
        })?;
        Ok((record.base_url, agent))
    }

    /// Whether a CLI agent's program is installed and logged in.
    pub async fn agent_status(&self, name: &str) -> Result<LoginStatus> {
        let (program, agent) = self.cli_agent(name)?;
        Ok(crate::cli_agents::login_status(agent, &program).await)
    }

    /// Runs a CLI agent's device-code login, each line it prints (the link, the code) given
    /// to `on_line`. True when it succeeded.
    pub async fn agent_login(
        &self,
        name: &str,
        cancel: &tokio_util::sync::CancellationToken,
        on_line: impl FnMut(String),
    ) -> Result<bool> {
        let (program, agent) = self.cli_agent(name)?;
        crate::cli_agents::login(agent, &program, cancel, on_line)
            .await
            .map_err(|e| AppError::Invalid(e.to_string()))
    }
}
