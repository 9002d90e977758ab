package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// benchLogs fills st with n request logs of ws-1 spread over the last
// 30 days.
func benchLogs(b *testing.B, st observe.Store, n int) {
	b.Helper()
	now := time.Now()
	batch := make([]*gateway.RequestLog, 0, 1000)
	for i := range n {
		status := 200
		if i%17 == 0 {
			status = 429
		}
		batch = append(batch, &gateway.RequestLog{ID: fmt.Sprintf("log-%08d", i),
			Time:    now.Add(-time.Duration(i) * 30 * 24 * time.Hour / time.Duration(n)),
			TraceID: fmt.Sprintf("trace-%d", i), WorkspaceID: "ws-1", KeyID: "key-ws1", Provider: "openai",
			Model: []string{"gpt-4o", "gpt-4o-mini"}[i%2], Method: "POST", Path: "/v1/chat/completions", Status: status,
			Latency: time.Duration(50+i%400) * time.Millisecond, PromptTokens: 20, CompletionTokens: int64(i % 50),
			TotalTokens: 20 + int64(i%50), Cost: 0.0001, CacheStatus: gateway.CacheStatus([]string{"MISS", "HIT"}[i%3/2]),
			Metadata: map[string]string{"team": fmt.Sprintf("t%d", i%5)}})
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.AddLogs(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// benchSignIn signs in to the console handler h with key and returns
// the session cookie.
func benchSignIn(b *testing.B, h http.Handler, key string) *http.Cookie {
	b.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/console/signin", nil))
	tok := csrf(page{body: w.Body.String()})
	r := httptest.NewRequest("POST", "/console/signin", strings.NewReader(url.Values{"key": {key}, "csrf": {tok}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(&http.Cookie{Name: preSessionCookie, Value: tok})
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	for _, ck := range w.Result().Cookies() {
		if ck.Name == sessionCookie && ck.Value != "" {
			return ck
		}
	}
	b.Fatalf("sign-in: %d %s", w.Code, w.Body)
	return nil
}

// benchPages renders each path of the console over a gateway whose log
// store is logs (holding its records already), as key, b.N times.
func benchPages(b *testing.B, logs observe.Store, key string, paths map[string]string) {
	st := memstore.New()
	st.AddAPIKey(gateway.APIKey{ID: "key-ws1", Digest: gateway.HashAPIKey(ws1Key), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	g := gateway.New(gateway.Options{Keys: st, Policies: st, VirtualKeys: st, Configs: st})
	admin.Mount(g, admin.Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st, Audit: &observe.Auditor{Store: st}})
	routes := observe.Mount(g, observe.Options{Logs: logs, Audit: &observe.Auditor{Store: st}})
	b.Cleanup(func() { routes.Close(); g.Close() })
	h := New(g, Options{})
	session := benchSignIn(b, h, key)
	for name, path := range paths {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				r := httptest.NewRequest("GET", path, nil)
				r.AddCookie(session)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
				}
				size = w.Body.Len()
			}
			b.ReportMetric(float64(size), "page-bytes")
		})
	}
}

// BenchmarkPages renders the overview (six analytics graphs) and the
// logs page (50 rows) over a memstore.Store full of request logs (10,000,
// its bound).
func BenchmarkPages(b *testing.B) {
	st := memstore.New()
	benchLogs(b, st, 10000)
	benchPages(b, st, ws1Key, map[string]string{
		"overview-24h": "/console/?range=24h",
		"overview-30d": "/console/?range=30d",
		"logs":         "/console/logs",
		"logs-trace":   "/console/logs?trace_id=trace-5000",
	})
}
