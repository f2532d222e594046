-- New kinds of step: 'trimmed' (an agent turn's earlier tool results were shortened to keep
-- the next request inside the model's context window; the result says what went), 'repair'
-- (a reply's edits failed and the errors went back to the model; the result is the failed
-- reply, the arguments the round and the errors) and 'check' (the project's check ran on the
-- proposal in a scratch copy; the result is its output, the arguments its problems).
-- SQLite cannot change a CHECK constraint in place, so the table is rebuilt with its rows.

CREATE TABLE agent_steps_new (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('plan', 'tool', 'step_done', 'correction', 'final', 'trimmed', 'repair', 'check')),
    tool         TEXT,
    call_id      TEXT,
    arguments    TEXT    CHECK (arguments IS NULL OR json_valid(arguments)),
    risk         TEXT    CHECK (risk IS NULL OR risk IN ('low', 'medium', 'high')),
    decision     TEXT    CHECK (decision IS NULL OR decision IN ('allowed', 'approved', 'rejected', 'denied', 'cancelled')),
    reason       TEXT,
    result       TEXT,
    exit_code    INTEGER,
    is_error     INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    duration_ms  INTEGER,
    created_at   INTEGER NOT NULL,
    sandbox      TEXT,
    UNIQUE (message_id, seq)
);

INSERT INTO agent_steps_new
    (id, message_id, seq, kind, tool, call_id, arguments, risk, decision, reason, result,
     exit_code, is_error, duration_ms, created_at, sandbox)
SELECT id, message_id, seq, kind, tool, call_id, arguments, risk, decision, reason, result,
       exit_code, is_error, duration_ms, created_at, sandbox
FROM agent_steps;

DROP TABLE agent_steps;
ALTER TABLE agent_steps_new RENAME TO agent_steps;
