//! The `chat_summaries` table: what older turns of a long chat were compacted into.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, now_ms};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatSummary {
    pub id: i64,
    pub chat_id: i64,
    /// The summary stands for the chat's messages up to this id (0: none of its own).
    pub up_to_message_id: i64,
    /// Turns it stands for, earlier summaries' included.
    pub turns: i64,
    pub content: String,
    pub model: Option<String>,
    /// The chat it was made from, for a chat started from a summary.
    pub source_chat_id: Option<i64>,
    pub created_at: i64,
}

/// A summary to store.
#[derive(Debug, Clone)]
pub struct NewSummary<'a> {
    pub chat_id: i64,
    pub up_to_message_id: i64,
    pub turns: i64,
    pub content: &'a str,
    pub model: Option<&'a str>,
    pub source_chat_id: Option<i64>,
}

const COLUMNS: &str =
    "id, chat_id, up_to_message_id, turns, content, model, source_chat_id, created_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<ChatSummary> {
    Ok(ChatSummary {
        id: row.get(0)?,
        chat_id: row.get(1)?,
        up_to_message_id: row.get(2)?,
        turns: row.get(3)?,
        content: row.get(4)?,
        model: row.get(5)?,
        source_chat_id: row.get(6)?,
        created_at: row.get(7)?,
    })
}

impl Store {
    pub fn add_chat_summary(&self, new: &NewSummary<'_>) -> Result<ChatSummary> {
        let id: i64 = self.conn().query_row(
            "INSERT INTO chat_summaries (chat_id, up_to_message_id, turns, content, model,
                 source_chat_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            params![
                new.chat_id,
                new.up_to_message_id,
                new.turns,
                new.content,
                new.model,
                new.source_chat_id,
                now_ms()
            ],
            |row| row.get(0),
        )?;
        Ok(self.conn().query_row(
            &format!("SELECT {COLUMNS} FROM chat_summaries WHERE id = ?1"),
            [id],
            from_row,
        )?)
    }

    /// The newest summary of a chat: the one that stands for its older turns now.
    pub fn latest_chat_summary(&self, chat_id: i64) -> Result<Option<ChatSummary>> {
        Ok(self
            .conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM chat_summaries WHERE chat_id = ?1
                     ORDER BY id DESC LIMIT 1"
                ),
                [chat_id],
                from_row,
            )
            .optional()?)
    }

    /// Every summary of a chat, oldest first.
    pub fn chat_summaries(&self, chat_id: i64) -> Result<Vec<ChatSummary>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM chat_summaries WHERE chat_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([chat_id], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
