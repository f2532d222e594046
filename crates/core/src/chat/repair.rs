//! Failed edits go back to the model before the person sees them.
//!
//! A Build reply whose search block matches nowhere, or whose path is refused, would otherwise
//! reach the person as a broken proposal. Instead the turn answers the model with each error
//! (which names the nearest lines of the file) and asks for the whole reply again; the
//! corrected reply becomes the proposal. Each round is kept as a step (the failed reply and
//! its errors), at most [`DEFAULT_REPAIR_ROUNDS`] rounds unless the setting says otherwise, and
//! cancelling the turn stops it like any reply.

use crate::edits::EditPlan;
use crate::llm::{ChatMessage, ChatRequest, ChatRole};

/// Rounds when the setting is absent.
pub const DEFAULT_REPAIR_ROUNDS: usize = 2;

/// One failed operation: the path it names and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failure {
    pub path: String,
    pub error: String,
}

/// The operations of `plan` that failed.
pub fn failures(plan: &EditPlan) -> Vec<Failure> {
    plan.errors()
        .map(|op| Failure {
            path: op.path.clone(),
            error: op.error.clone().unwrap_or_else(|| "failed".into()),
        })
        .collect()
}

/// What the model is told about its failed edits.
pub fn feedback(failures: &[Failure]) -> String {
    let mut text = String::from(
        "Some edits in your reply could not be applied, so nothing has been changed yet:\n\n",
    );
    for failure in failures {
        text.push_str(&format!(
            "- {}: {}\n",
            failure.path,
            failure.error.trim_end()
        ));
    }
    text.push_str(
        "\nSend your complete reply again, with every edit (not only the corrected ones), \
         fixing these. A SEARCH block must copy lines exactly as they are in the file now; \
         for a small file, writing the whole file is safer.",
    );
    text
}

/// The next round's request: the turn's request, the failed reply (without its thinking),
/// and the feedback. `None` when it would not fit the model's window beside a reply: then
/// the failed proposal is shown as it is.
pub fn follow_up(request: &ChatRequest, reply: &str, feedback: &str) -> Option<ChatRequest> {
    let mut next = request.clone();
    next.messages.push(ChatMessage::new(
        ChatRole::Assistant,
        super::prompt::strip_for_history(reply),
    ));
    next.messages
        .push(ChatMessage::new(ChatRole::User, feedback.to_string()));
    let fits = next
        .context_window
        .is_none_or(|window| next.counted_tokens() + next.reply_reserve() <= window as usize);
    fits.then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(window: Option<u32>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::new(ChatRole::System, "Build things."),
                ChatMessage::new(ChatRole::User, "fix it"),
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
    fn feedback_names_each_failure_and_asks_for_the_whole_reply() {
        let text = feedback(&[
            Failure {
                path: "src/a.rs".into(),
                error: "block 1: SEARCH not found; nearest lines 3-4:\nfn a() {}\n".into(),
            },
            Failure {
                path: "../etc/passwd".into(),
                error: "path outside the project".into(),
            },
        ]);
        assert!(
            text.contains("- src/a.rs: block 1: SEARCH not found; nearest lines 3-4:\nfn a() {}\n")
        );
        assert!(text.contains("- ../etc/passwd: path outside the project\n"));
        assert!(text.contains("complete reply again"));
    }

    #[test]
    fn the_follow_up_carries_the_failed_reply_without_thinking() {
        let next = follow_up(
            &request(Some(32_768)),
            "<think>hmm</think>Here.\n<tandem-write path=\"a\">x</tandem-write>",
            "fix",
        )
        .unwrap();
        assert_eq!(next.messages.len(), 4);
        assert_eq!(next.messages[2].role, ChatRole::Assistant);
        assert_eq!(
            next.messages[2].content,
            "Here.\n<tandem-write path=\"a\">x</tandem-write>"
        );
        assert_eq!(next.messages[3].content, "fix");
        // A follow-up that cannot fit is not sent.
        assert!(follow_up(&request(Some(2048)), &"x".repeat(20_000), "fix").is_none());
        assert!(follow_up(&request(None), &"x".repeat(20_000), "fix").is_some());
    }
}
