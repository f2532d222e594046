//! The Findings panel's model: the security findings of the open chat's newest review (the
//! last reply that has any) and the levels shown.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_hides_levels() {
        let finding = SecurityFinding {
            title: "SQL injection".into(),
            level: "critical".into(),
            path: Some("src/db.rs".into()),
            lines: Some("40-52".into()),
            body: "Use parameters.".into(),
        };
        let mut filter = LevelFilter::default();
        assert!(filter.shows(&finding));
        filter.hidden[0] = true;
        assert!(!filter.shows(&finding));
    }
}
