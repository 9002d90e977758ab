package observe_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// newAnalyticsEnv is the logs harness with Options.Feedback on its
// memstore.Store, an upstream that answers by model (m-bad: 400, m-err: 500,
// m-flaky: 503 on a prompt's first try, else 200 with usage growing with
// the prompt) and under /down always 500, and a virtual key vk-down
// pointing there. Its clock is the real one until the returned pointer
// holds a time.
func newAnalyticsEnv(t *testing.T) (*coreEnv, *atomic.Pointer[time.Time]) {
	t.Helper()
	var mu sync.Mutex
	tried := map[string]bool{}
	var up *coreUpstream
	up = newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/down") {
			w.WriteHeader(500)
			w.Write([]byte(`{"error":{"message":"down"}}`))
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		rs := up.received() // the harness read the body; requests come one at a time
		json.Unmarshal([]byte(rs[len(rs)-1].Body), &req)
		switch req.Model {
		case "m-bad":
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"message":"bad"}}`))
			return
		case "m-err":
			w.WriteHeader(500)
			w.Write([]byte(`{"error":{"message":"err"}}`))
			return
		case "m-flaky":
			mu.Lock()
			first := !tried[req.Messages[0].Content]
			tried[req.Messages[0].Content] = true
			mu.Unlock()
			if first {
				w.WriteHeader(503)
				w.Write([]byte(`{"error":{"message":"busy"}}`))
				return
			}
		}
		p := 3
		for _, m := range req.Messages {
			p += len(m.Content)
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			req.Model, p, p%7+1, p+p%7+1)
	})
	e := newCoreEnv(t, up, func(o *Options) {
		o.Logs = o.Keys.(*memstore.Store)
		o.Feedback = o.Keys.(*memstore.Store)
		o.RetryBaseDelay = time.Millisecond
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey("gw-logs-admin-2"), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-member-2", Digest: gateway.HashAPIKey("gw-logs-member-2"), WorkspaceID: "ws-2", Role: gateway.RoleMember})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey("gw-logs-org"), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-up-2", Provider: "openai", APIKey: "sk-stored-2", BaseURL: up.URL + "/v1", WorkspaceID: "ws-2"})
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-down", Provider: "openai", APIKey: "sk-stored-3", BaseURL: up.URL + "/down/v1", WorkspaceID: "ws-1"})
	clock := new(atomic.Pointer[time.Time])
	e.now = func() time.Time {
		if t := clock.Load(); t != nil {
			return *t
		}
		return time.Now()
	}
	return e, clock
}

// analyticsTraffic sends varied requests through e's gateway (models,
// statuses, retries and fallbacks that rescue, cache hits, users, teams,
// shared traces), adds records spread over three days to its store, and
// gives feedback to some traces. It returns how many records ws-1 holds.
func analyticsTraffic(t *testing.T, e *coreEnv) int {
	t.Helper()
	models := []string{"gpt-4o", "gpt-4o-mini", "m-bad", "m-err", "o3"}
	n := 0
	send := func(key string, i int, headers ...string) {
		model := models[i%len(models)]
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, strings.Repeat("x", i%13))
		hs := append([]string{gateway.HeaderAPIKey + ": " + key, gateway.HeaderTraceID + ": tr-" + fmt.Sprint(i%9),
			gateway.HeaderMetadata + fmt.Sprintf(`: {"_user":"u%d","team":"t%d"}`, i%4, i%3)}, headers...)
		if !slices.ContainsFunc(hs, func(h string) bool { return strings.HasPrefix(h, gateway.HeaderConfig) }) {
			hs = append(hs, gateway.HeaderVirtualKey+": vk-up")
		}
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(body), hs...)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		n++
	}
	for i := range 40 {
		send(coreKey, i)
	}
	// Retries that rescue: m-flaky fails each prompt's first try.
	for i := range 4 {
		body := `{"model":"m-flaky","messages":[{"role":"user","content":"hi-` + fmt.Sprint(i) + `"}]}`
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(body), gateway.HeaderAPIKey+": "+coreKey,
			gateway.HeaderTraceID+": flaky-"+fmt.Sprint(i), gateway.HeaderMetadata+`: {"team":"t9"}`,
			gateway.HeaderConfig+`: {"virtual_key":"vk-up","retry":{"attempts":2,"on_status_codes":[503]}}`)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		n++
	}
	// Fallbacks that rescue, and cache misses then hits.
	for i := range 6 {
		send(coreKey, i*5, gateway.HeaderConfig+`: {"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-down"},{"virtual_key":"vk-up"}]}`)
		send(coreKey, 1, gateway.HeaderConfig+`: {"virtual_key":"vk-up","cache":{"mode":"simple"}}`)
	}
	for i := range 5 {
		send("gw-logs-member-2", i, gateway.HeaderVirtualKey+": vk-up-2")
	}
	waitLogs(t, e.store, n)

	// Records of the last three days, written to the store directly.
	now := time.Now()
	var recs []*gateway.RequestLog
	for i := range 60 {
		recs = append(recs, &gateway.RequestLog{ID: fmt.Sprintf("synthetic-%03d", i), WorkspaceID: "ws-1", KeyID: "key-member",
			Time: now.Add(-time.Duration(i) * 71 * time.Minute), TraceID: "tr-" + fmt.Sprint(i%9), Provider: "openai",
			Model: models[i%len(models)], Method: "POST", Path: "/v1/chat/completions", Status: []int{200, 200, 429, 500, 200}[i%5],
			Latency: time.Duration(i*37%200) * time.Millisecond, PromptTokens: int64(i), CompletionTokens: int64(i % 5),
			TotalTokens: int64(i + i%5), Cost: float64(i) * 0.0013, CacheStatus: []gateway.CacheStatus{"", gateway.CacheHit, gateway.CacheMiss, gateway.CacheRefresh}[i%4],
			Attempts: i % 3, Rescued: i%5 == 0 && i%3 > 0, FallbackIndex: i % 2,
			Metadata: map[string]string{"_user": "u" + fmt.Sprint(i%6), "team": "t" + fmt.Sprint(i%3)}})
	}
	if err := e.store.AddLogs(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	// Feedback: shared traces, several per trace, and another workspace's.
	for i, fb := range []string{
		`{"trace_id":"tr-0","value":5}`, `{"trace_id":"tr-0","value":-3,"weight":0.5}`, `{"trace_id":"tr-1","value":10,"weight":0.25}`,
		`[{"trace_id":"tr-4","value":-10},{"trace_id":"flaky-1","value":2,"weight":1,"metadata":{"by":"qa"}}]`,
		`{"trace_id":"tr-7","value":0}`, `{"trace_id":"no-such-trace","value":7}`,
	} {
		res := e.do("POST", "/v1/feedback", strings.NewReader(fb), gateway.HeaderAPIKey+": "+coreKey)
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("feedback %d: %d %s", i, res.StatusCode, b)
		}
		res.Body.Close()
	}
	res := e.do("POST", "/v1/feedback", strings.NewReader(`{"trace_id":"tr-0","value":-9}`), gateway.HeaderAPIKey+": gw-logs-member-2")
	res.Body.Close()
	return n - 5 + len(recs)
}

// allLogs reads every page of GET /logs?query with key.
func allLogs(t *testing.T, e *coreEnv, key, query string) []observe.LogWire {
	t.Helper()
	var out []observe.LogWire
	after := ""
	for {
		var l logsList
		q := "/v1/logs?page_size=100&" + query
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		if st, b := e.getJSON(key, q, &l); st != 200 {
			t.Fatalf("GET %s: %d %s", q, st, b)
		}
		out = append(out, l.Data...)
		if !l.HasMore {
			return out
		}
		after = l.LastID
	}
}

// approxEqual compares decoded JSON: numbers within tol (latencies, which
// GET /logs gives to the millisecond only, within 1.01), the rest exactly.
func approxEqual(path string, want, got any, tol float64) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %v, want an object", path, got)}
		}
		var diffs []string
		for k := range g {
			if _, ok := w[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: unexpected", path, k))
			}
		}
		for k, wv := range w {
			t := tol
			if slices.Contains([]string{"avg_latency", "p50", "p90", "p99"}, k) ||
				k == "avg" && (strings.Contains(path, "latency")) {
				t = 1.01
			}
			if k == "cache_speedup" {
				continue // a ratio of latencies GET /logs rounds to the millisecond
			}
			diffs = append(diffs, approxEqual(path+"."+k, wv, g[k], t)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, approxEqual(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], tol)...)
		}
		return diffs
	case float64:
		if g, ok := got.(float64); !ok || math.Abs(g-w) > tol {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
		return nil
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
	}
	return nil
}

// TestAnalyticsMatchLogs holds every analytics route, under several
// filters, to the figures computed here from what GET /logs returns for
// the same filters and from the feedback given.
func TestAnalyticsMatchLogs(t *testing.T) {
	e, clock := newAnalyticsEnv(t)
	total := analyticsTraffic(t, e)
	fbs, _ := e.store.FeedbackOf(t.Context(), "", nil)
	now := time.Now()
	clock.Store(&now)
	win := func(d time.Duration) string {
		return "time_of_generation_min=" + url.QueryEscape(now.Add(-d).Format(time.RFC3339Nano)) +
			"&time_of_generation_max=" + url.QueryEscape(now.Add(time.Minute).Format(time.RFC3339Nano))
	}
	queries := []string{
		"", win(time.Hour), win(3 * 24 * time.Hour), win(30 * time.Hour),
		win(3*24*time.Hour) + "&status_code=200,500",
		win(3*24*time.Hour) + "&ai_org_model=openai__gpt-4o,openai__o3",
		win(3*24*time.Hour) + "&metadata=" + url.QueryEscape(`{"team":"t1"}`),
		win(3*24*time.Hour) + "&trace_id=tr-0,tr-4,flaky-1",
		win(3*24*time.Hour) + "&cost_min=1&total_units_max=40",
		win(3*24*time.Hour) + "&weighted_feedback_min=0",
		win(3*24*time.Hour) + "&weighted_feedback_max=1.5&weighted_feedback_min=-10",
		"api_key_ids=key-member&virtual_keys=vk-up",
	}
	if n := len(allLogs(t, e, coreAdminKey, win(4*24*time.Hour))); n != total {
		t.Fatalf("GET /logs holds %d records of ws-1, want %d", n, total)
	}
	for _, q := range queries {
		v, _ := url.ParseQuery(q)
		logsQ := url.Values{}
		for k, vs := range v {
			if !strings.HasPrefix(k, "weighted_feedback") {
				logsQ[k] = vs
			}
		}
		recs := allLogs(t, e, coreAdminKey, logsQ.Encode())
		ex := newExpected(t, v, recs, fbs, now)
		for _, path := range observe.AnalyticsPaths() {
			path = strings.Replace(path, "{metadataKey}", "team", 1)
			var got any
			if st, b := e.getJSON(coreAdminKey, "/v1"+path+"?"+q, &got); st != 200 {
				t.Errorf("GET %s?%s: %d %s", path, q, st, b)
				continue
			}
			for _, d := range approxEqual(path, ex.route(path), got, 0.011) {
				t.Errorf("?%s: %s", q, d)
			}
		}
	}
}
