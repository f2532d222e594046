-- What the person approved of a proposal when it was not everything, or why they rejected it
-- (JSON: hunks applied of the total, what was left out file by file, the reason given), so
-- the chat card, the commit and the next turn's request can say so.
ALTER TABLE messages ADD COLUMN approval_note TEXT
    CHECK (approval_note IS NULL OR json_valid(approval_note));
