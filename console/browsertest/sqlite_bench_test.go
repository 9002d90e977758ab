package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/console"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// BenchmarkPagesSQLite renders the console's overview (six analytics
// graphs) and logs page over a SQLite store of $CONSOLE_BENCH_LOGS
// request logs (default 1,000,000, spread over 30 days, in three
// workspaces), as an organisation key that sees them all. The database
// is $CONSOLE_BENCH_DB when set, filled once and reused by later runs;
// else a temporary file.
func BenchmarkPagesSQLite(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CONSOLE_BENCH_LOGS")); err == nil && v > 0 {
		n = v
	}
	path := os.Getenv("CONSOLE_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "logs.db")
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	fill(b, st, n)
	if err := st.CompactLogs(ctx); err != nil { // as the store does in the background, once a minute
		b.Fatal(err)
	}

	keys := memstore.New()
	const key = "gw-console-bench-org"
	keys.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(key), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	g := gateway.New(gateway.Options{Keys: keys})
	routes := observe.Mount(g, observe.Options{Logs: st})
	b.Cleanup(func() { routes.Close(); g.Close() })
	h := console.New(g, console.Options{})
	session := signInHandler(b, h, key)
	for _, p := range []struct{ name, path string }{
		{"overview-1h", "/console/?range=1h"},
		{"overview-24h", "/console/?range=24h"},
		{"overview-7d", "/console/?range=7d"},
		{"overview-30d", "/console/?range=30d"},
		{"logs", "/console/logs"},
		{"logs-trace", "/console/logs?trace_id=trace-500000"},
		{"logs-metadata", "/console/logs?meta_key=team&meta_value=t3"},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("GET", p.path, nil)
				r.AddCookie(session)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", p.path, w.Code, w.Body)
				}
			}
		})
	}
}

// fill adds request logs to st until it holds n, the newest now and the
// oldest 30 days ago, ids in time order.
func fill(b *testing.B, st *sqlstore.Store, n int) {
	b.Helper()
	ctx := context.Background()
	have, err := st.Logs(ctx, &observe.Query{Limit: 1, Start: time.Now().Add(-31 * 24 * time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	if len(have) > 0 && strings.HasPrefix(have[0].ID, fmt.Sprintf("bench-%d-", n)) && time.Since(have[0].Time) < time.Hour {
		return // filled by an earlier run, recently enough for the ranges
	}
	start := time.Now()
	step := 30 * 24 * time.Hour / time.Duration(n)
	batch := make([]*gateway.RequestLog, 0, 1000)
	for i := range n {
		t := start.Add(-time.Duration(n-1-i) * step)
		status := 200
		if i%17 == 0 {
			status = 429
		}
		batch = append(batch, &gateway.RequestLog{ID: fmt.Sprintf("bench-%d-%09d", n, i), Time: t,
			TraceID: fmt.Sprintf("trace-%d", i), WorkspaceID: fmt.Sprintf("ws-%d", i%3), KeyID: "key-org",
			Provider: "openai", Model: []string{"gpt-4o", "gpt-4o-mini"}[i%2], Method: "POST",
			Path: "/v1/chat/completions", Status: status, Latency: time.Duration(50+i%400) * time.Millisecond,
			PromptTokens: 20, CompletionTokens: int64(i % 50), TotalTokens: 20 + int64(i%50), Cost: 0.0001,
			CacheStatus: gateway.CacheStatus([]string{"MISS", "HIT"}[i%3/2]),
			Metadata:    map[string]string{"team": fmt.Sprintf("t%d", i%5)}})
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.AddLogs(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Logf("filled %d request logs in %s", n, time.Since(start).Round(time.Second))
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signInHandler signs in to the console handler h with key and returns
// the session cookie.
func signInHandler(b *testing.B, h http.Handler, key string) *http.Cookie {
	b.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/console/signin", nil))
	m := csrfField.FindStringSubmatch(w.Body.String())
	pre := w.Result().Cookies()
	if m == nil || len(pre) == 0 {
		b.Fatal("no sign-in form")
	}
	r := httptest.NewRequest("POST", "/console/signin", strings.NewReader(url.Values{"key": {key}, "csrf": {m[1]}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(pre[0])
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	for _, ck := range w.Result().Cookies() {
		if ck.Name == "gateway_console" && ck.Value != "" {
			return ck
		}
	}
	b.Fatalf("sign-in: %d", w.Code)
	return nil
}
