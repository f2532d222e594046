-- The undo a process is landing for an approved proposal: its commit, made before the files
-- are written and HEAD moves. A process killed in between leaves it set; the next start
-- settles it from git (in HEAD's history: the message is marked reverted by it; else the
-- mark is cleared), so a message's undo state always matches the repository.
ALTER TABLE messages ADD COLUMN undoing TEXT;
