-- Schema version 13: reserved for the catalogue's migration (integrations,
-- providers, models), written on another branch; this placeholder keeps
-- the versions without a gap until it lands, and is replaced by it.
SELECT 1;
