-- Schema version 10: guardrails (package guardrail's Record).
--
-- checks is the JSON array of the guardrail's checks ({id, parameters}),
-- actions its JSON actions object as the reference API writes it;
-- stream_mode is observe or buffer, on_error deny or allow. slug is
-- guard_ and 16 random letters and digits, unique across workspaces, so
-- that a config names a guardrail by it alone. workspace_id is '' for an
-- organisation's guardrail. Times are Unix microseconds.
CREATE TABLE guardrails (
	id           TEXT PRIMARY KEY,
	slug         TEXT NOT NULL UNIQUE,
	workspace_id TEXT NOT NULL DEFAULT '',
	name         TEXT NOT NULL,
	checks       TEXT NOT NULL,
	actions      TEXT NOT NULL,
	stream_mode  TEXT NOT NULL,
	on_error     TEXT NOT NULL,
	version_id   TEXT NOT NULL,
	owner_id     TEXT NOT NULL DEFAULT '',
	updated_by   TEXT NOT NULL DEFAULT '',
	created_us   BIGINT NOT NULL,
	updated_us   BIGINT NOT NULL
);
CREATE INDEX guardrails_workspace ON guardrails (workspace_id);

-- gateway.RequestLog.Guardrails (passed, failed or denied; '' when no
-- guardrail ran) and HookResults (the hook_results JSON object the caller
-- got; '' for none).
ALTER TABLE request_logs ADD COLUMN guardrails TEXT NOT NULL DEFAULT '';
ALTER TABLE request_logs ADD COLUMN hook_results TEXT NOT NULL DEFAULT '';
