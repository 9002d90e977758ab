// Package guardrail checks what goes to a provider and what comes back:
// guardrails made of checks (a regular expression, word counts, a JSON
// schema, personal data, a webhook, …), each built from its JSON
// parameters by a Registry, and run concurrently per phase by Run.
//
// A check is anything with a Check method; a host adds its own check ids
// to a Registry with Register, and NewRegistry returns one holding the
// built-in checks. Definitions come from tenants: a registry refuses an
// unknown check id (CodeUnsupportedCheck) and any parameter it does not
// take (CodeInvalidParameter), naming it, and the checks that reach the
// network do so only through the Env the host passes, whose client
// should be the gateway's guarded one.
//
// Run fails closed: a check that errors or passes its time limit fails
// its guardrail unless the guardrail allows errors. A check that rewrites
// the text (personal data redaction) passes with the rewritten text,
// which RequestTexts and ResponseTexts read from OpenAI chat completions
// and completions bodies and Texts.Replace writes back.
package guardrail
