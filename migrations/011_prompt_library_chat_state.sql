-- The prompt library is looked up by name (`@prompt:NAME`): names become unique, any earlier
-- duplicate renamed with its id. Chats can be archived (hidden, not deleted) and remember the
-- provider and model they were last sent with.

UPDATE prompts SET title = title || ' (' || id || ')'
 WHERE id NOT IN (SELECT MIN(id) FROM prompts GROUP BY title);
CREATE UNIQUE INDEX prompts_by_title ON prompts(title);

ALTER TABLE chats ADD COLUMN archived_at INTEGER;
ALTER TABLE chats ADD COLUMN provider_id INTEGER REFERENCES providers(id) ON DELETE SET NULL;
ALTER TABLE chats ADD COLUMN model TEXT;
