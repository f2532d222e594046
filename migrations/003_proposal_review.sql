-- What a proposal was planned against, and which approved change an undo reverted.

-- JSON object: path -> git blob hash of the file when the proposal was planned (null = absent).
-- Approving re-checks these so a file changed on disk since is a conflict, never overwritten.
ALTER TABLE messages ADD COLUMN plan_base TEXT CHECK (plan_base IS NULL OR json_valid(plan_base));
-- The commit that undid this message's approved change.
ALTER TABLE messages ADD COLUMN reverted_by TEXT;
