//! Settings in the background: providers and their keys, the chat and agent settings, MCP
//! servers.

use super::{Backend, Event};
use tandem_core::app::{AgentSettings, ChatSettings, NewProvider};
use tandem_core::llm::ProviderKind;
use tandem_core::store::{McpTransport, ProviderRecord, ProviderSettings};

impl Backend {
    /// Saves a prompt of the library: a new one (`id` `None`) or prompt `id` renamed and
    /// rewritten.
    pub fn save_prompt(&self, id: Option<i64>, name: String, text: String) {
        self.spawn("saving the prompt", move |app, _emit| {
            match id {
                Some(id) => app.update_prompt(id, &name, &text)?,
                None => app.save_prompt(&name, &text)?,
            };
            Ok(())
        });
    }

    /// Usage of project `project_id` (`None`: every project) and the price table.
    fn next_usage(&self) -> u64 {
        let order = std::sync::atomic::Ordering::Relaxed;
        self.usage_seq.fetch_add(1, order) + 1
    }

    pub fn usage(&self, project_id: Option<i64>) {
        let seq = self.next_usage();
        self.spawn("loading usage", move |app, emit| {
            let report = Box::new(app.usage(project_id)?);
            emit.send(Event::Usage {
                seq,
                report,
                prices: app.prices()?,
            });
            Ok(())
        });
    }

    /// Sets or removes a model's price, then reloads usage (costs change).
    pub fn set_price(
        &self,
        model: String,
        price: Option<tandem_core::app::Price>,
        project_id: Option<i64>,
    ) {
        let seq = self.next_usage();
        self.spawn("saving the price", move |app, emit| {
            app.set_price(&model, price)?;
            let report = Box::new(app.usage(project_id)?);
            emit.send(Event::Usage {
                seq,
                report,
                prices: app.prices()?,
            });
            Ok(())
        });
    }

    pub fn remove_prompt(&self, name: String) {
        self.spawn("removing the prompt", move |app, _emit| {
            app.remove_prompt(&name)?;
            Ok(())
        });
    }

    pub fn refresh_models(&self, provider_name: String) {
        self.spawn_async("listing models", move |app, emit| async move {
            let models = app.models(&provider_name).await.map_err(|e| e.to_string());
            emit.send_async(Event::Models {
                provider: provider_name,
                models,
            })
            .await;
            Ok(())
        });
    }

    /// Loads what is known of a model (`check`: runs the check-up first).
    pub fn model_profile(&self, provider: Option<String>, model: Option<String>, check: bool) {
        let what = if check {
            "checking the model"
        } else {
            "loading the model's profile"
        };
        self.spawn_async(what, move |app, emit| async move {
            let (p, m) = (provider.as_deref(), model.as_deref());
            let profile = match check {
                true => app.check_model(p, m).await?,
                false => app.model_profile(p, m).await?,
            };
            emit.send_async(Event::ModelProfile(profile)).await;
            Ok(())
        });
    }

    /// Saves the person's settings for a model.
    pub fn save_model_settings(
        &self,
        provider: Option<String>,
        model: Option<String>,
        settings: tandem_core::app::GenerationSettings,
    ) {
        self.spawn("saving the model's settings", move |app, emit| {
            let profile =
                app.set_model_settings(provider.as_deref(), model.as_deref(), &settings)?;
            emit.send(Event::ModelProfile(profile));
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
        self.spawn("adding the provider", move |app, _emit| {
            app.add_provider(NewProvider {
                name,
                kind,
                base_url: Some(base_url),
                api_key_env: None,
                settings,
            })?;
            Ok(())
        });
    }

    pub fn update_provider(&self, record: ProviderRecord) {
        self.spawn("saving the provider", move |app, _emit| {
            app.update_provider(record)?;
            Ok(())
        });
    }

    /// Removes a provider and its stored key.
    pub fn delete_provider(&self, name: String) {
        self.spawn("removing the provider", move |app, _emit| {
            app.remove_provider(&name)?;
            Ok(())
        });
    }

    /// Stores a key for a provider: in place of its keys, or with `add` after them (rotated
    /// to on quota errors). Its keys are listed again.
    pub fn set_key(&self, provider_name: String, key: String, add: bool) {
        self.spawn("storing the API key", move |app, emit| {
            let stored = match add {
                true => app.add_key(&provider_name, &key)?,
                false => app.set_key(&provider_name, &key)?,
            };
            let location = stored.location;
            let note = match stored.keychain_unavailable {
                Some(why) => format!(
                    "API key for {provider_name} stored in {location:?} (not in the OS keychain: {why})"
                ),
                None => format!("API key for {provider_name} stored in {location:?}"),
            };
            emit.send(Event::Log(note));
            Ok(())
        });
    }

    /// A provider's keys by fingerprint, and which one is in use.
    pub fn provider_keys(&self, provider: String) {
        self.spawn("listing the provider's keys", move |app, emit| {
            let keys = app.provider_keys(&provider)?;
            emit.send(Event::ProviderKeys { provider, keys });
            Ok(())
        });
    }

    /// Removes one stored key of a provider.
    pub fn remove_key(&self, provider: String, fingerprint: String) {
        self.spawn("removing the key", move |app, _emit| {
            app.remove_key(&provider, &fingerprint)?;
            Ok(())
        });
    }

    /// Changes some chat settings (the default model, auto-approve, history turns).
    pub fn update_chat_settings(&self, change: impl FnOnce(&mut ChatSettings) + Send + 'static) {
        self.spawn("saving a setting", move |app, _emit| {
            app.update_chat_settings(change)?;
            Ok(())
        });
    }

    /// Reads the agent settings and the MCP servers.
    pub fn load_agent_settings(&self) {
        self.spawn("loading the agent settings", move |app, emit| {
            emit.send(Event::AgentSettings(app.agent_settings()?));
            emit.send(Event::McpServers(app.mcp_servers()?));
            Ok(())
        });
    }

    /// Saves the policy and the limits (the gateway has its own job).
    pub fn save_agent_settings(&self, settings: AgentSettings) {
        self.spawn("saving the agent settings", move |app, emit| {
            app.save_agent_settings(&settings)?;
            emit.send(Event::Log("agent settings saved".into()));
            Ok(())
        });
    }

    pub fn add_mcp_server(&self, name: String, transport: McpTransport) {
        self.spawn("adding the MCP server", move |app, _emit| {
            app.add_mcp_server(&name, transport)?;
            Ok(())
        });
    }

    pub fn set_mcp_server_enabled(&self, id: i64, enabled: bool) {
        self.spawn("changing the MCP server", move |app, _emit| {
            app.set_mcp_server_enabled(id, enabled)?;
            Ok(())
        });
    }

    pub fn remove_mcp_server(&self, id: i64) {
        self.spawn("removing the MCP server", move |app, _emit| {
            app.remove_mcp_server(id)?;
            Ok(())
        });
    }

    /// Whether CLI agent provider `name` is installed and logged in.
    pub fn cli_agent_status(&self, name: String) {
        self.spawn_async("asking the CLI agent", move |app, emit| async move {
            let status = app.agent_status(&name).await?;
            emit.send_async(Event::CliAgentStatus {
                provider: name,
                status,
            })
            .await;
            Ok(())
        });
    }

    /// Runs CLI agent provider `name`'s device login, each line it prints sent on, then its
    /// status asked again.
    pub fn cli_agent_login(&self, name: String) {
        self.spawn_async("logging the CLI agent in", move |app, emit| async move {
            let cancel = tokio_util::sync::CancellationToken::new();
            let lines = emit.clone();
            let provider = name.clone();
            let done = app
                .agent_login(&name, &cancel, move |line| {
                    lines.send(Event::CliAgentLogin {
                        provider: provider.clone(),
                        line: Some(line),
                        done: None,
                    });
                })
                .await;
            let ok = *done.as_ref().unwrap_or(&false);
            emit.send_async(Event::CliAgentLogin {
                provider: name.clone(),
                line: None,
                done: Some(ok),
            })
            .await;
            done?;
            let status = app.agent_status(&name).await?;
            emit.send_async(Event::CliAgentStatus {
                provider: name,
                status,
            })
            .await;
            Ok(())
        });
    }
}
