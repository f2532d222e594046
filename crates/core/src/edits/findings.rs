//! Security findings: the problems a Security review reports as `<tandem-security-finding>`
//! tags, read from a reply and ranked most severe first.

use serde::Serialize;

use super::actions::{Action, actions};
use super::parser::{Segment, TagKind, parse};

/// A problem a Security review found (`<tandem-security-finding>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecurityFinding {
    pub title: String,
    /// `critical`, `high`, `medium`, `low`, `info` (lowercased; `unknown` when not given).
    pub level: String,
    pub path: Option<String>,
    /// A line or range as the model wrote it (`40`, `40-52`).
    pub lines: Option<String>,
    pub body: String,
}

impl SecurityFinding {
    /// How severe, for sorting and filtering: 0 is critical, 5 unknown.
    pub fn rank(&self) -> u8 {
        match self.level.as_str() {
            "critical" => 0,
            "high" => 1,
            "medium" => 2,
            "low" => 3,
            "info" => 4,
            _ => 5,
        }
    }

    /// The first line it names, if any.
    pub fn first_line(&self) -> Option<usize> {
        let lines = self.lines.as_deref()?;
        let first = lines.split(['-', ',', ' ']).next()?;
        first
            .trim()
            .trim_start_matches('L')
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
    }
}

/// The security findings in a reply, most severe first (in reply order among equals).
pub fn security_findings(content: &str) -> Vec<SecurityFinding> {
    security_findings_in(&parse(content))
}

/// The same, from a reply already parsed.
pub fn security_findings_in(segments: &[Segment]) -> Vec<SecurityFinding> {
    let has_any = segments
        .iter()
        .any(|s| matches!(s, Segment::Tag(tag) if tag.kind == TagKind::SecurityFinding));
    if !has_any {
        return Vec::new();
    }
    let mut found: Vec<SecurityFinding> = actions(segments)
        .into_iter()
        .filter_map(|action| match action {
            Ok(Action::SecurityFinding {
                title,
                level,
                path,
                lines,
                body,
            }) => Some(SecurityFinding {
                title,
                level,
                path,
                lines,
                body,
            }),
            _ => None,
        })
        .collect();
    found.sort_by_key(SecurityFinding::rank);
    found
}
