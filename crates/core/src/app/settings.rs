//! Every global setting, typed, read with the core's defaults for those never saved
//! (keys in [`crate::store::keys`]); and the MCP servers the agent may use.

use super::{App, AppEvent, Result, gateway::GatewaySettings};
use crate::agent::policy::PolicySettings;
use crate::agent::runner::DEFAULT_MAX_STEPS;
use crate::store::keys;
use crate::store::{McpServerRecord, McpTransport};

/// All settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub chat: ChatSettings,
    pub agent: AgentSettings,
}

/// How chats send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatSettings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    /// Apply Build proposals without review.
    pub auto_approve: bool,
    /// Earlier turns a request carries (`None`: the default).
    pub history_turns: Option<usize>,
    /// Ask the model for a chat title after the first reply.
    pub generate_titles: bool,
    /// Seconds a stream may stay silent (`None`: the default).
    pub idle_timeout_secs: Option<u64>,
}

/// The Agent section: the policy, the limits, how tools are called, the sandbox, the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    pub policy: PolicySettings,
    pub max_steps: usize,
    pub shell_timeout_secs: u64,
    /// `auto`, `native` or `text`.
    pub tool_calling: String,
    /// Directories sandboxed commands may also read.
    pub sandbox_readable: Vec<String>,
    /// Environment variables sandboxed commands also see.
    pub sandbox_env: Vec<String>,
    /// The limits of sandboxed commands.
    pub limits: crate::sandbox::Limits,
    /// What the sandbox enforces on this machine (probed, never saved).
    pub sandbox: crate::sandbox::Protections,
    pub gateway: GatewaySettings,
}

impl App {
    pub fn settings(&self) -> Result<Settings> {
        Ok(Settings {
            chat: self.chat_settings()?,
            agent: self.agent_settings()?,
        })
    }

    pub fn chat_settings(&self) -> Result<ChatSettings> {
        let store = self.store();
        Ok(ChatSettings {
            default_provider: store.setting(keys::DEFAULT_PROVIDER)?,
            default_model: store.setting(keys::DEFAULT_MODEL)?,
            auto_approve: store.setting(keys::AUTO_APPROVE)?.unwrap_or(false),
            history_turns: store.setting(keys::HISTORY_TURNS)?,
            generate_titles: store.setting(keys::GENERATE_TITLES)?.unwrap_or(true),
            idle_timeout_secs: store.setting(keys::IDLE_TIMEOUT_SECS)?,
        })
    }

    /// Saves the chat settings; a `None` removes the setting (the default applies).
    pub fn save_chat_settings(&self, settings: &ChatSettings) -> Result<()> {
        let store = self.store();
        let optional = |key: &str, value: Option<serde_json::Value>| match value {
            Some(value) => store.set_setting(key, &value),
            None => store.delete_setting(key),
        };
        optional(
            keys::DEFAULT_PROVIDER,
            settings.default_provider.clone().map(Into::into),
        )?;
        optional(
            keys::DEFAULT_MODEL,
            settings.default_model.clone().map(Into::into),
        )?;
        store.set_setting(keys::AUTO_APPROVE, &settings.auto_approve)?;
        optional(keys::HISTORY_TURNS, settings.history_turns.map(Into::into))?;
        store.set_setting(keys::GENERATE_TITLES, &settings.generate_titles)?;
        optional(
            keys::IDLE_TIMEOUT_SECS,
            settings.idle_timeout_secs.map(Into::into),
        )?;
        Ok(())
    }

    /// Changes some chat settings: reads them, lets `change` edit them, saves them.
    pub fn update_chat_settings(&self, change: impl FnOnce(&mut ChatSettings)) -> Result<()> {
        let mut settings = self.chat_settings()?;
        change(&mut settings);
        self.save_chat_settings(&settings)
    }

    /// The agent settings (with the gateway's, its token from the key store).
    pub fn agent_settings(&self) -> Result<AgentSettings> {
        let store = self.store();
        Ok(AgentSettings {
            policy: store.setting(keys::AGENT_POLICY)?.unwrap_or_default(),
            max_steps: store.setting(keys::MAX_STEPS)?.unwrap_or(DEFAULT_MAX_STEPS),
            shell_timeout_secs: store
                .setting(keys::SHELL_TIMEOUT_SECS)?
                .unwrap_or(crate::process::DEFAULT_TIMEOUT.as_secs()),
            tool_calling: store
                .setting(keys::TOOL_CALLING)?
                .unwrap_or_else(|| "auto".to_string()),
            sandbox_readable: store.setting(keys::SANDBOX_READABLE)?.unwrap_or_default(),
            sandbox_env: store.setting(keys::SANDBOX_ENV)?.unwrap_or_default(),
            limits: store.setting(keys::AGENT_LIMITS)?.unwrap_or_default(),
            // Probed once per process by a throwaway child.
            sandbox: crate::sandbox::probe().clone(),
            gateway: self.gateway_settings()?,
        })
    }

    /// Saves the policy, the limits, the tool calling and the sandbox's settings (the
    /// gateway has its own [`save_gateway`](Self::save_gateway)); returns them as stored.
    pub fn save_agent_settings(&self, settings: &AgentSettings) -> Result<AgentSettings> {
        let store = self.store();
        store.set_setting(keys::AGENT_POLICY, &settings.policy)?;
        store.set_setting(keys::MAX_STEPS, &settings.max_steps)?;
        store.set_setting(keys::SHELL_TIMEOUT_SECS, &settings.shell_timeout_secs)?;
        store.set_setting(keys::TOOL_CALLING, &settings.tool_calling)?;
        store.set_setting(keys::SANDBOX_READABLE, &settings.sandbox_readable)?;
        super::config::check_env_names(keys::SANDBOX_ENV, &settings.sandbox_env)?;
        store.set_setting(keys::SANDBOX_ENV, &settings.sandbox_env)?;
        store.set_setting(keys::AGENT_LIMITS, &settings.limits.sane())?;
        self.changed(AppEvent::AgentSettingsChanged);
        self.agent_settings()
    }

    pub fn mcp_servers(&self) -> Result<Vec<McpServerRecord>> {
        Ok(self.store().mcp_servers()?)
    }

    pub fn add_mcp_server(&self, name: &str, transport: McpTransport) -> Result<()> {
        self.store().add_mcp_server(name, transport)?;
        self.changed(AppEvent::McpServersChanged);
        Ok(())
    }

    /// Disabling a server also stops it where it runs (in the background).
    pub fn set_mcp_server_enabled(&self, id: i64, enabled: bool) -> Result<()> {
        self.store().set_mcp_server_enabled(id, enabled)?;
        self.changed(AppEvent::McpServersChanged);
        self.retire_mcp_servers()
    }

    /// Removing a server also stops it where it runs (in the background).
    pub fn remove_mcp_server(&self, id: i64) -> Result<()> {
        self.store().remove_mcp_server(id)?;
        self.changed(AppEvent::McpServersChanged);
        self.retire_mcp_servers()
    }

    /// Stops the running MCP servers that are no longer configured as they run. Outside a
    /// Tokio runtime (the CLI) none run.
    fn retire_mcp_servers(&self) -> Result<()> {
        let servers = self.store().mcp_servers()?;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let chat = self.chat.clone();
            runtime.spawn(async move { chat.mcp_pool().retire(&servers).await });
        }
        Ok(())
    }

    /// Stops the MCP servers of a project (it was closed). Its next agent turn starts them.
    pub async fn close_project_mcp(&self, project_id: i64) {
        self.chat.mcp_pool().close_project(project_id).await;
    }

    /// Stops every MCP server (the app is closing).
    pub async fn stop_mcp_servers(&self) {
        self.chat.mcp_pool().close_all().await;
    }
}
