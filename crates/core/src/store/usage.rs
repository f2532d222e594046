//! The `usage_events` table read back: tokens in and out per model, in total and per day,
//! for all projects or one; and the price table that turns them into cost.

use std::collections::BTreeMap;

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Result, Store};

/// Tokens a model used (all replies recorded, or one day's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelTokens {
    pub provider: String,
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Replies (and agent steps) the tokens were counted on.
    pub replies: i64,
}

/// One day's tokens of one model; `day` is `YYYY-MM-DD` in UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DayTokens {
    pub day: String,
    pub tokens: ModelTokens,
}

/// What a model costs, in any one currency, per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// Prices by model name (`"claude-sonnet-4"`) or `"provider/model"`, the more specific first.
pub type Prices = BTreeMap<String, Price>;

/// `WHERE` for an optional project: `?1` is the project id or NULL for all.
const SCOPE: &str = "(?1 IS NULL OR project_id = ?1)";

fn tokens(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<ModelTokens> {
    Ok(ModelTokens {
        provider: row.get::<_, Option<String>>(at)?.unwrap_or_default(),
        model: row.get::<_, Option<String>>(at + 1)?.unwrap_or_default(),
        input_tokens: row.get(at + 2)?,
        output_tokens: row.get(at + 3)?,
        replies: row.get(at + 4)?,
    })
}

impl Store {
    /// Tokens per model (of one project, or all), most used first.
    pub fn usage_by_model(&self, project_id: Option<i64>) -> Result<Vec<ModelTokens>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT provider, model, SUM(input_tokens), SUM(output_tokens), COUNT(*)
             FROM usage_events WHERE {SCOPE}
             GROUP BY provider, model
             ORDER BY SUM(input_tokens) + SUM(output_tokens) DESC, provider, model"
        ))?;
        let rows = stmt.query_map(params![project_id], |row| tokens(row, 0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Tokens per day (UTC) and model since `since_ms` (of one project, or all), oldest first.
    pub fn usage_by_day(&self, project_id: Option<i64>, since_ms: i64) -> Result<Vec<DayTokens>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT date(created_at / 1000, 'unixepoch') AS day, provider, model,
                    SUM(input_tokens), SUM(output_tokens), COUNT(*)
             FROM usage_events WHERE {SCOPE} AND created_at >= ?2
             GROUP BY day, provider, model ORDER BY day, provider, model"
        ))?;
        let rows = stmt.query_map(params![project_id, since_ms], |row| {
            Ok(DayTokens {
                day: row.get(0)?,
                tokens: tokens(row, 1)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
