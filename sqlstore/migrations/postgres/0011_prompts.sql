-- Schema version 11 for Postgres: prompts, partials, labels and collections
-- (prompt.Store).
--
-- One row per record of prompt_records, kind saying which; data is the
-- record as JSON (prompt.Record), slug unique per kind and workspace.
-- created_us and updated_us are Unix microseconds, updated_us moving with
-- every change, so that updates compare-and-swap on it. A prompt's or
-- partial's versions are rows of prompt_versions, never changed once
-- written, data a prompt.Version as JSON. Prompts are not part of the
-- snapshot: writes to them do not move the generation.
CREATE TABLE prompt_records (
	id           TEXT PRIMARY KEY,
	kind         TEXT NOT NULL,
	workspace_id TEXT NOT NULL DEFAULT '',
	slug         TEXT NOT NULL,
	data         TEXT NOT NULL,
	created_us   BIGINT NOT NULL,
	updated_us   BIGINT NOT NULL,
	UNIQUE (kind, workspace_id, slug)
);
CREATE TABLE prompt_versions (
	record_id TEXT NOT NULL,
	number    INTEGER NOT NULL,
	data      TEXT NOT NULL,
	PRIMARY KEY (record_id, number)
);
