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
//
// # The product
//
// Hooks puts guardrails on the gateway's data plane (gateway.Options.Hooks)
// and serves the /guardrails routes (Mount). A config attaches guardrails
// by id or inline, at its top or per target:
//
//	{"virtual_key":"openai",
//	 "input_guardrails":["guard_k2x…", {"checks":[{"id":"default.pii","parameters":{"categories":["EMAIL_ADDRESS"],"redact":true}}]}],
//	 "output_guardrails":[{"checks":[{"id":"default.jsonSchema","parameters":{"schema":{"type":"object"}}}],"actions":{"deny":true},"stream_mode":"buffer"}]}
//
// (before_request_hooks and after_request_hooks are other names of the
// two lists). A guardrail whose check fails and whose actions say deny
// refuses the request or its answer with a 446 hooks_failed error; a
// failed check that does not deny answers normally with status 246. Both
// carry hook_results, each guardrail's verdict and its checks'; a stream
// gets them as a hook_results event after [DONE], or before it with
// stream_mode buffer, which holds the stream until its checks passed.
// A host adds its own check in a few lines:
//
//	hooks := &guardrail.Hooks{Store: store}
//	g := gateway.New(gateway.Options{Keys: store, Hooks: hooks})
//	hooks.Mount(g)
//	hooks.Registry.Register("acme.noTickets", func(json.RawMessage) (guardrail.Check, error) {
//		return guardrail.CheckFunc(func(ctx context.Context, in *guardrail.Input) (guardrail.Verdict, error) {
//			return guardrail.Verdict{Pass: !strings.Contains(in.Text, "TICKET-")}, nil
//		}), nil
//	})
package guardrail
