//! The `projects` table: a named folder with a git repository and its own settings.

use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{Result, Store, StoreError, not_found, now_ms};

/// Per-project settings, stored as JSON so new keys need no migration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProjectSettings {
    /// Globs of files to include in the model's context (empty = everything eligible).
    pub context_include: Vec<String>,
    /// Globs of files never sent to the model.
    pub context_exclude: Vec<String>,
    /// A command that checks the project after a change (e.g. `cargo check`).
    pub check_command: Option<String>,
    /// Overrides the global auto-approve setting for this project.
    pub auto_approve: Option<bool>,
    /// How far agent mode is trusted here (default: scoped to the project).
    pub agent_trust: Option<crate::trust::Trust>,
    /// Rules for one mode (`"build"`, `"ask"`, `"agent"`, `"plan"`, `"security"`), sent after
    /// `AI_RULES.md` in that mode.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mode_rules: std::collections::BTreeMap<String, String>,
    /// The person confirmed that, at full trust, CLI agents (Codex, Claude Code) may run with
    /// their own approvals and sandbox off (Tandem's sandbox still confines them).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cli_agent_bypass: bool,
}

impl ProjectSettings {
    /// Which files of the project the context walks (and the code index holds): its include
    /// and exclude globs over the eligible files, every other option at its default.
    pub fn context_options(&self) -> crate::folder::context::ContextOptions {
        crate::folder::context::ContextOptions {
            include: self.context_include.clone(),
            exclude: self.context_exclude.clone(),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Project {
    pub id: i64,
    pub name: String,
    pub path: PathBuf,
    pub settings: ProjectSettings,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, name, path, settings, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<(Project, String)> {
    let settings: String = row.get(3)?;
    Ok((
        Project {
            id: row.get(0)?,
            name: row.get(1)?,
            path: PathBuf::from(row.get::<_, String>(2)?),
            settings: ProjectSettings::default(),
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
        },
        settings,
    ))
}

fn finish((mut project, settings): (Project, String)) -> Result<Project> {
    project.settings = serde_json::from_str(&settings).map_err(|source| StoreError::Json {
        what: "project settings",
        source,
    })?;
    Ok(project)
}

impl Store {
    /// Inserts a project; the path is stored as given (callers canonicalise it).
    pub fn insert_project(&self, name: &str, path: &Path) -> Result<Project> {
        let now = now_ms();
        let conn = self.conn();
        let id = conn.query_row(
            "INSERT INTO projects (name, path, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
             RETURNING id",
            params![name, path.to_string_lossy(), now],
            |row| row.get(0),
        )?;
        drop(conn);
        self.project(id)
    }

    pub fn project(&self, id: i64) -> Result<Project> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM projects WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?;
        finish(row.ok_or_else(|| not_found("project", id))?)
    }

    pub fn project_by_path(&self, path: &Path) -> Result<Option<Project>> {
        let row = self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM projects WHERE path = ?1"),
                [path.to_string_lossy()],
                from_row,
            )
            .optional()?;
        row.map(finish).transpose()
    }

    /// All projects, most recently used first.
    pub fn projects(&self) -> Result<Vec<Project>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM projects ORDER BY updated_at DESC, id DESC"
        ))?;
        let rows = stmt.query_map([], from_row)?;
        rows.map(|row| finish(row?)).collect()
    }

    pub fn update_project_settings(&self, id: i64, settings: &ProjectSettings) -> Result<()> {
        let json = serde_json::to_string(settings).map_err(|source| StoreError::Json {
            what: "project settings",
            source,
        })?;
        self.change_row(
            "project",
            id,
            "UPDATE projects SET settings = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, json, now_ms()],
        )
    }

    /// Marks a project as just used (it sorts first in recent projects).
    pub fn touch_project(&self, id: i64) -> Result<()> {
        self.conn().execute(
            "UPDATE projects SET updated_at = ?2 WHERE id = ?1",
            params![id, now_ms()],
        )?;
        Ok(())
    }

    /// Deletes a project's record with its chats and messages; its folder is left alone.
    pub fn delete_project(&self, id: i64) -> Result<()> {
        let deleted = self.change_row("project", id, "DELETE FROM projects WHERE id = ?1", [id]);
        self.swept(deleted)
    }
}
