package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/metrics"
)

// A gateway serves its metrics on an admin address: the Collector is its
// LogSink (passing each record on to the sink that stores or prints it),
// and Handler serves it with the gateway's own counters and the Go
// runtime's and the process's series.
func Example() {
	sink := &gateway.LogBuffer{} // or the sink that stores or prints the records
	col := metrics.New(metrics.Options{Next: sink})
	gw := gateway.New(gateway.Options{LogSink: col})
	defer gw.Close()

	admin := http.NewServeMux()
	admin.Handle("GET /metrics", metrics.Handler(col, col.DroppedLogs(gw), col.AuthFailures(gw), col.Breakers(gw), metrics.Runtime()))
	_ = &http.Server{Addr: "127.0.0.1:9090", Handler: admin} // ListenAndServe

	// What a request leaves in /metrics.
	col.Log(&gateway.RequestLog{Provider: "openai", Model: "gpt-4o", Status: 200,
		CacheStatus: gateway.CacheMiss, Latency: 800 * time.Millisecond, PromptTokens: 12, CompletionTokens: 30})
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "gateway_requests_total") || strings.HasPrefix(line, "gateway_completion_tokens_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// gateway_completion_tokens_total{model="gpt-4o",provider="openai"} 30
	// gateway_requests_total{cache_status="MISS",model="gpt-4o",provider="openai",status_class="2xx"} 1
}
