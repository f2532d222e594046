//! Settings in the background: usage with its price table (numbered, see [`Event::Usage`]),
//! the agent settings with the MCP servers, and a CLI agent's login.

use super::{Backend, Event};

impl Backend {
    /// The number of the usage report asked for now (see [`Event::Usage`]).
    fn next_usage(&self) -> u64 {
        let order = std::sync::atomic::Ordering::Relaxed;
        self.usage_seq.fetch_add(1, order) + 1
    }

    /// Usage of project `project_id` (`None`: every project) and the price table.
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

    /// Reads the agent settings and the MCP servers.
    pub fn load_agent_settings(&self) {
        self.spawn("loading the agent settings", move |app, emit| {
            emit.send(Event::AgentSettings(app.agent_settings()?));
            emit.send(Event::McpServers(app.mcp_servers()?));
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
