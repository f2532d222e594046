//! SQLite persistence: projects, chats, messages, settings and the provider tables.
//!
//! One database file (`tandem.db`) in the data directory. The schema comes from the ordered SQL
//! files in `migrations/`, embedded at build time and applied at start-up. The connection sits
//! behind a mutex: every call is a short statement, and the GUI calls the store from the
//! background runtime, never from a frame.

mod agent_steps;
mod approvals;
mod attachments;
mod chats;
pub mod keys;
mod mcp_servers;
mod messages;
mod model_profiles;
mod projects;
mod prompts;
mod providers;
mod settings;
mod summaries;
mod undoing;
mod usage;

pub use agent_steps::{AgentStep, NewStep, StepDecision, StepKind};
pub use approvals::{
    DecideError, DecidedBy, ExecutorDecision, ExecutorRequest, ExecutorRequestKind,
    approval_fingerprint,
};
pub use attachments::{ATTACHMENTS_DIR, Attachment, AttachmentKind, NewAttachment};
pub use chats::{Chat, ChatMode, MessageHit};
pub use mcp_servers::{
    MCP_SERVER_NAME_MAX, McpServerError, McpServerRecord, McpTransport, expand_header_values,
    mask_header_value, parse_mcp_header, stdio_server_env, validate_mcp_server_name,
};
pub use messages::review::{ApprovalNote, ApprovalState, LeftOut, PlanBase};
pub use messages::{Message, MessageStatus, NewMessage, Role};
pub use model_profiles::{GenerationSettings, ModelProfile};
pub use projects::{Project, ProjectSettings};
pub use prompts::SavedPrompt;
pub use providers::{ProviderRecord, ProviderSettings};
pub use summaries::{ChatSummary, NewSummary};
pub use usage::{DayTokens, ModelTokens, Price, Prices};

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

/// The schema, oldest first. Never edit a shipped file: add a new one.
pub const MIGRATIONS: &[&str] = &[
    include_str!("../../../../migrations/001_core.sql"),
    include_str!("../../../../migrations/002_providers_prompts_usage.sql"),
    include_str!("../../../../migrations/003_proposal_review.sql"),
    include_str!("../../../../migrations/004_streaming_parts.sql"),
    include_str!("../../../../migrations/005_agent.sql"),
    include_str!("../../../../migrations/006_step_sandbox.sql"),
    include_str!("../../../../migrations/007_step_kinds.sql"),
    include_str!("../../../../migrations/008_approval_notes.sql"),
    include_str!("../../../../migrations/009_model_checkup.sql"),
    include_str!("../../../../migrations/010_chat_summaries.sql"),
    include_str!("../../../../migrations/011_prompt_library_chat_state.sql"),
    include_str!("../../../../migrations/012_cli_agent_providers.sql"),
    include_str!("../../../../migrations/013_reasoning_effort.sql"),
    include_str!("../../../../migrations/014_mcp_headers.sql"),
    include_str!("../../../../migrations/015_undoing.sql"),
    include_str!("../../../../migrations/016_token_ratio.sql"),
];

/// The file name of the database inside the data directory.
pub const DB_FILE: &str = "tandem.db";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database schema migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} was written by a newer Tandem (schema version {found}; this one knows up to {known}) and is left untouched: update Tandem, or pass --data-dir to use another data directory",
        path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: usize,
    },
    #[error("cannot {what}: {source}")]
    AttachmentIo {
        what: String,
        source: std::io::Error,
    },
    #[error("an in-memory database keeps no attachments")]
    NoAttachmentDir,
    #[error("no platform data directory could be found; pass --data-dir or set TANDEM_DATA_DIR")]
    NoDataDir,
    #[error("{what} {id} does not exist")]
    NotFound { what: &'static str, id: String },
    #[error("cannot lock {}: {source}", .path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("stored {what} is not valid JSON: {source}")]
    Json {
        what: &'static str,
        source: serde_json::Error,
    },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) fn not_found(what: &'static str, id: impl ToString) -> StoreError {
    StoreError::NotFound {
        what,
        id: id.to_string(),
    }
}

/// Milliseconds since the Unix epoch: every timestamp in the database.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The data directory: an explicit choice, else `TANDEM_DATA_DIR` in `env`, else the
/// platform's.
pub fn data_dir(explicit: Option<&Path>, env: &crate::environment::Environment) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = env.get("TANDEM_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("dev", "tandem", "Tandem")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .ok_or(StoreError::NoDataDir)
}

pub fn migrations() -> Migrations<'static> {
    Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect())
}

/// The database. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Store {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    recovered: usize,
    /// The locks of the replies this process is streaming (see [`reply_lock_path`]).
    streaming: Mutex<std::collections::HashMap<i64, crate::lockfile::FileLock>>,
}

/// The file whose lock the process streaming reply `id` holds while it streams: another
/// process opening the database leaves a reply whose lock is held alone (it is alive), and
/// marks one whose lock is free interrupted (its process died).
pub fn reply_lock_path(db: &Path, id: i64) -> PathBuf {
    db.with_file_name("locks").join(format!("reply-{id}.lock"))
}

impl Store {
    /// Opens (creating if needed) `tandem.db` in `dir`, migrates it to the latest schema and
    /// marks replies that were still streaming when the last process died as interrupted.
    pub fn open_dir(dir: &Path) -> Result<Store> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::DataDir {
            path: dir.to_path_buf(),
            source,
        })?;
        Self::open_file(&dir.join(DB_FILE))
    }

    /// Opens (creating if needed) the database at `path`. One written by a newer Tandem is
    /// refused before anything can change it: its schema version is read from the file's
    /// header first (no SQLite connection, so no journal-mode switch and no -wal or -shm),
    /// then again through SQLite (a newer schema only in the -wal yet), closing without a
    /// checkpoint.
    pub fn open_file(path: &Path) -> Result<Store> {
        let too_new = |found: i64| StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: MIGRATIONS.len(),
        };
        let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if let Some(found) = header_user_version(path).filter(|v| *v > known) {
            return Err(too_new(found));
        }
        let conn = Connection::open(path)?;
        let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found > known {
            conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )?;
            return Err(too_new(found));
        }
        Self::init(conn, Some(path.to_path_buf()))
    }

    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, None)
    }

    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<Store> {
        configure(&conn)?;
        // Foreign keys are off while the schema changes (as SQLite's procedure for rebuilding
        // a table asks: dropping the old one must not cascade), and checked after.
        let version = |conn: &Connection| -> rusqlite::Result<i64> {
            conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        };
        let before = version(&conn)?;
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        let migrated = migrations().to_latest(&mut conn);
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrated?;
        let broken: i64 = match version(&conn)? == before {
            true => 0,
            false => conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })?,
        };
        if broken > 0 {
            return Err(StoreError::Migration(
                rusqlite_migration::Error::ForeignKeyCheck(Vec::new()),
            ));
        }
        let recovered = messages::recover_interrupted(&mut conn, path.as_deref())?;
        let store = Store {
            conn: Mutex::new(conn),
            path,
            recovered,
            streaming: Mutex::default(),
        };
        // Attachment bytes a crash left unrecorded, or whose removal failed: best effort.
        let _ = store.sweep_attachments();
        Ok(store)
    }

    /// The database file, `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many replies were found still `streaming` at open and marked `interrupted`.
    pub fn recovered_interrupted(&self) -> usize {
        self.recovered
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (statements are
        // atomic), so a poisoned lock is safe to keep using.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs a statement that must change the row `id` of `what`; no such row is `NotFound`.
    pub(crate) fn change_row(
        &self,
        what: &'static str,
        id: i64,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<()> {
        match self.conn().execute(sql, params)? {
            0 => Err(not_found(what, id)),
            _ => Ok(()),
        }
    }

    /// Runs `f` inside one transaction.
    pub(crate) fn transaction<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut conn = self.conn();
        // Immediate: the write lock is taken (waiting out another process's write) before
        // anything is read, so a read-then-write never fails on a snapshot gone stale.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    }
}

/// The schema version (`PRAGMA user_version`) in a database file's header, read without
/// SQLite: the 4 big-endian bytes at offset 60 of the 100-byte header
/// (<https://www.sqlite.org/fileformat.html#user_version_number>). `None` for a missing,
/// short or non-SQLite file (SQLite then creates it or says what is wrong).
fn header_user_version(path: &Path) -> Option<i64> {
    use std::io::Read;
    let mut header = [0u8; 100];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    if !header.starts_with(b"SQLite format 3\0") {
        return None;
    }
    let version = i32::from_be_bytes([header[60], header[61], header[62], header[63]]);
    Some(i64::from(version))
}

/// Pragmas for every connection: WAL for concurrent readers, enforced foreign keys,
/// NORMAL sync (durable across application crashes, fast), and a busy timeout instead of
/// immediate "database is locked" errors when the CLI and the app share a file.
pub fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

/// Generates `as_str`, `FromStr` and the SQLite conversions for a closed set of text values.
macro_rules! text_enum {
    ($name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!(
                        "unknown {} {other:?} (expected one of: {})",
                        stringify!($name),
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }
        impl rusqlite::types::FromSql for $name {
            fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                text.parse().map_err(|e: String| rusqlite::types::FromSqlError::Other(e.into()))
            }
        }
    };
}
pub(crate) use text_enum;
