//! A reply as it arrives: streamed into the message and published, saved when it ends, and
//! the server's count of the prompt learnt.

use futures_util::StreamExt;

use super::turn::{Turn, TurnOutcome};
use super::writer::{Coalescer, DB_FLUSH_INTERVAL, EVENT_INTERVAL, StreamWriter};
use super::{ChatEventKind, ChatService};
use crate::llm::{ChatRequest, StreamEvent};
use crate::store::MessageStatus;

impl ChatService {
    /// Streams the reply into `outcome`, persisting and publishing as it goes.
    ///
    /// Returns whether the server refused the request as too long before any reply, with a
    /// count of its prompt that teaches a larger scale than the request was packed with (so
    /// packing it again fits better).
    pub(super) async fn stream(
        &self,
        turn: &Turn,
        request: ChatRequest,
        outcome: &mut TurnOutcome,
    ) -> bool {
        let mut refused = false;
        let store = self.engine.store();
        let mut writer = StreamWriter::new(store, turn.message_id, DB_FLUSH_INTERVAL);
        let mut deltas = Coalescer::new(EVENT_INTERVAL);
        let warns = turn.choice.record.kind.request_sets_window();
        let mut stream = turn.choice.provider.stream(request.clone());
        let mut thinking = false;
        let content = &mut outcome.content;
        outcome.status = loop {
            let due = deltas.due_at();
            let next = tokio::select! {
                biased;
                _ = turn.cancel.cancelled() => break MessageStatus::Cancelled,
                _ = sleep_until(due), if due.is_some() => None,
                next = stream.next() => Some(next),
            };
            match next {
                None => {}
                Some(Some(Ok(StreamEvent::Text(text)))) => {
                    if std::mem::take(&mut thinking) {
                        content.push_str("</think>\n");
                    }
                    content.push_str(&text);
                    deltas.text.push_str(&text);
                }
                Some(Some(Ok(StreamEvent::Reasoning(text)))) => {
                    if !std::mem::replace(&mut thinking, true) {
                        content.push_str("<think>");
                    }
                    content.push_str(&text);
                    deltas.reasoning.push_str(&text);
                }
                Some(Some(Ok(StreamEvent::Usage(usage)))) => {
                    self.learn_prompt_count(turn, &request, usage.input_tokens);
                    outcome.usage = Some(usage);
                }
                Some(Some(Ok(StreamEvent::ToolCall(_)))) => {}
                Some(Some(Ok(StreamEvent::Done { .. }))) | Some(None) => {
                    break MessageStatus::Complete;
                }
                Some(Some(Err(e))) => {
                    if let Some(counted) = e.counted_prompt()
                        && content.is_empty()
                    {
                        refused = self.learn_prompt_count(turn, &request, counted);
                    }
                    let mut error = e.to_string();
                    if matches!(e, crate::llm::LlmError::Disconnected { .. }) && content.is_empty()
                    {
                        error.push_str(&full_window_hint(&request));
                    }
                    outcome.error = Some(error);
                    break MessageStatus::Error;
                }
            }
            if let Err(e) = writer.update(content) {
                outcome.error = Some(format!("the reply could not be saved: {e}"));
                break MessageStatus::Error;
            }
            if let Some((text, reasoning)) = deltas.take(false) {
                self.event(turn, ChatEventKind::Delta { text, reasoning });
            }
        };
        // Dropping the stream aborts the HTTP request.
        drop(stream);
        if thinking {
            content.push_str("</think>\n");
        }
        if warns
            && let Some(usage) = &outcome.usage
            && let Some(warning) = request.truncation_warning(usage)
        {
            let note = format!("\n\n> **Context overflow:** {warning}\n");
            content.push_str(&note);
            deltas.text.push_str(&note);
        }
        if let Some((text, reasoning)) = deltas.take(true) {
            self.event(turn, ChatEventKind::Delta { text, reasoning });
        }
        refused
    }

    /// Saves the reply's final text and status (deleting the turns in `replaced` once it is
    /// complete) and records its usage.
    pub(super) fn save_reply(&self, turn: &Turn, outcome: &mut TurnOutcome, replaced: &[i64]) {
        let store = self.engine.store();
        let replaced = match outcome.status {
            MessageStatus::Complete => replaced,
            _ => &[],
        };
        if let Err(e) = store.finish_message_replacing(
            turn.message_id,
            &outcome.content,
            outcome.status,
            outcome.error.as_deref(),
            replaced,
        ) {
            outcome.status = MessageStatus::Error;
            outcome.error = Some(format!("the reply could not be saved: {e}"));
        }
        if let Some(usage) = outcome.usage {
            let _ = store.record_usage(
                turn.message_id,
                &turn.choice.record.name,
                &turn.choice.model,
                i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
                i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
            );
        }
    }

    /// Keeps how the model's server counted this request's prompt (`counted` tokens) against
    /// Tandem's estimate (see [`crate::store::Store::record_prompt_count`]): the next requests
    /// keep the difference free. Returns whether that raised the scale this request was
    /// packed with.
    pub(super) fn learn_prompt_count(
        &self,
        turn: &Turn,
        request: &ChatRequest,
        counted: u64,
    ) -> bool {
        let estimated = u64::try_from(request.estimated_tokens()).unwrap_or(u64::MAX);
        let (provider, model) = (turn.choice.record.id, &turn.choice.model);
        let learnt = self
            .engine
            .store()
            .record_prompt_count(provider, model, estimated, counted);
        matches!(learnt, Ok(Some(ratio)) if ratio > request.estimate_scale)
    }
}

/// Why a reply may have broken off before its first word when the request filled the model's
/// window: some servers (llama-cpp-python) fail a prompt longer than their context after
/// answering 200, and say why only in their log.
fn full_window_hint(request: &ChatRequest) -> String {
    let Some(window) = request.context_window.map(|w| w as usize) else {
        return String::new();
    };
    let used = request.counted_tokens() + request.reply_reserve();
    match used * 10 >= window * 9 {
        true => format!(
            ". The request filled the model's window ({used} of {window} tokens with the \
             reply's room, as Tandem estimates them): if the server's log says the prompt is \
             longer than its context, its tokenizer counts more than Tandem's estimate; set a \
             smaller window for this model (`tandem model set --context`, or Settings)"
        ),
        false => String::new(),
    }
}

pub(super) async fn sleep_until(at: Option<std::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}
