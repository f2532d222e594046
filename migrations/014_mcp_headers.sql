-- MCP servers over HTTP get headers sent with every request (`Authorization: Bearer …`), and a
-- third transport, 'sse': the legacy HTTP+SSE transport (GET an event stream, POST to the
-- endpoint it names). The table is rebuilt to widen its CHECKs (migrations run with foreign
-- keys off; the ids are kept).
CREATE TABLE mcp_servers_new (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE CHECK (name <> '' AND name NOT LIKE '%/%'),
    transport   TEXT    NOT NULL CHECK (transport IN ('stdio', 'http', 'sse')),
    command     TEXT,
    args        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(args)),
    env         TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(env)),
    url         TEXT,
    headers     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
    enabled     INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at  INTEGER NOT NULL,
    CHECK ((transport = 'stdio' AND command IS NOT NULL)
        OR (transport IN ('http', 'sse') AND url IS NOT NULL))
);
INSERT INTO mcp_servers_new (id, name, transport, command, args, env, url, enabled, created_at)
    SELECT id, name, transport, command, args, env, url, enabled, created_at FROM mcp_servers;
DROP TABLE mcp_servers;
ALTER TABLE mcp_servers_new RENAME TO mcp_servers;
