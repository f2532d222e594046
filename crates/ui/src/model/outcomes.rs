//! What became of each edit card's change once its proposal was decided: applied, left out
//! (with the person's reason), partly applied, or rejected. Read from the reply's approval
//! note, which names what was left out by the plan's paths.

use tandem_core::app::normalize_relative;
use tandem_core::edits::{Segment, Tag, TagKind};
use tandem_core::store::{ApprovalState, Message};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<'a> {
    Applied,
    /// The whole change was left out.
    LeftOut {
        reason: Option<&'a str>,
    },
    /// Some of the file's hunks were left out (their diff text).
    Partly {
        left_out: &'a [String],
        reason: Option<&'a str>,
    },
    Rejected {
        reason: Option<&'a str>,
    },
}

impl Outcome<'_> {
    /// The card's words for it.
    pub fn text(&self) -> String {
        let because = |reason: Option<&str>| reason.map(|r| format!(": {r}")).unwrap_or_default();
        match self {
            Outcome::Applied => "applied".into(),
            Outcome::LeftOut { reason } => format!("left out{}", because(*reason)),
            Outcome::Partly { left_out, reason } => {
                let n = left_out.len();
                let hunks = if n == 1 { "hunk" } else { "hunks" };
                let reason = reason.map(|r| format!(" ({r})")).unwrap_or_default();
                format!("partly applied: {n} {hunks} left out{reason}")
            }
            Outcome::Rejected { reason } => format!("rejected{}", because(*reason)),
        }
    }
}

/// The outcome of each of `segments` (the reply `message`'s), by index: `None` for text, for
/// tags that change no file, and while the proposal waits for review.
pub fn outcomes<'a>(message: &'a Message, segments: &[Segment]) -> Vec<Option<Outcome<'a>>> {
    let note = message.approval_note.as_ref();
    let reason = note.and_then(|n| n.reason.as_deref());
    segments
        .iter()
        .enumerate()
        .map(|(i, segment)| {
            let Segment::Tag(tag) = segment else {
                return None;
            };
            let target = target(tag, &segments[i + 1..])?;
            match message.approval_state? {
                ApprovalState::Pending => None,
                ApprovalState::Rejected => Some(Outcome::Rejected { reason }),
                ApprovalState::Approved => {
                    let left = match &target {
                        Target::Dependencies => {
                            note.and_then(|n| n.left_out.iter().find(|l| l.is_dependencies()))
                        }
                        Target::File(path) => note.and_then(|n| n.left_out_of(path)),
                    };
                    Some(match left {
                        None => Outcome::Applied,
                        Some(left) if left.whole || left.hunks.is_empty() => {
                            Outcome::LeftOut { reason }
                        }
                        Some(left) => Outcome::Partly {
                            left_out: &left.hunks,
                            reason,
                        },
                    })
                }
            }
        })
        .collect()
}

/// What a change tag lands on once the whole reply is planned.
enum Target {
    /// The file as the plan names it.
    File(String),
    Dependencies,
}

/// The file (or the dependencies) `tag` changes, as the plan names it: normalised, and
/// followed through the renames `later` in the reply.
fn target(tag: &Tag, later: &[Segment]) -> Option<Target> {
    if !tag.complete {
        return None;
    }
    let raw = match tag.kind {
        TagKind::Write | TagKind::SearchReplace | TagKind::Delete => tag.attr("path")?,
        TagKind::Rename => tag.attr("to")?,
        TagKind::AddDependency => return Some(Target::Dependencies),
        _ => return None,
    };
    let mut path = plan_path(raw);
    for segment in later {
        if let Segment::Tag(rename) = segment
            && rename.kind == TagKind::Rename
            && rename.complete
            && rename.attr("from").map(plan_path).as_deref() == Some(path.as_str())
            && let Some(to) = rename.attr("to")
        {
            path = plan_path(to);
        }
    }
    Some(Target::File(path))
}

/// `raw` as the plan names it (a path the plan refused stays as written).
fn plan_path(raw: &str) -> String {
    normalize_relative(raw).unwrap_or_else(|_| raw.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::edits::parse;
    use tandem_core::store::{ApprovalNote, LeftOut, MessageStatus, Role};

    fn message(state: ApprovalState, note: Option<ApprovalNote>) -> Message {
        Message {
            id: 1,
            chat_id: 1,
            role: Role::Assistant,
            content: String::new(),
            status: MessageStatus::Complete,
            approval_state: Some(state),
            commit_hash: None,
            source_commit_hash: None,
            error: None,
            model: None,
            input_tokens: None,
            output_tokens: None,
            plan_base: None,
            reverted_by: None,
            approval_note: note,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn left(path: &str, whole: bool, hunks: usize) -> LeftOut {
        LeftOut {
            path: path.into(),
            whole,
            hunks: vec!["@@ -1 +1 @@".to_string(); hunks],
        }
    }

    const REPLY: &str = "Some text.\n\
        <tandem-write path=\"./src\\a.rs\">a</tandem-write>\n\
        <tandem-search-replace path=\"b.rs\">x</tandem-search-replace>\n\
        <tandem-rename from=\"b.rs\" to=\"c.rs\"/>\n\
        <tandem-delete path=\"d.rs\"/>\n\
        <tandem-add-dependency packages=\"serde\"/>\n\
        <tandem-execute-sql>DROP TABLE t;</tandem-execute-sql>\n\
        <tandem-chat-summary>Sum</tandem-chat-summary>";

    /// The tags' outcomes as the cards word them.
    fn texts(message: &Message) -> Vec<Option<String>> {
        let segments = parse(REPLY);
        outcomes(message, &segments)
            .iter()
            .zip(&segments)
            .filter(|(_, s)| matches!(s, Segment::Tag(_)))
            .map(|(o, _)| o.as_ref().map(Outcome::text))
            .collect()
    }

    #[test]
    fn each_change_says_what_became_of_its_file_and_the_rest_say_nothing() {
        let note = ApprovalNote {
            hunks_applied: 2,
            hunks_total: 6,
            left_out: vec![
                left("src/a.rs", true, 1),
                left("c.rs", false, 2),
                LeftOut::dependencies(&["serde".to_string()]),
            ],
            reason: Some("not now".into()),
        };
        let applied = |s: &str| Some(s.to_string());
        assert_eq!(
            texts(&message(ApprovalState::Approved, Some(note))),
            [
                applied("left out: not now"),
                // b.rs was renamed to c.rs afterwards: the plan knows it as c.rs.
                applied("partly applied: 2 hunks left out (not now)"),
                applied("partly applied: 2 hunks left out (not now)"),
                applied("applied"),
                applied("left out: not now"),
                None,
                None,
            ]
        );
    }

    #[test]
    fn all_applied_all_rejected_or_undecided() {
        let all = |text: Option<&str>| {
            let t = text.map(String::from);
            vec![t.clone(), t.clone(), t.clone(), t.clone(), t, None, None]
        };
        assert_eq!(
            texts(&message(ApprovalState::Approved, None)),
            all(Some("applied"))
        );
        let reason = ApprovalNote {
            reason: Some("wrong idea".into()),
            ..ApprovalNote::default()
        };
        assert_eq!(
            texts(&message(ApprovalState::Rejected, Some(reason))),
            all(Some("rejected: wrong idea"))
        );
        assert_eq!(
            texts(&message(ApprovalState::Rejected, None)),
            all(Some("rejected"))
        );
        assert_eq!(texts(&message(ApprovalState::Pending, None)), all(None));
        let one = Outcome::Partly {
            left_out: &["@@".to_string()],
            reason: None,
        };
        assert_eq!(one.text(), "partly applied: 1 hunk left out");
    }
}
