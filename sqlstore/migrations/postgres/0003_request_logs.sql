-- Schema version 3 for Postgres: request logs (gateway.LogStore).
--
-- One row per request, every field of gateway.RequestLog; time_us is
-- Unix microseconds (integer ranges and buckets are cheap), latency_us
-- and ttfb_us microseconds, cost USD. Metadata is kept as the JSON object
-- and, for filtering and grouping, one row per pair in log_metadata.
CREATE TABLE request_logs (
	id                   TEXT PRIMARY KEY,
	time_us              BIGINT NOT NULL,
	trace_id             TEXT NOT NULL DEFAULT '',
	workspace_id         TEXT NOT NULL DEFAULT '',
	key_id               TEXT NOT NULL DEFAULT '',
	virtual_key          TEXT NOT NULL DEFAULT '',
	config_id            TEXT NOT NULL DEFAULT '',
	provider             TEXT NOT NULL DEFAULT '',
	model                TEXT NOT NULL DEFAULT '',
	method               TEXT NOT NULL DEFAULT '',
	path                 TEXT NOT NULL DEFAULT '',
	query                TEXT NOT NULL DEFAULT '',
	status               INTEGER NOT NULL DEFAULT 0,
	latency_us           BIGINT NOT NULL DEFAULT 0,
	ttfb_us              BIGINT NOT NULL DEFAULT 0,
	bytes_in             BIGINT NOT NULL DEFAULT 0,
	bytes_out            BIGINT NOT NULL DEFAULT 0,
	prompt_tokens        BIGINT NOT NULL DEFAULT 0,
	completion_tokens    BIGINT NOT NULL DEFAULT 0,
	total_tokens         BIGINT NOT NULL DEFAULT 0,
	cached_prompt_tokens BIGINT NOT NULL DEFAULT 0,
	cost                 DOUBLE PRECISION NOT NULL DEFAULT 0,
	cost_unknown         BOOLEAN NOT NULL DEFAULT FALSE,
	cache_status         TEXT NOT NULL DEFAULT '',
	attempts             INTEGER NOT NULL DEFAULT 0,
	fallback_index       INTEGER NOT NULL DEFAULT 0,
	rescued              BOOLEAN NOT NULL DEFAULT FALSE,
	error_code           TEXT NOT NULL DEFAULT '',
	aborted              BOOLEAN NOT NULL DEFAULT FALSE,
	metadata             TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX request_logs_time ON request_logs (time_us, id);
CREATE INDEX request_logs_workspace_time ON request_logs (workspace_id, time_us, id);
CREATE INDEX request_logs_trace ON request_logs (trace_id);

CREATE TABLE log_metadata (
	log_id TEXT NOT NULL REFERENCES request_logs (id) ON DELETE CASCADE,
	key    TEXT NOT NULL,
	value  TEXT NOT NULL,
	PRIMARY KEY (log_id, key)
);
CREATE INDEX log_metadata_pair ON log_metadata (key, value, log_id);
