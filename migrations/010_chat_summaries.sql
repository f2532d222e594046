-- Long chats are compacted, not cut: older turns are summarised by the chat's own model and
-- the summary is sent in their place. Each summary covers the chat's messages up to
-- `up_to_message_id` (0: none of its own, as in a chat started from another's summary).
CREATE TABLE chat_summaries (
    id                INTEGER PRIMARY KEY,
    chat_id           INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    up_to_message_id  INTEGER NOT NULL,
    -- Turns it stands for (those of earlier summaries included).
    turns             INTEGER NOT NULL CHECK (turns >= 0),
    content           TEXT    NOT NULL,
    model             TEXT,
    -- Set when the summary came from another chat ("Summarize into a new chat").
    source_chat_id    INTEGER,
    created_at        INTEGER NOT NULL
);
CREATE INDEX chat_summaries_by_chat ON chat_summaries (chat_id, id);
