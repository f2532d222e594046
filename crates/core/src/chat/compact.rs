//! Long chats are compacted, not cut: turns too old (past the history setting) or too many
//! for the window are summarised by the chat's own model, the summary is stored and sent in
//! their place, and the chat shows it. A summary folds in the one before it, so each chat has
//! one current summary standing for everything before its kept turns.

use futures_util::StreamExt;

use super::ChatError;
use super::models::ModelChoice;
use super::prompt::{HistoryTurn, SUMMARY_PROMPT, strip_for_history};
use crate::llm::{ChatMessage, ChatRequest, ChatRole, StreamEvent};
use crate::store::{ChatSummary, NewSummary, Store};
use crate::tokens;

/// The summary's room (tokens).
const SUMMARY_TOKENS: u32 = 700;
/// A single message longer than this (characters) is cut for the summariser: the gist is at
/// its start, and a pasted log must not crowd out the rest.
const MESSAGE_CHARS: usize = 6_000;

/// What the turns to summarise are sent as: the earlier summary, then each exchange.
fn transcript(earlier: Option<&ChatSummary>, turns: &[HistoryTurn]) -> String {
    let mut text = String::new();
    if let Some(summary) = earlier {
        text.push_str("Summary of the conversation before these turns:\n");
        text.push_str(&summary.content);
        text.push_str("\n\n");
    }
    for turn in turns {
        for (who, message) in [("User", &turn.user), ("Assistant", &turn.reply)] {
            let content: String = message.content.chars().take(MESSAGE_CHARS).collect();
            text.push_str(&format!("{who}: {content}\n\n"));
        }
    }
    text
}

/// Summarises `turns` (after `earlier`, which the new summary folds in) with the chat's model,
/// within its window: the oldest turns are left out of the request if all do not fit.
pub async fn summarize(
    choice: &ModelChoice,
    window: usize,
    earlier: Option<&ChatSummary>,
    turns: &[HistoryTurn],
) -> Result<String, ChatError> {
    let room = window.saturating_sub(SUMMARY_TOKENS as usize + 400);
    let mut from = 0;
    let mut text = transcript(earlier, turns);
    while tokens::estimate(&text) > room && from < turns.len() {
        from += 1;
        text = transcript(earlier, &turns[from..]);
    }
    let request = ChatRequest {
        model: choice.model.clone(),
        messages: vec![
            ChatMessage::new(ChatRole::System, SUMMARY_PROMPT),
            ChatMessage::new(ChatRole::User, text),
        ],
        max_output_tokens: Some(SUMMARY_TOKENS),
        context_window: u32::try_from(window).ok(),
        temperature: Some(0.2),
        tools: Vec::new(),
        reasoning_effort: None,
        estimate_scale: 1.0,
    };
    let mut stream = choice.provider.stream(request);
    let mut summary = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::Text(piece) => summary.push_str(&piece),
            StreamEvent::Done { .. } => break,
            _ => {}
        }
    }
    let summary = strip_for_history(&summary);
    if summary.trim().is_empty() {
        return Err(ChatError::Task(
            "the model returned an empty summary".into(),
        ));
    }
    Ok(summary.trim().to_string())
}

/// Stores a summary of `turns` (which end at the chat's message `up_to`) folding in
/// `earlier`.
pub fn store_summary(
    store: &Store,
    chat_id: i64,
    earlier: Option<&ChatSummary>,
    turns: &[HistoryTurn],
    content: &str,
    model: &str,
) -> Result<ChatSummary, ChatError> {
    let up_to = turns
        .last()
        .map(|t| t.reply_id)
        .or(earlier.map(|s| s.up_to_message_id))
        .unwrap_or(0);
    let count = earlier.map_or(0, |s| s.turns) + turns.len() as i64;
    Ok(store.add_chat_summary(&NewSummary {
        chat_id,
        up_to_message_id: up_to,
        turns: count,
        content,
        model: Some(model),
        source_chat_id: earlier.and_then(|s| s.source_chat_id),
    })?)
}

/// The system prompt's section carrying a summary.
pub fn section(summary: &ChatSummary) -> String {
    format!(
        "\n\n# Earlier in this conversation (summarized, {} turn(s))\n\n{}\n",
        summary.turns, summary.content
    )
}

impl super::ChatService {
    /// "Summarize into a new chat": the chat so far condensed (its current summary folded
    /// in) by the chosen model, and a new chat of the same project and mode that starts
    /// from that summary. The old chat stays as it is.
    pub async fn summarize_into_new_chat(
        &self,
        chat_id: i64,
        options: &super::SendOptions,
    ) -> Result<crate::store::Chat, ChatError> {
        let store = self.engine.store();
        let chat = store.chat(chat_id)?;
        let choice = self.model_choice(options.provider.as_deref(), options.model.as_deref())?;
        let summary = store.latest_chat_summary(chat_id)?;
        let covered = summary.as_ref().map_or(0, |s| s.up_to_message_id);
        let messages: Vec<_> = store
            .messages(chat_id)?
            .into_iter()
            .filter(|m| m.id > covered)
            .collect();
        let turns = super::prompt::history_turns(&messages);
        let content = match (&summary, turns.is_empty()) {
            (Some(summary), true) => summary.content.clone(),
            (None, true) => {
                return Err(ChatError::Task(
                    "the chat has no complete turn to summarize".into(),
                ));
            }
            _ => {
                let profile = super::models::model_profile(store, &choice).await;
                let window = profile
                    .context_length()
                    .unwrap_or(super::models::FALLBACK_CONTEXT)
                    as usize;
                summarize(&choice, window, summary.as_ref(), &turns).await?
            }
        };
        let new_chat = self.new_chat(chat.project_id, chat.mode)?;
        let title: String = format!("Summary of {}", chat.title)
            .chars()
            .take(60)
            .collect();
        store.rename_chat(new_chat.id, &title)?;
        let new_chat = store.chat(new_chat.id)?;
        store.add_chat_summary(&NewSummary {
            chat_id: new_chat.id,
            up_to_message_id: 0,
            turns: summary.as_ref().map_or(0, |s| s.turns) + turns.len() as i64,
            content: &content,
            model: Some(&choice.model),
            source_chat_id: Some(chat_id),
        })?;
        Ok(new_chat)
    }
}
