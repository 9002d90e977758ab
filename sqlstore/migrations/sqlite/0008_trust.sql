-- Schema version 8: the trust model of DESIGN §14.
--
-- audit_logs.detail is what a write changed that its route does not say
-- (the old and new host of a credential, say); never a secret.
ALTER TABLE audit_logs ADD COLUMN detail TEXT NOT NULL DEFAULT '';
