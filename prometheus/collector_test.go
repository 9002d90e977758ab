package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	gwprom "github.com/modelgateway/gateway/prometheus"
)

const (
	memberKey  = "gw-member-key"
	limitedKey = "gw-limited-key"
	chatPath   = "/v1/chat/completions"
)

// newUpstream is a fake OpenAI: it answers a chat completion with usage,
// and 404 model_not_found for the model "no-such-model".
func newUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Model == "no-such-model" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"no such model","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"`+req.Model+`",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// env is a gateway whose LogSink is a Collector, registered in a registry
// served by Handler, with a LogBuffer as the Collector's next sink.
type env struct {
	gw      *gateway.Gateway
	srv     *httptest.Server // the gateway
	metrics *httptest.Server // Handler(reg)
	reg     *prom.Registry
	buf     *gateway.LogBuffer
	col     *gwprom.Collector
}

// newEnv starts a gateway with two API keys on a virtual key "openai":
// memberKey, unlimited, and limitedKey, whose workspace has a policy of
// one request per hour.
func newEnv(t *testing.T, opts gwprom.Options) *env {
	t.Helper()
	up := newUpstream(t)
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(memberKey), WorkspaceID: "ws-1"})
	store.AddAPIKey(gateway.APIKey{ID: "key-limited", Digest: gateway.HashAPIKey(limitedKey), WorkspaceID: "ws-2"})
	for _, ws := range []string{"ws-1", "ws-2"} {
		store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-test", BaseURL: up.URL + "/v1", WorkspaceID: ws})
	}
	if err := store.PutPolicy(context.Background(), &gateway.RateLimitsPolicy{
		ID: "7d1e4b0a-5c1e-4f7a-9a55-0f3c2b1a9e11", Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-2"}},
		GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: gateway.PolicyRequests,
		Unit: gateway.PolicyPerHour, Value: 1, Status: gateway.PolicyActive, WorkspaceID: "ws-2",
	}); err != nil {
		t.Fatal(err)
	}
	e := &env{buf: &gateway.LogBuffer{}, reg: gwprom.NewRegistry()}
	opts.Next = e.buf
	col := gwprom.NewCollector(opts)
	e.col = col
	e.reg.MustRegister(col)
	e.gw = gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store, LogSink: col})
	t.Cleanup(func() { e.gw.Close() })
	e.reg.MustRegister(col.DroppedLogs(e.gw), col.AuthFailures(e.gw))
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(e.srv.Close)
	e.metrics = httptest.NewServer(gwprom.Handler(e.reg))
	t.Cleanup(e.metrics.Close)
	return e
}

// chat sends a chat completion for model with key and returns the status.
func (e *env) chat(t *testing.T, key, model string) int {
	t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+chatPath,
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.HeaderAPIKey, key)
	req.Header.Set(gateway.HeaderVirtualKey, "openai")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestCollectorCountsRequests drives real requests through a gateway and
// scrapes /metrics: each request is counted once, under the labels of the
// record the next sink got; its duration is observed under its provider
// and status class; the rate-limited one is counted as such, and the one
// with a wrong key only as an unauthenticated request (it is no request
// log).
//
// The model and cache status of a record are whatever the gateway filled
// in, so the expected requests_total is derived from the records; the
// duration counts and the other counters are exact.
func TestCollectorCountsRequests(t *testing.T) {
	e := newEnv(t, gwprom.Options{})
	for _, c := range []struct {
		key, model string
		want       int
	}{
		{memberKey, "gpt-4o-mini", 200},
		{memberKey, "gpt-4o-mini", 200},
		{memberKey, "no-such-model", 404},
		{"gw-wrong-key", "gpt-4o-mini", 401},
		{limitedKey, "gpt-4o", 200},
		{limitedKey, "gpt-4o", 429},
	} {
		if got := e.chat(t, c.key, c.model); got != c.want {
			t.Fatalf("%s with %s: status %d, want %d", c.model, c.key, got, c.want)
		}
	}
	e.gw.Close() // hands every record to the sink

	recs := e.buf.Query(gateway.LogFilter{})
	if len(recs) != 5 {
		t.Fatalf("the next sink got %d records, want 5 (all but the wrong key's)", len(recs))
	}
	want := `
# HELP gateway_rate_limited_requests_total Requests the gateway refused with 429 under a rate-limits policy.
# TYPE gateway_rate_limited_requests_total counter
gateway_rate_limited_requests_total 1
# HELP gateway_budget_exhausted_requests_total Requests the gateway refused with 412 because a usage-limits policy's budget was spent.
# TYPE gateway_budget_exhausted_requests_total counter
gateway_budget_exhausted_requests_total 0
# HELP gateway_request_logs_dropped_total Request logs the gateway dropped because its log queue was full.
# TYPE gateway_request_logs_dropped_total counter
gateway_request_logs_dropped_total 0
# HELP gateway_unauthenticated_requests_total Requests the gateway refused because they failed authentication, by the error code answered; not request logs.
# TYPE gateway_unauthenticated_requests_total counter
gateway_unauthenticated_requests_total{code="invalid_api_key"} 1
gateway_unauthenticated_requests_total{code="key_store_error"} 0
gateway_unauthenticated_requests_total{code="missing_api_key"} 0
` + requestsTotal(recs)
	if err := testutil.ScrapeAndCompare(e.metrics.URL, strings.NewReader(want),
		"gateway_requests_total", "gateway_rate_limited_requests_total", "gateway_budget_exhausted_requests_total",
		"gateway_request_logs_dropped_total", "gateway_unauthenticated_requests_total"); err != nil {
		t.Error(err)
	}

	counts := histogramCounts(t, e.reg, "gateway_request_duration_seconds")
	for labels, want := range map[string]uint64{
		"provider=openai,status_class=2xx": 3,
		"provider=openai,status_class=4xx": 1, // no-such-model
		"provider=,status_class=4xx":       1, // the rate-limited request, refused before routing
	} {
		if counts[labels] != want {
			t.Errorf("request_duration_seconds{%s} count = %d, want %d (all: %v)", labels, counts[labels], want, counts)
		}
	}
	if len(counts) != 3 {
		t.Errorf("request_duration_seconds has %d series, want 3: %v", len(counts), counts)
	}
}

// requestsTotal returns the gateway_requests_total family that recs, logged
// in order with the default MaxModels, make: a model is a label value once
// answered 2xx, else "other".
func requestsTotal(recs []gateway.RequestLog) string {
	admitted := map[string]bool{"": true}
	counts := map[string]int{}
	var keys []string
	for _, r := range recs {
		class := strconv.Itoa(r.Status/100) + "xx"
		if class == "2xx" {
			admitted[r.Model] = true
		}
		model := r.Model
		if !admitted[model] {
			model = "other"
		}
		k := fmt.Sprintf("{cache_status=%q,model=%q,provider=%q,status_class=%q}", r.CacheStatus, model, r.Provider, class)
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	var b strings.Builder
	b.WriteString("# HELP gateway_requests_total Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status.\n")
	b.WriteString("# TYPE gateway_requests_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "gateway_requests_total%s %d\n", k, counts[k])
	}
	return b.String()
}

// histogramCounts gathers the histogram name from g and returns the sample
// count of each series, by its labels written name=value,...
func histogramCounts(t *testing.T, g prom.Gatherer, name string) map[string]uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]uint64)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[labelString(m)] = m.GetHistogram().GetSampleCount()
		}
	}
	return out
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

// TestCollectorSeries logs records built by hand, with every field a
// series reads, and checks every series exactly.
func TestCollectorSeries(t *testing.T) {
	col := gwprom.NewCollector(gwprom.Options{
		Namespace:       "gw",
		DurationBuckets: []float64{0.5, 2},
		TTFBBuckets:     []float64{0.5},
	})
	for _, rec := range []gateway.RequestLog{
		{Provider: "openai", Model: "gpt-4o", Status: 200, CacheStatus: gateway.CacheMiss, Latency: 1500 * time.Millisecond,
			TTFB: 250 * time.Millisecond, PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Cost: 0.5},
		{Provider: "openai", Model: "gpt-4o", Status: 200, CacheStatus: gateway.CacheHit, Latency: 250 * time.Millisecond,
			PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		{Provider: "anthropic", Model: "claude", Status: 200, CacheStatus: gateway.CacheDisabled, Latency: 3 * time.Second,
			TTFB: time.Second, PromptTokens: 100, CompletionTokens: 20, Cost: 0.25},
		{Model: "gpt-4o", Status: 429, ErrorCode: gateway.CodeRateLimitExceeded, Latency: time.Millisecond},
		{Provider: "openai", Model: "gpt-4o", Status: 412, ErrorCode: "budget_exhausted", Latency: time.Millisecond},
		{Provider: "openai", Model: "gpt-4o", Status: 429, CacheStatus: gateway.CacheDisabled, Latency: 250 * time.Millisecond}, // the provider's 429
		{Provider: "openai", Model: "gpt-4o", Status: 499, CacheStatus: gateway.CacheDisabled, Latency: 2 * time.Second},
	} {
		col.Log(&rec)
	}
	const want = `
# HELP gw_breaker_skipped_targets_total Targets requests passed over because their circuit breakers were open (gateway.RequestLog.SkippedTargets).
# TYPE gw_breaker_skipped_targets_total counter
gw_breaker_skipped_targets_total 0
# HELP gw_breaker_trips_total Circuit breakers opened by requests' failed attempts (gateway.RequestLog.TrippedTargets).
# TYPE gw_breaker_trips_total counter
gw_breaker_trips_total 0
# HELP gw_requests_total Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status.
# TYPE gw_requests_total counter
gw_requests_total{cache_status="",model="gpt-4o",provider="",status_class="4xx"} 1
gw_requests_total{cache_status="",model="gpt-4o",provider="openai",status_class="4xx"} 1
gw_requests_total{cache_status="DISABLED",model="claude",provider="anthropic",status_class="2xx"} 1
gw_requests_total{cache_status="DISABLED",model="gpt-4o",provider="openai",status_class="499"} 1
gw_requests_total{cache_status="DISABLED",model="gpt-4o",provider="openai",status_class="4xx"} 1
gw_requests_total{cache_status="HIT",model="gpt-4o",provider="openai",status_class="2xx"} 1
gw_requests_total{cache_status="MISS",model="gpt-4o",provider="openai",status_class="2xx"} 1
# HELP gw_request_duration_seconds Time from a request's arrival to the end of its answer, by provider and status class.
# TYPE gw_request_duration_seconds histogram
gw_request_duration_seconds_bucket{provider="",status_class="4xx",le="0.5"} 1
gw_request_duration_seconds_bucket{provider="",status_class="4xx",le="2"} 1
gw_request_duration_seconds_bucket{provider="",status_class="4xx",le="+Inf"} 1
gw_request_duration_seconds_sum{provider="",status_class="4xx"} 0.001
gw_request_duration_seconds_count{provider="",status_class="4xx"} 1
gw_request_duration_seconds_bucket{provider="anthropic",status_class="2xx",le="0.5"} 0
gw_request_duration_seconds_bucket{provider="anthropic",status_class="2xx",le="2"} 0
gw_request_duration_seconds_bucket{provider="anthropic",status_class="2xx",le="+Inf"} 1
gw_request_duration_seconds_sum{provider="anthropic",status_class="2xx"} 3
gw_request_duration_seconds_count{provider="anthropic",status_class="2xx"} 1
gw_request_duration_seconds_bucket{provider="openai",status_class="2xx",le="0.5"} 1
gw_request_duration_seconds_bucket{provider="openai",status_class="2xx",le="2"} 2
gw_request_duration_seconds_bucket{provider="openai",status_class="2xx",le="+Inf"} 2
gw_request_duration_seconds_sum{provider="openai",status_class="2xx"} 1.75
gw_request_duration_seconds_count{provider="openai",status_class="2xx"} 2
gw_request_duration_seconds_bucket{provider="openai",status_class="499",le="0.5"} 0
gw_request_duration_seconds_bucket{provider="openai",status_class="499",le="2"} 1
gw_request_duration_seconds_bucket{provider="openai",status_class="499",le="+Inf"} 1
gw_request_duration_seconds_sum{provider="openai",status_class="499"} 2
gw_request_duration_seconds_count{provider="openai",status_class="499"} 1
gw_request_duration_seconds_bucket{provider="openai",status_class="4xx",le="0.5"} 2
gw_request_duration_seconds_bucket{provider="openai",status_class="4xx",le="2"} 2
gw_request_duration_seconds_bucket{provider="openai",status_class="4xx",le="+Inf"} 2
gw_request_duration_seconds_sum{provider="openai",status_class="4xx"} 0.251
gw_request_duration_seconds_count{provider="openai",status_class="4xx"} 2
# HELP gw_upstream_time_to_first_byte_seconds Time from a request's arrival to the first byte of the provider's answer body, by provider.
# TYPE gw_upstream_time_to_first_byte_seconds histogram
gw_upstream_time_to_first_byte_seconds_bucket{provider="anthropic",le="0.5"} 0
gw_upstream_time_to_first_byte_seconds_bucket{provider="anthropic",le="+Inf"} 1
gw_upstream_time_to_first_byte_seconds_sum{provider="anthropic"} 1
gw_upstream_time_to_first_byte_seconds_count{provider="anthropic"} 1
gw_upstream_time_to_first_byte_seconds_bucket{provider="openai",le="0.5"} 1
gw_upstream_time_to_first_byte_seconds_bucket{provider="openai",le="+Inf"} 1
gw_upstream_time_to_first_byte_seconds_sum{provider="openai"} 0.25
gw_upstream_time_to_first_byte_seconds_count{provider="openai"} 1
# HELP gw_prompt_tokens_total Prompt (input) tokens the providers reported, by provider and model.
# TYPE gw_prompt_tokens_total counter
gw_prompt_tokens_total{model="claude",provider="anthropic"} 100
gw_prompt_tokens_total{model="gpt-4o",provider="openai"} 20
# HELP gw_completion_tokens_total Completion (output) tokens the providers reported, by provider and model.
# TYPE gw_completion_tokens_total counter
gw_completion_tokens_total{model="claude",provider="anthropic"} 20
gw_completion_tokens_total{model="gpt-4o",provider="openai"} 10
# HELP gw_cost_usd_total Price of the requests in US dollars, from the gateway's price table, by provider and model.
# TYPE gw_cost_usd_total counter
gw_cost_usd_total{model="claude",provider="anthropic"} 0.25
gw_cost_usd_total{model="gpt-4o",provider="openai"} 0.5
# HELP gw_rate_limited_requests_total Requests the gateway refused with 429 under a rate-limits policy.
# TYPE gw_rate_limited_requests_total counter
gw_rate_limited_requests_total 1
# HELP gw_budget_exhausted_requests_total Requests the gateway refused with 412 because a usage-limits policy's budget was spent.
# TYPE gw_budget_exhausted_requests_total counter
gw_budget_exhausted_requests_total 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestModelCap: with MaxModels 2, the first two model names answered 2xx
// are label values; a third, and a failed request for a name not yet
// admitted, count as "other"; an admitted name stays one on failure.
func TestModelCap(t *testing.T) {
	col := gwprom.NewCollector(gwprom.Options{MaxModels: 2})
	for _, r := range []struct {
		model  string
		status int
	}{
		{"m1", 200},
		{"m2", 500}, // not admitted: failed
		{"m2", 200},
		{"m3", 200}, // the cap is reached
		{"m1", 404},
		{"", 401},
	} {
		col.Log(&gateway.RequestLog{Provider: "openai", Model: r.model, Status: r.status})
	}
	const want = `
# HELP gateway_requests_total Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status.
# TYPE gateway_requests_total counter
gateway_requests_total{cache_status="",model="",provider="openai",status_class="4xx"} 1
gateway_requests_total{cache_status="",model="m1",provider="openai",status_class="2xx"} 1
gateway_requests_total{cache_status="",model="m1",provider="openai",status_class="4xx"} 1
gateway_requests_total{cache_status="",model="m2",provider="openai",status_class="2xx"} 1
gateway_requests_total{cache_status="",model="other",provider="openai",status_class="2xx"} 1
gateway_requests_total{cache_status="",model="other",provider="openai",status_class="5xx"} 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "gateway_requests_total"); err != nil {
		t.Error(err)
	}
}

// blockingSink holds the log goroutine in its first Log until release is
// closed, so that the gateway's log queue fills.
type blockingSink struct {
	entered chan struct{}
	release chan struct{}
}

func (s *blockingSink) Log(*gateway.RequestLog) {
	select {
	case s.entered <- struct{}{}:
		<-s.release
	default:
	}
}

// TestDroppedLogs: records the gateway drops when its log queue is full
// are exported by DroppedLogs.
func TestDroppedLogs(t *testing.T) {
	sink := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	col := gwprom.NewCollector(gwprom.Options{Next: sink})
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(memberKey), WorkspaceID: "ws-1"})
	gw := gateway.New(gateway.Options{Keys: store, LogSink: col, LogQueueSize: 1})
	defer gw.Close()
	defer close(sink.release) // before Close, which waits for the sink
	dropped := col.DroppedLogs(gw)

	get := func() {
		r := httptest.NewRequest("GET", "/v1/models", nil) // 400: no provider
		r.Header.Set(gateway.HeaderAPIKey, memberKey)
		gw.ServeHTTP(httptest.NewRecorder(), r)
	}
	get()
	<-sink.entered // the log goroutine holds the first record
	for range 3 {
		get() // the first waits in the queue, the other two are dropped
	}
	if got := testutil.ToFloat64(dropped); got != 2 {
		t.Errorf("request_logs_dropped_total = %v, want 2", got)
	}
}

// TestAuthFailures: requests that fail authentication are counted by
// AuthFailures, by the code the caller got, and never reach the
// Collector's request series nor the next sink: they are no request logs.
func TestAuthFailures(t *testing.T) {
	e := newEnv(t, gwprom.Options{})
	for _, key := range []string{"", "gw-wrong", "gw-wrong-again", memberKey} {
		e.chat(t, key, "gpt-4o")
	}
	e.gw.Close() // hands every queued record to the collector
	want := `
# HELP gateway_unauthenticated_requests_total Requests the gateway refused because they failed authentication, by the error code answered; not request logs.
# TYPE gateway_unauthenticated_requests_total counter
gateway_unauthenticated_requests_total{code="invalid_api_key"} 2
gateway_unauthenticated_requests_total{code="key_store_error"} 0
gateway_unauthenticated_requests_total{code="missing_api_key"} 1
`
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "gateway_unauthenticated_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(e.col, "gateway_requests_total"); n != 1 {
		t.Errorf("gateway_requests_total has %d series, want the authenticated request's alone", n)
	}
	if recs := e.buf.Query(gateway.LogFilter{}); len(recs) != 1 || recs[0].Status != 200 {
		t.Errorf("the next sink got %+v, want the authenticated request's record alone", recs)
	}
}

// TestNewRegistry: the registry exports the Go runtime's and the
// process's metrics.
func TestNewRegistry(t *testing.T) {
	names := []string{"go_goroutines", "go_memstats_alloc_bytes"}
	if runtime.GOOS == "linux" {
		names = append(names, "process_start_time_seconds")
	}
	for _, n := range names {
		if c, err := testutil.GatherAndCount(gwprom.NewRegistry(), n); err != nil || c != 1 {
			t.Errorf("%s: %d series (err %v), want 1", n, c, err)
		}
	}
}

// TestBreakers: a target whose breaker a failure opened is exported as
// open with its failures, and the trip and the skip that followed are
// counted from the request logs.
func TestBreakers(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer up.Close()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(memberKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "down", Provider: "openai", APIKey: "sk-test", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	col := gwprom.NewCollector(gwprom.Options{})
	gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, LogSink: col})
	defer gw.Close()
	reg := prom.NewRegistry()
	reg.MustRegister(col, col.Breakers(gw))
	for _, want := range []int{502, 503} {
		r := httptest.NewRequest("POST", chatPath, strings.NewReader(`{"model":"m"}`))
		r.Header.Set(gateway.HeaderAPIKey, memberKey)
		r.Header.Set(gateway.HeaderConfig, `{"strategy":{"cb_config":{"failure_threshold":1,"cooldown_interval":60000}},"virtual_key":"down"}`)
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Fatalf("status %d, want %d", rec.Code, want)
		}
	}
	gw.Close() // hands every queued record to the collector
	want := `
# HELP gateway_breaker_consecutive_failures Consecutive failures the target's circuit breaker counts.
# TYPE gateway_breaker_consecutive_failures gauge
gateway_breaker_consecutive_failures{target="virtual_key:ws-1/down"} 1
# HELP gateway_breaker_open 1 while the target's circuit breaker is open or half open, 0 while it is closed.
# TYPE gateway_breaker_open gauge
gateway_breaker_open{target="virtual_key:ws-1/down"} 1
# HELP gateway_breaker_skipped_targets_total Targets requests passed over because their circuit breakers were open (gateway.RequestLog.SkippedTargets).
# TYPE gateway_breaker_skipped_targets_total counter
gateway_breaker_skipped_targets_total 1
# HELP gateway_breaker_trips_total Circuit breakers opened by requests' failed attempts (gateway.RequestLog.TrippedTargets).
# TYPE gateway_breaker_trips_total counter
gateway_breaker_trips_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gateway_breaker_open", "gateway_breaker_consecutive_failures",
		"gateway_breaker_skipped_targets_total", "gateway_breaker_trips_total"); err != nil {
		t.Error(err)
	}
}
