package otel

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/modelgateway/gateway"
)

// annotated returns the span annotate makes of rec, from a span named
// "POST".
func annotated(t *testing.T, rec *gateway.RequestLog) sdktrace.ReadOnlySpan {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("test").Start(context.Background(), "POST")
	annotate(span, rec)
	span.End()
	return sr.Ended()[0]
}

func attrMap(s sdktrace.ReadOnlySpan) map[attribute.Key]any {
	m := make(map[attribute.Key]any)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.AsInterface()
	}
	return m
}

// TestAnnotate: every field of a record a span shows, from a record with
// all of them set, as the gateway fills them.
func TestAnnotate(t *testing.T) {
	s := annotated(t, &gateway.RequestLog{
		ID: "0190a0d0-0000-7000-8000-000000000001", TraceID: "tr-1", KeyID: "key-1", WorkspaceID: "ws-1",
		VirtualKey: "azure-prod", ConfigID: "cfg-fallback", Provider: "azure-openai", Model: "gpt-4o",
		Method: "POST", Path: "/v1/chat/completions", Status: 200, Latency: time.Second, TTFB: 200 * time.Millisecond,
		PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150, CachedPromptTokens: 64, Cost: 0.0012,
		CacheStatus: gateway.CacheMiss, Attempts: 2, FallbackIndex: 1, Rescued: true,
		Metadata: map[string]string{"_user": "u-1"},
	})
	if s.Name() != "chat gpt-4o" {
		t.Errorf("span named %q, want chat gpt-4o", s.Name())
	}
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v, want unset", s.Status())
	}
	want := map[attribute.Key]any{
		"http.response.status_code":        int64(200),
		AttrGenAIOperationName:             "chat",
		AttrGenAISystem:                    "azure.ai.openai",
		AttrGenAIProviderName:              "azure.ai.openai",
		AttrGenAIRequestModel:              "gpt-4o",
		AttrGenAIUsageInputTokens:          int64(120),
		AttrGenAIUsageOutputTokens:         int64(30),
		AttrGenAIUsageCacheReadInputTokens: int64(64),
		AttrGatewayProvider:                "azure-openai",
		AttrGatewayTraceID:                 "tr-1",
		AttrGatewayLogID:                   "0190a0d0-0000-7000-8000-000000000001",
		AttrGatewayCacheStatus:             "MISS",
		AttrGatewayRetries:                 int64(2),
		AttrGatewayFallbackIndex:           int64(1),
		AttrGatewayRescued:                 true,
		AttrGatewayCostUSD:                 0.0012,
		AttrGatewayAPIKeyID:                "key-1",
		AttrGatewayWorkspaceID:             "ws-1",
		AttrGatewayVirtualKey:              "azure-prod",
		AttrGatewayConfigID:                "cfg-fallback",
	}
	if got := attrMap(s); !cmp.Equal(got, want) {
		t.Errorf("attributes:\n got %v\nwant %v", got, want)
	}
}

// TestAnnotateFailures: which records make an error span, and what they
// say.
func TestAnnotateFailures(t *testing.T) {
	for _, c := range []struct {
		name      string
		rec       gateway.RequestLog
		spanName  string
		code      codes.Code
		errorType any // nil: absent
		status    any // http.response.status_code; nil: absent
	}{
		{"provider 503", gateway.RequestLog{Path: "/v1/embeddings", Provider: "openai", Status: 503},
			"embeddings", codes.Error, "503", int64(503)},
		{"gateway 502", gateway.RequestLog{Path: "/v1/chat/completions", Model: "m", Status: 502, ErrorCode: gateway.CodeUpstreamUnreachable},
			"chat m", codes.Error, gateway.CodeUpstreamUnreachable, int64(502)},
		{"cut mid-stream", gateway.RequestLog{Path: "/v1/chat/completions", Model: "m", Status: 200, Aborted: true, ErrorCode: gateway.CodeStreamIdleTimeout},
			"chat m", codes.Error, gateway.CodeStreamIdleTimeout, int64(200)},
		{"429", gateway.RequestLog{Path: "/v1/files", Status: 429, ErrorCode: gateway.CodeRateLimitExceeded},
			"POST", codes.Unset, nil, int64(429)},
		{"caller went away", gateway.RequestLog{Path: "/v1/completions", Status: 499},
			"text_completion", codes.Unset, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := annotated(t, &c.rec)
			got := attrMap(s)
			if s.Name() != c.spanName || s.Status().Code != c.code || got["error.type"] != c.errorType || got["http.response.status_code"] != c.status {
				t.Errorf("span %q, status %v, error.type %v, status code %v; want %q, %v, %v, %v",
					s.Name(), s.Status().Code, got["error.type"], got["http.response.status_code"], c.spanName, c.code, c.errorType, c.status)
			}
		})
	}
}
