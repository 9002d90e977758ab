-- Schema version 8: the trust model of DESIGN §14.
--
-- audit_logs.detail is what a write changed that its route does not say
-- (the old and new host of a credential, say); never a secret.
ALTER TABLE audit_logs ADD COLUMN detail TEXT NOT NULL DEFAULT '';

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
