-- gateway.RequestLog.Ingress (the protocol the caller spoke:
-- chat_completions, completions, embeddings, messages, responses or
-- pass_through; '' when unknown), SkippedTargets and TrippedTargets (the
-- breaker keys of the targets passed over because their circuit breakers
-- were open, and of those whose breakers the request opened, in order, as
-- a JSON array of strings; '' for none).
ALTER TABLE request_logs ADD COLUMN ingress TEXT NOT NULL DEFAULT '';
ALTER TABLE request_logs ADD COLUMN skipped_targets TEXT NOT NULL DEFAULT '';
ALTER TABLE request_logs ADD COLUMN tripped_targets TEXT NOT NULL DEFAULT '';
