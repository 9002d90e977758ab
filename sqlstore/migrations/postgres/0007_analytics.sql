-- Schema version 7 for Postgres: feedback (gateway.FeedbackStore),
-- which the analytics routes join to request logs by workspace and
-- trace. score is the feedback's value (−10 to 10), weight 0 to 1,
-- metadata the caller's JSON object (NULL for none), times Unix
-- microseconds. (SQLite's version also adds hourly rollups of the
-- request logs; on Postgres, AggregateLogs reads the records.)
CREATE TABLE feedback (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL DEFAULT '',
	trace_id     TEXT NOT NULL,
	score        INTEGER NOT NULL,
	weight       DOUBLE PRECISION NOT NULL,
	metadata     TEXT,
	created_us   BIGINT NOT NULL,
	updated_us   BIGINT NOT NULL
);
CREATE INDEX feedback_trace ON feedback (workspace_id, trace_id);
