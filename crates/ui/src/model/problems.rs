//! The Problems panel's model: the last run of the project's check in the open chat, read
//! from its step, and the prompt that asks the model to fix what it found.

use crate::model::chat_state::ChatState;
use tandem_core::app::Problem;
use tandem_core::store::StepKind;

/// The newest check of the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastCheck {
    pub command: String,
    pub passed: bool,
    pub round: u64,
    pub problems: Vec<Problem>,
    pub output: String,
}

/// The newest check step of any reply in `chat` (the live one first).
pub fn last_check(chat: &ChatState) -> Option<LastCheck> {
    let live = chat.streaming.iter().flat_map(|s| s.steps.iter().rev());
    let loaded = chat
        .messages
        .iter()
        .rev()
        .flat_map(|m| m.steps.iter().rev());
    let step = live.chain(loaded).find(|s| s.kind == StepKind::Check)?;
    let arguments = step.arguments.as_ref()?;
    Some(LastCheck {
        command: arguments.get("command")?.as_str()?.to_string(),
        passed: arguments.get("passed")?.as_bool()?,
        round: arguments.get("round").and_then(|r| r.as_u64()).unwrap_or(1),
        problems: arguments
            .get("problems")
            .and_then(|p| serde_json::from_value(p.clone()).ok())
            .unwrap_or_default(),
        output: step.result.clone().unwrap_or_default(),
    })
}

/// "Fix these problems": the problems (or, when none could be read, the output's end).
pub fn fix_prompt(check: &LastCheck) -> String {
    let mut text = format!(
        "The check `{}` reports problems. Fix them:\n\n",
        check.command
    );
    if check.problems.is_empty() {
        let tail: Vec<&str> = check.output.lines().rev().take(60).collect();
        text.push_str("```\n");
        for line in tail.iter().rev() {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("```\n");
    }
    for p in &check.problems {
        let col = p.column.map(|c| format!(":{c}")).unwrap_or_default();
        text.push_str(&format!("- {}:{}{col}: {}\n", p.path, p.line, p.message));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::app::Severity;

    #[test]
    fn the_prompt_lists_each_problem_or_the_output() {
        let mut check = LastCheck {
            command: "cargo check".into(),
            passed: false,
            round: 1,
            problems: vec![Problem {
                path: "src/a.rs".into(),
                line: 3,
                column: Some(5),
                severity: Severity::Error,
                message: "cannot find value `x`".into(),
            }],
            output: "error[E0425]\n --> src/a.rs:3:5\n".into(),
        };
        let prompt = fix_prompt(&check);
        assert!(prompt.contains("`cargo check`"));
        assert!(prompt.contains("- src/a.rs:3:5: cannot find value `x`\n"));
        assert!(!prompt.contains("```"));
        check.problems.clear();
        assert!(fix_prompt(&check).contains("```\nerror[E0425]\n --> src/a.rs:3:5\n```"));
    }
}
