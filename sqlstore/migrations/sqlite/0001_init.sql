-- Schema version 1 for SQLite: the records the gateway looks up on its
-- hot path (gateway API keys, virtual keys, saved configs, rate-limits
-- policies), the meta table (the master key's check value) and the
-- generation counter every write bumps in its transaction, which replicas
-- poll to know when to reload.
--
-- Later versions add, each in its own file: workspaces (workspace_id
-- columns are plain text until then, and get their foreign keys with the
-- table), config versions, usage-limits policies, the audit log and
-- request logs.
--
-- Secrets: api_keys holds the SHA-256 digest of each key, never the key.
-- The columns typed BLOB in virtual_keys and configs hold values sealed
-- with AES-256-GCM (nonce || ciphertext), bound to their row's id.

CREATE TABLE meta (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
);

CREATE TABLE generation (
	id    INTEGER PRIMARY KEY CHECK (id = 1),
	value BIGINT NOT NULL
);
INSERT INTO generation (id, value) VALUES (1, 0);

-- The fields of gateway.APIKey. A NULL time is the zero time. A key in
-- its rotation's transition is also found by previous_digest until
-- previous_valid_until.
CREATE TABLE api_keys (
	id                   TEXT PRIMARY KEY,
	digest               BLOB NOT NULL UNIQUE CHECK (length(digest) = 32),
	workspace_id         TEXT NOT NULL DEFAULT '',
	role                 TEXT NOT NULL DEFAULT '',
	disabled             BOOLEAN NOT NULL DEFAULT FALSE,
	metadata             TEXT NOT NULL DEFAULT 'null', -- JSON object, or null
	default_config       TEXT NOT NULL DEFAULT '',
	scopes               TEXT NOT NULL DEFAULT 'null', -- JSON array, or null
	expires_at           TIMESTAMP,
	type                 TEXT NOT NULL DEFAULT '',
	sub_type             TEXT NOT NULL DEFAULT '',
	user_id              TEXT NOT NULL DEFAULT '',
	name                 TEXT NOT NULL DEFAULT '',
	description          TEXT NOT NULL DEFAULT '',
	created_at           TIMESTAMP,
	updated_at           TIMESTAMP,
	rate_limits          TEXT, -- JSON as given, or NULL
	usage_limits         TEXT, -- JSON as given, or NULL
	previous_digest      BLOB CHECK (length(previous_digest) = 32),
	previous_valid_until TIMESTAMP
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id);
CREATE INDEX api_keys_previous_digest ON api_keys (previous_digest);

-- The fields of gateway.VirtualKey. A slug is unique within a workspace
-- ('' is no workspace). id is the row's own identity, a random UUID kept
-- when the entry is replaced: the additional data of its sealed columns.
CREATE TABLE virtual_keys (
	id                TEXT PRIMARY KEY,
	workspace_id      TEXT NOT NULL DEFAULT '',
	slug              TEXT NOT NULL,
	provider          TEXT NOT NULL,
	base_url          TEXT NOT NULL DEFAULT '',
	resource_name     TEXT NOT NULL DEFAULT '',
	deployment_id     TEXT NOT NULL DEFAULT '',
	api_version       TEXT NOT NULL DEFAULT '',
	model_name        TEXT NOT NULL DEFAULT '',
	project_id        TEXT NOT NULL DEFAULT '',
	region            TEXT NOT NULL DEFAULT '',
	access_key_id     TEXT NOT NULL DEFAULT '',
	api_key           BLOB, -- sealed; NULL when empty
	secret_access_key BLOB, -- sealed; NULL when empty
	session_token     BLOB, -- sealed; NULL when empty
	name              TEXT NOT NULL DEFAULT '',
	note              TEXT NOT NULL DEFAULT '',
	created_at        TIMESTAMP,
	updated_at        TIMESTAMP,
	UNIQUE (workspace_id, slug)
);

-- The fields of gateway.SavedConfig, its current version: slug is its ID
-- (what x-gateway-config names), unique within a workspace; id is the
-- row's own, as in virtual_keys. Earlier versions get a table of their
-- own in a later schema version.
CREATE TABLE configs (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL DEFAULT '',
	slug         TEXT NOT NULL,
	config       BLOB NOT NULL, -- the whole config JSON, sealed
	name         TEXT NOT NULL DEFAULT '',
	version      INTEGER NOT NULL DEFAULT 1,
	version_id   TEXT NOT NULL DEFAULT '',
	created_at   TIMESTAMP,
	updated_at   TIMESTAMP,
	UNIQUE (workspace_id, slug)
);

-- The fields of gateway.RateLimitsPolicy; ids are UUIDs in lower case.
-- created_at and last_updated_at are the policy's own RFC 3339 strings.
CREATE TABLE rate_limits_policies (
	id              TEXT PRIMARY KEY,
	name            TEXT NOT NULL DEFAULT '',
	conditions      TEXT NOT NULL DEFAULT 'null', -- JSON array, or null
	group_by        TEXT NOT NULL DEFAULT 'null', -- JSON array, or null
	type            TEXT NOT NULL,
	unit            TEXT NOT NULL,
	value           REAL NOT NULL,
	status          TEXT NOT NULL,
	workspace_id    TEXT NOT NULL DEFAULT '',
	organisation_id TEXT NOT NULL DEFAULT '',
	created_at      TEXT NOT NULL DEFAULT '',
	last_updated_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX rate_limits_policies_workspace ON rate_limits_policies (workspace_id);
