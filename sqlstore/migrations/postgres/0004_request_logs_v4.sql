-- Schema version 4 for Postgres: request logs made cheap to write.
--
-- Version 3 wrote one more row, and three index entries, per metadata
-- pair (log_metadata). Now metadata is the jsonb object alone, filtered
-- with @>; request_logs keeps its primary key on id and three indexes:
-- (time_us, id) to page every workspace and for retention,
-- (workspace_id, time_us, id) to page one, trace_id to find a trace.
-- Bodies, kept only when the operator opts in (gateway Options.LogBodies),
-- are rows of request_log_bodies, out of the way of the scans of
-- request_logs. No record is lost.
DROP TABLE log_metadata;
ALTER TABLE request_logs ALTER COLUMN metadata DROP DEFAULT;
ALTER TABLE request_logs ALTER COLUMN metadata TYPE JSONB USING metadata::jsonb;
ALTER TABLE request_logs ALTER COLUMN metadata SET DEFAULT '{}';

CREATE TABLE request_log_bodies (
	log_id             TEXT PRIMARY KEY REFERENCES request_logs (id) ON DELETE CASCADE,
	request            BYTEA,
	request_truncated  BOOLEAN NOT NULL DEFAULT FALSE,
	response           BYTEA,
	response_truncated BOOLEAN NOT NULL DEFAULT FALSE
);
