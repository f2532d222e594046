-- Model providers and their model profiles, the reusable prompt library, token usage.
-- API keys are never stored here: a provider names the environment variable or keychain entry.

CREATE TABLE providers (
    id           INTEGER PRIMARY KEY,
    name         TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL CHECK (kind IN ('ollama', 'openai', 'anthropic', 'gemini')),
    base_url     TEXT    NOT NULL,
    api_key_env  TEXT,
    settings     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE model_profiles (
    id                  INTEGER PRIMARY KEY,
    provider_id         INTEGER NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    model               TEXT    NOT NULL,
    context_length      INTEGER,
    supports_tools      INTEGER NOT NULL DEFAULT 0 CHECK (supports_tools IN (0, 1)),
    supports_images     INTEGER NOT NULL DEFAULT 0 CHECK (supports_images IN (0, 1)),
    supports_reasoning  INTEGER NOT NULL DEFAULT 0 CHECK (supports_reasoning IN (0, 1)),
    updated_at          INTEGER NOT NULL,
    UNIQUE (provider_id, model)
);

CREATE TABLE prompts (
    id          INTEGER PRIMARY KEY,
    title       TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE usage_events (
    id             INTEGER PRIMARY KEY,
    message_id     INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    provider       TEXT,
    model          TEXT,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
);
CREATE INDEX usage_by_time ON usage_events(created_at);
