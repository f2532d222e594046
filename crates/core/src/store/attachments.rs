//! The `attachments` table: what was attached to a message (a file sent as context, or an
//! image), and its bytes, kept in the data directory's `attachments` folder (not in SQLite)
//! under their git blob hash. Bytes no row names any more are swept away after each deletion
//! of messages and at start-up.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::{Row, TransactionBehavior, params};
use serde::Serialize;

use super::{Result, Store, StoreError, now_ms, text_enum};

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

/// An attachment to keep: what it is and its bytes.
#[derive(Debug, Clone)]
pub struct NewAttachment<'a> {
    pub kind: AttachmentKind,
    pub name: &'a str,
    pub mime: &'a str,
    pub content: &'a [u8],
}

/// The folder of the data directory (the database's) that holds the attachments' bytes, each
/// under its git blob hash.
pub const ATTACHMENTS_DIR: &str = "attachments";

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

fn io_error(what: String, source: std::io::Error) -> StoreError {
    StoreError::AttachmentIo { what, source }
}

impl Store {
    /// The folder holding the attachments' bytes; `None` for an in-memory database.
    fn attachments_dir(&self) -> Option<PathBuf> {
        Some(self.path()?.parent()?.join(ATTACHMENTS_DIR))
    }

    /// Where an attachment's bytes are kept. `None` for an in-memory database, or a stored
    /// name that is not a plain file of the attachments folder (never read outside it).
    pub fn attachment_path(&self, attachment: &Attachment) -> Option<PathBuf> {
        let name = attachment
            .stored
            .strip_prefix(ATTACHMENTS_DIR)?
            .strip_prefix('/')?;
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && !name.contains(['/', '\\'])
            && Path::new(name).file_name() == Some(std::ffi::OsStr::new(name));
        plain.then(|| self.attachments_dir().map(|dir| dir.join(name)))?
    }

    /// Keeps the attachments of message `message_id`: each one's bytes in the attachments
    /// folder (once per content) and a row each, in one transaction that holds the
    /// database's write lock while the bytes are written. So a sweep (in this process or
    /// another) never sees a row without its bytes, nor removes bytes a row is about to
    /// name. When anything fails nothing is recorded; bytes already written are left to the
    /// next sweep.
    pub fn add_attachments(
        &self,
        message_id: i64,
        attachments: &[NewAttachment<'_>],
    ) -> Result<Vec<Attachment>> {
        let dir = self.attachments_dir().ok_or(StoreError::NoAttachmentDir)?;
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut kept = Vec::new();
        for new in attachments {
            let hash = crate::folder::blob_hash(new.content);
            let path = dir.join(&hash);
            if !path.is_file() {
                crate::folder::write_file_atomic(&path, new.content, None)
                    .map_err(|e| io_error(format!("keep the attachment {}", new.name), e))?;
            }
            let size = i64::try_from(new.content.len()).unwrap_or(i64::MAX);
            kept.push(tx.query_row(
                &format!(
                    "INSERT INTO attachments (message_id, kind, name, mime, bytes, stored, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING {COLUMNS}"
                ),
                params![
                    message_id,
                    new.kind,
                    new.name,
                    new.mime,
                    size,
                    format!("{ATTACHMENTS_DIR}/{hash}"),
                    now_ms()
                ],
                from_row,
            )?);
        }
        tx.commit()?;
        Ok(kept)
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

    /// Removes the files of the attachments folder no attachment refers to any more (their
    /// messages were deleted, or a crash left them unrecorded); returns how many. Holds the
    /// database's write lock while it looks and removes, so no attachment is recorded
    /// meanwhile (see [`Store::add_attachments`]).
    pub fn sweep_attachments(&self) -> Result<usize> {
        let Some(dir) = self.attachments_dir().filter(|dir| dir.is_dir()) else {
            return Ok(0);
        };
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let referenced: HashSet<String> = {
            let mut stmt = tx.prepare("SELECT DISTINCT stored FROM attachments")?;
            let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let listing = |e| io_error(format!("list {}", dir.display()), e);
        let mut removed = 0;
        for entry in std::fs::read_dir(&dir).map_err(listing)? {
            let entry = entry.map_err(listing)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().map_err(listing)?.is_file();
            if !is_file || referenced.contains(&format!("{ATTACHMENTS_DIR}/{name}")) {
                continue;
            }
            let path = entry.path();
            crate::folder::remove_file(&path)
                .map_err(|e| io_error(format!("remove {}", path.display()), e))?;
            removed += 1;
        }
        tx.commit()?;
        Ok(removed)
    }

    /// `done`, after a sweep of the attachments its deletions left unreferenced. The sweep is
    /// best effort: the rows are gone either way, and the start-up sweep catches up.
    pub(crate) fn swept<T>(&self, done: Result<T>) -> Result<T> {
        if done.is_ok() {
            let _ = self.sweep_attachments();
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MessageStatus;

    /// Every way messages are deleted.
    #[derive(Debug, Clone, Copy)]
    enum Deletion {
        Message,
        After,
        ClearChat,
        Chat,
        Project,
        Replaced,
    }

    fn attach<'a>(name: &'a str, content: &'a [u8]) -> NewAttachment<'a> {
        NewAttachment {
            kind: AttachmentKind::File,
            name,
            mime: "text/plain",
            content,
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.join(ATTACHMENTS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn every_deletion_of_messages_removes_the_bytes_only_they_referred_to() {
        for deletion in [
            Deletion::Message,
            Deletion::After,
            Deletion::ClearChat,
            Deletion::Chat,
            Deletion::Project,
            Deletion::Replaced,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open_dir(dir.path()).unwrap();
            // Chat 1 (project 1): message 1, then message 2 with two attachments, then a
            // reply 3. Chat 2 (project 2): message 4 shares one of them.
            store
                .conn()
                .execute_batch(
                    "INSERT INTO projects (id, name, path, created_at, updated_at)
                         VALUES (1, 'p', '/p', 1, 1), (2, 'q', '/q', 1, 1);
                     INSERT INTO chats (id, project_id, created_at, updated_at)
                         VALUES (1, 1, 1, 1), (2, 2, 1, 1);
                     INSERT INTO messages (id, chat_id, role, status, created_at, updated_at)
                         VALUES (1, 1, 'user', 'complete', 1, 1), (2, 1, 'user', 'complete', 1, 1),
                                (3, 1, 'assistant', 'streaming', 1, 1),
                                (4, 2, 'user', 'complete', 1, 1);",
                )
                .unwrap();
            let kept = store
                .add_attachments(2, &[attach("mine", b"mine"), attach("shared", b"shared")])
                .unwrap();
            store
                .add_attachments(4, &[attach("shared", b"shared")])
                .unwrap();
            let (mine, shared) = (&kept[0], &kept[1]);
            let name = |a: &Attachment| a.stored.trim_start_matches("attachments/").to_string();
            assert_eq!(files(dir.path()).len(), 2, "shared content is kept once");
            assert!(store.attachment_path(mine).unwrap().is_file());

            match deletion {
                Deletion::Message => store.delete_message(2).unwrap(),
                Deletion::After => drop(store.delete_messages_after(1, 1).unwrap()),
                Deletion::ClearChat => drop(store.clear_chat(1).unwrap()),
                Deletion::Chat => store.delete_chat(1).unwrap(),
                Deletion::Project => store.delete_project(1).unwrap(),
                Deletion::Replaced => store
                    .finish_message_replacing(3, "again", MessageStatus::Complete, None, &[2])
                    .unwrap(),
            }
            assert_eq!(files(dir.path()), [name(shared)], "{deletion:?}");
            assert_eq!(store.attachments(4).unwrap().len(), 1, "{deletion:?}");
        }
    }

    #[test]
    fn only_plain_names_in_the_attachments_folder_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).unwrap();
        let at = |stored: &str| {
            store.attachment_path(&Attachment {
                id: 1,
                message_id: 1,
                kind: AttachmentKind::File,
                name: "n".into(),
                mime: "text/plain".into(),
                bytes: 1,
                stored: stored.into(),
                created_at: 1,
            })
        };
        assert_eq!(
            at("attachments/abc"),
            Some(dir.path().join("attachments/abc"))
        );
        for stored in [
            "attachments/../tandem.db",
            "attachments/a/b",
            "attachments/",
            "attachments/..",
            "tandem.db",
            "/etc/passwd",
            "attachmentsx/abc",
        ] {
            assert_eq!(at(stored), None, "{stored}");
        }
        let memory = Store::open_in_memory().unwrap();
        assert!(matches!(
            memory.add_attachments(1, &[attach("a", b"a")]),
            Err(StoreError::NoAttachmentDir)
        ));
    }
}
