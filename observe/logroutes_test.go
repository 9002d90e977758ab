package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// newLogsEnv is the core harness with Options.Logs on its memstore.Store,
// a second workspace's admin, member and virtual key, and an organisation
// key.
func newLogsEnv(t *testing.T) *coreEnv {
	t.Helper()
	e := newCoreEnv(t, newCoreUpstream(t, nil), func(o *Options) { o.Logs = o.Keys.(*memstore.Store) })
	e.store.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey("gw-logs-admin-2"), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-member-2", Digest: gateway.HashAPIKey("gw-logs-member-2"), WorkspaceID: "ws-2", Role: gateway.RoleMember})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey("gw-logs-org"), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-up-2", Provider: "openai", APIKey: "sk-stored-2", BaseURL: e.up.URL + "/v1", WorkspaceID: "ws-2"})
	return e
}

// logsList is the answer of GET /logs.
type logsList struct {
	Object  string            `json:"object"`
	Data    []observe.LogWire `json:"data"`
	HasMore bool              `json:"has_more"`
	LastID  string            `json:"last_id"`
}

// getJSON sends a GET with key and decodes a 200 answer into v, or
// returns the status and body of another.
func (e *coreEnv) getJSON(key, path string, v any) (int, string) {
	e.t.Helper()
	res := e.do("GET", path, nil, gateway.HeaderAPIKey+": "+key)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
	return res.StatusCode, string(b)
}

// waitLogs polls until the store holds n records.
func waitLogs(t *testing.T, s *memstore.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, _ := s.Logs(context.Background(), &observe.Query{})
		if len(recs) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d request logs stored, want %d", len(recs), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLogsStoredAndFiltered(t *testing.T) {
	e := newLogsEnv(t)
	chat := `{"model":"gpt-4o","messages":[]}`
	for i := range 5 {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(chat), gateway.HeaderAPIKey+": "+coreKey,
			gateway.HeaderVirtualKey+": vk-up", gateway.HeaderTraceID+": trace-"+fmt.Sprint(i%2),
			gateway.HeaderMetadata+`: {"team":"t`+fmt.Sprint(i%3)+`","env":"prod"}`)
		if res.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
	}
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(chat), gateway.HeaderAPIKey+": gw-logs-member-2", gateway.HeaderVirtualKey+": vk-up-2",
		gateway.HeaderTraceID+": trace-ws2")
	if res.StatusCode != 200 {
		t.Fatalf("ws-2 request: %d", res.StatusCode)
	}
	e.do("POST", "/v1/chat/completions", strings.NewReader(chat), gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": nope")
	waitLogs(t, e.store, 7)

	var l logsList
	if st, b := e.getJSON(coreAdminKey, "/v1/logs", &l); st != 200 {
		t.Fatalf("GET /logs: %d %s", st, b)
	}
	if l.Object != "list" || len(l.Data) != 6 || l.HasMore {
		t.Fatalf("ws-1's logs = %d records, has_more %v; want 6, false", len(l.Data), l.HasMore)
	}
	for i, rec := range l.Data {
		if rec.WorkspaceID != "ws-1" || rec.ID == "" || rec.Object != "log" || rec.CostCurrency != "USD" {
			t.Errorf("record %d = %+v", i, rec)
		}
		if i > 0 && rec.CreatedAt.After(l.Data[i-1].CreatedAt) {
			t.Errorf("record %d is newer than record %d: want newest first", i, i-1)
		}
	}

	for _, c := range []struct {
		query string
		want  int
	}{
		{"trace_id=trace-0", 3},
		{"trace_id=trace-0,trace-1", 5},
		{"metadata=" + url.QueryEscape(`{"team":"t0"}`), 2},
		{"metadata=" + url.QueryEscape(`{"team":"t0","env":"prod"}`), 2},
		{"metadata=" + url.QueryEscape(`{"team":"t0","env":"dev"}`), 0},
		{"status_code=200", 5},
		{"status_code=400,404", 1},
		{"api_key_ids=key-member", 6},
		{"api_key_ids=key-admin", 0},
		{"time_of_generation_min=" + url.QueryEscape(time.Now().Add(-time.Minute).Format(time.RFC3339)), 6},
		{"time_of_generation_max=" + url.QueryEscape(time.Now().Add(-time.Minute).Format(time.RFC3339)), 0},
		{"trace_id=trace-ws2", 0}, // another workspace's
		{"span_id=s1", 0},
	} {
		var l logsList
		if st, b := e.getJSON(coreAdminKey, "/v1/logs?"+c.query, &l); st != 200 {
			t.Errorf("GET /logs?%s: %d %s", c.query, st, b)
			continue
		}
		if len(l.Data) != c.want {
			t.Errorf("GET /logs?%s: %d records, want %d", c.query, len(l.Data), c.want)
		}
	}

	// Paging with after: every record once, in order.
	var seen []string
	after := ""
	for page := 0; ; page++ {
		var l logsList
		q := "/v1/logs?page_size=4"
		if after != "" {
			q += "&after=" + after
		}
		if st, b := e.getJSON(coreAdminKey, q, &l); st != 200 {
			t.Fatalf("page %d: %d %s", page, st, b)
		}
		for _, r := range l.Data {
			seen = append(seen, r.ID)
		}
		if !l.HasMore {
			break
		}
		after = l.LastID
	}
	if len(seen) != 6 {
		t.Errorf("paging saw %d records, want 6", len(seen))
	}

	// One record; another workspace's is 404, for its admin too.
	var one observe.LogWire
	if st, b := e.getJSON(coreAdminKey, "/v1/logs/"+seen[0], &one); st != 200 || one.ID != seen[0] {
		t.Fatalf("GET /logs/{id}: %d %s", st, b)
	}
	if st, _ := e.getJSON("gw-logs-admin-2", "/v1/logs/"+seen[0], nil); st != 404 {
		t.Errorf("ws-2's admin reading ws-1's record: %d, want 404", st)
	}
	var all logsList
	if st, _ := e.getJSON("gw-logs-org", "/v1/logs", &all); st != 200 || len(all.Data) != 7 {
		t.Errorf("the organisation key sees %d records, want 7", len(all.Data))
	}
	if st, _ := e.getJSON("gw-logs-org", "/v1/logs?workspace_id=ws-2", &all); st != 200 || len(all.Data) != 1 {
		t.Errorf("the organisation key's ws-2 filter: %d records, want 1", len(all.Data))
	}
	if st, _ := e.getJSON(coreKey, "/v1/logs", nil); st != 403 {
		t.Errorf("a member's GET /logs: %d, want 403", st)
	}
	if st, _ := e.getJSON(coreAdminKey, "/v1/logs?workspace_id=ws-2", nil); st != 403 {
		t.Errorf("ws-1's admin naming ws-2: %d, want 403", st)
	}
}

func TestLogsBadFilters(t *testing.T) {
	e := newLogsEnv(t)
	for _, c := range []struct{ query, param string }{
		{"time_of_generation_min=yesterday", "time_of_generation_min"},
		{"time_of_generation_max=2026-13-01T00:00:00Z", "time_of_generation_max"},
		{"time_of_generation_min=2026-02-02T00:00:00Z&time_of_generation_max=2026-02-01T00:00:00Z", "time_of_generation_max"},
		{"status_code=ok", "status_code"},
		{"status_code=200,99", "status_code"},
		{"status_code=200,,400", "status_code"},
		{"metadata=" + url.QueryEscape(`{"a":1}`), "metadata"},
		{"metadata=" + url.QueryEscape(`["a"]`), "metadata"},
		{"metadata=null", "metadata"},
		{"metadata=%7B", "metadata"},
		{"page_size=0", "page_size"},
		{"page_size=101", "page_size"},
		{"page_size=x", "page_size"},
		{"prompt_token_min=-1", "prompt_token_min"},
		{"completion_token_max=1.5", "completion_token_max"},
		{"total_units_min=x", "total_units_min"},
		{"cost_min=-0.5", "cost_min"},
		{"cost_max=NaN", "cost_max"},
		{"ai_org_model=gpt-4o", "ai_org_model"},
		{"trace_id=", "trace_id"},
		{"trace_id=a&trace_id=b", "trace_id"},
		{"after=", "after"},
	} {
		res := e.do("GET", "/v1/logs?"+c.query, nil, gateway.HeaderAPIKey+": "+coreAdminKey)
		if res.StatusCode != 400 {
			b, _ := io.ReadAll(res.Body)
			t.Errorf("GET /logs?%s: %d %s, want 400", c.query, res.StatusCode, b)
			continue
		}
		eb := decodeError(t, res)
		if eb.Error.Param == nil || *eb.Error.Param != c.param {
			t.Errorf("GET /logs?%s: param %v, want %s", c.query, eb.Error.Param, c.param)
		}
	}
}

func TestCustomLogs(t *testing.T) {
	e := newLogsEnv(t)
	post := func(key, body string) (int, string) {
		res := e.do("POST", "/v1/logs", strings.NewReader(body), gateway.HeaderAPIKey+": "+key, "Content-Type: application/json")
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	st, b := post(coreAdminKey, `{"request":{"url":"https://api.example.com/v1/chat/completions?key=sk-secret","method":"POST",
	  "headers":{"authorization":"Bearer sk-secret"},"body":{"model":"m1"}},
	  "response":{"status":200,"body":{"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}},"response_time":120},
	  "metadata":{"trace_id":"tr-custom","team":"x"}}`)
	if st != 200 {
		t.Fatalf("POST /logs: %d %s", st, b)
	}
	var created struct{ Data []struct{ ID string } }
	json.Unmarshal([]byte(b), &created)
	if len(created.Data) != 1 {
		t.Fatalf("POST /logs answer %s", b)
	}
	var rec observe.LogWire
	if st, b := e.getJSON(coreAdminKey, "/v1/logs/"+created.Data[0].ID, &rec); st != 200 {
		t.Fatalf("GET the custom log: %d %s", st, b)
	}
	if rec.TraceID != "tr-custom" || rec.AIModel != "m1" || rec.TotalUnits != 7 || rec.ResponseTime != 120 ||
		rec.RequestURL != "/v1/chat/completions" || rec.Metadata["team"] != "x" || rec.WorkspaceID != "ws-1" || rec.APIKeyID != "key-admin" {
		t.Errorf("custom log = %+v", rec)
	}
	_, all := e.getJSON(coreAdminKey, "/v1/logs", nil)
	if strings.Contains(all, "sk-secret") {
		t.Errorf("a custom log's secret came back: %s", all)
	}

	st, b = post(coreAdminKey, `[{"request":{"url":"/a","body":{}},"response":{"body":{}}},{"request":{"body":{}},"response":{"body":{}}}]`)
	if st != 400 || !strings.Contains(b, `"param":"[1].request.url"`) {
		t.Errorf("a custom log without url: %d %s", st, b)
	}
	for _, c := range []struct{ body, param string }{
		{`{"response":{"body":{}}}`, "request"},
		{`{"request":{"url":"/a"}}`, "response"},
		{`{"request":{"url":"/a"},"response":{"status":1000}}`, "response.status"},
		{`{"request":{"url":"/a"},"response":{"response_time":-1}}`, "response.response_time"},
		{`{"request":{"url":"/a"},"response":{},"metadata":{"n":1}}`, "metadata.n"},
		{`[]`, ""},
	} {
		if st, b := post(coreAdminKey, c.body); st != 400 || !strings.Contains(b, `"param":`+jsonString(c.param)) {
			t.Errorf("POST /logs %s: %d %s, want 400 naming %q", c.body, st, b, c.param)
		}
	}
	if st, _ := post(coreKey, `{"request":{"url":"/a"},"response":{}}`); st != 403 {
		t.Errorf("a member's POST /logs: %d, want 403", st)
	}
	var l logsList
	e.getJSON(coreAdminKey, "/v1/logs", &l)
	if len(l.Data) != 1 {
		t.Errorf("%d logs after refused posts, want the one accepted", len(l.Data))
	}
}

func jsonString(s string) string {
	if s == "" {
		return "null"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// stallStore is a Store whose AddLogs blocks until released.
type stallStore struct {
	*memstore.Store
	release chan struct{}
}

func (s *stallStore) AddLogs(ctx context.Context, recs []*gateway.RequestLog) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.AddLogs(ctx, recs)
}

// TestStalledLogStore: a log store that does not answer never holds up a
// response; the records past the queue are dropped and counted.
func TestStalledLogStore(t *testing.T) {
	up := newCoreUpstream(t, nil)
	st := &stallStore{Store: memstore.New(), release: make(chan struct{})}
	e := newCoreEnv(t, up, func(o *Options) { o.Logs = st; o.LogQueueSize = 8 })
	for i := range 40 {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": vk-up")
		if res.StatusCode != 200 {
			t.Fatalf("request %d while the log store stalls: %d", i, res.StatusCode)
		}
	}
	if d := e.gw.DroppedLogs(); d < 40-8-1-8 { // one batch may be in AddLogs, 8 queued, and the LogSink's queue keeps up
		t.Errorf("DroppedLogs = %d, want the records past the queue", d)
	}
	close(st.release)
}

// TestCustomLogModelClipped: the model of a custom log record (POST
// /v1/logs), which the gateway only records, is clipped to 256 bytes like
// a pass-through body's: it is a log field and a metrics label.
func TestCustomLogModelClipped(t *testing.T) {
	e := newLogsEnv(t)
	for _, body := range []string{
		`{"request":{"url":"/v1/x","body":{"model":"` + strings.Repeat("m", 1<<20) + `"}},"response":{"body":{}}}`,
		`{"request":{"url":"/v1/x","body":{}},"response":{"body":{"model":"` + strings.Repeat("m", 1<<20) + `"}}}`,
	} {
		res := e.do("POST", "/v1/logs", strings.NewReader(body), gateway.HeaderAPIKey+": "+coreAdminKey, "Content-Type: application/json")
		var created struct{ Data []struct{ ID string } }
		if err := json.NewDecoder(res.Body).Decode(&created); err != nil || res.StatusCode != 200 || len(created.Data) != 1 {
			t.Fatalf("POST /logs: %d %v", res.StatusCode, err)
		}
		var rec observe.LogWire
		if st, b := e.getJSON(coreAdminKey, "/v1/logs/"+created.Data[0].ID, &rec); st != 200 {
			t.Fatalf("GET the custom log: %d %s", st, b)
		}
		if len(rec.AIModel) != 256 {
			t.Errorf("the custom log's model has %d bytes, want %d", len(rec.AIModel), 256)
		}
	}
}
