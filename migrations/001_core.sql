-- Projects, chats, messages and settings: the core of Tandem's data.
-- Timestamps are Unix milliseconds (INTEGER). JSON columns are checked with json_valid.

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    path        TEXT    NOT NULL UNIQUE,
    -- per-project settings: context include/exclude globs, check command, auto-approve override
    settings    TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE chats (
    id              INTEGER PRIMARY KEY,
    project_id      INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title           TEXT    NOT NULL DEFAULT '',
    mode            TEXT    NOT NULL DEFAULT 'build' CHECK (mode IN ('build', 'ask', 'agent', 'plan')),
    -- HEAD when the chat started: restoring to it removes the whole conversation's changes
    initial_commit  TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX chats_by_project ON chats(project_id, updated_at);

CREATE TABLE messages (
    id                  INTEGER PRIMARY KEY,
    chat_id             INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    role                TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content             TEXT    NOT NULL DEFAULT '',
    status              TEXT    NOT NULL DEFAULT 'complete'
                        CHECK (status IN ('streaming', 'complete', 'cancelled', 'error', 'interrupted')),
    approval_state      TEXT    CHECK (approval_state IN ('pending', 'approved', 'rejected')),
    commit_hash         TEXT,
    -- HEAD when the reply started
    source_commit_hash  TEXT,
    error               TEXT,
    model               TEXT,
    input_tokens        INTEGER,
    output_tokens       INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE INDEX messages_by_chat ON messages(chat_id, id);
CREATE INDEX messages_by_commit ON messages(commit_hash) WHERE commit_hash IS NOT NULL;

CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL CHECK (json_valid(value))
);
