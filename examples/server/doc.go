// Command server runs the model gateway as a standalone HTTP server.
//
//	go run ./examples/server [-addr 127.0.0.1:8080] [-db DSN] [-config FILE] [-redis URL] [-demo]
//		[-drain 5s] [-grace 30s] [-write-timeout 60s] [-request-log stdout|off] [-store-logs=true]
//		[-log-retention 720h] [-log-bodies] [-log-body-max 16384] [-prices FILE]
//		[-admin-addr ADDR] [-otel-endpoint URL] [-public-url URL]
//		[-oidc-issuer URL -oidc-client-id ID -oidc-client-secret SECRET]
//
// -db names where the gateway keeps its state (API keys, virtual keys,
// configs, policies, workspaces, the audit log and request logs, which
// GET /logs serves and -log-retention bounds):
//
//   - a file path, or sqlite:PATH: a SQLite database (package sqlstore),
//     created with mode 0600 when absent;
//   - postgres://… or postgresql://…: a Postgres database, which several
//     replicas may share;
//   - :memory: no durable state: everything lives as long as the process.
//
// The default is gateway.db in the working directory, with or without
// -config, so that keys, virtual keys and configs made over HTTP or in the
// console survive a restart. Only -demo without -db runs in memory: a
// demo's fake provider and virtual key live only as long as the process
// (-demo with a database is refused). At start the server prints one line
// saying where its state is kept: "gateway: state kept in the SQLite
// database /abs/path/gateway.db", "… in the Postgres database
// postgres://host/db" (never a user or password), or "… in memory:
// nothing survives a restart".
//
// A database keeps provider credentials sealed under a master key: the
// 32 bytes of GATEWAY_MASTER_KEY (64 hex digits or base64) when it is set.
// Without it, a SQLite database uses its key file, the database's path
// followed by ".key": it is read when it exists (it must be private to its
// owner, mode 0600), else created with a random key, mode 0600, and the
// server says so once on standard error. Back the key file up with the
// database, and keep it apart from copies of it: without the key the
// stored credentials are lost. A Postgres database needs
// GATEWAY_MASTER_KEY, the same for every replica. A key that does not
// open the database stops the server at start-up. No key is ever written
// to a log.
//
// A store that holds no API key at all (a new database, or :memory:),
// once the config file is applied, gets one organisation admin key,
// "key-default": the value of GATEWAY_API_KEY, or a random key generated
// at start-up and printed once on standard error (only its digest is
// stored). An organisation admin key holds every scope over every
// workspace: it creates workspaces (POST /v1/admin/workspaces), their keys,
// and reads the organisation-wide audit log. A store that holds keys gets
// none: GATEWAY_API_KEY is not added again (a warning says so when it is
// not one of the stored keys), so a key rotated or deleted over HTTP stays
// rotated or deleted. Callers then name the provider with
// x-gateway-provider and send their provider token in Authorization, or
// create virtual keys, configs and more keys through the control plane.
//
// -demo makes the server work offline, for a first try: it also starts the
// fake OpenAI-compatible provider of package gatewaytest on a loopback port,
// adds a virtual key "demo" (provider openai) that points at it, and prints
// on standard error a curl command that sends a chat completion through the
// gateway and gets 200. The command carries the API key: a generated one is
// written out, one from GATEWAY_API_KEY is written as "$GATEWAY_API_KEY" so
// that it is not printed. -demo combines with -config (still in memory):
// the file's entries are loaded as usual, and when they hold keys a
// member key, "key-demo" of the workspace "default", is added beside them
// for the command unless GATEWAY_API_KEY is already one of the file's
// keys.
//
// With -config it loads API keys, virtual keys, saved configs, rate-limits
// policies, workspaces and the custom-host allowlist from a JSON file (see
// admin.File for the complete field list). The file is the operator's: each entry
// it names is created or replaced at every start (a file key rotated over
// HTTP gets the file's value back), and the entries it does not name
// (those made through the control plane, say) are left alone; the
// custom-host allowlist is read from the file, never stored. An api_keys
// entry without workspace_id is an organisation key; one with
// workspace_id is that workspace's. Keys and workspaces name the
// guardrails attached to each of their requests in defaults, as the
// admin routes write them; each id must name a stored guardrail the
// workspace may attach, or the server does not start:
//
//	{
//	  "api_keys": [{"id": "key-org", "key": "${GATEWAY_ORG_KEY}", "role": "admin"},
//	               {"id": "key-ws-1", "key": "${WS1_ADMIN_KEY}", "workspace_id": "ws-1", "role": "admin",
//	                "defaults": {"output_guardrails": ["no-secrets"]}}],
//	  "workspaces": [{"id": "ws-1", "name": "Team one", "defaults": {"input_guardrails": ["pii-redact"]}}],
//	  "virtual_keys": [{"slug": "openai-prod", "provider": "openai", "api_key": "${OPENAI_API_KEY}",
//	                    "base_url": "https://api.openai.com/v1", "workspace_id": "ws-1"}],
//	  "configs": [{"id": "pc-default", "config": {"virtual_key": "openai-prod"}}],
//	  "custom_hosts": {"allow": ["localhost:11434"]}
//	}
//
// Every ${VAR} in the file is replaced by the environment variable VAR, so
// secrets need not be written into it; a key may be given as key_sha256 (the
// lower-case hex SHA-256 of the key) instead of key. An unknown field is an
// error at start-up.
//
// -redis redis://HOST:PORT/DB keeps the rate-limit buckets, the budget
// counters of usage-limits policies and the response cache in Redis
// (package redis), so that replicas using the same Redis enforce one limit
// and one budget and share cached answers; without it each process keeps
// its own buckets and cache, in memory, and a database (-db) keeps the
// budget counters.
// A Redis that does not answer at start-up stops the server.
//
// Standard output carries one JSON line per request (trace id, key id,
// provider, status, latency, bytes; never a credential), unless
// -request-log off turns it off. The lines are gateway.JSONLineSink's
// (slog's JSON shape, written a batch at a time): a line costs about 0.6 µs
// of CPU, and a batch one write. A
// request that fails authentication (no key, a wrong or expired one) has
// no line and no stored record: it is counted in /metrics
// (gateway_unauthenticated_requests_total), so that anonymous traffic
// cannot fill the database nor crowd real records out of the log queue.
// -log-bodies also keeps, in each stored record, the request's body and
// its answer's (GET /logs/{id} shows them): the first -log-body-max
// bytes of each (default 16384), credentials redacted (headers are never
// kept; the values of names such as api_key, password, secret, token and
// authorization in JSON and form bodies are "[REDACTED]", and so is every
// copy of a credential the gateway sent the provider, should its answer
// echo it). It is off by default: bodies carry what callers send their
// models.
// -admin-addr serves /metrics (Prometheus: requests, durations, tokens,
// cost, refusals, unauthenticated requests, dropped logs, circuit
// breakers, the Go runtime and the process), /readyz and /debug/pprof/ on a
// listener of its own; it asks for no key, so keep it on a private
// address. There /readyz?verbose answers, with the status of /readyz,
// the circuit breaker of each target and the count of dropped request
// logs as JSON: {"status":"ok","targets":
// [{"target":"virtual_key:ws-1/openai-prod","state":"open",
// "consecutive_failures":5,"open_until":"…"}],"dropped_logs":0}, state
// being closed, open or half_open (its cool-down over: one request may
// probe it). With
// -redis the breakers are those every replica shares, and only those
// that count a failure are listed. -prices FILE replaces the built-in price table that gives
// each request log its cost. -otel-endpoint URL (an OpenTelemetry
// collector's OTLP/HTTP endpoint, such as http://localhost:4318) traces
// every request: a server span with the GenAI attributes (package
// github.com/modelgateway/gateway/otel) and a client span per attempt at
// a provider, whose traceparent the provider receives; the spans still
// buffered are sent at shutdown.
// Standard error carries the server's own messages, among them
// "gateway: listening on http://ADDR" once it accepts connections, so that
// -addr 127.0.0.1:0 can be used to pick a free port.
//
// GET /healthz and GET /readyz, outside the gateway's /v1 prefix, are the
// probes of an orchestrator or load balancer: they need no key, answer a
// bare "ok" (or "draining") that reveals nothing about the server, and are
// not request-logged. /healthz answers 200 while the process runs; /readyz
// answers 200 until the shutdown begins and 503 from then on, and 503 too
// ("unavailable") while the database does not answer within 2 s.
//
// /console/ serves the web console (package
// github.com/modelgateway/gateway/console): sign in with a gateway API key
// that holds logs.read to see traffic, logs, keys, configs, policies and
// the audit log, read and changed through the gateway's own API. A correct
// key always signs in. Its cookies are Secure unless -addr is a loopback
// address: on any other address the console is meant to be reached through
// TLS (a proxy in front that terminates it), since browsers do not send
// Secure cookies over plain HTTP.
//
// People sign in to the console too (package
// github.com/modelgateway/gateway/users, served under /v1/admin/users):
// an organisation key invites them (POST /v1/admin/users/invites answers
// an invite_link to the console's /console/invite/{token} page, on
// -public-url when it is set), they set their name and password there,
// and sign in with their email and password. With -oidc-issuer (and
// -oidc-client-id, -oidc-client-secret or GATEWAY_OIDC_CLIENT_SECRET, and
// -public-url, whose /console/oidc/callback is the redirect URI to
// register at the provider) they may sign in through that OpenID Connect
// provider instead, matched by verified email to a user or a pending
// invite.
//
// -public-url is the URL at which clients reach the gateway, such as
// https://gateway.example.com; the signed URLs the gateway hands out (a
// log export's signed_url, which downloads that export without a key for
// an hour) start with it, and are relative paths without it. They are
// never built from a request's Host or X-Forwarded-* headers, which the
// caller chooses. Their HMAC key is derived from the database's master
// key, so that replicas sharing GATEWAY_MASTER_KEY accept each other's
// URLs and a restart keeps them valid; in memory it is random per process.
//
// On SIGINT or SIGTERM the server first drains for -drain (5 s by default):
// /readyz answers 503 at once, so that load balancers take the server out
// of rotation, while the listener stays open and every request, new ones
// included, is still served; keep-alive connections are closed after their
// current response, so that clients reconnect to another replica. Set
// -drain to at least the time your load balancer needs to notice a failing
// readiness probe, or to 0 when nothing routes traffic by it. Then the
// server stops accepting connections and lets in-flight requests and
// streams finish for up to -grace, flushes the request logs, writes
// "gateway: request logs dropped: N" on standard error (the records its
// log queue could not hand over, or the store failed to keep) and exits 0.
// A second signal ends the drain and the grace period at once: the
// remaining connections are closed, the request logs flushed, and the
// server exits 0. A third one ends the process without further ado.
//
// The server refuses, with 400 and by closing the connection, a request
// that carries both Content-Length and Transfer-Encoding (or
// Transfer-Encoding in HTTP/1.0), whose end a proxy in front might see
// elsewhere than the server does: the rest of its body would otherwise be
// read as another request (request smuggling, RFC 9112 §6.1). net/http
// alone would serve it and keep the connection open.
//
// A write to a client may block for at most -write-timeout; a client that
// stops reading has its connection dropped and its provider call cancelled,
// while a stream that keeps flowing may last as long as it needs.
package main
