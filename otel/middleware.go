package otel

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelgateway/gateway"
)

// ScopeName is the instrumentation scope of the spans this package opens.
const ScopeName = "github.com/modelgateway/gateway/otel"

// Options configures Middleware and Transport. The zero value is ready to
// use.
type Options struct {
	// Propagator reads the caller's trace context from a request's
	// headers (Middleware) and writes it into upstream requests'
	// (Transport). Nil means W3C Trace Context alone (traceparent and
	// tracestate), which is what the gateway reads its trace id from.
	Propagator propagation.TextMapPropagator
}

func (o Options) propagator() propagation.TextMapPropagator {
	if o.Propagator != nil {
		return o.Propagator
	}
	return propagation.TraceContext{}
}

// Middleware returns a middleware, to wrap a *gateway.Gateway, that opens
// a server span for each request: a child of the span its traceparent
// names, if any, else the root of a new trace. The span is named after
// the GenAI operation and model ("chat gpt-4o") on the chat, completions
// and embeddings routes, else after the method ("GET"), and ends when the
// gateway has answered.
//
// The gateway hands the middleware its finished log record before
// ServeHTTP returns (gateway.WithLogHook), from which the span gets its
// GenAI and gateway.* attributes, the status code, and an error status for
// a 5xx or an answer cut mid-stream; 4xx and 499 (the caller went away)
// leave the status unset, as the HTTP conventions say for a server. A
// handler other than a Gateway (or the Gateway's stages) gives the span
// only its HTTP request attributes.
//
// A request with neither x-gateway-trace-id nor traceparent is handed to
// next with the traceparent of its span, so that the gateway's trace id
// is the span's. The request's headers are cloned for that, not changed.
//
// It panics if tp is nil. The middleware is safe for concurrent use.
func Middleware(tp trace.TracerProvider, opts Options) func(http.Handler) http.Handler {
	if tp == nil {
		panic("otel: Middleware with a nil TracerProvider")
	}
	tracer := tp.Tracer(ScopeName)
	prop := opts.propagator()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(requestAttributes(r)...))
			defer span.End()
			ctx = gateway.WithLogHook(ctx, func(rec *gateway.RequestLog) { annotate(span, rec) })
			r = r.WithContext(ctx)
			if r.Header.Get(gateway.HeaderTraceID) == "" && r.Header.Get("Traceparent") == "" && span.SpanContext().IsValid() {
				r.Header = r.Header.Clone()
				propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(r.Header))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// requestAttributes returns the attributes of r known when its span
// starts. The query is left out: it may carry a credential.
func requestAttributes(r *http.Request) []attribute.KeyValue {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(r.Method),
		semconv.URLPath(r.URL.Path),
		semconv.URLScheme(scheme),
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	return attrs
}

// annotate puts what rec says of the request on its server span.
func annotate(span trace.Span, rec *gateway.RequestLog) {
	attrs := make([]attribute.KeyValue, 0, 24)
	if rec.Status != 499 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(rec.Status))
	}
	op := genAIOperation(rec.Path)
	if op != "" {
		attrs = append(attrs, AttrGenAIOperationName.String(op))
		if rec.Model != "" {
			span.SetName(op + " " + rec.Model)
		} else {
			span.SetName(op)
		}
	}
	if rec.Provider != "" {
		sys := genAISystem(rec.Provider)
		attrs = append(attrs, AttrGenAISystem.String(sys), AttrGenAIProviderName.String(sys), AttrGatewayProvider.String(rec.Provider))
	}
	if rec.Model != "" {
		attrs = append(attrs, AttrGenAIRequestModel.String(rec.Model))
	}
	if rec.PromptTokens > 0 || rec.CompletionTokens > 0 {
		attrs = append(attrs, AttrGenAIUsageInputTokens.Int64(rec.PromptTokens), AttrGenAIUsageOutputTokens.Int64(rec.CompletionTokens))
		if rec.CachedPromptTokens > 0 {
			attrs = append(attrs, AttrGenAIUsageCacheReadInputTokens.Int64(rec.CachedPromptTokens))
		}
	}
	attrs = append(attrs, AttrGatewayTraceID.String(rec.TraceID), AttrGatewayRetries.Int(rec.Attempts))
	for _, a := range []struct {
		key attribute.Key
		val string
	}{
		{AttrGatewayLogID, rec.ID},
		{AttrGatewayCacheStatus, string(rec.CacheStatus)},
		{AttrGatewayErrorCode, rec.ErrorCode},
		{AttrGatewayAPIKeyID, rec.KeyID},
		{AttrGatewayWorkspaceID, rec.WorkspaceID},
		{AttrGatewayVirtualKey, rec.VirtualKey},
		{AttrGatewayConfigID, rec.ConfigID},
	} {
		if a.val != "" {
			attrs = append(attrs, a.key.String(a.val))
		}
	}
	if rec.FallbackIndex > 0 {
		attrs = append(attrs, AttrGatewayFallbackIndex.Int(rec.FallbackIndex))
	}
	if rec.Rescued {
		attrs = append(attrs, AttrGatewayRescued.Bool(true))
	}
	if rec.Cost > 0 {
		attrs = append(attrs, AttrGatewayCostUSD.Float64(rec.Cost))
	}
	switch {
	case rec.Aborted:
		attrs = append(attrs, AttrGatewayAborted.Bool(true), semconv.ErrorTypeKey.String(errorType(rec)))
		span.SetStatus(codes.Error, "answer cut mid-stream: "+errorType(rec))
	case rec.Status >= 500:
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(rec)))
		span.SetStatus(codes.Error, errorType(rec))
	}
	span.SetAttributes(attrs...)
}

// errorType is the error.type of a failed request: the gateway's error
// code, else the status code.
func errorType(rec *gateway.RequestLog) string {
	if rec.ErrorCode != "" {
		return rec.ErrorCode
	}
	return strconv.Itoa(rec.Status)
}
