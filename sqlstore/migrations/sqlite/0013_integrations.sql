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
-- A virtual key's offered models (a JSON array, '' for every model), its
-- own prices (a JSON object of model to price, '' for none) and whether
-- it may be used only by name (gateway.VirtualKey Models, Prices and
-- NamedOnly): a provider's come from its integration, not from these.
ALTER TABLE virtual_keys ADD COLUMN models TEXT NOT NULL DEFAULT '';
ALTER TABLE virtual_keys ADD COLUMN prices TEXT NOT NULL DEFAULT '';
ALTER TABLE virtual_keys ADD COLUMN named_only BOOLEAN NOT NULL DEFAULT FALSE;
