-- Schema version 5: usage-limits policies (budgets) and the usage
-- counters of their entities.
--
-- usage_limits_policies holds the fields of gateway.UsageLimitsPolicy;
-- every write bumps the generation (kind 'usage_limits_policy' in
-- changes), so that replicas read the policies again within a poll.
--
-- usage_limits_usage holds one counter per entity (policy_id, value_key),
-- of a policy or of an API key's or workspace's usage_limits, written by
-- every data-plane request that a budget applies to, in single atomic
-- statements shared by every replica: the usage recorded in period, the
-- estimates of the requests in flight (reserved), the count of resets
-- (epoch) and whether the alerts were sent. A counter of an earlier
-- period is rolled over by the first statement that names the new one.

CREATE TABLE usage_limits_policies (
	id                  TEXT PRIMARY KEY,
	name                TEXT NOT NULL DEFAULT '',
	conditions          TEXT NOT NULL DEFAULT 'null', -- JSON array, or null
	group_by            TEXT NOT NULL DEFAULT 'null', -- JSON array, or null
	type                TEXT NOT NULL,
	credit_limit        REAL NOT NULL,
	alert_threshold     REAL, -- NULL: none
	periodic_reset      TEXT NOT NULL DEFAULT '',
	periodic_reset_days INTEGER NOT NULL DEFAULT 0,
	last_reset_at       TEXT NOT NULL DEFAULT '',
	status              TEXT NOT NULL,
	workspace_id        TEXT NOT NULL DEFAULT '',
	organisation_id     TEXT NOT NULL DEFAULT '',
	created_at          TEXT NOT NULL DEFAULT '',
	last_updated_at     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX usage_limits_policies_workspace ON usage_limits_policies (workspace_id);

CREATE TABLE usage_limits_usage (
	policy_id         TEXT NOT NULL,
	value_key         TEXT NOT NULL,
	period            TEXT NOT NULL DEFAULT '',
	used              REAL NOT NULL DEFAULT 0,
	reserved          REAL NOT NULL DEFAULT 0,
	epoch             INTEGER NOT NULL DEFAULT 0,
	threshold_alerted BOOLEAN NOT NULL DEFAULT FALSE,
	exhausted_alerted BOOLEAN NOT NULL DEFAULT FALSE,
	PRIMARY KEY (policy_id, value_key)
);
