//! How big a request is: the tokens its messages and tools take (estimated high), the room
//! its reply is given, and the context Ollama is asked to allocate for it.

use super::{ChatMessage, ChatRequest, ToolSpec, Usage};
use crate::tokens;

/// Ollama allocates context in steps; asking in whole KiB of tokens keeps it from reloading
/// the model for every few tokens of growth.
const WINDOW_STEP: usize = 1024;

/// Tokens `messages` (with their tool calls) and `tools` take as sent, estimated high (see
/// [`crate::tokens`]).
pub fn estimate_tokens(messages: &[ChatMessage], tools: &[ToolSpec]) -> usize {
    let messages: usize = messages.iter().map(ChatMessage::estimated_tokens).sum();
    let tools: usize = tools
        .iter()
        .map(|t| {
            tokens::estimate(&t.name)
                + tokens::estimate(&t.description)
                + tokens::estimate(&t.parameters.to_string())
        })
        .sum();
    messages + tools
}

/// `tokens` estimated, times `scale` (a model's server that counts more), rounded up.
fn scaled(tokens: usize, scale: f64) -> usize {
    if scale <= 1.0 || !scale.is_finite() {
        return tokens;
    }
    (tokens as f64 * scale).ceil() as usize
}

/// The estimated tokens that fit in `room` as a server counting `scale` per estimated token
/// counts them, rounded down (the inverse of [`scaled`]).
pub fn fitting(room: usize, scale: f64) -> usize {
    if scale <= 1.0 || !scale.is_finite() {
        return room;
    }
    (room as f64 / scale).floor() as usize
}

/// The reply's room in a window of `window` tokens when nothing else says: a quarter of it,
/// at least 256 tokens, at most 8,192.
pub fn reply_reserve_for(window: usize) -> usize {
    (window / 4).clamp(256, 8192)
}

impl ChatRequest {
    /// Tokens the request takes as sent (see [`estimate_tokens`]).
    pub fn estimated_tokens(&self) -> usize {
        estimate_tokens(&self.messages, &self.tools)
    }

    /// Tokens the request takes as the model's server counts them: the estimate times what
    /// its counts showed ([`ChatRequest::estimate_scale`]).
    pub fn counted_tokens(&self) -> usize {
        scaled(self.estimated_tokens(), self.estimate_scale)
    }

    /// The room the reply is given: its own limit when the request sets one, otherwise a
    /// quarter of the window (at least 256 tokens, at most 8,192).
    pub fn reply_reserve(&self) -> usize {
        match (self.max_output_tokens, self.context_window) {
            (Some(limit), _) => limit as usize,
            (None, Some(window)) => reply_reserve_for(window as usize),
            (None, None) => reply_reserve_for(8192),
        }
    }

    /// A warning when the server's own count of the prompt shows it filled the whole context
    /// it was given (97% or more of `num_ctx`): Ollama then keeps the end of the request and
    /// drops the start without saying so. Only meaningful where `num_ctx` is sent
    /// ([`super::ProviderKind::request_sets_window`]); a prompt served from the server's cache
    /// counts low, never high, so this does not cry wolf.
    pub fn truncation_warning(&self, usage: &Usage) -> Option<String> {
        let num_ctx = u64::from(self.num_ctx()?);
        let used = usage.input_tokens;
        (used * 100 >= num_ctx * 97).then(|| {
            format!(
                "the server counted {used} prompt tokens in a context of {num_ctx}: it has \
                 probably cut the start of the request (instructions, files or earlier messages) \
                 to fit. If the model's window is larger, set its context length in Settings; \
                 otherwise start a new chat or mention fewer files."
            )
        })
    }

    /// The context to allocate for this request: what it takes plus the reply's room, in
    /// steps of 1,024 tokens, capped at the model's window. `None` when the window is unknown.
    pub fn num_ctx(&self) -> Option<u32> {
        let window = self.context_window? as usize;
        let wanted =
            (self.counted_tokens() + self.reply_reserve()).div_ceil(WINDOW_STEP) * WINDOW_STEP;
        Some(u32::try_from(wanted.min(window)).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ChatRole, ToolCall};

    fn request(prompt: &str, window: Option<u32>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::new(ChatRole::System, "Be brief."),
                ChatMessage::new(ChatRole::User, prompt),
            ],
            max_output_tokens: None,
            context_window: window,
            temperature: None,
            tools: Vec::new(),
            reasoning_effort: None,
            estimate_scale: 1.0,
        }
    }

    #[test]
    fn each_request_gets_its_own_size_never_over_the_window() {
        // 32k window: the reply's room is 8,192, a small prompt rounds up to 9 KiB tokens.
        let small = request("hi", Some(32_768));
        assert_eq!(small.reply_reserve(), 8192);
        assert_eq!(small.num_ctx(), Some(9 * 1024));
        // The same model, a request that grew by ~12,000 tokens: sized again, not reused.
        let grown = request(&"x".repeat(48_000), Some(32_768));
        assert!(grown.estimated_tokens() >= 12_000);
        assert_eq!(grown.num_ctx(), Some(20 * 1024));
        // Larger than the window: capped (trimming to fit is the caller's job).
        let huge = request(&"x".repeat(400_000), Some(32_768));
        assert_eq!(huge.num_ctx(), Some(32_768));
        // Unknown window: nothing is asked.
        assert_eq!(request("hi", None).num_ctx(), None);
    }

    #[test]
    fn a_server_that_counts_more_is_asked_for_more_context() {
        let mut sent = request(&"x".repeat(48_000), Some(65_536));
        let estimated = sent.estimated_tokens();
        assert_eq!(sent.counted_tokens(), estimated);
        let as_estimated = sent.num_ctx().unwrap();
        // Its server counted a quarter more than the estimate: the context it is asked to
        // allocate holds the prompt as it counts it, and the reply's room on top.
        sent.estimate_scale = 1.25;
        assert_eq!(
            sent.counted_tokens(),
            (estimated as f64 * 1.25).ceil() as usize
        );
        let wanted = (sent.counted_tokens() + sent.reply_reserve()).div_ceil(1024) * 1024;
        assert_eq!(sent.num_ctx(), Some(wanted as u32));
        assert!(sent.num_ctx().unwrap() > as_estimated);
        // Scales under 1 (or not numbers) never shrink an estimate.
        sent.estimate_scale = 0.5;
        assert_eq!(sent.counted_tokens(), estimated);
        sent.estimate_scale = f64::NAN;
        assert_eq!(sent.counted_tokens(), estimated);
    }

    #[test]
    fn a_prompt_count_that_fills_the_context_is_a_warning() {
        let sent = request(&"x".repeat(40_000), Some(32_768));
        let num_ctx = u64::from(sent.num_ctx().unwrap());
        let usage = |input_tokens| Usage {
            input_tokens,
            output_tokens: 10,
        };
        assert_eq!(sent.truncation_warning(&usage(10_100)), None);
        // A cached prefix makes the count smaller, never a warning.
        assert_eq!(sent.truncation_warning(&usage(300)), None);
        let warning = sent.truncation_warning(&usage(num_ctx - 10)).unwrap();
        assert!(
            warning.contains(&format!("context of {num_ctx}")),
            "{warning}"
        );
        assert_eq!(
            request("hi", None).truncation_warning(&usage(1 << 20)),
            None
        );
    }

    #[test]
    fn tool_specs_and_calls_count() {
        let bare = request("hi", Some(8192));
        let mut with_tools = bare.clone();
        with_tools.tools.push(ToolSpec {
            name: "read_file".into(),
            description: "Reads a file of the project. ".repeat(20),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        });
        with_tools.messages.push(ChatMessage::assistant_with_calls(
            String::new(),
            vec![ToolCall {
                id: None,
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "src/some/long/path/name.rs"}),
            }],
        ));
        assert!(with_tools.estimated_tokens() > bare.estimated_tokens() + 140);
        assert_eq!(with_tools.reply_reserve(), 2048);
        with_tools.max_output_tokens = Some(100);
        assert_eq!(with_tools.reply_reserve(), 100);
    }
}
