package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/metrics"
)

const (
	memberKey = "gw-member-key"
	chatPath  = "/v1/chat/completions"
)

// scrape GETs url and returns the body, after checking the status and
// the media type of the text format.
func scrape(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d, Content-Type %q:\n%s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	return string(b)
}

// exposition is a scrape parsed line by line: the value of each sample
// line by its name and labels as written, and the TYPE of each family.
type exposition struct {
	samples map[string]string
	types   map[string]string
}

// parse reads text line by line: every family is headed by its HELP then
// its TYPE line, once, and every sample line belongs to the family last
// headed (its name, or name_bucket, _sum, _count for a histogram or a
// summary) and appears once.
func parse(t *testing.T, text string) exposition {
	t.Helper()
	e := exposition{samples: map[string]string{}, types: map[string]string{}}
	var family, lastBucket string
	var lastCount uint64
	infCounts := map[string]string{} // the +Inf bucket of each histogram series, by the key of its _count
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			family, _, _ = strings.Cut(rest, " ")
			if _, dup := e.types[family]; dup {
				t.Errorf("line %d: family %s headed twice", n, family)
			}
			if !sc.Scan() || !strings.HasPrefix(sc.Text(), "# TYPE "+family+" ") {
				t.Fatalf("line %d: HELP of %s not followed by its TYPE", n, family)
			}
			n++
			e.types[family] = strings.TrimPrefix(sc.Text(), "# TYPE "+family+" ")
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || family == "" {
			t.Fatalf("line %d: not a sample line after a HELP: %q", n, line)
		}
		key, value := line[:i], line[i+1:]
		name, labels, _ := strings.Cut(key, "{")
		if !sampleOf(name, family, e.types[family]) {
			t.Errorf("line %d: sample %s in family %s of type %s", n, name, family, e.types[family])
		}
		if name == family+"_bucket" { // cumulative, up to +Inf, which is the _count
			series, le, _ := strings.Cut(labels, `le="`)
			v, err := strconv.ParseUint(value, 10, 64)
			if err != nil || (series == lastBucket && v < lastCount) {
				t.Errorf("line %d: bucket %s after %d: not cumulative", n, value, lastCount)
			}
			lastBucket, lastCount = series, v
			if le == `+Inf"}` {
				infCounts[family+"_count{"+strings.TrimSuffix(series, ",")+"}"] = value
			}
		}
		if _, dup := e.samples[key]; dup {
			t.Errorf("line %d: %s written twice", n, key)
		}
		e.samples[key] = value
	}
	for key, inf := range infCounts {
		if got := e.samples[strings.Replace(key, "{}", "", 1)]; got != inf {
			t.Errorf("%s = %q, want the +Inf bucket's %s", key, got, inf)
		}
	}
	return e
}

// sampleOf reports whether a sample line of name belongs to family, of
// type typ.
func sampleOf(name, family, typ string) bool {
	switch typ {
	case "histogram":
		return name == family+"_bucket" || name == family+"_sum" || name == family+"_count"
	case "summary":
		return name == family || name == family+"_sum" || name == family+"_count"
	}
	return name == family
}

// newUpstream is a fake OpenAI answering a chat completion with usage.
func newUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"`+req.Model+`",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// TestHandlerScrape drives real requests through a gateway whose LogSink
// is a Collector and scrapes the Handler over HTTP: the requests, their
// tokens and durations, the request with a wrong key (no request log),
// the Go runtime's series; the next sink got every record.
func TestHandlerScrape(t *testing.T) {
	up := newUpstream(t)
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(memberKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-test", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	buf := &gateway.LogBuffer{}
	col := metrics.New(metrics.Options{Next: buf})
	gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, LogSink: col})
	defer gw.Close()
	srv := httptest.NewServer(gw)
	defer srv.Close()
	ms := httptest.NewServer(metrics.Handler(col, col.DroppedLogs(gw), col.AuthFailures(gw), col.Breakers(gw), metrics.Runtime()))
	defer ms.Close()

	for _, key := range []string{memberKey, memberKey, "gw-wrong-key"} {
		req, _ := http.NewRequest("POST", srv.URL+chatPath, strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set(gateway.HeaderAPIKey, key)
		req.Header.Set(gateway.HeaderVirtualKey, "openai")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	gw.Close() // hands every record to the Collector

	recs := buf.Query(gateway.LogFilter{})
	if len(recs) != 2 {
		t.Fatalf("the next sink got %d records, want 2", len(recs))
	}
	e := parse(t, scrape(t, ms.URL))
	cache := string(recs[0].CacheStatus)
	for key, want := range map[string]string{
		`gateway_requests_total{cache_status="` + cache + `",model="gpt-4o-mini",provider="openai",status_class="2xx"}`: "2",
		`gateway_prompt_tokens_total{model="gpt-4o-mini",provider="openai"}`:                                            "14",
		`gateway_completion_tokens_total{model="gpt-4o-mini",provider="openai"}`:                                        "6",
		`gateway_request_duration_seconds_bucket{provider="openai",status_class="2xx",le="+Inf"}`:                       "2",
		`gateway_request_duration_seconds_count{provider="openai",status_class="2xx"}`:                                  "2",
		`gateway_unauthenticated_requests_total{code="invalid_api_key"}`:                                                "1",
		`gateway_unauthenticated_requests_total{code="missing_api_key"}`:                                                "0",
		`gateway_unauthenticated_requests_total{code="key_store_error"}`:                                                "0",
		`gateway_request_logs_dropped_total`:                                                                            "0",
		`gateway_rate_limited_requests_total`:                                                                           "0",
		`go_gc_duration_seconds{quantile="0.25"}`:                                                                       "",
		`go_goroutines`:                "",
		`go_memstats_heap_inuse_bytes`: "",
	} {
		got, ok := e.samples[key]
		if !ok || (want != "" && got != want) {
			t.Errorf("%s = %q (present %v), want %q", key, got, ok, want)
		}
	}
	for fam, want := range map[string]string{
		"gateway_requests_total":           "counter",
		"gateway_request_duration_seconds": "histogram",
		"go_gc_duration_seconds":           "summary",
		"go_goroutines":                    "gauge",
	} {
		if e.types[fam] != want {
			t.Errorf("TYPE of %s = %q, want %q", fam, e.types[fam], want)
		}
	}
	cost := recs[0].Cost + recs[1].Cost
	if got, ok := e.samples[`gateway_cost_usd_total{model="gpt-4o-mini",provider="openai"}`]; ok != (cost > 0) ||
		(ok && got != strconv.FormatFloat(cost, 'g', -1, 64)) {
		t.Errorf("gateway_cost_usd_total = %q (present %v), want the records' cost %v, absent if zero", got, ok, cost)
	}
}

// TestSeries logs records built by hand, with every field a series reads,
// and checks the whole text output, sorted by family name: histograms
// cumulative with +Inf, the 499 class, the rate-limit and budget
// refusals, a series made on its first count.
func TestSeries(t *testing.T) {
	col := metrics.New(metrics.Options{
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
		{Provider: "openai", Model: "gpt-4o", Status: 499, CacheStatus: "STALE", Latency: 2 * time.Second,
			SkippedTargets: []string{"a", "b"}, TrippedTargets: []string{"c"}, Guardrails: "denied"},
	} {
		col.Log(&rec)
	}
	srv := httptest.NewServer(metrics.Handler(col))
	defer srv.Close()
	const want = `# HELP gw_breaker_skipped_targets_total Targets requests passed over because their circuit breakers were open (gateway.RequestLog.SkippedTargets).
# TYPE gw_breaker_skipped_targets_total counter
gw_breaker_skipped_targets_total 2
# HELP gw_breaker_trips_total Circuit breakers opened by requests' failed attempts (gateway.RequestLog.TrippedTargets).
# TYPE gw_breaker_trips_total counter
gw_breaker_trips_total 1
# HELP gw_budget_exhausted_requests_total Requests the gateway refused with 412 because a usage-limits policy's budget was spent.
# TYPE gw_budget_exhausted_requests_total counter
gw_budget_exhausted_requests_total 1
# HELP gw_completion_tokens_total Completion (output) tokens the providers reported, by provider and model.
# TYPE gw_completion_tokens_total counter
gw_completion_tokens_total{model="claude",provider="anthropic"} 20
gw_completion_tokens_total{model="gpt-4o",provider="openai"} 10
# HELP gw_cost_usd_total Price of the requests in US dollars, from the gateway's price table, by provider and model.
# TYPE gw_cost_usd_total counter
gw_cost_usd_total{model="claude",provider="anthropic"} 0.25
gw_cost_usd_total{model="gpt-4o",provider="openai"} 0.5
# HELP gw_guardrail_verdicts_total Requests whose config attached guardrails, by their outcome: passed, failed (answered 246) or denied (refused 446).
# TYPE gw_guardrail_verdicts_total counter
gw_guardrail_verdicts_total{verdict="denied"} 1
# HELP gw_prompt_tokens_total Prompt (input) tokens the providers reported, by provider and model.
# TYPE gw_prompt_tokens_total counter
gw_prompt_tokens_total{model="claude",provider="anthropic"} 100
gw_prompt_tokens_total{model="gpt-4o",provider="openai"} 20
# HELP gw_rate_limited_requests_total Requests the gateway refused with 429 under a rate-limits policy.
# TYPE gw_rate_limited_requests_total counter
gw_rate_limited_requests_total 1
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
# HELP gw_requests_total Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status.
# TYPE gw_requests_total counter
gw_requests_total{cache_status="",model="gpt-4o",provider="",status_class="4xx"} 1
gw_requests_total{cache_status="",model="gpt-4o",provider="openai",status_class="4xx"} 1
gw_requests_total{cache_status="DISABLED",model="claude",provider="anthropic",status_class="2xx"} 1
gw_requests_total{cache_status="DISABLED",model="gpt-4o",provider="openai",status_class="4xx"} 1
gw_requests_total{cache_status="HIT",model="gpt-4o",provider="openai",status_class="2xx"} 1
gw_requests_total{cache_status="MISS",model="gpt-4o",provider="openai",status_class="2xx"} 1
gw_requests_total{cache_status="other",model="gpt-4o",provider="openai",status_class="499"} 1
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
`
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(scrape(t, srv.URL), "\n")); diff != "" {
		t.Errorf("/metrics (-want +got):\n%s", diff)
	}
}

// TestModelCap: with MaxModels 2, the first two model names answered 2xx
// are label values; a third, and a failed request for a name not yet
// admitted, count as "other"; an admitted name stays one on failure.
func TestModelCap(t *testing.T) {
	col := metrics.New(metrics.Options{MaxModels: 2})
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
	want := map[string]float64{
		"/openai/4xx":      1,
		"m1/openai/2xx":    1,
		"m1/openai/4xx":    1,
		"m2/openai/2xx":    1,
		"other/openai/2xx": 1,
		"other/openai/5xx": 1,
	}
	if diff := cmp.Diff(want, requestCounts(t, col)); diff != "" {
		t.Errorf("requests_total (-want +got):\n%s", diff)
	}
}

// requestCounts gathers col and returns requests_total by
// model/provider/status_class.
func requestCounts(t *testing.T, col *metrics.Collector) map[string]float64 {
	t.Helper()
	fams, err := col.Gather(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.Name != "gateway_requests_total" {
			continue
		}
		if diff := cmp.Diff([]string{"cache_status", "model", "provider", "status_class"}, f.LabelNames); diff != "" {
			t.Fatalf("label names (-want +got):\n%s", diff)
		}
		for _, m := range f.Metrics {
			got[strings.Join(m.LabelValues[1:], "/")] += m.Value
		}
	}
	return got
}

// TestEscaping: label values and help texts are escaped as the text
// format requires, and values are spelled as Prometheus spells them.
func TestEscaping(t *testing.T) {
	col := metrics.New(metrics.Options{})
	col.Log(&gateway.RequestLog{Provider: "a\"b\\c\nd", Model: "m", Status: 200})
	odd := metrics.GathererFunc(func(context.Context) ([]metrics.Family, error) {
		return []metrics.Family{{Name: "odd", Help: "back\\slash \"quoted\"\nnext line", Type: metrics.Gauge, LabelNames: []string{"v"},
			Metrics: []metrics.Metric{
				{LabelValues: []string{"inf"}, Value: math.Inf(1)},
				{LabelValues: []string{"million"}, Value: 1e6},
				{LabelValues: []string{"nan"}, Value: math.NaN()},
				{LabelValues: []string{"neginf"}, Value: -math.Inf(1)},
				{LabelValues: []string{"tenth"}, Value: 0.1},
			}}}, nil
	})
	srv := httptest.NewServer(metrics.Handler(odd, col))
	defer srv.Close()
	body := scrape(t, srv.URL)
	for _, want := range []string{
		`gateway_requests_total{cache_status="",model="m",provider="a\"b\\c\nd",status_class="2xx"} 1` + "\n",
		"# HELP odd back\\\\slash \"quoted\"\\nnext line\n",
		"odd{v=\"inf\"} +Inf\n",
		"odd{v=\"million\"} 1e+06\n",
		"odd{v=\"nan\"} NaN\n",
		"odd{v=\"neginf\"} -Inf\n",
		"odd{v=\"tenth\"} 0.1\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

// TestHandlerGatherError: a Gatherer that fails makes the scrape a 500
// that names the error.
func TestHandlerGatherError(t *testing.T) {
	failing := metrics.GathererFunc(func(context.Context) ([]metrics.Family, error) {
		return nil, errors.New("breaker store unreachable")
	})
	srv := httptest.NewServer(metrics.Handler(metrics.New(metrics.Options{}), failing))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || !strings.Contains(string(b), "breaker store unreachable") || strings.Contains(string(b), "gateway_") {
		t.Errorf("status %d, body %q; want a 500 naming the error, and no metrics", res.StatusCode, b)
	}
}

// TestConcurrentLogAndScrape logs from several goroutines while others
// scrape over HTTP; every record is counted once in the end.
func TestConcurrentLogAndScrape(t *testing.T) {
	col := metrics.New(metrics.Options{})
	srv := httptest.NewServer(metrics.Handler(col, metrics.Runtime()))
	defer srv.Close()
	const loggers, perLogger = 4, 500
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range loggers {
		wg.Go(func() {
			recs := []*gateway.RequestLog{{Provider: "openai", Model: "m", Status: 200, TTFB: time.Millisecond, PromptTokens: 1},
				{Provider: "openai", Model: "m", Status: 500 + i}}
			for j := range perLogger {
				if j%2 == 0 {
					col.Log(recs[0])
				} else if err := col.LogBatch(recs[1:]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	var scrapes sync.WaitGroup
	for range 2 {
		scrapes.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					parse(t, scrape(t, srv.URL))
				}
			}
		})
	}
	wg.Wait()
	close(done)
	scrapes.Wait()
	e := parse(t, scrape(t, srv.URL))
	for key, want := range map[string]string{
		`gateway_requests_total{cache_status="",model="m",provider="openai",status_class="2xx"}`: "1000",
		`gateway_requests_total{cache_status="",model="m",provider="openai",status_class="5xx"}`: "1000",
		`gateway_prompt_tokens_total{model="m",provider="openai"}`:                               "1000",
		`gateway_upstream_time_to_first_byte_seconds_count{provider="openai"}`:                   "1000",
	} {
		if got := e.samples[key]; got != want {
			t.Errorf("%s = %q, want %s", key, got, want)
		}
	}
}
