//! The `approval_requests` table: what executors (outside agents) asked through the gateway
//! (`agent::gateway`), and what was decided.
//!
//! A request is decided at most once: the decision is a single `UPDATE … WHERE decision IS
//! NULL`, so two deciders (the person and an auto rule, or two processes sharing the file)
//! cannot both win. Requests still undecided when their process died are not touched at open:
//! they stay pending, listed by [`Store::pending_approval_requests`]. Nobody waits for their
//! answer any more, so deciding one only settles the record, which is harmless.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::Value;

use super::{Result, Store, StoreError, not_found, now_ms, text_enum};
use crate::trust::Risk;

/// What an executor asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorRequestKind {
    /// May this code or command run? Asked before running it.
    Evaluation,
    /// May this output (stdout, stderr, exit code) go back to the model? Asked after running.
    CodeResponse,
}

text_enum!(ExecutorRequestKind { Evaluation => "evaluation", CodeResponse => "code_response" });

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorDecision {
    Approved,
    Rejected,
}

text_enum!(ExecutorDecision { Approved => "approved", Rejected => "rejected" });

/// Who decided: the person, an auto-approve rule, or our own agent (which may answer a request
/// that matches one of its own pending tool calls by fingerprint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    User,
    Auto,
    Agent,
}

text_enum!(DecidedBy { User => "user", Auto => "auto", Agent => "agent" });

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutorRequest {
    pub id: i64,
    pub kind: ExecutorRequestKind,
    /// The name the client gave in its `hello`, if any.
    pub client: Option<String>,
    pub fingerprint: String,
    /// The request as the client sent it (see `agent::gateway`).
    pub payload: Value,
    /// The risk the decision was based on; `None` for code responses.
    pub risk: Option<Risk>,
    /// `None` while pending.
    pub decision: Option<ExecutorDecision>,
    pub decided_by: Option<DecidedBy>,
    pub reason: Option<String>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
}

impl ExecutorRequest {
    pub fn is_pending(&self) -> bool {
        self.decision.is_none()
    }
}

/// Why a decision was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("approval request {0} does not exist")]
    NotFound(i64),
    #[error("approval request {id} was already {decision} (by {decided_by})")]
    AlreadyDecided {
        id: i64,
        decision: ExecutorDecision,
        decided_by: DecidedBy,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for DecideError {
    fn from(error: rusqlite::Error) -> Self {
        DecideError::Store(error.into())
    }
}

const COLUMNS: &str = "id, kind, client, fingerprint, payload, risk, decision, decided_by, reason,
    created_at, decided_at";

/// The record without its payload, which needs a check `rusqlite` cannot express.
type Raw = (ExecutorRequest, String);

fn from_row(row: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        ExecutorRequest {
            id: row.get(0)?,
            kind: row.get(1)?,
            client: row.get(2)?,
            fingerprint: row.get(3)?,
            payload: Value::Null,
            risk: row.get(5)?,
            decision: row.get(6)?,
            decided_by: row.get(7)?,
            reason: row.get(8)?,
            created_at: row.get(9)?,
            decided_at: row.get(10)?,
        },
        row.get(4)?,
    ))
}

fn finish((mut record, payload): Raw) -> Result<ExecutorRequest> {
    record.payload = serde_json::from_str(&payload).map_err(|source| StoreError::Json {
        what: "approval request payload",
        source,
    })?;
    Ok(record)
}

/// The `fingerprint` of a request: a stable hash of its code with whitespace normalised (each
/// line trimmed and its runs of blanks collapsed to one space, blank lines dropped, CRLF read as
/// LF). Line breaks are kept because in a shell they separate commands. It is the git blob id
/// of the normalised text, so any tool can compute it; our own agent fingerprints its pending
/// tool calls the same way to recognise a gateway request about one of them.
pub fn approval_fingerprint(code: &str) -> String {
    let lines = code
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "));
    let normal = lines
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    git2::Oid::hash_object(git2::ObjectType::Blob, normal.as_bytes())
        .map(|oid| oid.to_string())
        // Hashing in memory does not fail in practice; should it, the normalised text itself
        // is an exact (if long) fingerprint.
        .unwrap_or(normal)
}

impl Store {
    /// Records a new, undecided request and returns its id.
    pub fn add_approval_request(
        &self,
        kind: ExecutorRequestKind,
        client: Option<&str>,
        fingerprint: &str,
        payload: &Value,
        risk: Option<Risk>,
    ) -> Result<i64> {
        let payload = serde_json::to_string(payload).map_err(|source| StoreError::Json {
            what: "approval request payload",
            source,
        })?;
        Ok(self.conn().query_row(
            "INSERT INTO approval_requests (kind, client, fingerprint, payload, risk, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
            params![kind, client, fingerprint, payload, risk, now_ms()],
            |row| row.get(0),
        )?)
    }

    /// Decides a pending request and returns the decided record. A request is decided once:
    /// a second decision is [`DecideError::AlreadyDecided`] and changes nothing.
    pub fn decide_approval_request(
        &self,
        id: i64,
        decision: ExecutorDecision,
        decided_by: DecidedBy,
        reason: Option<&str>,
    ) -> Result<ExecutorRequest, DecideError> {
        let decided = self
            .conn()
            .query_row(
                &format!(
                    "UPDATE approval_requests SET decision = ?2, decided_by = ?3, reason = ?4,
                         decided_at = ?5 WHERE id = ?1 AND decision IS NULL RETURNING {COLUMNS}"
                ),
                params![id, decision, decided_by, reason, now_ms()],
                from_row,
            )
            .optional()?;
        if let Some(raw) = decided {
            return Ok(finish(raw)?);
        }
        match self.approval_request(id) {
            Ok(ExecutorRequest {
                decision: Some(decision),
                decided_by: Some(decided_by),
                ..
            }) => Err(DecideError::AlreadyDecided {
                id,
                decision,
                decided_by,
            }),
            Err(StoreError::NotFound { .. }) => Err(DecideError::NotFound(id)),
            Err(other) => Err(other.into()),
            // Undecided yet not updated: only a concurrent delete could do that.
            Ok(_) => Err(DecideError::NotFound(id)),
        }
    }

    pub fn approval_request(&self, id: i64) -> Result<ExecutorRequest> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM approval_requests WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?;
        finish(row.ok_or_else(|| not_found("approval request", id))?)
    }

    /// The latest `limit` requests, decided or not, newest first.
    pub fn approval_requests(&self, limit: usize) -> Result<Vec<ExecutorRequest>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.query_approvals(
            &format!("SELECT {COLUMNS} FROM approval_requests ORDER BY id DESC LIMIT ?1"),
            [limit],
        )
    }

    /// Every undecided request, oldest first (the order they should be answered in). This
    /// includes requests left by a process that has since died; see the module docs.
    pub fn pending_approval_requests(&self) -> Result<Vec<ExecutorRequest>> {
        self.query_approvals(
            &format!("SELECT {COLUMNS} FROM approval_requests WHERE decision IS NULL ORDER BY id"),
            [],
        )
    }

    fn query_approvals(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<ExecutorRequest>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map(params, from_row)?;
        rows.map(|row| finish(row?)).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn add(store: &Store, risk: Option<Risk>) -> i64 {
        let payload = json!({"kind": "evaluation", "code": "ls -la", "risk": "low"});
        store
            .add_approval_request(
                ExecutorRequestKind::Evaluation,
                Some("runner"),
                "fp",
                &payload,
                risk,
            )
            .unwrap()
    }

    #[test]
    fn a_request_round_trips_and_starts_pending() {
        let store = Store::open_in_memory().unwrap();
        let id = add(&store, Some(Risk::Medium));
        let record = store.approval_request(id).unwrap();
        assert_eq!(record.kind, ExecutorRequestKind::Evaluation);
        assert_eq!(record.client.as_deref(), Some("runner"));
        assert_eq!(record.fingerprint, "fp");
        assert_eq!(record.payload["code"], "ls -la");
        assert_eq!(record.risk, Some(Risk::Medium));
        assert!(record.is_pending());
        assert_eq!((record.decided_by, record.decided_at), (None, None));
        assert!(record.created_at > 0);
    }

    #[test]
    fn a_request_is_decided_once() {
        let store = Store::open_in_memory().unwrap();
        let id = add(&store, Some(Risk::High));
        let decided = store
            .decide_approval_request(id, ExecutorDecision::Rejected, DecidedBy::User, Some("no"))
            .unwrap();
        assert_eq!(decided.decision, Some(ExecutorDecision::Rejected));
        assert_eq!(decided.decided_by, Some(DecidedBy::User));
        assert_eq!(decided.reason.as_deref(), Some("no"));
        assert!(decided.decided_at.is_some());

        let again =
            store.decide_approval_request(id, ExecutorDecision::Approved, DecidedBy::Auto, None);
        assert!(matches!(
            again,
            Err(DecideError::AlreadyDecided {
                decision: ExecutorDecision::Rejected,
                decided_by: DecidedBy::User,
                ..
            })
        ));
        // The first decision stands.
        assert_eq!(store.approval_request(id).unwrap(), decided);
    }

    #[test]
    fn deciding_a_missing_request_is_not_found() {
        let store = Store::open_in_memory().unwrap();
        let result =
            store.decide_approval_request(42, ExecutorDecision::Approved, DecidedBy::User, None);
        assert!(matches!(result, Err(DecideError::NotFound(42))));
        assert!(matches!(
            store.approval_request(42),
            Err(StoreError::NotFound { .. })
        ));
    }

    #[test]
    fn lists_are_ordered_and_pending_excludes_decided() {
        let store = Store::open_in_memory().unwrap();
        let ids: Vec<i64> = (0..4).map(|_| add(&store, None)).collect();
        store
            .decide_approval_request(ids[1], ExecutorDecision::Approved, DecidedBy::Auto, None)
            .unwrap();

        let latest: Vec<i64> = store
            .approval_requests(3)
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(latest, vec![ids[3], ids[2], ids[1]]);

        let pending: Vec<i64> = store
            .pending_approval_requests()
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(pending, vec![ids[0], ids[2], ids[3]]);
        assert_eq!(store.approval_request(ids[0]).unwrap().risk, None);
    }

    #[test]
    fn pending_requests_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tandem.db");
        let id = add(&Store::open_file(&path).unwrap(), Some(Risk::Low));
        let store = Store::open_file(&path).unwrap();
        let pending = store.pending_approval_requests().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, id);
        store
            .decide_approval_request(id, ExecutorDecision::Approved, DecidedBy::User, None)
            .unwrap();
        assert!(store.pending_approval_requests().unwrap().is_empty());
    }
}
