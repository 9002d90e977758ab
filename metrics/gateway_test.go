package metrics_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/metrics"
)

// TestBreakers: a target whose breaker a failure opened is served as open
// with its failures, and the trip and the skip that followed are counted
// from the request logs.
func TestBreakers(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer up.Close()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(memberKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "down", Provider: "openai", APIKey: "sk-test", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	col := metrics.New(metrics.Options{})
	gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, LogSink: col})
	defer gw.Close()
	srv := httptest.NewServer(metrics.Handler(col, col.Breakers(gw)))
	defer srv.Close()
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
	e := parse(t, scrape(t, srv.URL))
	for key, want := range map[string]string{
		`gateway_breaker_open{target="virtual_key:ws-1/down"}`:                 "1",
		`gateway_breaker_consecutive_failures{target="virtual_key:ws-1/down"}`: "1",
		`gateway_breaker_skipped_targets_total`:                                "1",
		`gateway_breaker_trips_total`:                                          "1",
	} {
		if got := e.samples[key]; got != want {
			t.Errorf("%s = %q, want %s", key, got, want)
		}
	}
	if e.types["gateway_breaker_open"] != "gauge" {
		t.Errorf("TYPE of gateway_breaker_open = %q, want gauge", e.types["gateway_breaker_open"])
	}
}

// TestWatchNilGateway: watching a nil gateway is a programmer's error,
// caught where the watch is made.
func TestWatchNilGateway(t *testing.T) {
	col := metrics.New(metrics.Options{})
	for name, watch := range map[string]func(*gateway.Gateway) metrics.Gatherer{
		"DroppedLogs": col.DroppedLogs, "AuthFailures": col.AuthFailures, "Breakers": col.Breakers,
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "metrics: ") {
					t.Errorf("%s(nil) panicked with %v, want a metrics: panic", name, r)
				}
			}()
			watch(nil)
		}()
	}
}

// batchRecorder is a BatchLogSink that counts the batches it gets and
// fails them with err.
type batchRecorder struct {
	batches, singles int
	err              error
}

func (b *batchRecorder) Log(*gateway.RequestLog) { b.singles++ }

func (b *batchRecorder) LogBatch(recs []*gateway.RequestLog) error {
	b.batches++
	return b.err
}

// TestLogBatch: a batch is counted record by record and reaches a Next
// that takes batches in one call, with its error; a Next that does not
// gets the records one by one.
func TestLogBatch(t *testing.T) {
	recs := []*gateway.RequestLog{{Provider: "openai", Model: "m", Status: 200}, {Provider: "openai", Model: "m", Status: 500}}
	next := &batchRecorder{err: errors.New("stdout closed")}
	col := metrics.New(metrics.Options{Next: next})
	if err := col.LogBatch(recs); !errors.Is(err, next.err) || next.batches != 1 || next.singles != 0 {
		t.Errorf("LogBatch = %v, Next got %d batches and %d records; want Next's error and one batch", err, next.batches, next.singles)
	}
	if got := requestCounts(t, col); got["m/openai/2xx"] != 1 || got["m/openai/5xx"] != 1 {
		t.Errorf("requests_total = %v, want one 2xx and one 5xx", got)
	}
	var buf gateway.LogBuffer
	if err := metrics.New(metrics.Options{Next: &buf}).LogBatch(recs); err != nil || len(buf.Query(gateway.LogFilter{})) != 2 {
		t.Errorf("a plain Next: LogBatch = %v, %d records, want 2", err, len(buf.Query(gateway.LogFilter{})))
	}
}

// TestRuntime: Runtime serves the Go runtime's series and, on Linux, the
// process's, with their types; the values that cannot be zero are not.
func TestRuntime(t *testing.T) {
	srv := httptest.NewServer(metrics.Handler(metrics.Runtime()))
	defer srv.Close()
	e := parse(t, scrape(t, srv.URL))
	want := map[string]string{
		"go_goroutines": "gauge", "go_threads": "gauge", "go_info": "gauge", "go_gc_duration_seconds": "summary",
		"go_memstats_alloc_bytes": "gauge", "go_memstats_heap_alloc_bytes": "gauge", "go_memstats_heap_inuse_bytes": "gauge",
		"go_memstats_sys_bytes": "gauge", "go_memstats_heap_objects": "gauge", "go_memstats_next_gc_bytes": "gauge",
	}
	if runtime.GOOS == "linux" {
		for _, n := range []string{"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
			"process_max_fds", "process_start_time_seconds"} {
			want[n] = "gauge"
		}
		want["process_cpu_seconds_total"] = "counter"
	}
	for name, typ := range want {
		if e.types[name] != typ {
			t.Errorf("TYPE of %s = %q, want %s", name, e.types[name], typ)
		}
		if v, ok := e.samples[name]; ok && (v == "0" || v == "NaN") && name != "process_cpu_seconds_total" {
			t.Errorf("%s = %s", name, v)
		}
	}
	if got := e.samples[`go_info{version="`+runtime.Version()+`"}`]; got != "1" {
		t.Errorf("go_info = %q, want 1", got)
	}
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		if _, ok := e.samples[`go_gc_duration_seconds{quantile="`+q+`"}`]; !ok {
			t.Errorf("go_gc_duration_seconds lacks quantile %s", q)
		}
	}
	if len(e.types) != len(want) {
		t.Errorf("%d families, want %d: %v", len(e.types), len(want), e.types)
	}
}
