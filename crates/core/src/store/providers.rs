//! The `providers` table. API keys are never stored here (see
//! `llm::secrets`): a provider only names the environment variable its key may come from.

use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{Result, Store, StoreError, not_found, now_ms, text_enum};
use crate::llm::ProviderKind;

text_enum!(ProviderKind {
    Ollama => "ollama",
    Openai => "openai",
    Anthropic => "anthropic",
    Gemini => "gemini",
    Codex => "codex",
    ClaudeCode => "claude-code",
});

/// Per-provider settings, as JSON so new keys need no migration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    /// The model used when none is chosen.
    pub default_model: Option<String>,
    /// Overrides the context length the provider reports (or does not report).
    pub context_length: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderRecord {
    pub id: i64,
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    pub api_key_env: Option<String>,
    pub settings: ProviderSettings,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, name, kind, base_url, api_key_env, settings, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<(ProviderRecord, String)> {
    Ok((
        ProviderRecord {
            id: row.get(0)?,
            name: row.get(1)?,
            kind: row.get(2)?,
            base_url: row.get(3)?,
            api_key_env: row.get(4)?,
            settings: ProviderSettings::default(),
            created_at: row.get(6)?,
            updated_at: row.get(7)?,
        },
        row.get(5)?,
    ))
}

fn finish((mut record, settings): (ProviderRecord, String)) -> Result<ProviderRecord> {
    record.settings = serde_json::from_str(&settings).map_err(|source| StoreError::Json {
        what: "provider settings",
        source,
    })?;
    Ok(record)
}

fn settings_json(settings: &ProviderSettings) -> Result<String> {
    serde_json::to_string(settings).map_err(|source| StoreError::Json {
        what: "provider settings",
        source,
    })
}

impl Store {
    pub fn insert_provider(
        &self,
        name: &str,
        kind: ProviderKind,
        base_url: &str,
        api_key_env: Option<&str>,
        settings: &ProviderSettings,
    ) -> Result<ProviderRecord> {
        let json = settings_json(settings)?;
        let id: i64 = self.conn().query_row(
            "INSERT INTO providers (name, kind, base_url, api_key_env, settings, created_at,
                 updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) RETURNING id",
            params![name, kind, base_url, api_key_env, json, now_ms()],
            |row| row.get(0),
        )?;
        self.provider(id)
    }

    pub fn update_provider(&self, record: &ProviderRecord) -> Result<()> {
        let json = settings_json(&record.settings)?;
        self.change_row(
            "provider",
            record.id,
            "UPDATE providers SET name = ?2, kind = ?3, base_url = ?4, api_key_env = ?5,
                 settings = ?6, updated_at = ?7 WHERE id = ?1",
            params![
                record.id,
                record.name,
                record.kind,
                record.base_url,
                record.api_key_env,
                json,
                now_ms()
            ],
        )
    }

    pub fn delete_provider(&self, id: i64) -> Result<()> {
        self.change_row("provider", id, "DELETE FROM providers WHERE id = ?1", [id])
    }

    pub fn provider(&self, id: i64) -> Result<ProviderRecord> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM providers WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?;
        finish(row.ok_or_else(|| not_found("provider", id))?)
    }

    pub fn provider_by_name(&self, name: &str) -> Result<Option<ProviderRecord>> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM providers WHERE name = ?1"),
                [name],
                from_row,
            )
            .optional()?;
        row.map(finish).transpose()
    }

    /// All providers, oldest first (the first is the default when none is chosen).
    pub fn providers(&self) -> Result<Vec<ProviderRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM providers ORDER BY id"))?;
        let rows = stmt.query_map([], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }
}
