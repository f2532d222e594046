//! The `attachments` table: what was attached to a message (a file sent as context, or an
//! image) and where its bytes are kept in the data directory. The bytes are not in SQLite.

use rusqlite::{Row, params};
use serde::Serialize;

use super::{Result, Store, now_ms, text_enum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    /// A text file, sent as context with the message.
    File,
    /// An image, sent in the provider's image format.
    Image,
}
text_enum!(AttachmentKind { File => "file", Image => "image" });

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    pub id: i64,
    pub message_id: i64,
    pub kind: AttachmentKind,
    pub name: String,
    pub mime: String,
    pub bytes: i64,
    /// Relative to the data directory.
    pub stored: String,
    pub created_at: i64,
}

/// An attachment to record (its bytes already written).
#[derive(Debug, Clone)]
pub struct NewAttachment<'a> {
    pub kind: AttachmentKind,
    pub name: &'a str,
    pub mime: &'a str,
    pub bytes: i64,
    pub stored: &'a str,
}

const COLUMNS: &str = "id, message_id, kind, name, mime, bytes, stored, created_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Attachment> {
    Ok(Attachment {
        id: row.get(0)?,
        message_id: row.get(1)?,
        kind: row.get(2)?,
        name: row.get(3)?,
        mime: row.get(4)?,
        bytes: row.get(5)?,
        stored: row.get(6)?,
        created_at: row.get(7)?,
    })
}

impl Store {
    pub fn add_attachment(&self, message_id: i64, new: &NewAttachment<'_>) -> Result<Attachment> {
        let id: i64 = self.conn().query_row(
            "INSERT INTO attachments (message_id, kind, name, mime, bytes, stored, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            params![
                message_id,
                new.kind,
                new.name,
                new.mime,
                new.bytes,
                new.stored,
                now_ms()
            ],
            |row| row.get(0),
        )?;
        Ok(self.conn().query_row(
            &format!("SELECT {COLUMNS} FROM attachments WHERE id = ?1"),
            [id],
            from_row,
        )?)
    }

    /// A message's attachments, in the order they were added.
    pub fn attachments(&self, message_id: i64) -> Result<Vec<Attachment>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM attachments WHERE message_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([message_id], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
