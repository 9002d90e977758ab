// Package otel traces a gateway's requests with OpenTelemetry.
//
// Middleware opens a server span per request, a child of the caller's
// trace when the request carries a W3C traceparent, and puts on it what
// the gateway learned of the request by the time it finished: provider,
// model, token usage, cache status, retries, status (the GenAI attributes
// below, and gateway.* ones). Transport, given to the gateway as
// gateway.Options.Transport, opens a client span per attempt at a provider
// and sends its traceparent upstream, so that a provider's own traces, or
// a proxy's, join the caller's. NewOTLPTracerProvider exports the spans
// to an OpenTelemetry collector over OTLP/HTTP:
//
//	tp, err := otel.NewOTLPTracerProvider(ctx, "http://collector:4318", otel.TracerProviderOptions{})
//	if err != nil { ... }
//	defer tp.Shutdown(context.Background()) // sends the spans still buffered
//	gw := gateway.New(gateway.Options{Transport: otel.Transport(nil, tp, otel.Options{}), ...})
//	srv.Handler = otel.Middleware(tp, otel.Options{})(gw)
//
// # Attributes
//
// The GenAI attribute names follow OpenTelemetry's semantic conventions
// for generative AI, which are still in development; this package defines
// them as constants of its own (AttrGenAISystem, ...), so that a change of
// the conventions is a change here, not in a dependency. HTTP attributes
// are those of the stable HTTP conventions.
//
// # Trace ids
//
// The gateway gives every request a trace id (x-gateway-trace-id), taken
// from the traceparent header when the caller sends no
// x-gateway-trace-id. Middleware gives a request without either the
// traceparent of its span, so that the gateway's trace id, in its logs
// and response header, is the span's trace id. The gateway's trace id is
// also the attribute gateway.trace_id.
//
// # Security
//
// Spans carry no credential, header, query string, body or metadata: the
// URL path, the API key's id (not the key), workspace, virtual key slug
// and config id, provider, model and usage. The traceparent sent upstream
// reveals the trace and span ids to the provider, which is what it is
// for; a caller's traceparent is trusted only as a parent id, as
// OpenTelemetry's propagators do.
package otel
