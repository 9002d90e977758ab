package prometheus_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/metrics"
	gwprom "github.com/modelgateway/gateway/prometheus"
)

// TestMetricsHandlerParses: the text the metrics package's Handler
// writes, read by Prometheus's own parser, holds the same families as a
// registry of this package's Collector and its watches of a gateway,
// given the same records: names, help, types, labels (escaped ones
// included) and values, histograms bucket by bucket.
func TestMetricsHandlerParses(t *testing.T) {
	recs := []gateway.RequestLog{
		{Provider: "openai", Model: "gpt-4o", Status: 200, CacheStatus: gateway.CacheMiss, Latency: 1500 * time.Millisecond,
			TTFB: 250 * time.Millisecond, PromptTokens: 10, CompletionTokens: 5, Cost: 0.5, Guardrails: "passed"},
		{Provider: "openai", Model: "gpt-4o", Status: 200, CacheStatus: gateway.CacheHit, Latency: 250 * time.Millisecond,
			PromptTokens: 10, CompletionTokens: 5, Cost: 0.125},
		{Provider: "odd \"provider\" \\ with\na line feed", Model: "m", Status: 200, Latency: 42 * time.Second, TTFB: 3 * time.Second},
		{Model: "gpt-4o", Status: 429, ErrorCode: gateway.CodeRateLimitExceeded, Latency: time.Millisecond},
		{Provider: "openai", Model: "new-model", Status: 412, ErrorCode: "budget_exhausted", Latency: time.Millisecond},
		{Provider: "openai", Model: "gpt-4o", Status: 499, CacheStatus: gateway.CacheDisabled, Latency: 400 * time.Second,
			SkippedTargets: []string{"a"}, TrippedTargets: []string{"b", "c"}, Guardrails: "denied"},
	}
	col := gwprom.NewCollector(gwprom.Options{MaxModels: 2})
	mcol := metrics.New(metrics.Options{MaxModels: 2})
	for i := range recs {
		col.Log(&recs[i])
		mcol.Log(&recs[i])
	}
	gw := gateway.New(gateway.Options{Keys: memstore.New()})
	defer gw.Close()
	gw.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/models", nil)) // 401 missing_api_key

	reg := prom.NewPedanticRegistry()
	reg.MustRegister(col, col.DroppedLogs(gw), col.AuthFailures(gw), col.Breakers(gw))
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.Handler(mcol, mcol.DroppedLogs(gw), mcol.AuthFailures(gw), mcol.Breakers(gw)))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); expfmt.ResponseFormat(res.Header) != expfmt.NewFormat(expfmt.TypeTextPlain) {
		t.Errorf("Content-Type %q is not the text format's", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}

	if len(parsed) != len(gathered) {
		t.Errorf("the handler wrote %d families, the registry gathered %d", len(parsed), len(gathered))
	}
	for _, want := range gathered {
		got := parsed[want.GetName()]
		if got == nil {
			t.Errorf("the handler lacks %s", want.GetName())
			continue
		}
		if g, w := familyText(t, got), familyText(t, want); g != w {
			t.Errorf("%s parsed from the handler:\n%s\ngathered from the Collector:\n%s", want.GetName(), g, w)
		}
	}
}

// familyText returns f in the text format, without the +Inf bucket that
// a parser keeps and a registry leaves implicit.
func familyText(t *testing.T, f *dto.MetricFamily) string {
	t.Helper()
	for _, m := range f.GetMetric() {
		if h := m.GetHistogram(); h != nil {
			h.Bucket = slices.DeleteFunc(h.Bucket, func(b *dto.Bucket) bool { return math.IsInf(b.GetUpperBound(), 1) })
		}
	}
	var b strings.Builder
	if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
