-- The prompt library is looked up by name (`@prompt:NAME`): names become unique, any earlier
-- duplicate renamed with its id. Chats can be archived (hidden, not deleted) and remember the
-- provider and model they were last sent with.

UPDATE prompts SET title = title || ' (' || id || ')'
 WHERE id NOT IN (SELECT MIN(id) FROM prompts GROUP BY title);
CREATE UNIQUE INDEX prompts_by_title ON prompts(title);

ALTER TABLE chats ADD COLUMN archived_at INTEGER;
ALTER TABLE chats ADD COLUMN provider_id INTEGER REFERENCES providers(id) ON DELETE SET NULL;
ALTER TABLE chats ADD COLUMN model TEXT;

-- Usage is reported per project: each event names its project (kept when the message goes).
ALTER TABLE usage_events ADD COLUMN project_id INTEGER REFERENCES projects(id) ON DELETE SET NULL;
UPDATE usage_events SET project_id = (
    SELECT c.project_id FROM messages m JOIN chats c ON c.id = m.chat_id
     WHERE m.id = usage_events.message_id);
CREATE INDEX usage_by_project ON usage_events(project_id, created_at);
