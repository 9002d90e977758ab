-- Schema version 14 for SQLite: people (users.Store).
--
-- users are people's accounts: email unique and in lower case, role
-- owner, admin or member, password_hash the PHC string the console wrote
-- (argon2id; empty for a person who signs in through OIDC only), never
-- answered by a route. workspace_members are their memberships, one role
-- per user and workspace. user_invites are invitations: token_digest is
-- the SHA-256 of the token of the invite link (the token is never
-- stored), workspaces the JSON list of the grants it makes, accepted_us
-- 0 while pending. user_session_keys are the keys of people's console
-- sessions, by the SHA-256 of the key (never stored), deleted at
-- sign-out or once expired. Times are Unix microseconds. None of these
-- is part of the snapshot: every read goes to the database, so a change
-- is seen at once by every replica.
CREATE TABLE users (
	id            TEXT PRIMARY KEY,
	email         TEXT NOT NULL UNIQUE,
	first_name    TEXT NOT NULL,
	last_name     TEXT NOT NULL,
	role          TEXT NOT NULL,
	password_hash TEXT NOT NULL,
	created_us    BIGINT NOT NULL,
	updated_us    BIGINT NOT NULL
);
CREATE TABLE workspace_members (
	workspace_id TEXT NOT NULL,
	user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	role         TEXT NOT NULL,
	created_us   BIGINT NOT NULL,
	updated_us   BIGINT NOT NULL,
	PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);
CREATE TABLE user_invites (
	id           TEXT PRIMARY KEY,
	token_digest BLOB NOT NULL UNIQUE CHECK (length(token_digest) = 32),
	email        TEXT NOT NULL,
	role         TEXT NOT NULL,
	workspaces   TEXT NOT NULL,
	invited_by   TEXT NOT NULL,
	created_us   BIGINT NOT NULL,
	expires_us   BIGINT NOT NULL,
	accepted_us  BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE user_session_keys (
	key_digest   BLOB PRIMARY KEY CHECK (length(key_digest) = 32),
	user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	workspace_id TEXT NOT NULL,
	expires_us   BIGINT NOT NULL
);
CREATE INDEX user_session_keys_expires ON user_session_keys (expires_us);
