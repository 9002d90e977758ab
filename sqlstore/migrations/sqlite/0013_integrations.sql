-- Schema version 13: the organisation's integrations (catalog.Store) and
-- the providers made from them.
--
-- One row of integrations per integration, slug unique: data is the
-- integration without its secrets as JSON (name, provider, host settings,
-- models, grants), secrets its key, secret_access_key and session_token
-- as JSON, sealed under the master key with the row's id. created_us and
-- updated_us are Unix microseconds, updated_us moving with every change,
-- so that updates compare-and-swap on it. A write records a change of
-- kind integration, and the snapshot reads every virtual key again, since
-- the providers of an integration (virtual_keys.integration, '' for a key
-- of its own) are found joined with it.
CREATE TABLE integrations (
	id         TEXT PRIMARY KEY,
	slug       TEXT NOT NULL UNIQUE,
	data       TEXT NOT NULL,
	secrets    BLOB,
	created_us BIGINT NOT NULL,
	updated_us BIGINT NOT NULL
);
ALTER TABLE virtual_keys ADD COLUMN integration TEXT NOT NULL DEFAULT '';
