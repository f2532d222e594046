-- The model check-up and per-model settings: when the check-up last ran, whether native tool
-- calls came back in its probe, where the context window was read; the person's overrides
-- (context length, temperature, output limit); and how the model's search-replace edits fared
-- in real turns (to ask for whole files instead when they keep failing).
ALTER TABLE model_profiles ADD COLUMN checked_at INTEGER;
ALTER TABLE model_profiles ADD COLUMN tools_probe INTEGER CHECK (tools_probe IS NULL OR tools_probe IN (0, 1));
ALTER TABLE model_profiles ADD COLUMN context_source TEXT;
ALTER TABLE model_profiles ADD COLUMN context_override INTEGER CHECK (context_override IS NULL OR context_override > 0);
ALTER TABLE model_profiles ADD COLUMN temperature REAL CHECK (temperature IS NULL OR (temperature >= 0 AND temperature <= 2));
ALTER TABLE model_profiles ADD COLUMN max_output_tokens INTEGER CHECK (max_output_tokens IS NULL OR max_output_tokens > 0);
ALTER TABLE model_profiles ADD COLUMN edit_blocks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_profiles ADD COLUMN edit_failures INTEGER NOT NULL DEFAULT 0;
