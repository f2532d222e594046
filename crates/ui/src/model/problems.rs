//! The Problems panel's model: the last run of the project's check in the open chat, read
//! from its steps (the live reply's first).

use crate::model::chat_state::ChatState;
use tandem_core::app::LastCheck;

/// The newest check step of any reply in `chat` (the live one first).
pub fn last_check(chat: &ChatState) -> Option<LastCheck> {
    let live = chat.streaming.iter().flat_map(|s| s.steps.iter().rev());
    let loaded = chat
        .messages
        .iter()
        .rev()
        .flat_map(|m| m.steps.iter().rev());
    LastCheck::newest(live.chain(loaded))
}
