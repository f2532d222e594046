//! Settings jobs: providers and their keys, plain settings, project settings, the agent's
//! policy and limits, MCP servers.

use anyhow::Context as _;

use super::{Backend, Event, GatewaySettings};
use crate::agent::policy::PolicySettings;
use crate::agent::runner::{DEFAULT_MAX_STEPS, MAX_STEPS_SETTING};
use crate::chat::{POLICY_SETTING, SHELL_TIMEOUT_SETTING, TOOL_CALLING_SETTING};
use crate::llm::{ProviderKind, provider};
use crate::store::{McpTransport, Project, ProviderSettings, Store};

/// The Agent section of the settings, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    pub policy: PolicySettings,
    pub max_steps: usize,
    pub shell_timeout_secs: u64,
    /// `auto`, `native` or `text`.
    pub tool_calling: String,
    /// Directories sandboxed commands may also read (`sandbox::READABLE_SETTING`).
    pub sandbox_readable: Vec<String>,
    /// What the sandbox enforces on this machine (read-only: probed, never saved).
    pub sandbox: crate::sandbox::Protections,
    pub gateway: GatewaySettings,
}

/// Reads the agent settings, with the core's defaults for those never saved.
pub(super) fn load_agent_settings(
    store: &Store,
    secrets: &crate::llm::secrets::Secrets,
) -> anyhow::Result<AgentSettings> {
    let mut gateway: super::gateway_jobs::GatewaySettings = store
        .setting(super::gateway_jobs::GATEWAY_SETTING)?
        .unwrap_or_default();
    if let Some(token) = secrets.get(super::gateway_jobs::GATEWAY_TOKEN_SECRET)? {
        gateway.token = token;
    }
    Ok(AgentSettings {
        policy: store.setting(POLICY_SETTING)?.unwrap_or_default(),
        max_steps: store
            .setting(MAX_STEPS_SETTING)?
            .unwrap_or(DEFAULT_MAX_STEPS),
        shell_timeout_secs: store
            .setting(SHELL_TIMEOUT_SETTING)?
            .unwrap_or(crate::agent::exec::DEFAULT_TIMEOUT.as_secs()),
        tool_calling: store
            .setting(TOOL_CALLING_SETTING)?
            .unwrap_or_else(|| "auto".to_string()),
        sandbox_readable: store
            .setting(crate::sandbox::READABLE_SETTING)?
            .unwrap_or_default(),
        // Probed once per process by a throwaway child: fine here, on a background job.
        sandbox: crate::sandbox::probe().clone(),
        gateway,
    })
}

impl Backend {
    pub fn refresh_models(&self, provider_name: String) {
        self.spawn("listing models", move |service, emit| {
            let store = service.engine().store();
            let record = store
                .provider_by_name(&provider_name)?
                .with_context(|| format!("no provider {provider_name}"))?;
            let config = crate::chat::provider_config(store, service.secrets(), &record)?;
            let client = provider(config);
            let models = tokio::runtime::Handle::current()
                .block_on(client.list_models())
                .map_err(|e| e.to_string());
            emit.send(Event::Models {
                provider: provider_name,
                models,
            });
            Ok(())
        });
    }

    pub fn add_provider(
        &self,
        name: String,
        kind: ProviderKind,
        base_url: String,
        settings: ProviderSettings,
    ) {
        self.spawn("adding the provider", move |service, emit| {
            let store = service.engine().store();
            store.insert_provider(&name, kind, &base_url, None, &settings)?;
            emit.send(Event::Providers(store.providers()?));
            Ok(())
        });
    }

    pub fn update_provider(&self, record: crate::store::ProviderRecord) {
        self.spawn("saving the provider", move |service, emit| {
            let store = service.engine().store();
            store.update_provider(&record)?;
            emit.send(Event::Providers(store.providers()?));
            Ok(())
        });
    }

    pub fn delete_provider(&self, id: i64, name: String) {
        self.spawn("removing the provider", move |service, emit| {
            let store = service.engine().store();
            store.delete_provider(id)?;
            let _ = service.secrets().delete(&name);
            emit.send(Event::Providers(store.providers()?));
            Ok(())
        });
    }

    pub fn set_key(&self, provider_name: String, key: String) {
        self.spawn("storing the API key", move |service, emit| {
            let location = service.secrets().set(&provider_name, &key)?;
            let note = match service.secrets().keychain_unavailable_reason() {
                Some(why) => format!(
                    "API key for {provider_name} stored in {location:?} (no OS keychain: {why})"
                ),
                None => format!("API key for {provider_name} stored in {location:?}"),
            };
            emit.send(Event::Log(note));
            Ok(())
        });
    }

    pub fn save_project_settings(&self, project: Project) {
        self.spawn("saving the project settings", move |service, _emit| {
            service
                .engine()
                .store()
                .update_project_settings(project.id, &project.settings)?;
            Ok(())
        });
    }

    /// Counts what the context globs (as typed, not yet saved) select in the project.
    pub fn count_context(&self, root: std::path::PathBuf, include: String, exclude: String) {
        self.spawn("counting the context", move |service, emit| {
            let options = crate::workspace::context::ContextOptions {
                include: crate::ui::command::split_globs(&include),
                exclude: crate::ui::command::split_globs(&exclude),
                ..Default::default()
            };
            let counts = service
                .context_cache()
                .collect(&root, &options)
                .map(|c| {
                    format!(
                        "{} files, ~{} tokens ({} skipped)",
                        c.included.len(),
                        c.content_tokens,
                        c.skipped.len()
                    )
                })
                .map_err(|e| e.to_string());
            emit.send(Event::ContextCounts {
                include,
                exclude,
                counts,
            });
            Ok(())
        });
    }

    /// Saves a setting (JSON value) in the database.
    pub fn save_setting(&self, key: &'static str, value: serde_json::Value) {
        self.spawn("saving a setting", move |service, _emit| {
            service.engine().store().set_setting(key, &value)?;
            Ok(())
        });
    }

    /// Reads the agent settings and the MCP servers.
    pub fn load_agent_settings(&self) {
        self.spawn("loading the agent settings", move |service, emit| {
            let store = service.engine().store();
            let settings = load_agent_settings(store, service.secrets())?;
            emit.send(Event::AgentSettings(settings));
            emit.send(Event::McpServers(store.mcp_servers()?));
            Ok(())
        });
    }

    /// Saves the policy and the limits (the gateway has its own job).
    pub fn save_agent_settings(&self, settings: AgentSettings) {
        self.spawn("saving the agent settings", move |service, emit| {
            let store = service.engine().store();
            store.set_setting(POLICY_SETTING, &settings.policy)?;
            store.set_setting(MAX_STEPS_SETTING, &settings.max_steps)?;
            store.set_setting(SHELL_TIMEOUT_SETTING, &settings.shell_timeout_secs)?;
            store.set_setting(TOOL_CALLING_SETTING, &settings.tool_calling)?;
            store.set_setting(crate::sandbox::READABLE_SETTING, &settings.sandbox_readable)?;
            emit.send(Event::AgentSettings(load_agent_settings(
                store,
                service.secrets(),
            )?));
            emit.send(Event::Log("agent settings saved".into()));
            Ok(())
        });
    }

    /// Saves a project's settings as they are (no context recount).
    pub fn save_project_settings_only(&self, project: Project) {
        self.spawn("saving the project settings", move |service, _emit| {
            let store = service.engine().store();
            store.update_project_settings(project.id, &project.settings)?;
            Ok(())
        });
    }

    pub fn add_mcp_server(&self, name: String, transport: McpTransport) {
        self.spawn("adding the MCP server", move |service, emit| {
            let store = service.engine().store();
            store.add_mcp_server(&name, transport)?;
            emit.send(Event::McpServers(store.mcp_servers()?));
            Ok(())
        });
    }

    pub fn set_mcp_server_enabled(&self, id: i64, enabled: bool) {
        self.spawn("changing the MCP server", move |service, emit| {
            let store = service.engine().store();
            store.set_mcp_server_enabled(id, enabled)?;
            emit.send(Event::McpServers(store.mcp_servers()?));
            Ok(())
        });
    }

    pub fn remove_mcp_server(&self, id: i64) {
        self.spawn("removing the MCP server", move |service, emit| {
            let store = service.engine().store();
            store.remove_mcp_server(id)?;
            emit.send(Event::McpServers(store.mcp_servers()?));
            Ok(())
        });
    }
}
