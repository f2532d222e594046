//! The Findings panel's model: the security findings of the open chat's newest review (the
//! last reply that has any), the levels shown, and the prompt that asks Build mode to fix one.

use crate::model::chat_state::ChatState;
use tandem_core::app::{SecurityFinding, security_findings_in};
use tandem_core::store::Role;

/// The levels, most severe first, as findings name them.
pub const LEVELS: [&str; 6] = ["critical", "high", "medium", "low", "info", "unknown"];

/// The newest reply with findings: its id and its findings, most severe first.
pub fn latest(chat: &ChatState) -> Option<(i64, Vec<SecurityFinding>)> {
    chat.messages
        .iter()
        .rev()
        .filter(|m| m.message.role == Role::Assistant)
        .find_map(|m| {
            let found = security_findings_in(&m.segments);
            (!found.is_empty()).then_some((m.message.id, found))
        })
}

/// Which levels the panel hides (by index in [`LEVELS`]); all shown by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelFilter {
    pub hidden: [bool; LEVELS.len()],
}

impl LevelFilter {
    pub fn shows(&self, finding: &SecurityFinding) -> bool {
        !self.hidden[usize::from(finding.rank()).min(LEVELS.len() - 1)]
    }
}

/// "Fix this": what Build mode is asked.
pub fn fix_prompt(finding: &SecurityFinding) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fix_prompt_names_the_place_and_the_filter_hides_levels() {
        let finding = SecurityFinding {
            title: "SQL injection".into(),
            level: "critical".into(),
            path: Some("src/db.rs".into()),
            lines: Some("40-52".into()),
            body: "Use parameters.".into(),
        };
        let prompt = fix_prompt(&finding);
        assert!(prompt.starts_with(
            "Fix this critical security finding in src/db.rs (lines 40-52): SQL injection"
        ));
        assert!(prompt.contains("Use parameters."));
        let mut filter = LevelFilter::default();
        assert!(filter.shows(&finding));
        filter.hidden[0] = true;
        assert!(!filter.shows(&finding));
    }
}
