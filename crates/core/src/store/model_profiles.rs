//! The `model_profiles` table: what each provider's model can do (as its server said, and as
//! the check-up found), the person's per-model settings, and how its edits fared.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Result, Store, now_ms};
use crate::llm::{ModelInfo, ReasoningEffort};

/// Per-model generation settings the person chose (`None`: the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct GenerationSettings {
    /// Overrides the context window the server reports (or does not).
    pub context_length: Option<u32>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// How hard a reasoning model thinks (APIs that take it; others ignore it).
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// Everything known about one model of one provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelProfile {
    pub provider_id: i64,
    /// What the server says (and, after a check-up, what the probe found).
    pub info: ModelInfo,
    /// When the check-up last ran (ms since the epoch); `None`: never.
    pub checked_at: Option<i64>,
    /// Whether native tool calls came back in the check-up's probe; `None`: not probed.
    pub tools_probe: Option<bool>,
    pub settings: GenerationSettings,
    /// Search-replace blocks this model wrote in real turns, and how many failed to apply.
    pub edit_blocks: u32,
    pub edit_failures: u32,
    /// How the model's server counts a prompt against Tandem's estimate (see
    /// [`Store::record_prompt_count`]); `None` until a reply's count came out above it.
    pub token_ratio: Option<f64>,
}

impl ModelProfile {
    /// The window to use: the person's override, else what the server or probe said.
    pub fn context_length(&self) -> Option<u32> {
        self.settings.context_length.or(self.info.context_length)
    }

    /// What Tandem's token estimates are multiplied by for this model: how much more its
    /// server counted (1 when it never counted more).
    pub fn estimate_scale(&self) -> f64 {
        self.token_ratio
            .map_or(1.0, |r| r.clamp(1.0, MAX_TOKEN_RATIO))
    }
}

/// The highest ratio believed: beyond it the count is something else (a server counting
/// images or a cache in its own way), not the tokenizer.
const MAX_TOKEN_RATIO: f64 = 4.0;

/// Prompts estimated under this many tokens tell little about a tokenizer (the fixed
/// overheads of a chat template weigh too much in them).
const MIN_ESTIMATE_FOR_RATIO: u64 = 512;

const COLUMNS: &str = "provider_id, model, context_length, supports_tools, supports_images, \
     supports_reasoning, context_source, checked_at, tools_probe, context_override, \
     temperature, max_output_tokens, edit_blocks, edit_failures, reasoning_effort, \
     token_ratio";

fn from_row(row: &Row<'_>) -> rusqlite::Result<ModelProfile> {
    Ok(ModelProfile {
        provider_id: row.get(0)?,
        info: ModelInfo {
            id: row.get(1)?,
            context_length: row.get(2)?,
            supports_tools: row.get(3)?,
            supports_images: row.get(4)?,
            supports_reasoning: row.get(5)?,
            context_source: row.get(6)?,
        },
        checked_at: row.get(7)?,
        tools_probe: row.get(8)?,
        settings: GenerationSettings {
            context_length: row.get(9)?,
            temperature: row.get::<_, Option<f64>>(10)?.map(|t| t as f32),
            max_output_tokens: row.get(11)?,
            // A value this version does not know reads as the default.
            reasoning_effort: row
                .get::<_, Option<String>>(14)?
                .and_then(|e| e.parse().ok()),
        },
        edit_blocks: row.get(12)?,
        edit_failures: row.get(13)?,
        token_ratio: row.get(15)?,
    })
}

impl Store {
    /// Remembers what a provider said about a model (the person's settings and the edit
    /// record stay as they are).
    pub fn save_model_profile(&self, provider_id: i64, info: &ModelInfo) -> Result<()> {
        self.conn().execute(
            "INSERT INTO model_profiles (provider_id, model, context_length, supports_tools,
                 supports_images, supports_reasoning, context_source, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (provider_id, model) DO UPDATE SET
                 context_length = excluded.context_length,
                 supports_tools = excluded.supports_tools,
                 supports_images = excluded.supports_images,
                 supports_reasoning = excluded.supports_reasoning,
                 context_source = excluded.context_source,
                 updated_at = excluded.updated_at",
            params![
                provider_id,
                info.id,
                info.context_length,
                info.supports_tools,
                info.supports_images,
                info.supports_reasoning,
                info.context_source,
                now_ms()
            ],
        )?;
        Ok(())
    }

    /// Records a check-up: what the server said and whether the tool probe got a call back.
    pub fn save_checkup(
        &self,
        provider_id: i64,
        info: &ModelInfo,
        tools_probe: Option<bool>,
    ) -> Result<()> {
        self.save_model_profile(provider_id, info)?;
        self.conn().execute(
            "UPDATE model_profiles SET checked_at = ?3, tools_probe = ?4
             WHERE provider_id = ?1 AND model = ?2",
            params![provider_id, info.id, now_ms(), tools_probe],
        )?;
        Ok(())
    }

    /// Saves the person's settings for a model (creating its profile if needed).
    pub fn set_generation_settings(
        &self,
        provider_id: i64,
        model: &str,
        settings: &GenerationSettings,
    ) -> Result<()> {
        self.ensure_profile(provider_id, model)?;
        self.conn().execute(
            "UPDATE model_profiles SET context_override = ?3, temperature = ?4,
                 max_output_tokens = ?5, updated_at = ?6, reasoning_effort = ?7
             WHERE provider_id = ?1 AND model = ?2",
            params![
                provider_id,
                model,
                settings.context_length,
                settings.temperature.map(f64::from),
                settings.max_output_tokens,
                now_ms(),
                settings.reasoning_effort.map(ReasoningEffort::as_str)
            ],
        )?;
        Ok(())
    }

    /// Adds a turn's search-replace record: `blocks` written, `failed` of them not applied.
    pub fn record_edit_blocks(
        &self,
        provider_id: i64,
        model: &str,
        blocks: u32,
        failed: u32,
    ) -> Result<()> {
        self.ensure_profile(provider_id, model)?;
        self.conn().execute(
            "UPDATE model_profiles SET edit_blocks = edit_blocks + ?3,
                 edit_failures = edit_failures + ?4
             WHERE provider_id = ?1 AND model = ?2",
            params![provider_id, model, blocks, failed],
        )?;
        Ok(())
    }

    /// Learns from a reply how the model's server counts prompts: `counted` tokens (the
    /// server's own count) for a request Tandem estimated at `estimated`. A count above the
    /// estimate raises the ratio at once (the next request must fit as the server counts it);
    /// a lower one, down to the estimate, brings it down a tenth of the way. A count below the
    /// estimate says nothing: servers that reuse a cached prefix count only the rest.
    /// Returns the ratio now stored, when the count taught one.
    pub fn record_prompt_count(
        &self,
        provider_id: i64,
        model: &str,
        estimated: u64,
        counted: u64,
    ) -> Result<Option<f64>> {
        if estimated < MIN_ESTIMATE_FOR_RATIO || counted <= estimated {
            return Ok(None);
        }
        let seen = (counted as f64 / estimated as f64).min(MAX_TOKEN_RATIO);
        self.ensure_profile(provider_id, model)?;
        let stored = self.conn().query_row(
            "UPDATE model_profiles SET token_ratio = CASE
                 WHEN token_ratio IS NULL OR ?3 >= token_ratio THEN ?3
                 ELSE token_ratio * 0.9 + ?3 * 0.1 END
             WHERE provider_id = ?1 AND model = ?2
             RETURNING token_ratio",
            params![provider_id, model, seen],
            |row| row.get(0),
        )?;
        Ok(Some(stored))
    }

    pub fn model_profile(&self, provider_id: i64, model: &str) -> Result<Option<ModelProfile>> {
        Ok(self
            .conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM model_profiles WHERE provider_id = ?1 AND model = ?2"
                ),
                params![provider_id, model],
                from_row,
            )
            .optional()?)
    }

    /// A provider's model profiles, by model name.
    pub fn model_profiles(&self, provider_id: i64) -> Result<Vec<ModelProfile>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM model_profiles WHERE provider_id = ?1 ORDER BY model"
        ))?;
        let rows = stmt.query_map([provider_id], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn ensure_profile(&self, provider_id: i64, model: &str) -> Result<()> {
        self.conn().execute(
            "INSERT INTO model_profiles (provider_id, model, updated_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (provider_id, model) DO NOTHING",
            params![provider_id, model, now_ms()],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ProviderKind;
    use crate::store::ProviderSettings;

    #[test]
    fn a_profile_keeps_the_servers_answer_the_checkup_the_settings_and_the_edit_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).unwrap();
        let provider = store
            .insert_provider(
                "local",
                ProviderKind::Openai,
                "http://localhost:1234/v1",
                None,
                &ProviderSettings::default(),
            )
            .unwrap();
        assert_eq!(store.model_profile(provider.id, "m").unwrap(), None);
        let settings = GenerationSettings {
            context_length: Some(16_384),
            temperature: Some(0.25),
            max_output_tokens: Some(2048),
            reasoning_effort: Some(ReasoningEffort::High),
        };
        store
            .set_generation_settings(provider.id, "m", &settings)
            .unwrap();
        let info = ModelInfo {
            id: "m".into(),
            context_length: Some(8192),
            context_source: Some("/props".into()),
            ..ModelInfo::default()
        };
        store.save_checkup(provider.id, &info, Some(true)).unwrap();
        store.record_edit_blocks(provider.id, "m", 4, 1).unwrap();
        store.record_edit_blocks(provider.id, "m", 2, 2).unwrap();
        // A later plain answer from the server keeps the rest.
        store.save_model_profile(provider.id, &info).unwrap();
        let profile = store.model_profile(provider.id, "m").unwrap().unwrap();
        assert_eq!(profile.info, info);
        assert_eq!(profile.settings, settings);
        assert_eq!(profile.context_length(), Some(16_384));
        assert_eq!(profile.tools_probe, Some(true));
        assert!(profile.checked_at.is_some());
        assert_eq!((profile.edit_blocks, profile.edit_failures), (6, 3));
        assert_eq!(store.model_profiles(provider.id).unwrap(), vec![profile]);
    }

    #[test]
    fn the_servers_prompt_counts_set_how_estimates_are_scaled() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).unwrap();
        let id = store
            .insert_provider(
                "local",
                ProviderKind::Ollama,
                "http://localhost:11434",
                None,
                &ProviderSettings::default(),
            )
            .unwrap()
            .id;
        let scale = |store: &Store| {
            store
                .model_profile(id, "m")
                .unwrap()
                .unwrap()
                .estimate_scale()
        };
        // Nothing learnt: estimates as they are. Counts at or under the estimate (a cached
        // prefix) and small prompts teach nothing.
        assert_eq!(
            store.record_prompt_count(id, "m", 6000, 5000).unwrap(),
            None
        );
        store.record_prompt_count(id, "m", 6000, 6000).unwrap();
        store.record_prompt_count(id, "m", 100, 400).unwrap();
        assert_eq!(store.model_profile(id, "m").unwrap(), None);
        // A server that counted 7,430 tokens of a prompt estimated at 6,115: raised at once.
        let returned = store.record_prompt_count(id, "m", 6115, 7430).unwrap();
        let learnt = scale(&store);
        assert_eq!(
            returned,
            Some(learnt),
            "the ratio stored is the one returned"
        );
        assert!((learnt - 7430.0 / 6115.0).abs() < 1e-9, "{learnt}");
        // A lower count (still above the estimate) brings it down a tenth of the way.
        store.record_prompt_count(id, "m", 1000, 1100).unwrap();
        let lowered = scale(&store);
        assert!(
            (lowered - (learnt * 0.9 + 1.1 * 0.1)).abs() < 1e-9,
            "{lowered}"
        );
        // A count past belief is held at the cap; a cached count does not lower it.
        store.record_prompt_count(id, "m", 1000, 50_000).unwrap();
        assert_eq!(scale(&store), 4.0);
        store.record_prompt_count(id, "m", 1000, 10).unwrap();
        assert_eq!(scale(&store), 4.0);
    }
}
