//! An undo in flight: the commit an undo is landing for an approved message, recorded before
//! its files are written and HEAD moves, cleared when the undo is recorded
//! ([`Store::set_reverted_by`]) or found not to have landed. See `Engine::undo`.

use rusqlite::params;

use super::{Result, Store};

impl Store {
    /// Marks the approved message `id` as being undone by `commit` (`None` clears the mark).
    /// Its update time stays: it orders the changes that can be undone.
    pub fn set_undoing(&self, id: i64, commit: Option<&str>) -> Result<()> {
        self.change_row(
            "approved message",
            id,
            "UPDATE messages SET undoing = ?2 WHERE id = ?1 AND approval_state = 'approved'",
            params![id, commit],
        )
    }

    /// Every undo left in flight, as (project id, message id, undo commit); only `project`'s
    /// when given.
    pub fn undoing(&self, project: Option<i64>) -> Result<Vec<(i64, i64, String)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT c.project_id, m.id, m.undoing FROM messages m JOIN chats c ON c.id = m.chat_id
             WHERE m.undoing IS NOT NULL AND (?1 IS NULL OR c.project_id = ?1) ORDER BY m.id",
        )?;
        let rows = stmt.query_map([project], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{ApprovalState, ChatMode, NewMessage, Role, Store};

    #[test]
    fn an_undo_in_flight_is_listed_until_recorded_or_cleared() {
        let store = Store::open_in_memory().unwrap();
        let project = store
            .insert_project("p", std::path::Path::new("/p"))
            .unwrap();
        let chat = store
            .create_chat(project.id, ChatMode::Build, None)
            .unwrap();
        let message = store
            .insert_message(&NewMessage::new(chat.id, Role::Assistant, "x"))
            .unwrap();
        // Only an approved message can be undone.
        assert!(store.set_undoing(message.id, Some("abc")).is_err());
        store
            .set_approval(message.id, ApprovalState::Approved, Some("c1"))
            .unwrap();
        let updated = store.message(message.id).unwrap().updated_at;
        store.set_undoing(message.id, Some("abc")).unwrap();
        assert_eq!(
            store.undoing(Some(project.id)).unwrap(),
            [(project.id, message.id, "abc".to_string())]
        );
        assert_eq!(store.undoing(Some(project.id + 1)).unwrap(), []);
        assert_eq!(store.message(message.id).unwrap().updated_at, updated);
        store.set_undoing(message.id, None).unwrap();
        assert_eq!(store.undoing(None).unwrap(), []);
        store.set_undoing(message.id, Some("abc")).unwrap();
        store.set_reverted_by(message.id, "abc").unwrap();
        assert_eq!(store.undoing(None).unwrap(), []);
    }
}
