-- Schema version 16: a virtual key's offered models (a JSON array, ''
-- for every model), its own prices (a JSON object of model to price, ''
-- for none) and whether it may be used only by name (gateway.VirtualKey
-- Models, Prices and NamedOnly). A provider made from an integration
-- (virtual_keys.integration) keeps none of these: they come from its
-- integration.
ALTER TABLE virtual_keys ADD COLUMN models TEXT NOT NULL DEFAULT '';
ALTER TABLE virtual_keys ADD COLUMN prices TEXT NOT NULL DEFAULT '';
ALTER TABLE virtual_keys ADD COLUMN named_only BOOLEAN NOT NULL DEFAULT FALSE;
