-- Schema version 2 for Postgres: the change log replicas catch up from,
-- workspaces, earlier config versions and the audit log.

-- One row per record a write changed, under the generation the write set:
-- a replica behind applies the changes after its generation instead of
-- reading every table. kind is api_key (ref: its id), virtual_key or
-- config (ref: the slug, every workspace's entry of which is read again)
-- or policy (every policy is read again). Rows far behind the current
-- generation are pruned; a replica further behind reads everything.
CREATE TABLE changes (
	gen  BIGINT NOT NULL,
	kind TEXT NOT NULL,
	ref  TEXT NOT NULL
);
CREATE INDEX changes_gen ON changes (gen);

-- The fields of gateway.Workspace.
CREATE TABLE workspaces (
	id           TEXT PRIMARY KEY,
	name         TEXT NOT NULL DEFAULT '',
	description  TEXT NOT NULL DEFAULT '',
	metadata     TEXT NOT NULL DEFAULT 'null', -- JSON object, or null
	rate_limits  TEXT, -- JSON as given, or NULL
	usage_limits TEXT, -- JSON as given, or NULL
	created_at   TIMESTAMPTZ,
	updated_at   TIMESTAMPTZ
);

-- The versions of each config before its current one (which is its row
-- in configs), sealed as configs.config is, bound to config_id and
-- version.
CREATE TABLE config_versions (
	config_id  TEXT NOT NULL REFERENCES configs (id) ON DELETE CASCADE,
	version    INTEGER NOT NULL,
	version_id TEXT NOT NULL DEFAULT '',
	config     BYTEA NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ,
	updated_at TIMESTAMPTZ,
	PRIMARY KEY (config_id, version)
);

-- The fields of gateway.AuditRecord; never a secret.
CREATE TABLE audit_logs (
	id            BIGSERIAL PRIMARY KEY,
	time          TIMESTAMPTZ NOT NULL,
	request_id    TEXT NOT NULL DEFAULT '',
	key_id        TEXT NOT NULL DEFAULT '',
	workspace_id  TEXT NOT NULL DEFAULT '',
	method        TEXT NOT NULL DEFAULT '',
	uri           TEXT NOT NULL DEFAULT '',
	action        TEXT NOT NULL DEFAULT '',
	resource_type TEXT NOT NULL DEFAULT '',
	resource_id   TEXT NOT NULL DEFAULT '',
	status        INTEGER NOT NULL DEFAULT 0,
	client_ip     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_logs_time ON audit_logs (time);
CREATE INDEX audit_logs_workspace_time ON audit_logs (workspace_id, time);
