-- The prompt library is looked up by name (`@prompt:NAME`): names become unique, any earlier
-- duplicate renamed with its id. Chats gain a Security mode, can be archived (hidden, not
-- deleted) and remember the provider and model they were last sent with.

UPDATE prompts SET title = title || ' (' || id || ')'
 WHERE id NOT IN (SELECT MIN(id) FROM prompts GROUP BY title);
CREATE UNIQUE INDEX prompts_by_title ON prompts(title);

-- The chats table is rebuilt (SQLite cannot change a CHECK in place; migrations run with
-- foreign keys off, so dropping the old table cascades nowhere): a Security mode, and the new
-- columns.
CREATE TABLE chats_new (
    id              INTEGER PRIMARY KEY,
    project_id      INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title           TEXT    NOT NULL DEFAULT '',
    mode            TEXT    NOT NULL DEFAULT 'build'
                    CHECK (mode IN ('build', 'ask', 'agent', 'plan', 'security')),
    -- HEAD when the chat started: restoring to it removes the whole conversation's changes
    initial_commit  TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    archived_at     INTEGER,
    provider_id     INTEGER REFERENCES providers(id) ON DELETE SET NULL,
    model           TEXT
);
INSERT INTO chats_new (id, project_id, title, mode, initial_commit, created_at, updated_at)
    SELECT id, project_id, title, mode, initial_commit, created_at, updated_at FROM chats;
DROP TABLE chats;
ALTER TABLE chats_new RENAME TO chats;
CREATE INDEX chats_by_project ON chats(project_id, updated_at);

-- Usage is reported per project: each event names its project (kept when the message goes).
ALTER TABLE usage_events ADD COLUMN project_id INTEGER REFERENCES projects(id) ON DELETE SET NULL;
UPDATE usage_events SET project_id = (
    SELECT c.project_id FROM messages m JOIN chats c ON c.id = m.chat_id
     WHERE m.id = usage_events.message_id);
CREATE INDEX usage_by_project ON usage_events(project_id, created_at);

-- Files and images attached to a message: the bytes live in the data directory
-- (`attachments/<git blob hash>`), not in the database; a row says what and where.
CREATE TABLE attachments (
    id          INTEGER PRIMARY KEY,
    message_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    kind        TEXT    NOT NULL CHECK (kind IN ('file', 'image')),
    name        TEXT    NOT NULL,
    mime        TEXT    NOT NULL,
    bytes       INTEGER NOT NULL,
    stored      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX attachments_by_message ON attachments(message_id);
