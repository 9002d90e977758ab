-- Schema version 8: the trust model of DESIGN §14.
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
