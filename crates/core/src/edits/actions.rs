//! Typed actions from the parser's tags: what a complete reply asks Tandem to do. Incomplete
//! tags (still streaming, or never closed) are never actions; `<think>` is never an action.

use serde::Serialize;

use super::parser::{Segment, Tag, TagKind};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    Write {
        path: String,
        description: Option<String>,
        content: String,
    },
    Rename {
        from: String,
        to: String,
    },
    Delete {
        path: String,
    },
    SearchReplace {
        path: String,
        description: Option<String>,
        body: String,
    },
    AddDependency {
        packages: Vec<String>,
    },
    ChatSummary {
        text: String,
    },
    ExecuteSql {
        description: Option<String>,
        sql: String,
    },
    SecurityFinding {
        title: String,
        level: String,
        /// The file it is about, and a line or range in it (as written: `40` or `40-52`).
        path: Option<String>,
        lines: Option<String>,
        body: String,
    },
    ProblemReport {
        body: String,
    },
}

/// A tag that cannot become an action: named so the person (and the model) can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("<{tag}> is missing its `{attribute}` attribute")]
pub struct MissingAttribute {
    #[serde(skip)]
    pub kind: TagKind,
    pub tag: String,
    pub attribute: &'static str,
}

/// The actions of a reply, in order; malformed tags become errors in their place.
pub fn actions(segments: &[Segment]) -> Vec<Result<Action, MissingAttribute>> {
    segments
        .iter()
        .filter_map(|segment| match segment {
            Segment::Tag(tag) if tag.complete => action(tag).transpose(),
            _ => None,
        })
        .collect()
}

/// `Ok(None)` for tags that are not actions (`<think>`).
fn action(tag: &Tag) -> Result<Option<Action>, MissingAttribute> {
    let required = |attribute: &'static str| {
        tag.attr(attribute)
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_string)
            .ok_or_else(|| MissingAttribute {
                kind: tag.kind,
                tag: format!("tandem-{}", tag.kind.name()),
                attribute,
            })
    };
    let optional = |attribute: &str| {
        tag.attr(attribute)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    Ok(Some(match tag.kind {
        TagKind::Write => Action::Write {
            path: required("path")?,
            description: optional("description"),
            content: write_content(&tag.body),
        },
        TagKind::Rename => Action::Rename {
            from: required("from")?,
            to: required("to")?,
        },
        TagKind::Delete => Action::Delete {
            path: required("path")?,
        },
        TagKind::SearchReplace => Action::SearchReplace {
            path: required("path")?,
            description: optional("description"),
            body: tag.body.clone(),
        },
        TagKind::AddDependency => Action::AddDependency {
            packages: required("packages")?
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        },
        TagKind::ChatSummary => Action::ChatSummary {
            text: tag.body.trim().to_string(),
        },
        TagKind::ExecuteSql => Action::ExecuteSql {
            description: optional("description"),
            sql: strip_fence(tag.body.trim_matches(['\r', '\n'])).to_string(),
        },
        TagKind::SecurityFinding => Action::SecurityFinding {
            title: optional("title").unwrap_or_else(|| "Security finding".into()),
            level: optional("level")
                .map(|l| l.to_lowercase())
                .unwrap_or_else(|| "unknown".into()),
            path: optional("path"),
            lines: optional("lines"),
            body: tag.body.trim().to_string(),
        },
        TagKind::ProblemReport => Action::ProblemReport {
            body: tag.body.trim().to_string(),
        },
        TagKind::Think => return Ok(None),
    }))
}

/// The file content of a write body: the line break right after the opening tag is layout,
/// not content; a Markdown code fence wrapping the whole body is stripped; a non-empty file
/// ends with a line break.
pub fn write_content(body: &str) -> String {
    let body = body
        .strip_prefix("\r\n")
        .or_else(|| body.strip_prefix('\n'))
        .unwrap_or(body);
    let mut content = strip_fence(body).to_string();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    content
}

/// If `text` is exactly one fenced code block (```lang … ```), its inside; else `text`.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim_end();
    let Some(first_break) = trimmed.find('\n') else {
        return text;
    };
    let opening = trimmed[..first_break].trim();
    let fence_char = match opening.chars().next() {
        Some(c @ ('`' | '~')) => c,
        _ => return text,
    };
    let fence_len = opening.chars().take_while(|&c| c == fence_char).count();
    if fence_len < 3 {
        return text;
    }
    let Some(last_break) = trimmed.rfind('\n') else {
        return text;
    };
    let closing = trimmed[last_break..].trim();
    let closes = closing.len() >= fence_len && closing.chars().all(|c| c == fence_char);
    if !closes || last_break <= first_break {
        return text;
    }
    // Keep the inner text's final line break.
    &trimmed[first_break + 1..last_break + 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edits::parser::parse;

    #[test]
    fn every_action_kind() {
        let reply = r#"Sure.
<tandem-write path="src/a.rs" description="new file">
fn a() {}
</tandem-write>
<dyad-rename from="old.txt" to="new.txt"></dyad-rename>
<tandem-delete path='gone.txt' />
<tandem-search-replace path="src/b.rs">
<<<<<<< SEARCH
x
=======
y
>>>>>>> REPLACE
</tandem-search-replace>
<tandem-add-dependency packages="serde  anyhow"></tandem-add-dependency>
<tandem-execute-sql description="seed">INSERT INTO t VALUES (1);</tandem-execute-sql>
<tandem-security-finding title="XSS" level="high">Escape it.</tandem-security-finding>
<tandem-problem-report>none</tandem-problem-report>
<think>hmm</think>
<tandem-chat-summary>Add a</tandem-chat-summary>
<tandem-write path="unfinished.rs">fn"#;
        let actions: Vec<_> = actions(&parse(reply))
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(actions.len(), 9, "{actions:#?}");
        assert_eq!(
            actions[0],
            Action::Write {
                path: "src/a.rs".into(),
                description: Some("new file".into()),
                content: "fn a() {}\n".into()
            }
        );
        assert_eq!(
            actions[1],
            Action::Rename {
                from: "old.txt".into(),
                to: "new.txt".into()
            }
        );
        assert_eq!(
            actions[2],
            Action::Delete {
                path: "gone.txt".into()
            }
        );
        assert!(matches!(&actions[3], Action::SearchReplace { path, .. } if path == "src/b.rs"));
        assert_eq!(
            actions[4],
            Action::AddDependency {
                packages: vec!["serde".into(), "anyhow".into()]
            }
        );
        assert!(
            matches!(&actions[5], Action::ExecuteSql { sql, .. } if sql == "INSERT INTO t VALUES (1);")
        );
        assert!(matches!(&actions[6], Action::SecurityFinding { level, .. } if level == "high"));
        assert_eq!(
            actions[8],
            Action::ChatSummary {
                text: "Add a".into()
            }
        );
    }

    #[test]
    fn missing_attributes_are_named() {
        let errors: Vec<_> = actions(&parse(
            "<tandem-write>x</tandem-write><tandem-rename from=\"a\"/>",
        ))
        .into_iter()
        .map(|r| r.unwrap_err().to_string())
        .collect();
        assert_eq!(
            errors,
            [
                "<tandem-write> is missing its `path` attribute",
                "<tandem-rename> is missing its `to` attribute"
            ]
        );
    }

    #[test]
    fn write_bodies_lose_their_fence_and_layout_newline() {
        assert_eq!(write_content("\n```rust\nfn x() {}\n```\n"), "fn x() {}\n");
        assert_eq!(write_content("\r\nline\r\n"), "line\r\n");
        assert_eq!(write_content("no newline"), "no newline\n");
        assert_eq!(write_content(""), "");
        // A fence that is part of the content (a Markdown file) stays.
        let md = "# Title\n```\ncode\n```\n";
        assert_eq!(write_content(md), md);
        assert_eq!(
            write_content("~~~~\n```\ninner\n```\n~~~~\n"),
            "```\ninner\n```\n"
        );
    }
}
