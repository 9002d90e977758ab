package metrics_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/metrics"
)

// benchRecords are records of a few providers, models and statuses, with
// tokens, cost and time to first byte, as a busy gateway logs them.
func benchRecords() []gateway.RequestLog {
	return []gateway.RequestLog{
		{Provider: "openai", Model: "gpt-4o-mini", Status: 200, CacheStatus: gateway.CacheMiss, Latency: 800 * time.Millisecond,
			TTFB: 300 * time.Millisecond, PromptTokens: 120, CompletionTokens: 40, TotalTokens: 160, Cost: 0.0001},
		{Provider: "openai", Model: "gpt-4o-mini", Status: 200, CacheStatus: gateway.CacheHit, Latency: 2 * time.Millisecond},
		{Provider: "anthropic", Model: "claude-sonnet-4", Status: 200, CacheStatus: gateway.CacheDisabled, Latency: 3 * time.Second,
			TTFB: 900 * time.Millisecond, PromptTokens: 2000, CompletionTokens: 700, TotalTokens: 2700, Cost: 0.0165},
		{Provider: "openai", Model: "gpt-4o", Status: 429, CacheStatus: gateway.CacheDisabled, Latency: 90 * time.Millisecond},
		{Model: "gpt-4o", Status: 429, ErrorCode: gateway.CodeRateLimitExceeded, Latency: time.Millisecond},
	}
}

// BenchmarkCollectorLog is the Collector's cost per request, on the log
// goroutine, every series already made.
func BenchmarkCollectorLog(b *testing.B) {
	col := metrics.New(metrics.Options{})
	recs := benchRecords()
	for i := range recs {
		col.Log(&recs[i]) // every series made
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		col.Log(&recs[i%len(recs)])
	}
}

// BenchmarkHandler is a scrape of the Collector's series and the
// runtime's.
func BenchmarkHandler(b *testing.B) {
	col := metrics.New(metrics.Options{})
	recs := benchRecords()
	for i := range recs {
		col.Log(&recs[i])
	}
	h := metrics.Handler(col, metrics.Runtime())
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
