//! Turns that follow from what a chat already holds, each with the prompt every front-end
//! sends for it: implementing a plan a reply made, fixing what the project's check found,
//! fixing one security finding of a review.

use crate::checks::Problem;
use crate::edits::SecurityFinding;
use crate::store::{AgentStep, StepKind};

/// How many of a check's last output lines are quoted when no problem could be read from it.
const OUTPUT_LINES: usize = 60;

/// A run of the project's check, as its step recorded it (see `chat/checks.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastCheck {
    pub command: String,
    pub passed: bool,
    pub round: u64,
    pub problems: Vec<Problem>,
    pub output: String,
}

impl LastCheck {
    /// The check `step` recorded; `None` for any other step, or one whose record is damaged.
    pub fn of(step: &AgentStep) -> Option<LastCheck> {
        if step.kind != StepKind::Check {
            return None;
        }
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

    /// The first check among `newest_first` steps.
    pub fn newest<'a>(newest_first: impl IntoIterator<Item = &'a AgentStep>) -> Option<Self> {
        newest_first.into_iter().find_map(LastCheck::of)
    }
}

/// "Fix these problems": each problem with its place, or the output's end when none could be
/// read from it.
pub fn fix_problems_prompt(check: &LastCheck) -> String {
    let mut text = format!(
        "The check `{}` reports problems. Fix them:\n\n",
        check.command
    );
    if check.problems.is_empty() {
        let tail: Vec<&str> = check.output.lines().rev().take(OUTPUT_LINES).collect();
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

/// "Fix this": what Build mode is asked for one finding.
pub fn fix_finding_prompt(finding: &SecurityFinding) -> String {
    let place = match (&finding.path, &finding.lines) {
        (Some(path), Some(lines)) => format!(" in {path} (lines {lines})"),
        (Some(path), None) => format!(" in {path}"),
        _ => String::new(),
    };
    format!(
        "Fix this {} security finding{place}: {}\n\n{}\n\nChange only what the fix needs.",
        finding.level, finding.title, finding.body
    )
}

/// "Implement this plan", from the reply that made it (its text as history sends it:
/// reasoning and tags left out); `None` when nothing of it is left.
pub fn implement_plan_prompt(reply: &str) -> Option<String> {
    // Trimmed already.
    let plan = super::prompt::strip_for_history(reply);
    (!plan.is_empty()).then(|| format!("Implement this plan:\n\n{plan}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Severity;

    fn step(kind: StepKind, arguments: serde_json::Value, output: &str) -> AgentStep {
        AgentStep {
            id: 1,
            message_id: 1,
            seq: 0,
            kind,
            tool: None,
            call_id: None,
            arguments: Some(arguments),
            risk: None,
            decision: None,
            reason: None,
            result: Some(output.into()),
            exit_code: None,
            is_error: false,
            duration_ms: None,
            created_at: 0,
            sandbox: None,
        }
    }

    fn check_step(arguments: serde_json::Value, output: &str) -> AgentStep {
        step(StepKind::Check, arguments, output)
    }

    #[test]
    fn the_newest_check_is_read_back_from_its_step() {
        let older = check_step(
            serde_json::json!({"round": 1, "command": "cargo check", "passed": false,
                "problems": [{"path": "src/a.rs", "line": 3, "column": 5,
                    "severity": "error", "message": "cannot find value `x`"}]}),
            "error[E0425]",
        );
        let newer = check_step(
            serde_json::json!({"round": 2, "command": "cargo check", "passed": true}),
            "",
        );
        // A tool call with the same arguments is not a check.
        let other = step(
            StepKind::Tool,
            serde_json::json!({"round": 1, "command": "x", "passed": false}),
            "",
        );
        let damaged = check_step(serde_json::json!({"round": 3}), "");
        let found = LastCheck::newest([&other, &damaged, &older]).expect("a check");
        assert_eq!((found.round, found.passed), (1, false));
        assert_eq!(found.problems[0].severity, Severity::Error);
        assert_eq!(found.output, "error[E0425]");
        assert!(LastCheck::newest([&newer, &older]).expect("a check").passed);
        assert_eq!(LastCheck::newest([&other]), None);
    }

    #[test]
    fn the_fix_prompt_lists_each_problem_or_the_output() {
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
        let prompt = fix_problems_prompt(&check);
        assert!(prompt.contains("`cargo check`"));
        assert!(prompt.contains("- src/a.rs:3:5: cannot find value `x`\n"));
        assert!(!prompt.contains("```"));
        check.problems.clear();
        assert!(fix_problems_prompt(&check).contains("```\nerror[E0425]\n --> src/a.rs:3:5\n```"));
    }

    #[test]
    fn the_finding_prompt_names_the_place() {
        let finding = SecurityFinding {
            title: "SQL injection".into(),
            level: "critical".into(),
            path: Some("src/db.rs".into()),
            lines: Some("40-52".into()),
            body: "Use parameters.".into(),
        };
        let prompt = fix_finding_prompt(&finding);
        assert!(prompt.starts_with(
            "Fix this critical security finding in src/db.rs (lines 40-52): SQL injection"
        ));
        assert!(prompt.contains("Use parameters."));
    }

    #[test]
    fn a_plan_is_implemented_from_its_text_without_reasoning() {
        let prompt = implement_plan_prompt("<think>hmm</think>1. Add a test\n2. Fix it").unwrap();
        assert_eq!(prompt, "Implement this plan:\n\n1. Add a test\n2. Fix it");
        assert_eq!(
            implement_plan_prompt("<think>only thinking</think>\n"),
            None
        );
    }
}
