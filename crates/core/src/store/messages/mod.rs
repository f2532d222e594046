//! The `messages` table: user prompts and assistant replies, with the review state of the
//! changes a reply proposes.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, StoreError, not_found, now_ms, text_enum};

pub(super) mod review;

use review::{ApprovalNote, ApprovalState, PlanBase};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    System,
}
text_enum!(Role { User => "user", Assistant => "assistant", System => "system" });

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    Streaming,
    Complete,
    Cancelled,
    Error,
    /// The process ended while the reply was streaming; its text so far is kept.
    Interrupted,
}
text_enum!(MessageStatus {
    Streaming => "streaming",
    Complete => "complete",
    Cancelled => "cancelled",
    Error => "error",
    Interrupted => "interrupted",
});

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    pub id: i64,
    pub chat_id: i64,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    pub approval_state: Option<ApprovalState>,
    pub commit_hash: Option<String>,
    pub source_commit_hash: Option<String>,
    pub error: Option<String>,
    pub model: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub plan_base: Option<PlanBase>,
    pub reverted_by: Option<String>,
    /// Set when the person approved only part of the proposal, or gave a reason.
    pub approval_note: Option<ApprovalNote>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a caller supplies to insert a message; the rest is filled in by the store.
#[derive(Debug, Clone)]
pub struct NewMessage<'a> {
    pub chat_id: i64,
    pub role: Role,
    pub content: &'a str,
    pub status: MessageStatus,
    pub approval_state: Option<ApprovalState>,
    pub source_commit_hash: Option<&'a str>,
    pub model: Option<&'a str>,
    pub plan_base: Option<&'a PlanBase>,
}

impl<'a> NewMessage<'a> {
    /// A complete message with no review state.
    pub fn new(chat_id: i64, role: Role, content: &'a str) -> Self {
        NewMessage {
            chat_id,
            role,
            content,
            status: MessageStatus::Complete,
            approval_state: None,
            source_commit_hash: None,
            model: None,
            plan_base: None,
        }
    }
}

const COLUMNS: &str = "id, chat_id, role, content, status, approval_state, commit_hash, \
     source_commit_hash, error, model, input_tokens, output_tokens, plan_base, reverted_by, \
     created_at, updated_at, approval_note";

/// A message as read, with its JSON columns (proposal base, approval note) still raw.
type RawMessage = (Message, Option<String>, Option<String>);

fn from_row(row: &Row<'_>) -> rusqlite::Result<RawMessage> {
    from_row_at(row, 0)
}

/// A message from the columns starting at index `at` (after columns a join adds first).
fn from_row_at(row: &Row<'_>, at: usize) -> rusqlite::Result<RawMessage> {
    Ok((
        Message {
            id: row.get(at)?,
            chat_id: row.get(at + 1)?,
            role: row.get(at + 2)?,
            content: row.get(at + 3)?,
            status: row.get(at + 4)?,
            approval_state: row.get(at + 5)?,
            commit_hash: row.get(at + 6)?,
            source_commit_hash: row.get(at + 7)?,
            error: row.get(at + 8)?,
            model: row.get(at + 9)?,
            input_tokens: row.get(at + 10)?,
            output_tokens: row.get(at + 11)?,
            plan_base: None,
            reverted_by: row.get(at + 13)?,
            approval_note: None,
            created_at: row.get(at + 14)?,
            updated_at: row.get(at + 15)?,
        },
        row.get(at + 12)?,
        row.get(at + 16)?,
    ))
}

fn finish((mut message, plan_base, note): RawMessage) -> Result<Message> {
    message.plan_base = plan_base
        .map(|json| serde_json::from_str(&json))
        .transpose()
        .map_err(|source| StoreError::Json {
            what: "proposal base",
            source,
        })?;
    message.approval_note = note
        .map(|json| serde_json::from_str(&json))
        .transpose()
        .map_err(|source| StoreError::Json {
            what: "approval note",
            source,
        })?;
    Ok(message)
}

fn plan_base_json(base: Option<&PlanBase>) -> Result<Option<String>> {
    base.map(serde_json::to_string)
        .transpose()
        .map_err(|source| StoreError::Json {
            what: "proposal base",
            source,
        })
}

/// Replies left `streaming` by a process that died become `interrupted`, their text so far
/// (content plus streamed parts) kept. A reply whose lock is held (see
/// [`super::reply_lock_path`]) is streaming in a live process (a window while a `tandem`
/// command starts) and is left to it. In memory (`db` `None`) every reply is this process's.
pub(super) fn recover_interrupted(conn: &mut Connection, db: Option<&Path>) -> Result<usize> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let ids: Vec<i64> = {
        let mut stmt = tx.prepare("SELECT id FROM messages WHERE status = 'streaming'")?;
        stmt.query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    let mut dead = Vec::new();
    for id in ids {
        let Some(db) = db else {
            dead.push((id, None));
            continue;
        };
        let path = super::reply_lock_path(db, id);
        match crate::lockfile::try_take(&path) {
            // Taken: its process is gone. Held until the reply is marked, then removed.
            Ok(Some(lock)) => dead.push((id, Some((lock, path)))),
            Ok(None) => {}
            Err(source) => return Err(StoreError::Lock { path, source }),
        }
    }
    for (id, _) in &dead {
        let id = *id;
        let text = parts_text(&tx, id)?;
        tx.execute(
            "UPDATE messages SET content = content || ?2, status = 'interrupted', updated_at = ?3
             WHERE id = ?1",
            params![id, text, now_ms()],
        )?;
        tx.execute("DELETE FROM message_parts WHERE message_id = ?1", [id])?;
    }
    tx.commit()?;
    for (_, lock) in &dead {
        if let Some((_, path)) = lock {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(dead.len())
}

/// The streamed parts of a message joined in order.
fn parts_text(conn: &Connection, id: i64) -> Result<String> {
    let mut stmt =
        conn.prepare_cached("SELECT text FROM message_parts WHERE message_id = ?1 ORDER BY seq")?;
    let mut text = String::new();
    for part in stmt.query_map([id], |row| row.get::<_, String>(0))? {
        text.push_str(&part?);
    }
    Ok(text)
}

impl Store {
    /// `?1` is the id and `?3` the update time; `set` names the other parameters.
    fn update(&self, id: i64, set: &str, params: &[&dyn rusqlite::ToSql]) -> Result<()> {
        let sql = format!("UPDATE messages SET {set}, updated_at = ?3 WHERE id = ?1");
        self.change_row("message", id, &sql, params)
    }

    pub fn insert_message(&self, new: &NewMessage<'_>) -> Result<Message> {
        let now = now_ms();
        let plan_base = plan_base_json(new.plan_base)?;
        let streaming = new.status == MessageStatus::Streaming;
        let id = self.transaction(|tx| {
            let id: i64 = tx.query_row(
                "INSERT INTO messages (chat_id, role, content, status, approval_state,
                     source_commit_hash, model, plan_base, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9) RETURNING id",
                params![
                    new.chat_id,
                    new.role,
                    new.content,
                    new.status,
                    new.approval_state,
                    new.source_commit_hash,
                    new.model,
                    plan_base,
                    now
                ],
                |row| row.get(0),
            )?;
            tx.execute(
                "UPDATE chats SET updated_at = ?2 WHERE id = ?1",
                params![new.chat_id, now],
            )?;
            // Held before the row is visible: no other process ever sees it streaming
            // without its lock held.
            if streaming {
                self.hold_reply(id)?;
            }
            Ok(id)
        })?;
        self.message(id)
    }

    /// Holds the lock of reply `id`, streaming in this process, until it ends.
    fn hold_reply(&self, id: i64) -> Result<()> {
        let Some(db) = self.path() else {
            return Ok(());
        };
        let mut held = self.streaming.lock().unwrap_or_else(|p| p.into_inner());
        if held.contains_key(&id) {
            return Ok(());
        }
        let path = super::reply_lock_path(db, id);
        match crate::lockfile::try_take(&path) {
            Ok(Some(lock)) => {
                held.insert(id, lock);
                Ok(())
            }
            Ok(None) => Err(StoreError::Lock {
                path,
                source: std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another process streams this reply",
                ),
            }),
            Err(source) => Err(StoreError::Lock { path, source }),
        }
    }

    /// Lets go of reply `id`'s lock: it streams no more.
    fn release_reply(&self, id: i64) {
        let lock = self
            .streaming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let (Some(lock), Some(db)) = (lock, self.path()) {
            let _ = std::fs::remove_file(super::reply_lock_path(db, id));
            drop(lock);
        }
    }

    /// A message; one still streaming includes the parts streamed so far.
    pub fn message(&self, id: i64) -> Result<Message> {
        let conn = self.conn();
        let row = conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM messages WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?;
        let mut message = finish(row.ok_or_else(|| not_found("message", id))?)?;
        if message.status == MessageStatus::Streaming {
            message.content.push_str(&parts_text(&conn, id)?);
        }
        Ok(message)
    }

    /// Appends streamed text to a reply: a small insert, however long the reply already is.
    pub fn append_message_part(&self, id: i64, seq: i64, text: &str) -> Result<()> {
        self.conn().execute(
            "INSERT INTO message_parts (message_id, seq, text) VALUES (?1, ?2, ?3)",
            params![id, seq, text],
        )?;
        Ok(())
    }

    /// Ends a streamed reply: its full text, final status and error in one write; the parts go.
    pub fn finish_message(
        &self,
        id: i64,
        content: &str,
        status: MessageStatus,
        error: Option<&str>,
    ) -> Result<()> {
        self.finish_message_replacing(id, content, status, error, &[])
    }

    /// Ends a streamed reply like [`Store::finish_message`] and deletes the messages in
    /// `replaced` (of the same chat) in the same transaction: a redo's new reply and the turn
    /// it replaces are never both missing, whatever fails.
    pub fn finish_message_replacing(
        &self,
        id: i64,
        content: &str,
        status: MessageStatus,
        error: Option<&str>,
        replaced: &[i64],
    ) -> Result<()> {
        let finished = self.transaction(|tx| {
            for old in replaced {
                tx.execute(
                    "DELETE FROM messages WHERE id = ?1 AND id != ?2
                     AND chat_id = (SELECT chat_id FROM messages WHERE id = ?2)",
                    params![old, id],
                )?;
            }
            let changed = tx.execute(
                "UPDATE messages SET content = ?2, status = ?3, error = ?4, updated_at = ?5
                 WHERE id = ?1",
                params![id, content, status, error, now_ms()],
            )?;
            if changed == 0 {
                return Err(not_found("message", id));
            }
            tx.execute("DELETE FROM message_parts WHERE message_id = ?1", [id])?;
            Ok(())
        });
        if finished.is_ok() && status != MessageStatus::Streaming {
            self.release_reply(id);
        }
        match replaced.is_empty() {
            true => finished,
            false => self.swept(finished),
        }
    }

    /// Starts a reply over (another round of the same turn): no text, streaming, no proposal
    /// state, no parts. What the earlier round said is kept by the caller (as a step).
    pub fn restart_reply(&self, id: i64) -> Result<()> {
        self.transaction(|tx| {
            let changed = tx.execute(
                "UPDATE messages SET content = '', status = 'streaming', error = NULL,
                     approval_state = NULL, plan_base = NULL, updated_at = ?2
                 WHERE id = ?1",
                params![id, now_ms()],
            )?;
            if changed == 0 {
                return Err(not_found("message", id));
            }
            self.hold_reply(id)?;
            tx.execute("DELETE FROM message_parts WHERE message_id = ?1", [id])?;
            Ok(())
        })
    }

    /// Records token usage for a reply: on the message and as a usage event.
    pub fn record_usage(
        &self,
        id: i64,
        provider: &str,
        model: &str,
        input: i64,
        output: i64,
    ) -> Result<()> {
        self.transaction(|tx| {
            tx.execute(
                "UPDATE messages SET input_tokens = ?2, output_tokens = ?3 WHERE id = ?1",
                params![id, input, output],
            )?;
            tx.execute(
                "INSERT INTO usage_events (message_id, provider, model, input_tokens,
                     output_tokens, created_at, project_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6,
                     (SELECT c.project_id FROM messages m JOIN chats c ON c.id = m.chat_id
                       WHERE m.id = ?1))",
                params![id, provider, model, input, output, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Deletes one message.
    pub fn delete_message(&self, id: i64) -> Result<()> {
        let deleted = self.change_row("message", id, "DELETE FROM messages WHERE id = ?1", [id]);
        self.swept(deleted)
    }

    /// A chat's messages in order.
    pub fn messages(&self, chat_id: i64) -> Result<Vec<Message>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM messages WHERE chat_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([chat_id], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }

    /// Replaces a message's text (streaming writes and final content).
    pub fn set_message_content(&self, id: i64, content: &str) -> Result<()> {
        self.update(id, "content = ?2", params![id, content, now_ms()])
    }

    pub fn set_message_status(
        &self,
        id: i64,
        status: MessageStatus,
        error: Option<&str>,
    ) -> Result<()> {
        self.update(
            id,
            "status = ?2, error = ?4",
            params![id, status, now_ms(), error],
        )
    }

    /// Deletes the messages of `chat_id` that come after `message_id`; returns how many.
    pub fn delete_messages_after(&self, chat_id: i64, message_id: i64) -> Result<usize> {
        let deleted = self.conn().execute(
            "DELETE FROM messages WHERE chat_id = ?1 AND id > ?2",
            params![chat_id, message_id],
        );
        self.swept(deleted.map_err(Into::into))
    }

    /// Deletes every message of a chat; returns how many.
    pub fn clear_chat(&self, chat_id: i64) -> Result<usize> {
        let deleted = self
            .conn()
            .execute("DELETE FROM messages WHERE chat_id = ?1", [chat_id]);
        self.swept(deleted.map_err(Into::into))
    }
}
