-- The text of a reply while it streams, appended in parts. Rewriting the whole content at every
-- flush would write O(n²) bytes over a long reply; parts keep it O(n). The parts are joined into
-- messages.content when the reply ends, or at start-up for a reply a dead process left streaming.
CREATE TABLE message_parts (
    message_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    text        TEXT    NOT NULL,
    PRIMARY KEY (message_id, seq)
) WITHOUT ROWID;
