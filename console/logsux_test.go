package console

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
)

// addLog stores rec in e's store as the gateway's log sink would.
func (e *env) addLog(rec gateway.RequestLog) {
	e.t.Helper()
	if err := e.store.AddLogs(context.Background(), []*gateway.RequestLog{&rec}); err != nil {
		e.t.Fatal(err)
	}
}

// row returns the table row of the logs page p that links to trace.
func row(t *testing.T, p page, trace string) string {
	t.Helper()
	for _, r := range strings.Split(p.body, "<tr>") {
		if strings.Contains(r, `trace_id=`+trace+`"`) {
			return r
		}
	}
	t.Fatalf("no row of trace %s in\n%s", trace, p.body)
	return ""
}

// TestLogsTableColumns: the logs table shows each record's API key,
// virtual key and metadata (each entry a link to the records that share
// it), "none" for an empty cache status, key or virtual key, and a
// sub-millisecond latency to the tenth of a millisecond.
func TestLogsTableColumns(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "cols", 2)
	now := time.Now()
	e.addLog(gateway.RequestLog{ID: "log-fast", Time: now, TraceID: "fast", WorkspaceID: "ws-1", Method: "POST",
		Path: "/v1/chat/completions", Status: 200, Provider: "openai", Model: "gpt-4o", Latency: 420 * time.Microsecond,
		TTFB: 380 * time.Microsecond})
	e.addLog(gateway.RequestLog{ID: "log-slow", Time: now, TraceID: "slow", WorkspaceID: "ws-1", Method: "POST",
		Path: "/v1/chat/completions", Status: 200, Latency: 1234567 * time.Microsecond, CacheStatus: gateway.CacheHit})
	b := e.signedIn(ws1Key)
	p := b.get("/console/logs")
	for _, h := range []string{">API key</th>", ">Virtual key</th>", ">Metadata</th>", ">Latency</th>"} {
		if !strings.Contains(p.body, h) {
			t.Errorf("logs table: no column %s", h)
		}
	}
	r := row(t, p, "cols-1")
	for _, want := range []string{`href="/console/logs?api_key_ids=key-ws1" title="Requests of API key key-ws1">key-ws1<`,
		`href="/console/logs?virtual_keys=vk-1" title="Requests through virtual key vk-1">vk-1<`,
		`href="/console/logs?meta_key=team&amp;meta_value=t1"`, "<td>DISABLED</td>"} {
		if !strings.Contains(r, want) {
			t.Errorf("row of a proxied request: no %s in\n%s", want, r)
		}
	}
	fast := row(t, p, "fast")
	if !strings.Contains(fast, ">0.4 ms<") || strings.Count(fast, "<td>none</td>") != 3 {
		t.Errorf("row of a record with no key, virtual key, cache or metadata, answered in 420 µs: want 0.4 ms and none thrice\n%s", fast)
	}
	if slow := row(t, p, "slow"); !strings.Contains(slow, ">1,235 ms<") || !strings.Contains(slow, "<td>HIT</td>") {
		t.Errorf("row of a 1.23 s cache hit:\n%s", slow)
	}
	// The metadata link finds the records that carry it.
	m := regexp.MustCompile(`href="(/console/logs\?meta_key=team&amp;meta_value=t1)"`).FindStringSubmatch(r)
	if m == nil {
		t.Fatal("no metadata link")
	}
	if q := b.get(strings.ReplaceAll(m[1], "&amp;", "&")); strings.Count(q.body, `href="/console/logs/`) != 1 {
		t.Errorf("records of team t1: want 1\n%s", q.body)
	}
	d := b.get("/console/logs/log-fast")
	if d.status != http.StatusOK {
		t.Fatalf("log page: %d", d.status)
	}
	for _, want := range []string{"<dd>0.4 ms (first byte 0.4 ms)</dd>", "<dt>Cache</dt><dd>none</dd>", "<dt>Config</dt><dd>none</dd>",
		"<dt>Virtual key</dt><dd>none</dd>", "<dt>API key id</dt><dd>none</dd>"} {
		if !strings.Contains(d.body, want) {
			t.Errorf("log page: no %s", want)
		}
	}
}

func TestMillis(t *testing.T) {
	for _, tc := range []struct {
		us, ms int64
		want   string
	}{{0, 0, "0 ms"}, {0, 12, "12 ms"}, {1, 0, "< 0.1 ms"}, {49, 0, "< 0.1 ms"}, {50, 0, "0.1 ms"}, {420, 0, "0.4 ms"},
		{3250, 3, "3.2 ms"}, {9_949, 9, "9.9 ms"}, {10_000, 10, "10 ms"}, {1_234_567, 1234, "1,235 ms"}} {
		if got := millis(tc.us, tc.ms); got != tc.want {
			t.Errorf("millis(%d µs, %d ms) = %q, want %q", tc.us, tc.ms, got, tc.want)
		}
	}
}

// TestModelFilter: the model filter is labelled Model and takes
// provider/model, as the table shows models; the console sends the API
// its own ai_org_model syntax, keeps links of that syntax working, and
// answers an entry without a provider with a 400 in its own words.
func TestModelFilter(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "mf", 2)
	e.addLog(gateway.RequestLog{ID: "log-other", Time: time.Now(), TraceID: "other-model", WorkspaceID: "ws-1", Method: "POST",
		Path: "/v1/chat/completions", Status: 200, Provider: "together-ai", Model: "meta-llama/Llama-3-8b"})
	b := e.signedIn(ws1Key)
	p := b.get("/console/logs")
	if !strings.Contains(p.body, `<label for="f-model">Model</label>`) || !strings.Contains(p.body, `name="model"`) ||
		!strings.Contains(p.body, `placeholder="openai/gpt-4o"`) ||
		// The API's syntax (ai_org_model=openai__gpt-4o), not any "__": the
		// page's random tokens (the CSRF token, base64url) may hold one.
		strings.Contains(p.body, "ai_org_model") || strings.Contains(p.body, "openai__") {
		t.Errorf("the model filter: want the label Model and a provider/model placeholder, no API syntax")
	}
	for _, c := range []struct{ query, want, not string }{
		{"model=openai/gpt-4o-mini", "mf-1", "other-model"},
		{"model=" + url.QueryEscape(" together-ai/meta-llama/Llama-3-8b , openai/gpt-4o-mini "), "other-model", ""},
		{"model=together-ai/meta-llama/Llama-3-8b", "other-model", "mf-0"},
		{"ai_org_model=openai__gpt-4o-mini", "mf-0", "other-model"},
	} {
		p := b.get("/console/logs?" + c.query)
		if p.status != http.StatusOK || !strings.Contains(p.body, "trace_id="+c.want+`"`) || c.not != "" && strings.Contains(p.body, "trace_id="+c.not+`"`) {
			t.Errorf("logs of %s: %d; want %s and not %q", c.query, p.status, c.want, c.not)
		}
	}
	for _, path := range []string{"/console/logs?model=gpt-4o", "/console/?model=gpt-4o"} {
		p := b.get(path)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Model: write each model as provider/model") ||
			strings.Contains(p.body, "ai_org_model") {
			t.Errorf("GET %s: %d; want 400 naming Model in the page's words\n%s", path, p.status, p.body)
		}
	}
	// Links that keep the filters (the next page, the ranges) keep it as
	// written.
	if p := b.get("/console/?model=openai/gpt-4o-mini"); !strings.Contains(p.body, "model=openai%2Fgpt-4o-mini") {
		t.Errorf("overview: the range links lose the model filter")
	}
}

// TestLogsFiltersFold: the logs' filters are in a details element, open
// when a filter is set (the style sheet folds it on a phone only; the
// browser tests check the layout).
func TestLogsFiltersFold(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	for _, c := range []struct {
		query string
		open  bool
	}{{"", false}, {"?trace_id=x", true}, {"?range=1h", true}, {"?meta_key=team&meta_value=t1", true}, {"?model=openai/gpt-4o", true}} {
		p := b.get("/console/logs" + c.query)
		m := regexp.MustCompile(`<details class="filterbox narrow-only"( open)?>\s*<summary>Filters</summary>\s*<form class="filters"`).FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("logs%s: the filters are not in a details element", c.query)
		}
		if open := m[1] != ""; open != c.open {
			t.Errorf("logs%s: filters open %v, want %v", c.query, open, c.open)
		}
	}
}
