//! The `chats` table: one conversation in a project.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, not_found, now_ms, text_enum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatMode {
    /// The model proposes file changes with edit tags.
    Build,
    /// The model explains; it never proposes changes.
    Ask,
    /// The model works through tools, step by step.
    Agent,
    /// Read-only tools, ending with a written plan.
    Plan,
}
text_enum!(ChatMode { Build => "build", Ask => "ask", Agent => "agent", Plan => "plan" });

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
}

const COLUMNS: &str = "id, project_id, title, mode, initial_commit, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Chat> {
    Ok(Chat {
        id: row.get(0)?,
        project_id: row.get(1)?,
        title: row.get(2)?,
        mode: row.get(3)?,
        initial_commit: row.get(4)?,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
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

    pub fn delete_chat(&self, id: i64) -> Result<()> {
        self.change_row("chat", id, "DELETE FROM chats WHERE id = ?1", [id])
    }
}
