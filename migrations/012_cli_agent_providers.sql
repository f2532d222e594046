-- Providers of two new kinds run an external coding agent instead of calling an HTTP API:
-- 'codex' (the Codex CLI) and 'claude-code' (Claude Code). The table is rebuilt to widen its
-- CHECK (migrations run with foreign keys off: dropping the old table cascades nowhere, and
-- the ids are kept, so model profiles and chats still point at their providers).
CREATE TABLE providers_new (
    id           INTEGER PRIMARY KEY,
    name         TEXT    NOT NULL UNIQUE,
    kind         TEXT    NOT NULL
                 CHECK (kind IN ('ollama', 'openai', 'anthropic', 'gemini', 'codex', 'claude-code')),
    base_url     TEXT    NOT NULL,
    api_key_env  TEXT,
    settings     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
INSERT INTO providers_new (id, name, kind, base_url, api_key_env, settings, created_at, updated_at)
    SELECT id, name, kind, base_url, api_key_env, settings, created_at, updated_at FROM providers;
DROP TABLE providers;
ALTER TABLE providers_new RENAME TO providers;
