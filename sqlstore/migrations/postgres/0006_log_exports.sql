-- Schema version 6 for Postgres: log exports (gateway.LogExportStore).
--
-- One row per export of /logs/exports. filters is the checked filters
-- object as the caller gave it, fields the requested_data array;
-- created_us and updated_us are Unix microseconds, updated_us moving
-- with every change, so that updates compare-and-swap on (status,
-- updated_us). content is what a successful job wrote: gzip-compressed
-- JSON Lines, NULL until then. Exports are not part of the snapshot:
-- writes to them do not move the generation.
CREATE TABLE log_exports (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL DEFAULT '',
	created_by   TEXT NOT NULL DEFAULT '',
	filters      TEXT NOT NULL DEFAULT '{}',
	fields       TEXT NOT NULL DEFAULT '[]',
	status       TEXT NOT NULL,
	description  TEXT NOT NULL DEFAULT '',
	total        BIGINT NOT NULL DEFAULT 0,
	created_us   BIGINT NOT NULL,
	updated_us   BIGINT NOT NULL,
	content      BYTEA
);
CREATE INDEX log_exports_workspace ON log_exports (workspace_id, created_us);
