//! A turn's events on the window's state: streamed text, steps (and following the agent to the
//! file it read or edited), questions, calls waiting for approval, the end (and what
//! auto-approve made of its proposal).

use crate::model::state::AppState;
use tandem_core::app::ChatEventKind;

impl AppState {
    pub(super) fn on_chat_event(&mut self, event: tandem_core::app::ChatEvent) {
        // Waiting calls are tracked, and a turn's end told, for every chat (the open one shows
        // its calls inline); what follows is for the open chat only.
        match &event.kind {
            ChatEventKind::Approval { approval } => {
                if self.chat().is_none_or(|c| c.chat.id != event.chat_id) {
                    self.toast("A tool call in another chat waits for your approval", false);
                }
                self.agent.add_approval(approval.clone());
                return;
            }
            ChatEventKind::ApprovalSettled { id } => {
                self.agent.settle(*id);
                return;
            }
            // What auto-approve made of a turn's proposal, told whichever chat is open.
            ChatEventKind::Finished {
                commit,
                approve_error,
                ..
            } => {
                if let Some(error) = approve_error {
                    self.toast(format!("The changes were not applied: {error}"), true);
                }
                if let Some(commit) = commit {
                    self.toast(
                        format!("Applied as commit {}", tandem_core::vcs::short(commit)),
                        false,
                    );
                }
            }
            // Following the agent in the open chat: its file opens where it worked.
            ChatEventKind::Step { step }
                if self.prefs.follow_agent
                    && self.chat().is_some_and(|c| c.chat.id == event.chat_id) =>
            {
                if let Some(place) = followed(step, self.project.as_ref()) {
                    self.follow = Some(place);
                }
            }
            _ => {}
        }
        let Some(chat) = self.chat_mut().filter(|c| c.chat.id == event.chat_id) else {
            return;
        };
        match event.kind {
            ChatEventKind::Started { breakdown, .. } => {
                chat.breakdown = Some(breakdown);
                chat.live(event.message_id);
            }
            ChatEventKind::Delta { text, reasoning } => {
                let Some(streaming) = chat.live(event.message_id) else {
                    return;
                };
                if streaming.first_token.is_none() {
                    streaming.first_token = Some(std::time::Instant::now());
                }
                streaming.chars += text.chars().count() + reasoning.chars().count();
                streaming.reasoning.push_str(&reasoning);
                streaming.parser.push(&text);
            }
            ChatEventKind::Finished { .. } => {
                // The chat read again when the turn's end is told (on the app's stream: the
                // chat changed) replaces the live view.
            }
            ChatEventKind::TitleChanged { title } => chat.chat.title = title,
            ChatEventKind::Compacted { summary } => {
                if !chat.summaries.iter().any(|s| s.id == summary.id) {
                    chat.summaries.push(summary);
                }
            }
            ChatEventKind::Retrying { .. } => {
                if let Some(streaming) = chat.live(event.message_id) {
                    streaming.restart();
                }
            }
            ChatEventKind::Step { step } => {
                // "Always allow" changed the saved policy: the settings form shows it.
                let always = step
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("always allowed"));
                let message_id = event.message_id;
                let steps = match chat.live(message_id) {
                    Some(live) => Some(&mut live.steps),
                    // Finished already: the reloaded message may lack this step yet.
                    None => chat
                        .messages
                        .iter_mut()
                        .find(|m| m.message.id == message_id)
                        .map(|m| &mut m.steps),
                };
                if let Some(steps) = steps
                    && !steps.iter().any(|s| s.id == step.id)
                {
                    steps.push(step);
                }
                if always {
                    self.agent.reload_settings = true;
                }
            }
            ChatEventKind::Approval { .. } | ChatEventKind::ApprovalSettled { .. } => {}
        }
    }
}

/// Where following the agent goes after `step`: the file it read (at the first line read) or
/// edited (at the edited text when the file is open, else its top).
fn followed(
    step: &tandem_core::store::AgentStep,
    project: Option<&crate::model::state::ProjectState>,
) -> Option<(String, usize)> {
    let arguments = step.arguments.as_ref()?;
    let path = arguments
        .get("path")?
        .as_str()?
        .trim_start_matches("./")
        .to_string();
    let line = match step.tool.as_deref()? {
        "read_file" => arguments
            .get("start_line")
            .and_then(serde_json::Value::as_u64)
            .map_or(1, |n| n.max(1) as usize),
        "search_replace" => {
            let search = arguments.get("search").and_then(serde_json::Value::as_str);
            let open = project.and_then(|p| p.tabs.iter().find(|t| t.path == path));
            match (search, open) {
                (Some(search), Some(tab)) => tab
                    .text
                    .find(search)
                    .map_or(1, |at| tab.text[..at].matches('\n').count() + 1),
                _ => 1,
            }
        }
        "write_file" => 1,
        _ => return None,
    };
    Some((path, line))
}
