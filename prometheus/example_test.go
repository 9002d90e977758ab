package prometheus_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	gwprom "github.com/modelgateway/gateway/prometheus"
)

// A gateway exports its metrics on an admin address: the Collector is its
// LogSink (passing each record on to the sink that stores or prints it),
// and the registry, which holds the Go runtime and process metrics too,
// is served by Handler.
func Example() {
	reg := gwprom.NewRegistry()
	sink := &gateway.LogBuffer{} // or the sink that stores or prints the records
	col := gwprom.NewCollector(gwprom.Options{Next: sink})
	reg.MustRegister(col)
	gw := gateway.New(gateway.Options{LogSink: col})
	defer gw.Close()
	reg.MustRegister(col.DroppedLogs(gw))

	admin := http.NewServeMux()
	admin.Handle("GET /metrics", gwprom.Handler(reg))
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
