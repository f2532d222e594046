-- The protections a tool call's command ran under (JSON: which the kernel enforced, which it
-- could not), so the step card and `--json` can say it. NULL for calls that run no command.
ALTER TABLE agent_steps ADD COLUMN sandbox TEXT;
