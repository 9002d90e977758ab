package observe_test

import (
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// errParam is the error of a 400 answer.
type errParam struct {
	Error struct {
		Type, Code, Param, Message string
	} `json:"error"`
}

func TestAnalyticsBadInput(t *testing.T) {
	e, _ := newAnalyticsEnv(t)
	for _, c := range []struct{ path, query, param string }{
		{"graphs/requests", "time_of_generation_min=yesterday", "time_of_generation_min"},
		{"graphs/requests", "time_of_generation_max=2026-13-01T00:00:00Z", "time_of_generation_max"},
		{"graphs/cost", "time_of_generation_min=2026-02-02T00:00:00Z&time_of_generation_max=2026-02-01T00:00:00Z", "time_of_generation_max"},
		{"graphs/latency", "time_of_generation_min=2000-01-01T00:00:00Z&time_of_generation_max=2026-01-01T00:00:00Z", "time_of_generation_min"},
		{"graphs/errors", "status_code=ok", "status_code"},
		{"graphs/errors", "status_code=200,600", "status_code"},
		{"graphs/users", "metadata=" + url.QueryEscape(`{"a":1}`), "metadata"},
		{"graphs/users", "metadata=" + url.QueryEscape(`["a"]`), "metadata"},
		{"graphs/users", "metadata=null", "metadata"},
		{"groups/users", "page_size=0", "page_size"},
		{"groups/ai-models", "page_size=101", "page_size"},
		{"groups/metadata/team", "current_page=-1", "current_page"},
		{"graphs/tokens", "total_units_min=5&total_units_max=4", "total_units_max"},
		{"graphs/tokens", "prompt_token_min=-1", "prompt_token_min"},
		{"graphs/cost", "cost_min=2&cost_max=1", "cost_max"},
		{"graphs/feedbacks", "weighted_feedback_min=11", "weighted_feedback_min"},
		{"graphs/feedbacks", "weighted_feedback_max=x", "weighted_feedback_max"},
		{"graphs/feedbacks", "weighted_feedback_min=2&weighted_feedback_max=1", "weighted_feedback_max"},
		{"graphs/feedbacks", "weighted_feedback_min=1&weighted_feedback_min=2", "weighted_feedback_min"},
		{"graphs/requests", "ai_org_model=gpt-4o", "ai_org_model"},
		{"graphs/requests", "trace_id=", "trace_id"},
	} {
		var ep errParam
		st, b := e.getJSON(coreAdminKey, "/v1/analytics/"+c.path+"?"+c.query, nil)
		json.Unmarshal([]byte(b), &ep)
		if st != 400 || ep.Error.Param != c.param || ep.Error.Type != "invalid_request_error" {
			t.Errorf("GET %s?%s: %d %s; want 400 naming %s", c.path, c.query, st, b, c.param)
		}
	}
	long := strings.Repeat("k", 257)
	if st, b := e.getJSON(coreAdminKey, "/v1/analytics/groups/metadata/"+long, nil); st != 400 || !strings.Contains(b, "metadataKey") {
		t.Errorf("a 257-byte metadata key: %d %s, want 400 naming metadataKey", st, b)
	}
	if st, b := e.getJSON(coreAdminKey, "/v1/logs?weighted_feedback_min=1", nil); st != 400 || !strings.Contains(b, "weighted_feedback_min") {
		t.Errorf("GET /logs with weighted_feedback_min: %d %s, want 400 naming it", st, b)
	}
	res := e.do("POST", "/v1/analytics/graphs/requests", nil, gateway.HeaderAPIKey+": "+coreAdminKey)
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET" {
		t.Errorf("POST to a graph: %d, Allow %q; want 405, GET", res.StatusCode, res.Header.Get("Allow"))
	}
	if st, _ := e.getJSON(coreAdminKey, "/v1/analytics/graphs/nope", nil); st != 404 {
		t.Errorf("an unknown graph: %d, want 404", st)
	}
	// Without stored logs the routes are 404.
	bare := newCoreEnv(t, nil, nil)
	if st, _ := bare.getJSON(coreAdminKey, "/v1/analytics/graphs/requests", nil); st != 404 {
		t.Errorf("analytics without Options.Logs: %d, want 404", st)
	}
}

// TestAnalyticsIsolation checks that a workspace key counts only its
// workspace's records, an organisation key every workspace's or the one
// it names, and that scopes are enforced.
func TestAnalyticsIsolation(t *testing.T) {
	e, _ := newAnalyticsEnv(t)
	ws1 := analyticsTraffic(t, e)
	total := func(key, query string) (int, float64) {
		var g struct {
			Summary struct{ Total float64 } `json:"summary"`
		}
		st, _ := e.getJSON(key, "/v1/analytics/graphs/requests?time_of_generation_min="+
			url.QueryEscape(time.Now().Add(-4*24*time.Hour).Format(time.RFC3339))+query, &g)
		return st, g.Summary.Total
	}
	for _, c := range []struct {
		key, query string
		st         int
		want       float64
	}{
		{coreAdminKey, "", 200, float64(ws1)},
		{"gw-logs-admin-2", "", 200, 5},
		{"gw-logs-org", "", 200, float64(ws1 + 5)},
		{"gw-logs-org", "&workspace_id=ws-2", 200, 5},
		{coreAdminKey, "&workspace_id=ws-2", 403, 0},
		{coreKey, "", 403, 0}, // a member lacks analytics.read
	} {
		if st, n := total(c.key, c.query); st != c.st || n != c.want {
			t.Errorf("%s%s: %d, %v requests; want %d, %v", c.key, c.query, st, n, c.st, c.want)
		}
	}
	// ws-2's records of trace tr-0 count ws-2's feedback on it, not ws-1's.
	var fb struct {
		Summary struct{ Avg float64 } `json:"summary"`
	}
	e.getJSON("gw-logs-admin-2", "/v1/analytics/graphs/feedbacks/weighted", &fb)
	if fb.Summary.Avg != -9 {
		t.Errorf("ws-2's weighted feedback = %v, want -9 (its own, on tr-0)", fb.Summary.Avg)
	}
}

func TestFeedbackLifecycle(t *testing.T) {
	e, _ := newAnalyticsEnv(t)
	post := func(key, body string) (int, map[string]any) {
		res := e.do("POST", "/v1/feedback", strings.NewReader(body), gateway.HeaderAPIKey+": "+key)
		b, _ := io.ReadAll(res.Body)
		var v map[string]any
		json.Unmarshal(b, &v)
		return res.StatusCode, v
	}
	put := func(key, id, body string) (int, map[string]any) {
		res := e.do("PUT", "/v1/feedback/"+id, strings.NewReader(body), gateway.HeaderAPIKey+": "+key)
		b, _ := io.ReadAll(res.Body)
		var v map[string]any
		json.Unmarshal(b, &v)
		return res.StatusCode, v
	}
	st, v := post(coreKey, `{"trace_id":"t-1","value":4,"metadata":{"by":"me","n":1}}`)
	ids, _ := v["feedback_ids"].([]any)
	if st != 200 || v["status"] != "success" || len(ids) != 1 {
		t.Fatalf("POST /feedback: %d %v", st, v)
	}
	id := ids[0].(string)
	st, v = post(coreKey, `[{"trace_id":"t-2","value":-10,"weight":0},{"trace_id":"t-3","value":10,"weight":0.75}]`)
	if ids, _ := v["feedback_ids"].([]any); st != 200 || len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("POST of two: %d %v", st, v)
	}
	fbs, _ := e.store.FeedbackOf(t.Context(), "ws-1", []string{"t-1"})
	if len(fbs) != 1 || fbs[0].ID != id || fbs[0].Value != 4 || fbs[0].Weight != 1 || string(fbs[0].Metadata) != `{"by":"me","n":1}` {
		t.Fatalf("stored = %+v", fbs)
	}
	// Update: value and weight replaced, metadata kept when absent.
	if st, v := put(coreKey, id, `{"value":-2,"weight":0.5}`); st != 200 || v["feedback_ids"].([]any)[0] != id {
		t.Fatalf("PUT: %d %v", st, v)
	}
	fbs, _ = e.store.FeedbackOf(t.Context(), "ws-1", []string{"t-1"})
	if fbs[0].Value != -2 || fbs[0].Weight != 0.5 || string(fbs[0].Metadata) != `{"by":"me","n":1}` || !fbs[0].UpdatedAt.After(fbs[0].CreatedAt.Add(-1)) {
		t.Fatalf("after PUT = %+v", fbs[0])
	}
	if st, _ := put(coreKey, id, `{"value":1,"metadata":{"x":"y"}}`); st != 200 {
		t.Fatalf("PUT with metadata: %d", st)
	}
	fbs, _ = e.store.FeedbackOf(t.Context(), "ws-1", []string{"t-1"})
	if fbs[0].Value != 1 || fbs[0].Weight != 1 || string(fbs[0].Metadata) != `{"x":"y"}` {
		t.Fatalf("after the second PUT = %+v", fbs[0])
	}
	// Another workspace's feedback is 404; an unknown id too.
	if st, _ := put("gw-logs-member-2", id, `{"value":3}`); st != 404 {
		t.Errorf("ws-2 updating ws-1's feedback: %d, want 404", st)
	}
	if st, _ := put(coreKey, "00000000-0000-4000-8000-000000000000", `{"value":3}`); st != 404 {
		t.Errorf("an unknown id: %d, want 404", st)
	}
	if st, _ := put("gw-logs-org", id, `{"value":3}`); st != 200 {
		t.Errorf("the organisation key updating ws-1's feedback: %d, want 200", st)
	}
	// Bad bodies are 400s naming the field.
	for _, c := range []struct{ body, param string }{
		{`{"value":1}`, "trace_id"},
		{`{"trace_id":"","value":1}`, "trace_id"},
		{`{"trace_id":"a"}`, "value"},
		{`{"trace_id":"a","value":11}`, "value"},
		{`{"trace_id":"a","value":1.5}`, "value"},
		{`{"trace_id":"a","value":"1"}`, "value"},
		{`{"trace_id":"a","value":1,"weight":1.5}`, "weight"},
		{`{"trace_id":"a","value":1,"weight":-0.1}`, "weight"},
		{`{"trace_id":"a","value":1,"metadata":[1]}`, "metadata"},
		{`{"trace_id":"a","value":1,"colour":"red"}`, "colour"},
		{`[{"trace_id":"a","value":1},{"trace_id":"b","value":-11}]`, "[1].value"},
		{`[]`, ""},
		{`{"trace_id":"a","value":1,"workspace_id":"ws-2"}`, ""}, // 403
	} {
		st, v := post(coreKey, c.body)
		errObj, _ := v["error"].(map[string]any)
		if c.param == "" && strings.Contains(c.body, "ws-2") {
			if st != 403 {
				t.Errorf("POST %s: %d, want 403", c.body, st)
			}
			continue
		}
		if p, _ := errObj["param"].(string); st != 400 || p != c.param {
			t.Errorf("POST %s: %d %v, want 400 naming %q", c.body, st, v, c.param)
		}
	}
	if st, v := put(coreKey, id, `{"trace_id":"b","value":1}`); st != 400 || v["error"].(map[string]any)["param"] != "trace_id" {
		t.Errorf("PUT changing trace_id: %d %v, want 400 naming trace_id", st, v)
	}
	// Scopes and methods.
	e.store.AddAPIKey(gateway.APIKey{ID: "key-reader", Digest: gateway.HashAPIKey("gw-reader"), WorkspaceID: "ws-1", Scopes: []gateway.Scope{gateway.ScopeLogsRead}})
	if st, _ := post("gw-reader", `{"trace_id":"a","value":1}`); st != 403 {
		t.Errorf("a logs.read key posting feedback: %d, want 403", st)
	}
	if res := e.do("GET", "/v1/feedback", nil, gateway.HeaderAPIKey+": "+coreKey); res.StatusCode != 405 {
		t.Errorf("GET /feedback: %d, want 405", res.StatusCode)
	}
	// Feedback appears in the graphs: t-2 and t-3 have a record each.
	e.store.AddLogs(t.Context(), []*gateway.RequestLog{
		{ID: "r2", WorkspaceID: "ws-1", Time: time.Now(), TraceID: "t-2", Status: 200, Provider: "openai", Model: "gpt-4o"},
		{ID: "r3", WorkspaceID: "ws-1", Time: time.Now(), TraceID: "t-3", Status: 200, Provider: "openai", Model: "gpt-4o"},
	})
	var w struct {
		Summary struct{ Avg float64 } `json:"summary"`
	}
	if st, b := e.getJSON(coreAdminKey, "/v1/analytics/graphs/feedbacks/weighted", &w); st != 200 || w.Summary.Avg != 3.75 {
		t.Errorf("weighted feedback: %d %s, want avg (−10×0 + 10×0.75)/2 = 3.75", st, b)
	}
}

// logsOnly hides every method of its store but Store's: a store
// without Aggregator, whose analytics the gateway computes by reading
// the records.
type logsOnly struct{ observe.Store }

// TestAnalyticsWithoutAggregator holds the routes over a Store without
// Aggregator, with feedback kept by another store, to their answers
// over memstore.Store's own aggregation.
func TestAnalyticsWithoutAggregator(t *testing.T) {
	e, clock := newAnalyticsEnv(t)
	analyticsTraffic(t, e)
	now := time.Now()
	clock.Store(&now)
	fbStore := memstore.New()
	fbs, _ := e.store.FeedbackOf(t.Context(), "", nil)
	for i := range fbs {
		fbStore.AddFeedback(t.Context(), []*observe.Feedback{&fbs[i]})
	}
	other := newCoreEnv(t, nil, func(o *Options) {
		o.Keys = e.store
		o.Logs = logsOnly{e.store}
		o.Feedback = fbStore
	})
	other.now = func() time.Time { return now }
	for _, q := range []string{"", "time_of_generation_min=" + url.QueryEscape(now.Add(-3*24*time.Hour).Format(time.RFC3339)) +
		"&weighted_feedback_min=-2&status_code=200,500,429"} {
		for _, path := range observe.AnalyticsPaths() {
			path = "/v1" + strings.Replace(path, "{metadataKey}", "team", 1) + "?" + q
			var want, got any
			st, _ := e.getJSON(coreAdminKey, path, &want)
			gotSt, _ := other.getJSON(coreAdminKey, path, &got)
			if st != 200 || gotSt != st {
				t.Fatalf("GET %s: %d, and %d without Aggregator", path, st, gotSt)
			}
			for _, d := range approxEqual(path, want, got, 0.011) {
				t.Errorf("without Aggregator: %s", d)
			}
		}
	}
}
