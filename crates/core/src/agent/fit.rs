//! Keeping every request of an agent turn inside the model's context window.
//!
//! A turn grows with each tool result; a server given more than its window keeps the tail and
//! drops the rest without a word (Ollama), or refuses the request. Before each request the
//! loop fits the conversation: the oldest tool results are replaced by a note saying what they
//! were (so the model can ask again), then large arguments of earlier calls (a whole file
//! written) likewise, and as a last resort the latest result is cut at a line. The system
//! prompt, the plan, the person's messages and the model's own words are never touched. What
//! was dropped is reported, so the step card can show it.

use crate::llm::{ChatMessage, ToolSpec, estimate_tokens};

/// A tool result the loop put into the conversation.
#[derive(Debug, Clone)]
pub struct ResultEntry {
    /// Its position in the conversation.
    pub index: usize,
    /// What produced it, as the model would name it: `read_file src/a.py`.
    pub label: String,
    pub elided: bool,
}

/// What fitting changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// Labels of the results replaced by a note, oldest first.
    pub elided: Vec<String>,
    /// Earlier calls whose large arguments were replaced by a note.
    pub arguments: usize,
    /// The latest result, when it had to be cut: (its label, lines kept, lines it had).
    pub cut: Option<(String, usize, usize)>,
    /// Estimated tokens before and after.
    pub before: usize,
    pub after: usize,
}

impl Trimmed {
    /// One paragraph for the step card and the log.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.elided.is_empty() {
            parts.push(format!(
                "{} earlier tool result(s) elided ({})",
                self.elided.len(),
                self.elided.join(", ")
            ));
        }
        if self.arguments > 0 {
            parts.push(format!(
                "large arguments of {} earlier call(s) elided",
                self.arguments
            ));
        }
        if let Some((label, kept, of)) = &self.cut {
            parts.push(format!(
                "the latest result ({label}) cut to {kept} of {of} lines"
            ));
        }
        format!(
            "{} to fit the model's context window (~{} → ~{} tokens)",
            parts.join("; "),
            self.before,
            self.after
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the next request needs ~{needed} tokens but the model's window leaves ~{available} for it, \
     even with every earlier tool result elided; start a new chat, shorten the prompt, or pick a \
     model with a larger context window"
)]
pub struct Overflow {
    pub needed: usize,
    pub available: usize,
}

/// String arguments longer than this (in bytes) are elided from earlier calls.
const LARGE_ARGUMENT: usize = 400;

/// Fits `messages` (sent with `tools`) into `available` tokens. `results` lists the tool
/// results in the order they were added; the last one is kept whole while anything else can
/// give. Returns what was changed, or `None` when it already fit.
pub fn fit(
    messages: &mut [ChatMessage],
    results: &mut [ResultEntry],
    tools: &[ToolSpec],
    available: usize,
) -> Result<Option<Trimmed>, Overflow> {
    let before = estimate_tokens(messages, tools);
    if before <= available {
        return Ok(None);
    }
    let mut total = before;
    let mut trimmed = Trimmed {
        before,
        ..Trimmed::default()
    };
    let latest = results.len().checked_sub(1);

    // 1. The oldest results first, all but the latest.
    for (i, entry) in results.iter_mut().enumerate() {
        if total <= available || Some(i) == latest {
            break;
        }
        if entry.elided {
            continue;
        }
        let Some(message) = messages.get_mut(entry.index) else {
            continue;
        };
        let lines = message.content.lines().count();
        let note = format!(
            "[{}: {lines} line(s), from earlier in this turn; elided to fit the model's context \
             window. Call the tool again if you need it.]",
            entry.label
        );
        total = replace(message, total, note);
        entry.elided = true;
        trimmed.elided.push(entry.label.clone());
    }

    // 2. Large arguments of earlier calls (a file written whole), oldest first.
    let last_call = messages.iter().rposition(|m| !m.tool_calls.is_empty());
    for (index, message) in messages.iter_mut().enumerate() {
        if total <= available {
            break;
        }
        if Some(index) == last_call || message.tool_calls.is_empty() {
            continue;
        }
        let old = message.estimated_tokens();
        let mut changed = false;
        for call in &mut message.tool_calls {
            if let Some(arguments) = call.arguments.as_object_mut() {
                for value in arguments.values_mut() {
                    if let Some(text) = value.as_str()
                        && text.len() > LARGE_ARGUMENT
                    {
                        let lines = text.lines().count();
                        *value = serde_json::Value::String(format!(
                            "[{lines} line(s), elided to fit the model's context window]"
                        ));
                        changed = true;
                    }
                }
            }
        }
        if changed {
            trimmed.arguments += 1;
            total = total - old + message.estimated_tokens();
        }
    }

    // 3. The latest result, cut at a line, keeping its start.
    if total > available
        && let Some(entry) = latest.and_then(|i| results.get_mut(i))
        && !entry.elided
        && let Some(message) = messages.get_mut(entry.index)
    {
        let over = total - available;
        let lines: Vec<&str> = message.content.lines().collect();
        // Tokens are at most one per byte; aim a little lower to leave room for the note.
        let keep_bytes = message.content.len().saturating_sub(over * 4 + 400);
        let mut kept = 0;
        let mut bytes = 0;
        for line in &lines {
            if bytes + line.len() + 1 > keep_bytes {
                break;
            }
            bytes += line.len() + 1;
            kept += 1;
        }
        let of = lines.len();
        let mut content = lines[..kept].join("\n");
        content.push_str(&format!(
            "\n[cut: the first {kept} of {of} lines are shown, to fit the model's context \
             window. Ask for a narrower part if you need the rest.]"
        ));
        total = replace(message, total, content);
        trimmed.cut = Some((entry.label.clone(), kept, of));
    }

    if total > available {
        return Err(Overflow {
            needed: total,
            available,
        });
    }
    trimmed.after = total;
    Ok(Some(trimmed))
}

/// Replaces a message's text, returning the new total.
fn replace(message: &mut ChatMessage, total: usize, content: String) -> usize {
    let old = message.estimated_tokens();
    message.content = content;
    total - old + message.estimated_tokens()
}

/// How a call is named in notes: the tool and its main argument.
pub fn label(name: &str, arguments: &serde_json::Value) -> String {
    let main = ["path", "command", "pattern", "query", "url", "from"]
        .iter()
        .find_map(|key| arguments.get(*key)?.as_str());
    match main {
        Some(value) => {
            let short: String = value.chars().take(80).collect();
            format!("{name} {short}")
        }
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatRole, ToolCall};
    use serde_json::json;

    fn lines(n: usize) -> String {
        (0..n)
            .map(|i| format!("line {i:04} of the file\n"))
            .collect()
    }

    /// system, prompt, then (call, result) × `n`, each result `size` lines.
    fn turn(n: usize, size: usize) -> (Vec<ChatMessage>, Vec<ResultEntry>) {
        let mut messages = vec![
            ChatMessage::new(ChatRole::System, "You are an agent."),
            ChatMessage::new(ChatRole::User, "Fix the bug in a.py"),
        ];
        let mut results = Vec::new();
        for i in 0..n {
            let call = ToolCall {
                id: Some(format!("c{i}")),
                name: "read_file".into(),
                arguments: json!({"path": format!("src/f{i}.py")}),
            };
            messages.push(ChatMessage::assistant_with_calls(
                String::new(),
                vec![call.clone()],
            ));
            messages.push(ChatMessage::tool_result(&call, lines(size)));
            results.push(ResultEntry {
                index: messages.len() - 1,
                label: label(&call.name, &call.arguments),
                elided: false,
            });
        }
        (messages, results)
    }

    #[test]
    fn a_request_that_fits_is_left_alone() {
        let (mut messages, mut results) = turn(2, 10);
        let copy = messages.clone();
        assert_eq!(fit(&mut messages, &mut results, &[], 10_000), Ok(None));
        assert_eq!(messages, copy);
    }

    #[test]
    fn oldest_results_go_first_and_say_what_they_were() {
        let (mut messages, mut results) = turn(4, 1500);
        let total = estimate_tokens(&messages, &[]);
        // Room for about two and a half results.
        let available = total * 5 / 8;
        let trimmed = fit(&mut messages, &mut results, &[], available)
            .unwrap()
            .unwrap();
        assert_eq!(
            trimmed.elided,
            ["read_file src/f0.py", "read_file src/f1.py"]
        );
        assert!(trimmed.cut.is_none());
        assert!(trimmed.after <= available && trimmed.before == total);
        assert!(estimate_tokens(&messages, &[]) <= available);
        assert!(
            messages[3]
                .content
                .contains("read_file src/f0.py: 1500 line(s)")
        );
        assert!(messages[3].content.contains("Call the tool again"));
        // The call ids still pair up; the person's prompt and the latest results are whole.
        assert_eq!(messages[3].tool_call_id.as_deref(), Some("c0"));
        assert_eq!(messages[1].content, "Fix the bug in a.py");
        assert_eq!(messages[9].content, lines(1500));
        assert!(
            trimmed
                .describe()
                .contains("2 earlier tool result(s) elided")
        );
    }

    #[test]
    fn the_latest_result_is_cut_at_a_line_only_when_nothing_else_gives() {
        let (mut messages, mut results) = turn(2, 3000);
        let available = 12_000;
        let trimmed = fit(&mut messages, &mut results, &[], available)
            .unwrap()
            .unwrap();
        assert_eq!(trimmed.elided.len(), 1);
        let (label, kept, of) = trimmed.cut.clone().unwrap();
        assert_eq!((label.as_str(), of), ("read_file src/f1.py", 3000));
        assert!(kept > 1000 && kept < 3000, "{kept}");
        let last = &messages[5].content;
        assert!(last.starts_with("line 0000 of the file\n"));
        assert!(last.contains(&format!("the first {kept} of 3000 lines")));
        assert!(estimate_tokens(&messages, &[]) <= available);
    }

    #[test]
    fn large_arguments_of_earlier_calls_are_elided_but_not_the_last() {
        let mut messages = vec![ChatMessage::new(ChatRole::User, "write two files")];
        let mut results = Vec::new();
        for i in 0..2 {
            let call = ToolCall {
                id: Some(format!("w{i}")),
                name: "write_file".into(),
                arguments: json!({"path": format!("f{i}.txt"), "content": lines(800)}),
            };
            messages.push(ChatMessage::assistant_with_calls(
                String::new(),
                vec![call.clone()],
            ));
            messages.push(ChatMessage::tool_result(&call, "Proposed."));
            results.push(ResultEntry {
                index: messages.len() - 1,
                label: label(&call.name, &call.arguments),
                elided: false,
            });
        }
        let available = estimate_tokens(&messages, &[]) * 2 / 3;
        let trimmed = fit(&mut messages, &mut results, &[], available)
            .unwrap()
            .unwrap();
        assert_eq!(trimmed.arguments, 1);
        let first = &messages[1].tool_calls[0].arguments;
        assert_eq!(first["path"], "f0.txt");
        assert!(
            first["content"]
                .as_str()
                .unwrap()
                .contains("800 line(s), elided")
        );
        assert_eq!(messages[3].tool_calls[0].arguments["content"], lines(800));
    }

    #[test]
    fn what_cannot_fit_is_an_error_not_a_silent_cut() {
        let mut messages = vec![
            ChatMessage::new(ChatRole::System, "x".repeat(4000)),
            ChatMessage::new(ChatRole::User, "y".repeat(4000)),
        ];
        let err = fit(&mut messages, &mut [], &[], 1000).unwrap_err();
        assert_eq!(err.available, 1000);
        assert!(err.needed > 2000);
        assert!(err.to_string().contains("larger context window"));
        assert_eq!(
            messages[1].content,
            "y".repeat(4000),
            "the person's words stay"
        );
    }

    #[test]
    fn labels_name_the_main_argument() {
        assert_eq!(
            label("read_file", &json!({"path": "a.rs"})),
            "read_file a.rs"
        );
        assert_eq!(
            label("shell", &json!({"command": "ls -la"})),
            "shell ls -la"
        );
        assert_eq!(label("list_files", &json!({})), "list_files");
    }
}
