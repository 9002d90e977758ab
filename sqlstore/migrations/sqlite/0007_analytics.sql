-- Schema version 7 for SQLite: feedback, and hourly rollups of the
-- request logs for the analytics routes.
--
-- feedback (gateway.FeedbackStore) is joined to request logs by workspace
-- and trace: score is the feedback's value (−10 to 10), weight 0 to 1,
-- metadata the caller's JSON object (NULL for none), times Unix
-- microseconds.
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

-- log_hours and log_metadata_hours sum the request logs of each
-- workspace and hour, by status, provider and model (log_hours) or by
-- metadata pair (log_metadata_hours), kept as records are added (by
-- AddLogs) and deleted (by trigger): a graph of a month over a million records reads
-- 720 rows instead of a million (SQLite scans a million index entries in
-- about half a second, and parses a million metadata objects in about
-- five). AggregateLogs reads them for the whole hours of queries that
-- filter by workspace and time (and status and model, for log_hours)
-- alone, and the records themselves for the rest.
-- last_us is the newest record's time; a row whose records are all
-- deleted is deleted.
CREATE TABLE log_hours (
	workspace_id          TEXT NOT NULL,
	hour_us               BIGINT NOT NULL,
	status                INTEGER NOT NULL,
	provider              TEXT NOT NULL,
	model                 TEXT NOT NULL,
	requests              BIGINT NOT NULL,
	errors                BIGINT NOT NULL,
	rescued_retry         BIGINT NOT NULL,
	rescued_fallback      BIGINT NOT NULL,
	cache_hits            BIGINT NOT NULL,
	cache_misses          BIGINT NOT NULL,
	cache_hit_latency_us  BIGINT NOT NULL,
	cache_miss_latency_us BIGINT NOT NULL,
	prompt_tokens         BIGINT NOT NULL,
	completion_tokens     BIGINT NOT NULL,
	total_tokens          BIGINT NOT NULL,
	cost                  DOUBLE PRECISION NOT NULL,
	latency_us            BIGINT NOT NULL,
	last_us               BIGINT NOT NULL,
	PRIMARY KEY (workspace_id, hour_us, status, provider, model)
) WITHOUT ROWID;

CREATE TABLE log_metadata_hours (
	workspace_id      TEXT NOT NULL,
	key               TEXT NOT NULL,
	hour_us           BIGINT NOT NULL,
	value             TEXT NOT NULL,
	requests          BIGINT NOT NULL,
	prompt_tokens     BIGINT NOT NULL,
	completion_tokens BIGINT NOT NULL,
	total_tokens      BIGINT NOT NULL,
	cost              DOUBLE PRECISION NOT NULL,
	last_us           BIGINT NOT NULL,
	PRIMARY KEY (workspace_id, key, hour_us, value)
) WITHOUT ROWID;

INSERT INTO log_hours
SELECT workspace_id, time_us / 3600000000 * 3600000000, status, provider, model, COUNT(*), SUM(status >= 400), SUM(rescued AND fallback_index <= 0),
	SUM(rescued AND fallback_index > 0), SUM(cache_status = 'HIT'), SUM(cache_status IN ('MISS', 'REFRESH')),
	SUM(CASE WHEN cache_status = 'HIT' THEN latency_us ELSE 0 END),
	SUM(CASE WHEN cache_status IN ('MISS', 'REFRESH') THEN latency_us ELSE 0 END),
	SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), SUM(cost), SUM(latency_us), MAX(time_us)
FROM request_logs GROUP BY 1, 2, 3, 4, 5;

INSERT INTO log_metadata_hours
SELECT l.workspace_id, j.key, l.time_us / 3600000000 * 3600000000, j.value, COUNT(*), SUM(l.prompt_tokens),
	SUM(l.completion_tokens), SUM(l.total_tokens), SUM(l.cost), MAX(l.time_us)
FROM request_logs l, json_each(l.metadata) j WHERE j.type = 'text' GROUP BY 1, 2, 3, 4;

-- log_latency_hours holds, for each row of log_hours of a closed hour,
-- the latencies of its records: sorted, as a version byte, the count and
-- the differences between neighbours in varints (latencies, about 2
-- bytes a record). Percentiles are not sums, so log_hours cannot give
-- them; these give the exact percentiles of a month of whole hours by
-- reading a few megabytes instead of a million records. The store writes
-- them in the background, an hour after the hour ends (DigestLatencies),
-- never in AddLogs. A row is current while its requests and latency_us
-- (the sum) equal its log_hours row's; a record added to or deleted from
-- the hour since makes it stale, and the hour is read from the records
-- until it is written again. A rowid table, as its rows are large.
CREATE TABLE log_latency_hours (
	workspace_id TEXT NOT NULL,
	hour_us      BIGINT NOT NULL,
	status       INTEGER NOT NULL,
	provider     TEXT NOT NULL,
	model        TEXT NOT NULL,
	requests     BIGINT NOT NULL,
	latency_us   BIGINT NOT NULL,
	latencies    BLOB NOT NULL,
	PRIMARY KEY (workspace_id, hour_us, status, provider, model)
);

-- Daily rollups: log_days, log_metadata_days and log_latency_days hold
-- the sums (and digests) of the hourly rows of each day, as the tables of
-- the same shape above do for hours (hour_us is the day's start), so
-- that a month's graph reads 30 rows a group instead of 720. The store
-- writes a day's rows, from the hourly ones, with the day's row in
-- log_days_done, in one transaction, once the day ended and its hours
-- have their digests (CompactLogs, in the background). A day's rows are
-- read only while that row stands: AddLogs deletes it when it adds a
-- record to the day after the day ended, and retention when it deletes
-- records of it.
CREATE TABLE log_days (
	workspace_id          TEXT NOT NULL,
	hour_us               BIGINT NOT NULL,
	status                INTEGER NOT NULL,
	provider              TEXT NOT NULL,
	model                 TEXT NOT NULL,
	requests              BIGINT NOT NULL,
	errors                BIGINT NOT NULL,
	rescued_retry         BIGINT NOT NULL,
	rescued_fallback      BIGINT NOT NULL,
	cache_hits            BIGINT NOT NULL,
	cache_misses          BIGINT NOT NULL,
	cache_hit_latency_us  BIGINT NOT NULL,
	cache_miss_latency_us BIGINT NOT NULL,
	prompt_tokens         BIGINT NOT NULL,
	completion_tokens     BIGINT NOT NULL,
	total_tokens          BIGINT NOT NULL,
	cost                  DOUBLE PRECISION NOT NULL,
	latency_us            BIGINT NOT NULL,
	last_us               BIGINT NOT NULL,
	PRIMARY KEY (workspace_id, hour_us, status, provider, model)
) WITHOUT ROWID;

CREATE TABLE log_metadata_days (
	workspace_id      TEXT NOT NULL,
	key               TEXT NOT NULL,
	hour_us           BIGINT NOT NULL,
	value             TEXT NOT NULL,
	requests          BIGINT NOT NULL,
	prompt_tokens     BIGINT NOT NULL,
	completion_tokens BIGINT NOT NULL,
	total_tokens      BIGINT NOT NULL,
	cost              DOUBLE PRECISION NOT NULL,
	last_us           BIGINT NOT NULL,
	PRIMARY KEY (workspace_id, key, hour_us, value)
) WITHOUT ROWID;

CREATE TABLE log_latency_days (
	workspace_id TEXT NOT NULL,
	hour_us      BIGINT NOT NULL,
	status       INTEGER NOT NULL,
	provider     TEXT NOT NULL,
	model        TEXT NOT NULL,
	requests     BIGINT NOT NULL,
	latency_us   BIGINT NOT NULL,
	latencies    BLOB NOT NULL,
	PRIMARY KEY (workspace_id, hour_us, status, provider, model)
);

CREATE TABLE log_days_done (
	day_us BIGINT PRIMARY KEY
) WITHOUT ROWID;

-- AddLogs adds each batch of records to the rollups (one upsert row per
-- group of the batch, computed in Go: a trigger per record cost as much
-- as storing the record); deleting records takes them out here.
CREATE TRIGGER request_logs_hours_delete AFTER DELETE ON request_logs BEGIN
	UPDATE log_hours SET requests = requests - 1, errors = errors - (OLD.status >= 400),
		rescued_retry = rescued_retry - (OLD.rescued AND OLD.fallback_index <= 0),
		rescued_fallback = rescued_fallback - (OLD.rescued AND OLD.fallback_index > 0),
		cache_hits = cache_hits - (OLD.cache_status = 'HIT'), cache_misses = cache_misses - (OLD.cache_status IN ('MISS', 'REFRESH')),
		cache_hit_latency_us = cache_hit_latency_us - CASE WHEN OLD.cache_status = 'HIT' THEN OLD.latency_us ELSE 0 END,
		cache_miss_latency_us = cache_miss_latency_us - CASE WHEN OLD.cache_status IN ('MISS', 'REFRESH') THEN OLD.latency_us ELSE 0 END,
		prompt_tokens = prompt_tokens - OLD.prompt_tokens, completion_tokens = completion_tokens - OLD.completion_tokens,
		total_tokens = total_tokens - OLD.total_tokens, cost = cost - OLD.cost, latency_us = latency_us - OLD.latency_us
	WHERE workspace_id = OLD.workspace_id AND hour_us = OLD.time_us / 3600000000 * 3600000000 AND status = OLD.status
		AND provider = OLD.provider AND model = OLD.model;
	DELETE FROM log_hours WHERE workspace_id = OLD.workspace_id AND hour_us = OLD.time_us / 3600000000 * 3600000000
		AND status = OLD.status AND provider = OLD.provider AND model = OLD.model AND requests <= 0;
	UPDATE log_metadata_hours SET requests = requests - 1, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
		completion_tokens = completion_tokens - OLD.completion_tokens, total_tokens = total_tokens - OLD.total_tokens,
		cost = cost - OLD.cost
	WHERE workspace_id = OLD.workspace_id AND hour_us = OLD.time_us / 3600000000 * 3600000000
		AND (key, value) IN (SELECT key, value FROM json_each(OLD.metadata) WHERE type = 'text');
	DELETE FROM log_metadata_hours WHERE workspace_id = OLD.workspace_id AND hour_us = OLD.time_us / 3600000000 * 3600000000
		AND requests <= 0;
END;

-- log_days_todo names the days CompactLogs has work on (digests to write,
-- daily rollups to sum): AddLogs adds the days of the records it stores,
-- retention the day it cuts into, and CompactLogs takes a day off once
-- it is done; so a pass reads the rollup rows of those days only, by
-- log_hours_hour. The days of the records above are all to do.
CREATE TABLE log_days_todo (
	day_us BIGINT PRIMARY KEY
) WITHOUT ROWID;
INSERT INTO log_days_todo SELECT DISTINCT hour_us / 86400000000 * 86400000000 FROM log_hours WHERE hour_us >= 0;
CREATE INDEX log_hours_hour ON log_hours (hour_us);
