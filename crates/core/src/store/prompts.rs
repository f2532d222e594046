//! The `prompts` table: the prompt library, reusable texts a person inserts by name
//! (`@prompt:NAME`). The column `title` holds the name; names are unique.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, now_ms};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedPrompt {
    pub id: i64,
    pub name: String,
    pub text: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, title, content, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<SavedPrompt> {
    Ok(SavedPrompt {
        id: row.get(0)?,
        name: row.get(1)?,
        text: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
    })
}

impl Store {
    /// The library, by name.
    pub fn prompts(&self) -> Result<Vec<SavedPrompt>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM prompts ORDER BY title COLLATE NOCASE, id"
        ))?;
        let rows = stmt.query_map([], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn prompt_named(&self, name: &str) -> Result<Option<SavedPrompt>> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM prompts WHERE title = ?1"),
                [name],
                from_row,
            )
            .optional()?)
    }

    /// Adds a prompt, or replaces the text of the one with this name.
    pub fn save_prompt(&self, name: &str, text: &str) -> Result<SavedPrompt> {
        let now = now_ms();
        let id: i64 = self.conn().query_row(
            "INSERT INTO prompts (title, content, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
             ON CONFLICT (title) DO UPDATE SET content = excluded.content,
                 updated_at = excluded.updated_at
             RETURNING id",
            params![name, text, now],
            |row| row.get(0),
        )?;
        Ok(self.conn().query_row(
            &format!("SELECT {COLUMNS} FROM prompts WHERE id = ?1"),
            [id],
            from_row,
        )?)
    }

    /// Renames prompt `id`; `false` when another prompt has the name already.
    pub fn rename_prompt(&self, id: i64, name: &str) -> Result<bool> {
        if self.prompt_named(name)?.is_some_and(|p| p.id != id) {
            return Ok(false);
        }
        self.conn().execute(
            "UPDATE prompts SET title = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, name, now_ms()],
        )?;
        Ok(true)
    }

    /// Removes the prompt with this name; `false` when there was none.
    pub fn remove_prompt(&self, name: &str) -> Result<bool> {
        Ok(self
            .conn()
            .execute("DELETE FROM prompts WHERE title = ?1", [name])?
            > 0)
    }
}
