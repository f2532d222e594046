//! The `chats` table: one conversation in a project.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, not_found, now_ms, text_enum};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatMode {
    /// The model proposes file changes with edit tags.
    #[default]
    Build,
    /// The model explains; it never proposes changes.
    Ask,
    /// The model works through tools, step by step.
    Agent,
    /// Read-only tools, ending with a written plan.
    Plan,
    /// Reviews the project or its last change against its security rules, answering with
    /// findings; never proposes changes.
    Security,
}
text_enum!(ChatMode {
    Build => "build",
    Ask => "ask",
    Agent => "agent",
    Plan => "plan",
    Security => "security"
});

impl ChatMode {
    /// Whether a reply in this mode can propose changes (Ask and Security only talk).
    pub fn proposes_changes(self) -> bool {
        !matches!(self, ChatMode::Ask | ChatMode::Security)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chat {
    pub id: i64,
    pub project_id: i64,
    pub title: String,
    pub mode: ChatMode,
    /// HEAD when the chat started.
    pub initial_commit: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Set when archived: hidden from the chat list, not deleted.
    pub archived_at: Option<i64>,
    /// The provider and model the chat was last sent with (its next turn uses them).
    pub provider_id: Option<i64>,
    pub model: Option<String>,
}

const COLUMNS: &str = "id, project_id, title, mode, initial_commit, created_at, updated_at, \
     archived_at, provider_id, model";

/// A message that matched a search across chats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageHit {
    pub chat_id: i64,
    pub chat_title: String,
    pub message_id: i64,
    pub role: super::Role,
    /// The matching line (or its first 200 characters around the match).
    pub snippet: String,
    pub created_at: i64,
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<Chat> {
    Ok(Chat {
        id: row.get(0)?,
        project_id: row.get(1)?,
        title: row.get(2)?,
        mode: row.get(3)?,
        initial_commit: row.get(4)?,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
        archived_at: row.get(7)?,
        provider_id: row.get(8)?,
        model: row.get(9)?,
    })
}

impl Store {
    pub fn create_chat(
        &self,
        project_id: i64,
        mode: ChatMode,
        initial_commit: Option<&str>,
    ) -> Result<Chat> {
        let now = now_ms();
        let id: i64 = self.conn().query_row(
            "INSERT INTO chats (project_id, mode, initial_commit, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?4) RETURNING id",
            params![project_id, mode, initial_commit, now],
            |row| row.get(0),
        )?;
        self.chat(id)
    }

    pub fn chat(&self, id: i64) -> Result<Chat> {
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM chats WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?
            .ok_or_else(|| not_found("chat", id))
    }

    /// The chat's newest pending proposal (a reply's message id), if it has one.
    pub fn pending_proposal(&self, chat_id: i64) -> Result<Option<i64>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id FROM messages WHERE chat_id = ?1 AND approval_state = 'pending'
                 ORDER BY id DESC LIMIT 1",
                [chat_id],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// A project's chats, most recently active first.
    pub fn chats(&self, project_id: i64) -> Result<Vec<Chat>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM chats WHERE project_id = ?1 ORDER BY updated_at DESC, id DESC"
        ))?;
        let rows = stmt.query_map([project_id], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn rename_chat(&self, id: i64, title: &str) -> Result<()> {
        self.change_row(
            "chat",
            id,
            "UPDATE chats SET title = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, title, now_ms()],
        )
    }

    pub fn set_chat_mode(&self, id: i64, mode: ChatMode) -> Result<()> {
        self.change_row(
            "chat",
            id,
            "UPDATE chats SET mode = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, mode, now_ms()],
        )
    }

    /// Archives (hides) or unarchives a chat; its messages stay.
    pub fn set_chat_archived(&self, id: i64, archived: bool) -> Result<()> {
        self.change_row(
            "chat",
            id,
            "UPDATE chats SET archived_at = ?2 WHERE id = ?1",
            params![id, archived.then(now_ms)],
        )
    }

    /// Remembers the provider and model the chat was sent with.
    pub fn set_chat_model(&self, id: i64, provider_id: i64, model: &str) -> Result<()> {
        self.change_row(
            "chat",
            id,
            "UPDATE chats SET provider_id = ?2, model = ?3 WHERE id = ?1",
            params![id, provider_id, model],
        )
    }

    /// Messages of the project's chats (archived ones too) containing `query`, ignoring
    /// case, newest first, at most `limit`.
    pub fn search_messages(
        &self,
        project_id: i64,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MessageHit>> {
        let pattern = format!(
            "%{}%",
            query
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT m.chat_id, c.title, m.id, m.role, m.content, m.created_at
             FROM messages m JOIN chats c ON c.id = m.chat_id
             WHERE c.project_id = ?1 AND m.content LIKE ?2 ESCAPE '\\'
             ORDER BY m.created_at DESC, m.id DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(
            params![
                project_id,
                pattern,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            |row| {
                let content: String = row.get(4)?;
                Ok(MessageHit {
                    chat_id: row.get(0)?,
                    chat_title: row.get(1)?,
                    message_id: row.get(2)?,
                    role: row.get(3)?,
                    snippet: snippet(&content, query),
                    created_at: row.get(5)?,
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn delete_chat(&self, id: i64) -> Result<()> {
        let deleted = self.change_row("chat", id, "DELETE FROM chats WHERE id = ?1", [id]);
        self.swept(deleted)
    }
}

/// The line of `content` where `query` first occurs (ignoring case), cut to about 200
/// characters around it.
fn snippet(content: &str, query: &str) -> String {
    let lower = query.to_lowercase();
    let line = content
        .lines()
        .find(|line| line.to_lowercase().contains(&lower))
        .unwrap_or_else(|| content.lines().next().unwrap_or(""))
        .trim();
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= 200 {
        return line.to_string();
    }
    let at = line
        .to_lowercase()
        .find(&lower)
        .map_or(0, |byte| line.to_lowercase()[..byte].chars().count());
    let start = at.saturating_sub(80);
    let end = (start + 200).min(chars.len());
    let mut text: String = chars[start..end].iter().collect();
    if start > 0 {
        text.insert(0, '…');
    }
    if end < chars.len() {
        text.push('…');
    }
    text
}
