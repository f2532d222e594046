-- Agent mode: every step of a turn (plan, tool call, step done, correction, final answer),
-- configured MCP servers, and approval requests from external agents (the gateway).

CREATE TABLE agent_steps (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('plan', 'tool', 'step_done', 'correction', 'final')),
    tool         TEXT,
    call_id      TEXT,
    arguments    TEXT    CHECK (arguments IS NULL OR json_valid(arguments)),
    risk         TEXT    CHECK (risk IS NULL OR risk IN ('low', 'medium', 'high')),
    decision     TEXT    CHECK (decision IS NULL OR decision IN ('allowed', 'approved', 'rejected', 'denied', 'cancelled')),
    reason       TEXT,
    -- What the tool returned (as the model saw it), or the plan/note/message text.
    result       TEXT,
    exit_code    INTEGER,
    is_error     INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    duration_ms  INTEGER,
    created_at   INTEGER NOT NULL,
    UNIQUE (message_id, seq)
);

CREATE TABLE mcp_servers (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE CHECK (name <> '' AND name NOT LIKE '%/%'),
    transport   TEXT    NOT NULL CHECK (transport IN ('stdio', 'http')),
    command     TEXT,
    args        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(args)),
    env         TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(env)),
    url         TEXT,
    enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at  INTEGER NOT NULL,
    CHECK ((transport = 'stdio' AND command IS NOT NULL) OR (transport = 'http' AND url IS NOT NULL))
);

CREATE TABLE approval_requests (
    id           INTEGER PRIMARY KEY,
    kind         TEXT    NOT NULL CHECK (kind IN ('evaluation', 'code_response')),
    client       TEXT,
    fingerprint  TEXT    NOT NULL,
    payload      TEXT    NOT NULL CHECK (json_valid(payload)),
    risk         TEXT    CHECK (risk IS NULL OR risk IN ('low', 'medium', 'high')),
    decision     TEXT    CHECK (decision IS NULL OR decision IN ('approved', 'rejected')),
    decided_by   TEXT    CHECK (decided_by IS NULL OR decided_by IN ('user', 'auto', 'agent')),
    reason       TEXT,
    created_at   INTEGER NOT NULL,
    decided_at   INTEGER
);
CREATE INDEX approval_requests_pending ON approval_requests (decision) WHERE decision IS NULL;
