//! Which provider and model a turn uses, with its keys and what the model can do.

use std::time::Duration;

use super::ChatError;
use crate::cli_agents::provider;
use crate::environment::Environment;
use crate::llm::secrets::Secrets;
use crate::llm::{
    DEFAULT_CONNECT_TIMEOUT, IDLE_TIMEOUT_ENV, ModelInfo, ProviderConfig, ProviderKind,
    SharedProvider, idle_timeout,
};
use crate::store::{GenerationSettings, ModelProfile, ProviderRecord, ProviderSettings, Store};

use crate::store::keys::{DEFAULT_MODEL, DEFAULT_PROVIDER, IDLE_TIMEOUT_SECS, PROVIDERS_SEEDED};

/// Used when neither the provider nor a setting tells a model's window.
pub const FALLBACK_CONTEXT: u32 = 8192;

pub struct ModelChoice {
    pub record: ProviderRecord,
    pub provider: SharedProvider,
    pub model: String,
}

/// On first run, an Ollama provider at `OLLAMA_HOST` (of `env`; else localhost:11434) exists.
pub fn ensure_default_provider(store: &Store, env: &Environment) -> Result<(), ChatError> {
    if store.setting::<bool>(PROVIDERS_SEEDED)?.is_some() {
        return Ok(());
    }
    if store.providers()?.is_empty() {
        store.insert_provider(
            "ollama",
            ProviderKind::Ollama,
            &ProviderKind::Ollama.default_base_url(env),
            None,
            &ProviderSettings::default(),
        )?;
    }
    store.set_setting(PROVIDERS_SEEDED, &true)?;
    Ok(())
}

/// The connection settings for a stored provider, with its keys (keychain or file first, then
/// the environment `secrets` was given). Keys are never logged or stored in SQLite.
pub fn provider_config(
    store: &Store,
    secrets: &Secrets,
    record: &ProviderRecord,
) -> Result<ProviderConfig, ChatError> {
    let mut api_keys = secrets
        .keys(&record.name)
        .map_err(|e| ChatError::Secrets(e.to_string()))?;
    api_keys.extend(secrets.env_keys(record.kind, record.api_key_env.as_deref()));
    let env = secrets.environment();
    let setting = store
        .setting::<u64>(IDLE_TIMEOUT_SECS)?
        .map(Duration::from_secs);
    Ok(ProviderConfig {
        kind: record.kind,
        name: record.name.clone(),
        base_url: match record.base_url.trim() {
            "" => record.kind.default_base_url(env),
            _ => record.base_url.clone(),
        },
        api_keys,
        api_key_env: record
            .api_key_env
            .clone()
            .or_else(|| crate::llm::secrets::conventional_env(record.kind).map(str::to_string)),
        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        idle_timeout: idle_timeout(env.get(IDLE_TIMEOUT_ENV), setting),
    })
}

/// The provider named (else the default, else the first) and the model named (else the
/// defaults).
pub fn choose(
    store: &Store,
    secrets: &Secrets,
    provider_name: Option<&str>,
    model: Option<&str>,
) -> Result<ModelChoice, ChatError> {
    let record = match provider_name {
        Some(name) => store
            .provider_by_name(name)?
            .ok_or_else(|| ChatError::UnknownProvider(name.to_string()))?,
        None => {
            let default = store.setting::<String>(DEFAULT_PROVIDER)?;
            let by_default = match default {
                Some(name) => store.provider_by_name(&name)?,
                None => None,
            };
            match by_default {
                Some(record) => record,
                None => store
                    .providers()?
                    .into_iter()
                    .next()
                    .ok_or(ChatError::NoProvider)?,
            }
        }
    };
    let default_model = || -> Result<Option<String>, ChatError> {
        let default_provider = store.setting::<String>(DEFAULT_PROVIDER)?;
        if (default_provider.as_deref() == Some(record.name.as_str()) || default_provider.is_none())
            && let Some(model) = store.setting::<String>(DEFAULT_MODEL)?
        {
            return Ok(Some(model));
        }
        Ok(record.settings.default_model.clone())
    };
    let model = match model {
        Some(model) => model.to_string(),
        None => default_model()?.ok_or_else(|| ChatError::NoModel {
            provider: record.name.clone(),
        })?,
    };
    let provider = provider(provider_config(store, secrets, &record)?);
    Ok(ModelChoice {
        record,
        provider,
        model,
    })
}

/// What the model can do and how to ask it: the stored profile (asking the server again
/// when it never told a window and no check-up ran), the person's settings, and the window
/// to use — the model's own override, else the provider's, else what the server said.
pub async fn model_profile(store: &Store, choice: &ModelChoice) -> ModelProfile {
    let stored = store
        .model_profile(choice.record.id, &choice.model)
        .ok()
        .flatten();
    let known = stored
        .as_ref()
        .is_some_and(|p| p.info.context_length.is_some() || p.checked_at.is_some());
    let mut profile = match stored {
        Some(profile) if known => profile,
        stored => {
            let base = stored.unwrap_or_else(|| ModelProfile {
                provider_id: choice.record.id,
                info: ModelInfo {
                    id: choice.model.clone(),
                    ..ModelInfo::default()
                },
                checked_at: None,
                tools_probe: None,
                settings: GenerationSettings::default(),
                edit_blocks: 0,
                edit_failures: 0,
                token_ratio: None,
            });
            match choice.provider.model_info(&choice.model).await {
                Ok(info) => {
                    let _ = store.save_model_profile(choice.record.id, &info);
                    ModelProfile { info, ..base }
                }
                Err(_) => base,
            }
        }
    };
    if profile.settings.context_length.is_none() {
        profile.settings.context_length = choice.record.settings.context_length;
    }
    profile
}

/// Search-replace blocks a model must have written before its record counts.
const EDIT_RECORD_MIN: u32 = 4;

/// Whether the model's search-replace blocks fail so often (half or more of at least
/// [`EDIT_RECORD_MIN`]) that it should write whole files instead, for files under a size limit.
/// Published figures for why: Qwen2.5-Coder-32B writes 99.6% of whole-file edits well-formed
/// against 71.6% of diff edits.
pub fn prefers_whole_files(profile: &ModelProfile) -> bool {
    profile.edit_blocks >= EDIT_RECORD_MIN && profile.edit_failures * 2 >= profile.edit_blocks
}

/// Whether Agent mode should call tools natively with this model: the setting when it says
/// `native` or `text`, else what the check-up's probe found, else what the server claims
/// (cloud APIs always can).
pub fn native_tools(setting: Option<&str>, profile: &ModelProfile, kind: ProviderKind) -> bool {
    match setting {
        Some("native") => true,
        Some("text") => false,
        _ => match profile.tools_probe {
            Some(works) => works,
            None => profile.info.supports_tools || kind.tools_always_native(),
        },
    }
}

/// Whether the model is known to take no images: its server reports what it can do (Ollama's
/// `/api/show`, llama.cpp's `/props`, LM Studio's model list) and vision is not among it.
/// Unknown (a cloud API, a server that says nothing) is not refused.
pub fn lacks_vision(profile: &ModelProfile) -> bool {
    let reported = matches!(
        profile.info.context_source.as_deref(),
        Some("/api/show" | "/props" | "/api/v0/models")
    );
    reported && !profile.info.supports_images
}
