//! The open chat's view model: its replies (each parsed once for rendering, with its agent
//! steps), the reply streaming in, and the proposal under review.

use std::time::Instant;

use tandem_core::app::ContextBreakdown;
use tandem_core::edits::{Segment, StreamParser};
use tandem_core::store::{AgentStep, Chat, Message};

use crate::model::review::Review;

pub struct ChatState {
    pub chat: Chat,
    pub messages: Vec<MessageView>,
    pub streaming: Option<Streaming>,
    pub review: Option<Review>,
    pub breakdown: Option<ContextBreakdown>,
    /// What older turns were compacted into, oldest first; the last one is sent now.
    pub summaries: Vec<tandem_core::store::ChatSummary>,
}

impl ChatState {
    /// The live view of the reply `message_id`, started if needed (with the steps already
    /// loaded for it, when the chat was opened while it ran). `None` when the reply has
    /// finished: its events can arrive after the reloaded chat (they travel separately).
    pub fn live(&mut self, message_id: i64) -> Option<&mut Streaming> {
        let view = self.messages.iter().find(|m| m.message.id == message_id);
        if self.streaming.is_none()
            && view
                .is_some_and(|v| v.message.status != tandem_core::store::MessageStatus::Streaming)
        {
            return None;
        }
        Some(self.streaming.get_or_insert_with(|| {
            let mut live = Streaming::new(message_id);
            if let Some(view) = view {
                live.steps = view.steps.clone();
            }
            live
        }))
    }
}

/// A message with its text parsed once (prose, tags, thinking) for rendering, and the steps
/// of its agent turn.
pub struct MessageView {
    pub message: Message,
    pub segments: Vec<Segment>,
    pub steps: Vec<AgentStep>,
    /// What the person attached (their messages only).
    pub attachments: Vec<tandem_core::app::ShownAttachment>,
}

impl MessageView {
    pub fn new(message: Message) -> Self {
        Self::with_steps(message, Vec::new())
    }

    pub fn with_steps(message: Message, steps: Vec<AgentStep>) -> Self {
        let segments = tandem_core::edits::parse(&message.content);
        MessageView {
            message,
            segments,
            steps,
            attachments: Vec::new(),
        }
    }
}

/// The reply arriving now. Its text is parsed incrementally as deltas come.
pub struct Streaming {
    pub message_id: i64,
    pub parser: StreamParser,
    pub reasoning: String,
    pub started: Instant,
    pub first_token: Option<Instant>,
    pub chars: usize,
    /// Agent turns: the steps recorded so far.
    pub steps: Vec<AgentStep>,
}

impl Streaming {
    pub fn new(message_id: i64) -> Self {
        Streaming {
            message_id,
            parser: StreamParser::new(),
            reasoning: String::new(),
            started: Instant::now(),
            first_token: None,
            chars: 0,
            steps: Vec::new(),
        }
    }

    /// Another round of the same reply starts (its edits failed and went back to the model):
    /// the text so far goes, the steps stay.
    pub fn restart(&mut self) {
        self.parser = StreamParser::new();
        self.reasoning.clear();
        self.first_token = None;
        self.chars = 0;
    }

    /// Tokens per second since the first token (≈ 4 characters a token).
    pub fn tokens_per_second(&self) -> Option<f32> {
        let first = self.first_token?;
        let secs = first.elapsed().as_secs_f32();
        (secs > 0.2).then(|| self.chars as f32 / 4.0 / secs)
    }
}
