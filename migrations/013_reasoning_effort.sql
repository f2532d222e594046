-- How hard a reasoning model thinks (OpenAI's reasoning effort), per model; NULL: the
-- server's default.
ALTER TABLE model_profiles ADD COLUMN reasoning_effort TEXT
    CHECK (reasoning_effort IS NULL OR reasoning_effort IN ('minimal', 'low', 'medium', 'high'));
