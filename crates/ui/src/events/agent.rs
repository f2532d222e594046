//! The agent's settings, MCP servers, gateways and approvers on the window's state.

use crate::backend::Event;
use crate::model::agent_state::{ApproverStatus, GatewayStatus};
use crate::model::state::AppState;
use tandem_core::agent::gateway::GatewayEvent;

impl AppState {
    pub(super) fn on_agent_event(&mut self, event: Event) {
        match event {
            Event::AgentSettings(settings) => self.agent.form.load(&settings),
            Event::McpServers(servers) => {
                // The server just added is in the list: the form is done.
                let typed = self.agent.form.mcp.name.trim();
                let added = !typed.is_empty()
                    && servers.iter().any(|s| s.name == typed)
                    && !self.agent.mcp_servers.iter().any(|s| s.name == typed);
                if added {
                    self.agent.form.mcp = Default::default();
                }
                self.agent.mcp_servers = servers;
            }
            Event::ApprovalGone(id) => {
                self.agent.settle(id);
                self.toast("That tool call is no longer waiting", false);
            }
            Event::GatewayStatus(status) => {
                match &status {
                    GatewayStatus::Running { port } => self
                        .log
                        .push(format!("approval gateway listening on 127.0.0.1:{port}")),
                    GatewayStatus::Failed(error) => {
                        self.toast(format!("The approval gateway did not start: {error}"), true)
                    }
                    GatewayStatus::Off | GatewayStatus::Starting => {}
                }
                self.agent.gateway.status = status;
            }
            Event::GatewaySettings(settings) => self.agent.form.load_gateway(&settings),
            Event::ApprovalRequests(requests) => self.agent.gateway.requests = requests,
            Event::ApproverStatus(status) => {
                if let ApproverStatus::Refused(why) = &status {
                    self.toast(format!("The executor did not let Tandem in: {why}"), true);
                }
                let approver = &mut self.agent.approver;
                approver.status = status;
                approver.since = Some(std::time::Instant::now());
            }
            Event::ApproverSettings(shown) => {
                let approver = &mut self.agent.approver;
                approver.url = shown.url;
                approver.token_hint = shown.token_hint;
                approver.token.clear();
            }
            Event::Gateway(event) => match event {
                GatewayEvent::Requested { id, client, .. } => {
                    let who = client.unwrap_or_else(|| "an external tool".into());
                    self.toast(format!("Approval request #{id} from {who}"), false);
                    self.wants_attention = true;
                }
                GatewayEvent::ClientConnected { addr, .. } => {
                    self.log
                        .push(format!("gateway: client connected from {addr}"));
                }
                GatewayEvent::ClientGone {
                    client, abandoned, ..
                } => self.log.push(format!(
                    "gateway: {} left; {} request(s) still pending",
                    client.as_deref().unwrap_or("a client"),
                    abandoned.len()
                )),
                GatewayEvent::BadFrame { id, message, .. } => self.log.push(format!(
                    "approvals: a frame was refused ({}): {message}",
                    id.as_deref().unwrap_or("no id")
                )),
                GatewayEvent::Decided { .. } => {}
            },
            _ => {}
        }
    }
}
