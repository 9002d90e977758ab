-- Schema version 11: the default guardrails of API keys and workspaces
-- (gateway.APIKey and gateway.Workspace InputGuardrails and
-- OutputGuardrails): each a JSON array of guardrail ids, '' for none.
ALTER TABLE api_keys ADD COLUMN input_guardrails TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN output_guardrails TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN input_guardrails TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN output_guardrails TEXT NOT NULL DEFAULT '';
