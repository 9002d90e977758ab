// Package gateway is a model gateway you embed in the Go server you already
// run: an http.Handler that authenticates callers with gateway API keys,
// picks a model provider for each request, and forwards it, with a trace
// id, metadata and one request log per request.
//
// # Mounting
//
// A Gateway serves every path under its prefix (default "/v1"):
//
//	store := memstore.New()
//	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey(os.Getenv("GATEWAY_KEY")), WorkspaceID: "ws-1"})
//	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai-prod", Provider: "openai", APIKey: os.Getenv("OPENAI_API_KEY")})
//	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Configs: store, Policies: store,
//		LogSink: gateway.SlogSink{}})
//	defer g.Close()
//	mux.Handle("/v1/", g)
//
// Callers send their gateway key in x-gateway-api-key and choose a provider
// by exactly one method: a virtual key (x-gateway-virtual-key, a stored
// credential), a provider and their own token (x-gateway-provider plus
// Authorization: Bearer), a routing config (x-gateway-config, a saved id or
// inline JSON), or a custom host (x-gateway-custom-host plus
// x-gateway-provider). A request that sends none of those may name a
// virtual key of its workspace in its model, "model": "@{slug}/{model}":
// it is found as x-gateway-virtual-key would find it, the model must be
// one the key offers (VirtualKey.Models; else 400 model_not_allowed), and
// the provider gets the model without the prefix. The token always
// travels in Authorization; the
// gateway converts it to the provider's own form (Azure's api-key,
// Anthropic's x-api-key, Bedrock's SigV4 signature).
//
// # Routes
//
// POST /completions is validated against the bounds of the API before it is
// forwarded; GET /fine_tuning/jobs, GET /fine_tuning/jobs/{id} and
// GET /files are typed routes. The administration routes (/api-keys,
// /virtual-keys, /configs with their versions, /admin/workspaces and
// /policies/rate-limits) are package admin's: a host mounts them with
// admin.Mount beside New, and a gateway without them passes those paths
// through to a provider like any other. The observe package mounts the
// observability routes (observe.Mount): /audit-logs, /logs with the
// stored request logs (filtered by trace id, metadata, status, model,
// keys and time, exported as JSON Lines through /logs/exports), the
// analytics routes (/analytics/graphs/*, /analytics/summary/cache,
// /analytics/groups/*) and /feedback; its Sink keeps the records of
// Options.LogSinks in its store. /policies/usage-limits holds budgets
// when the host wires the budget package (an Admission it mounts): once
// an entity has used its credit_limit of tokens or USD its requests get 412
// budget_exhausted until the period or an operator resets it. Each area
// needs its <area>.read or <area>.write scope, a workspace key sees only
// its own workspace (another's records are 404), and secrets are masked
// on every read. Every other path, with methods
// POST, GET, PUT and DELETE, is passed through: the provider's base URL plus
// the path and query, the body streamed as sent, and the provider's status,
// headers and body streamed back unchanged, server-sent events flushed one
// by one. If the provider fails after the first byte was sent, or goes
// silent for longer than Options.StreamIdleTimeout, the caller's
// connection is aborted rather than ended cleanly, so a truncated answer is
// never mistaken for a complete one. A WebSocket upgrade (OpenAI's
// Realtime API) is passed through like any request, then the frames flow
// both ways until either side closes.
//
// # Translation
//
// POST /chat/completions and POST /embeddings take OpenAI's format for
// every provider. When the selected target's kind is anthropic, vertex-ai
// (Gemini models), google (the Gemini API) or bedrock, the request is
// translated to the provider's own API and the answer back to OpenAI's
// shape, streams as chat.completion.chunk events ended by data: [DONE];
// what the provider cannot do is a 400 naming the parameter, and its
// errors come back OpenAI-shaped with its status. OpenAI-compatible kinds
// get the caller's bytes unchanged. The cache stores, and policies count
// tokens on, the translated answer, so one body may fall back or be load
// balanced across kinds. A Provider of its own kind translates by
// implementing Translator.
//
// # Composing stages
//
// Gateway is the pre-assembled chain: trace → key → headers → limits →
// route → execute. Its stages are exported as middlewares of the shape
// func(http.Handler) http.Handler — Trace, Authenticate, ParseHeaders and
// Limits — so a host can run them in front of its own handlers, composed
// with Chain; later stages read what they stored through TraceIDFrom,
// IdentityFrom and RequestOptionsFrom. A Gateway behind stages a host ran
// itself does not run them again: their trace id, identity, options and
// rate-limit admission stand.
//
// Products take part in the data plane through small seams: an Admission
// (Options.Admissions) decides whether a request goes on, and Hooks
// (Options.Hooks) checks the requests whose config attaches guardrails,
// and their answers. Package guardrail is the Hooks of guardrails; a host
// adds its own check to it in a few lines:
//
//	hooks := &guardrail.Hooks{Store: store}
//	g := gateway.New(gateway.Options{Keys: store, Hooks: hooks})
//	hooks.Mount(g)
//	hooks.Registry.Register("acme.noTickets", func(json.RawMessage) (guardrail.Check, error) {
//		return guardrail.CheckFunc(func(ctx context.Context, in *guardrail.Input) (guardrail.Verdict, error) {
//			return guardrail.Verdict{Pass: !strings.Contains(in.Text, "TICKET-")}, nil
//		}), nil
//	})
//
// # Stores and providers
//
// KeyStore, VirtualKeyStore, ConfigStore and PolicyStore are small
// interfaces of what the data plane reads; the writes of the
// administration routes are package admin's interfaces. memstore.Store
// implements them all, and admin.Apply loads the JSON document of
// examples/server into it. The sqlstore sub-module keeps them,
// the workspaces, the audit log and the request logs in SQLite or
// Postgres, secrets sealed, hot-path lookups served from an in-process
// snapshot that replicas bring up to date within a second or two. Provider kinds are registered by
// slug in Options.Providers, beside the built-in ones; a Provider rewrites
// one upstream request (URL, auth, signing). There is no global registry.
//
// # Resilience
//
// A config's strategy.cb_config gives each target under it a circuit
// breaker (BreakerConfig): after failure_threshold consecutive failures
// the target is skipped by fallback and load balancing for
// cooldown_interval milliseconds, then one request probes it. A
// loadbalance strategy's sticky (StickyConfig) keeps the requests with
// one value of a metadata key or header on one target while it is
// healthy. Breakers live in the process unless Options.Breakers shares
// them (redis.Breakers); Gateway.BreakerStates reports them, and every
// skip and trip is in the request log.
//
// # Errors
//
// Every error the gateway produces is OpenAI-shaped, with all four keys:
//
//	{"error":{"message":"…","type":"invalid_request_error","param":"x-gateway-metadata","code":"invalid_header"}}
//
// Bad headers, bodies and configs are 400 with param naming the field;
// missing or unknown gateway keys 401; a key that may not do something 403;
// an expired request timeout 408; rate-limited requests 429 with
// Retry-After; a request or answer a guardrail refuses 446 hooks_failed
// with hook_results (a failed check that only logs makes a 2xx answer
// 246); an unreachable provider 502; a config whose every target's
// circuit breaker is open 503 all_targets_unavailable with Retry-After,
// no provider called. A provider's own error
// responses are returned as the provider sent them.
//
// # Security
//
// Three levels of trust, never mixed:
//
//   - The operator: the host's Go code and Options, and in examples/server
//     its flags and -config file (with custom_hosts.allow). Trusted.
//   - A tenant: whatever an API key writes through the control plane
//     (keys, virtual keys, configs, policies), organisation keys included.
//     Untrusted input, stored.
//   - A caller: a data-plane request. Untrusted input, transient.
//
// The gateway fails closed. Gateway keys are stored as SHA-256 digests and
// compared in constant time, and are removed from the request before
// anything is forwarded. Only Content-Type, Accept, the provider's auth and
// well-known headers, and the headers the caller names in
// x-gateway-forward-headers reach a provider. A stored credential (virtual
// key) only ever goes to its own configured host, and changing that host
// through the control plane needs the credential again. Hosts supplied by
// callers (x-gateway-custom-host, inline configs) and hosts written by
// tenants (a virtual key's base_url, a saved config's custom_host) must be
// http(s) and resolve only to public addresses — loopback, private,
// link-local (cloud metadata), CGNAT and IPv4-mapped forms are refused, on
// the address actually dialed, and redirects are never followed — unless
// Options.CustomHostAllow names the host. Only hosts the operator wrote
// (in Go, or an admin.File) are trusted as they are.
//
// A key acts only on keys whose scopes are a subset of its own
// (organisation keys rank above workspace keys), and never changes its own
// scopes, limits or expiry. Names, metadata, models and configs are bounded
// (names 255 bytes, metadata 64 keys and 8 KiB, model 256 bytes, 32
// conditions per config, $regex over values up to 4 KiB, 10 upstream
// attempts per request); a value over a bound is a 400 naming the field.
// Another workspace's resources answer as unknown ones. Error messages and
// request logs never contain credentials or internal addresses; logs record
// no headers, redact key-like query parameters and, with bodies kept, the
// credentials the gateway injected. Requests that fail authentication are
// counted, never stored as request logs.
//
// What the operator must still do: put TLS in front of the gateway (it
// speaks plain HTTP), set examples/server's -public-url so that export
// download links name the public address, and back up the master key
// (GATEWAY_MASTER_KEY, or the <db>.key file beside a SQLite database) with
// the database: without it the stored provider credentials cannot be
// opened.
//
// The gateway does not see a request's framing: net/http honours
// Transfer-Encoding over Content-Length and removes both headers before any
// handler runs, while a proxy in front that goes by Content-Length would pass
// the rest of the body on as a second, unchecked request (request smuggling,
// RFC 9112 §6.1). The host's server or front proxy must refuse requests that
// carry both and close their connection, as examples/server does.
//
// # Concurrency
//
// A Gateway is safe for concurrent use by any number of requests. Request
// logs are handed to the LogSink from one goroutine the Gateway owns; Close
// stops it.
package gateway
