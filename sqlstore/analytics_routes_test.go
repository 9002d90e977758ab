package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// analyticsRoutePaths are the analytics routes, with "team" as the
// metadata key.
var analyticsRoutePaths = []string{
	"graphs/requests", "graphs/cost", "graphs/latency", "graphs/tokens", "graphs/users", "graphs/users/requests",
	"graphs/errors", "graphs/errors/rate", "graphs/errors/stacks", "graphs/errors/status-codes", "graphs/requests/rescued",
	"graphs/cache/hit-rate", "graphs/cache/latency", "graphs/feedbacks", "graphs/feedbacks/scores",
	"graphs/feedbacks/weighted", "graphs/feedbacks/ai-models", "summary/cache", "groups/users", "groups/ai-models",
	"groups/metadata/team",
}

// analyticsGateway is a gateway whose every store, logs and feedback
// included, is s, with an admin key of ws-1 (cpAdminKey) and its member
// (cpMemberKey).
func analyticsGateway(t *testing.T, s stores) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	for _, k := range []gateway.APIKey{
		{ID: "key-admin", Digest: gateway.HashAPIKey(cpAdminKey), WorkspaceID: "ws-1", Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now},
		{ID: "key-member", Digest: gateway.HashAPIKey(cpMemberKey), WorkspaceID: "ws-1", Role: gateway.RoleMember, CreatedAt: now, UpdatedAt: now},
	} {
		if err := s.CreateAPIKey(ctx, &k); err != nil {
			t.Fatal(err)
		}
	}
	g := gateway.New(gateway.Options{Keys: s, VirtualKeys: s, Configs: s, Policies: s, LogSinks: []gateway.LogSink{observe.Sink(s.(observe.Store))},
		CustomHostAllow: []string{"127.0.0.1"}, RetryBaseDelay: time.Millisecond})
	rs := observe.Mount(g, observe.Options{Logs: s.(observe.Store), Feedback: s.(observe.FeedbackStore)})
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); rs.Close(); g.Close() })
	return srv
}

// TestAnalyticsRoutesOnEveryStore sends traffic through a gateway over a
// memstore.Store, SQLite and Postgres (models, statuses, retries, cache hits,
// users, teams, traces, feedback), adds records spread over three days,
// and holds every analytics route, under several filters, to the answer
// of a gateway over a memstore.Store given the same records and feedback
// (whose routes the gateway package holds to GET /logs).
func TestAnalyticsRoutesOnEveryStore(t *testing.T) {
	var mu sync.Mutex
	tried := map[string]bool{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		p := 3
		for _, m := range req.Messages {
			p += len(m.Content)
		}
		mu.Lock()
		first := !tried[fmt.Sprint(req.Messages)]
		tried[fmt.Sprint(req.Messages)] = true
		mu.Unlock()
		switch {
		case req.Model == "m-bad":
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"message":"bad"}}`))
		case req.Model == "m-flaky" && first:
			w.WriteHeader(503)
			w.Write([]byte(`{"error":{"message":"busy"}}`))
		default:
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
				req.Model, p, p%5+1, p+p%5+1)
		}
	}))
	defer up.Close()
	end := time.Now().UTC().Add(time.Minute)
	window := func(d time.Duration) string {
		return "time_of_generation_min=" + url.QueryEscape(end.Add(-d).Format(time.RFC3339Nano)) +
			"&time_of_generation_max=" + url.QueryEscape(end.Format(time.RFC3339Nano))
	}
	filters := []string{
		window(time.Hour), window(30 * time.Hour), window(4 * 24 * time.Hour),
		window(4*24*time.Hour) + "&status_code=200,400",
		window(4*24*time.Hour) + "&metadata=" + url.QueryEscape(`{"team":"t1"}`),
		window(4*24*time.Hour) + "&ai_org_model=openai__gpt-4o&weighted_feedback_min=0",
		window(30*time.Hour) + "&trace_id=tr-1,tr-2&total_units_min=10",
	}
	eachStore(t, func(t *testing.T, s stores) {
		ctx := context.Background()
		srv := analyticsGateway(t, s)
		models := []string{"gpt-4o", "gpt-4o-mini", "m-bad", "m-flaky", "o3"}
		sent := 0
		for i := range 40 {
			cfg := `{"retry":{"attempts":2,"on_status_codes":[503]}}`
			if i%6 == 0 {
				cfg = `{"cache":{"mode":"simple"}}`
			}
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"m%d"}]}`, models[i%len(models)], i%7)
			doTo(t, srv.URL, nil, cpMemberKey, "POST", "/v1/chat/completions", body,
				gateway.HeaderProvider, "openai", gateway.HeaderCustomHost, up.URL+"/v1", "Authorization", "Bearer sk-test",
				gateway.HeaderConfig, cfg, gateway.HeaderTraceID, fmt.Sprintf("tr-%d", i%5),
				gateway.HeaderMetadata, fmt.Sprintf(`{"team":"t%d","_user":"u%d"}`, i%3, i%4))
			sent++
		}
		for _, fb := range []string{`{"trace_id":"tr-1","value":7,"weight":0.5}`, `{"trace_id":"tr-2","value":-4}`,
			`[{"trace_id":"tr-1","value":1},{"trace_id":"syn-3","value":10,"weight":0.25}]`} {
			if st, b := doTo(t, srv.URL, nil, cpMemberKey, "POST", "/v1/feedback", fb); st != 200 {
				t.Fatalf("POST /feedback %s: %d %s", fb, st, b)
			}
		}
		logs := s.(observe.Store)
		waitFor(t, 10*time.Second, "the request logs", func() bool {
			recs, _ := logs.Logs(ctx, &observe.Query{})
			return len(recs) >= sent
		})
		var spread []*gateway.RequestLog
		for i := range 80 {
			spread = append(spread, &gateway.RequestLog{ID: fmt.Sprintf("syn-%03d", i), WorkspaceID: "ws-1", KeyID: "key-member",
				Time: end.Add(-time.Duration(i)*67*time.Minute - 3*time.Second), TraceID: fmt.Sprintf("syn-%d", i%6),
				Provider: "openai", Model: models[i%len(models)], Status: []int{200, 500, 200, 429}[i%4],
				Latency: time.Duration(i*7919%300000) * time.Microsecond, PromptTokens: int64(i), CompletionTokens: 3,
				TotalTokens: int64(i + 3), Cost: float64(i) * 0.0007, CacheStatus: []gateway.CacheStatus{"", gateway.CacheHit, gateway.CacheMiss}[i%3],
				Attempts: i % 3, Rescued: i%4 == 0, FallbackIndex: i / 4 % 2,
				Metadata: map[string]string{"team": fmt.Sprintf("t%d", i%3), "_user": fmt.Sprintf("u%d", i%5)}})
		}
		if err := logs.AddLogs(ctx, spread); err != nil {
			t.Fatal(err)
		}
		// The reference: a memstore.Store with the same records and feedback.
		recs, err := logs.Logs(ctx, &observe.Query{})
		if err != nil {
			t.Fatal(err)
		}
		fbs, err := s.(observe.FeedbackStore).FeedbackOf(ctx, "", nil)
		if err != nil || len(fbs) != 4 {
			t.Fatalf("feedback stored: %d, %v; want 4", len(fbs), err)
		}
		ref := memstore.New()
		ptrs := make([]*gateway.RequestLog, len(recs))
		for i := range recs {
			ptrs[i] = &recs[i]
		}
		ref.AddLogs(ctx, ptrs)
		fptrs := make([]*observe.Feedback, len(fbs))
		for i := range fbs {
			fptrs[i] = &fbs[i]
		}
		ref.AddFeedback(ctx, fptrs)
		refSrv := analyticsGateway(t, ref)
		for _, f := range filters {
			for _, path := range analyticsRoutePaths {
				p := "/v1/analytics/" + path + "?" + f
				st, got := doTo(t, srv.URL, nil, cpAdminKey, "GET", p, "")
				refSt, want := doTo(t, refSrv.URL, nil, cpAdminKey, "GET", p, "")
				if st != 200 || refSt != 200 {
					t.Fatalf("GET %s: %d %s (reference: %d %s)", p, st, got, refSt, want)
				}
				var g, w any
				json.Unmarshal(got, &g)
				json.Unmarshal(want, &w)
				if !cmp.Equal(w, g, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) <= 0.011 })) {
					t.Errorf("GET %s:\n got %s\nwant %s", p, got, want)
				}
			}
		}
		// Some figures are not empty, so that the comparison says something.
		_, b := doTo(t, srv.URL, nil, cpAdminKey, "GET", "/v1/analytics/graphs/feedbacks?"+filters[2], "")
		if !strings.Contains(string(b), `"summary":{"total":`) || strings.Contains(string(b), `"summary":{"total":0}`) {
			t.Errorf("the feedback graph counts none: %s", b)
		}
	})
}
