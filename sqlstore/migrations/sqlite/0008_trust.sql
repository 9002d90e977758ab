-- Schema version 8: the trust model of the trust model.
--
-- audit_logs.detail is what a write changed that its route does not say
-- (the old and new host of a credential, say); never a secret.
ALTER TABLE audit_logs ADD COLUMN detail TEXT NOT NULL DEFAULT '';

-- Who wrote the hosts of a virtual key or saved config (gateway.VirtualKey
-- and gateway.SavedConfig's Tenant): TRUE for a tenant, through the
-- control plane, whose base_url or custom_host is guarded like an
-- x-gateway-custom-host when used; FALSE for the operator (the -config
-- file, the host's own Go code), whose hosts are trusted as written.
-- Rows that exist when this runs were written before anyone told the two
-- apart, so they default to TRUE, the closed side: a tenant's host stored
-- by an older gateway is guarded from now on. The operator's entries get
-- their trust back when written again: examples/server applies its
-- -config file at every start (Store.Load writes them as FALSE), and a
-- host that stores virtual keys or configs from Go code (PutVirtualKey,
-- PutConfig) should write them once more, or list their hosts in
-- custom_hosts.allow (Options.CustomHostAllow). Every write of this
-- version names the value, so the default only serves these old rows.
ALTER TABLE virtual_keys ADD COLUMN tenant BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE configs ADD COLUMN tenant BOOLEAN NOT NULL DEFAULT TRUE;

-- gateway.VirtualKey.AllowedRoutes: a JSON array of "METHOD /path"
-- strings, or null for every route.
ALTER TABLE virtual_keys ADD COLUMN allowed_routes TEXT NOT NULL DEFAULT 'null';

-- console_sessions are the web console's signed-in sessions, kept here so
-- that replicas share them and a restart signs nobody out. id_digest is
-- the SHA-256 of the session id (the cookie's value, never stored);
-- api_key is the gateway API key the person signed in with, sealed under
-- the master key (AES-256-GCM, bound to this row), never in plaintext;
-- csrf is the session's form token; expires_us its end, in Unix
-- microseconds. Rows past their end are deleted as sessions are created.
CREATE TABLE console_sessions (
	id_digest  BLOB PRIMARY KEY CHECK (length(id_digest) = 32),
	api_key    BLOB NOT NULL,
	csrf       TEXT NOT NULL,
	expires_us BIGINT NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_us);
