package budget_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
)

// perKeyTokens is a tokens budget of 100 per API key of ws-1.
const perKeyTokens = `{"name":"tokens per key","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"tokens","credit_limit":100}`

// TestUsageLimitsLifecycle: create, read, list, update, archive, with
// the scopes and workspace isolation of the rate-limits routes.
func TestUsageLimitsLifecycle(t *testing.T) {
	e := newULEnv(t, nil, nil)
	pid := e.create(`{"name":"Monthly","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],` +
		`"type":"cost","credit_limit":10,"alert_threshold":8,"periodic_reset":"monthly"}`)

	var got map[string]any
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &got)
	for k, want := range map[string]any{"id": pid, "name": "Monthly", "type": "cost", "credit_limit": 10.0, "alert_threshold": 8.0,
		"periodic_reset": "monthly", "periodic_reset_days": nil, "status": "active", "workspace_id": "ws-1", "object": "policy_usage_limits"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	next, _ := time.Parse(time.RFC3339, got["next_usage_reset_at"].(string))
	if next.Day() != 1 || next.Hour() != 0 || !next.After(time.Now()) {
		t.Errorf("next_usage_reset_at = %v, want the next 1st of a month, 00:00 UTC", got["next_usage_reset_at"])
	}
	if _, ok := got["value_key_usage_map"]; ok {
		t.Errorf("value_key_usage_map without include_usage: %v", got)
	}

	var list struct {
		Object string
		Data   []map[string]any
		Total  int
	}
	e.want(200, ulReader, "GET", "/v1/policies/usage-limits", "", &list)
	if list.Object != "list" || list.Total != 1 || len(list.Data) != 1 || list.Data[0]["id"] != pid {
		t.Fatalf("list: %+v", list)
	}
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits?type=tokens", "", &list)
	if list.Total != 0 || len(list.Data) != 0 {
		t.Fatalf("list type=tokens: %+v", list)
	}

	// Another workspace neither sees nor changes it; a reader cannot write,
	// a member cannot read.
	e.want(404, ulAdmin2, "GET", "/v1/policies/usage-limits/"+pid, "", nil)
	e.want(404, ulAdmin2, "PUT", "/v1/policies/usage-limits/"+pid, `{"credit_limit":1}`, nil)
	e.want(404, ulAdmin2, "DELETE", "/v1/policies/usage-limits/"+pid, "", nil)
	e.want(404, ulAdmin2, "GET", "/v1/policies/usage-limits/"+pid+"/entities", "", nil)
	e.want(200, ulAdmin2, "GET", "/v1/policies/usage-limits", "", &list)
	if list.Total != 0 {
		t.Fatalf("ws-2 lists %+v", list)
	}
	e.want(403, ulReader, "PUT", "/v1/policies/usage-limits/"+pid, `{"credit_limit":1}`, nil)
	e.want(403, ulReader, "POST", "/v1/policies/usage-limits", perKeyTokens, nil)
	e.want(403, ulMember, "GET", "/v1/policies/usage-limits", "", nil)

	e.want(200, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid, `{"name":"Weekly","credit_limit":20,"alert_threshold":null,"periodic_reset":"weekly"}`, nil)
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &got)
	if got["name"] != "Weekly" || got["credit_limit"] != 20.0 || got["alert_threshold"] != nil || got["periodic_reset"] != "weekly" {
		t.Fatalf("after PUT: %v", got)
	}
	next, _ = time.Parse(time.RFC3339, got["next_usage_reset_at"].(string))
	if next.Weekday() != time.Monday || next.Hour() != 0 {
		t.Errorf("weekly next_usage_reset_at = %v, want a Monday 00:00 UTC", got["next_usage_reset_at"])
	}
	e.want(200, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid, `{"periodic_reset_days":30}`, nil)
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &got)
	if got["periodic_reset"] != nil || got["periodic_reset_days"] != 30.0 {
		t.Fatalf("after periodic_reset_days: %v", got)
	}

	// DELETE archives it: gone from the active list, found as archived,
	// no longer enforced.
	e.want(200, ulAdmin, "DELETE", "/v1/policies/usage-limits/"+pid, "", nil)
	e.want(404, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", nil)
	e.want(404, ulAdmin, "DELETE", "/v1/policies/usage-limits/"+pid, "", nil)
	e.want(404, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid, `{"credit_limit":1}`, nil)
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid+"?status=archived", "", &got)
	if got["status"] != "archived" {
		t.Fatalf("archived policy reads %v", got)
	}
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits?status=archived", "", &list)
	if list.Total != 1 {
		t.Fatalf("archived list: %+v", list)
	}
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits", "", &list)
	if list.Total != 0 {
		t.Fatalf("active list after archive: %+v", list)
	}
}

// TestUsageLimitsExhausted: once an entity has used its credit_limit its
// requests get the 412 budget_exhausted (logged with that code), other
// entities go on, and the entity reads as exhausted.
func TestUsageLimitsExhausted(t *testing.T) {
	e := newULEnv(t, nil, nil)
	pid := e.create(perKeyTokens)
	// A GET asks for no tokens: it reserves and costs nothing.
	for range 3 {
		if code, b := e.call(ulMember, "GET", "/v1/models", "", gateway.HeaderVirtualKey+": vk-up"); code != 200 {
			t.Fatalf("GET /models: %d %s", code, b)
		}
	}
	for i := range 3 { // 40, 80, 120: each admitted while below 100
		if code, b := e.complete(ulMember, 10); code != 200 {
			t.Fatalf("request %d: %d %s", i+1, code, b)
		}
	}
	code, b := e.complete(ulMember, 10)
	if code != 412 {
		t.Fatalf("4th request: %d %s, want 412", code, b)
	}
	var eb struct {
		Error struct {
			Message, Type string
			Code, Param   *string
		}
	}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Type != "usage_limit_exceeded" || eb.Error.Code == nil ||
		*eb.Error.Code != "budget_exhausted" || !strings.Contains(eb.Error.Message, "tokens per key") || !strings.Contains(string(b), `"param":null`) {
		t.Fatalf("412 body %s", b)
	}
	if n := e.arrived.Load(); n != 6 {
		t.Fatalf("provider got %d requests, want 6", n)
	}
	if u, st := e.usageOf(pid, "key-ul-member"); u != 120 || st != "exhausted" {
		t.Fatalf("entity: %v %s, want 120 exhausted", u, st)
	}
	// Another key of the workspace is another entity.
	if code, b := e.complete(ulAdmin, 10); code != 200 {
		t.Fatalf("other key: %d %s", code, b)
	}
	if es := e.entities(pid, "?status=exhausted"); len(es) != 1 || es[0].ValueKey != "key-ul-member" || es[0].ID == "" {
		t.Fatalf("exhausted entities: %+v", es)
	}
	if es := e.entities(pid, "?status=active"); len(es) != 1 || es[0].ValueKey != "key-ul-admin" || es[0].CurrentUsage != 40 {
		t.Fatalf("active entities: %+v", es)
	}
	if es := e.entities(pid, "?search=member"); len(es) != 1 {
		t.Fatalf("search entities: %+v", es)
	}
	var got struct {
		Map map[string]budget.EntityUsage `json:"value_key_usage_map"`
	}
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid+"?include_usage=true", "", &got)
	want := budget.EntityUsage{CurrentUsage: 120, Status: "exhausted", IsExhaustedAlertsSent: true}
	if got.Map["key-ul-member"] != want {
		t.Fatalf("value_key_usage_map = %+v", got.Map)
	}
	// Raising the limit re-opens the entity.
	e.want(200, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid, `{"credit_limit":200}`, nil)
	if code, b := e.complete(ulMember, 10); code != 200 {
		t.Fatalf("after raising credit_limit: %d %s", code, b)
	}
	e.gw.Close() // hands every queued record to the gateway.LogSink
	var logged bool
	for _, rec := range e.logs.Query(gateway.LogFilter{}) {
		logged = logged || rec.Status == 412 && rec.ErrorCode == budget.CodeExhausted
	}
	if !logged {
		t.Error("no request log with status 412 and error code budget_exhausted")
	}
}

// TestUsageLimitsCostBudget: a cost budget counts the price of the tokens
// the answers report.
func TestUsageLimitsCostBudget(t *testing.T) {
	e := newULEnv(t, nil, func(o *budget.Options) {
		o.Prices = gateway.PriceTable{"gpt-4o": {Input: 1e6, Output: 1e6}} // 1 USD per token
	})
	pid := e.create(`{"conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"workspace_id"}],"type":"cost","credit_limit":50}`)
	for i := range 2 {
		if code, b := e.complete(ulMember, 1); code != 200 {
			t.Fatalf("request %d: %d %s", i+1, code, b)
		}
	}
	if code, _ := e.complete(ulAdmin, 1); code != 412 {
		t.Fatalf("3rd request of the workspace: %d, want 412", code)
	}
	if u, st := e.usageOf(pid, "ws-1"); u != 80 || st != "exhausted" {
		t.Fatalf("workspace entity: %v %s, want 80 USD exhausted", u, st)
	}
}

// TestUsageLimitsConcurrent: 64 requests in flight at once overshoot the
// budget by at most one request's usage, since each admission counts the
// reservations of the requests before it.
func TestUsageLimitsConcurrent(t *testing.T) {
	testBudgetConcurrency(t, &budget.MemoryCounter{})
}

// testBudgetConcurrency runs 64 requests at once against a tokens budget
// of 1000 with counter: the provider holds every request it gets until
// all 64 are either with it or refused.
func testBudgetConcurrency(t *testing.T, counter budget.Counter) {
	e := newULEnv(t, counter, nil)
	e.hold = make(chan struct{})
	e.usage.Store(50)
	pid := e.create(`{"conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"workspace_id"}],"type":"tokens","credit_limit":1000}`)
	const n = 64
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	refused := make(chan struct{}, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := e.complete(ulMember, 40) // estimate: 12 prompt + 40 ≥ 50 used
			mu.Lock()
			codes[code]++
			mu.Unlock()
			if code != 200 {
				refused <- struct{}{}
			}
		}()
	}
	for got := 0; int(e.arrived.Load())+got < n; {
		select {
		case <-refused:
			got++
		case <-time.After(time.Millisecond):
		}
	}
	close(e.hold)
	wg.Wait()
	admitted := codes[200]
	if codes[200]+codes[412] != n {
		t.Fatalf("answers %v, want only 200 and 412", codes)
	}
	used, _ := e.usageOf(pid, "ws-1")
	if used != float64(admitted*50) {
		t.Fatalf("usage %v, want %d admitted × 50", used, admitted)
	}
	if used > 1000+50 || used < 1000 {
		t.Fatalf("usage %v after 64 concurrent requests: want from 1000 to 1050 (one request over at most)", used)
	}
	if code, _ := e.complete(ulMember, 40); code != 412 {
		t.Fatalf("after the budget: %d, want 412", code)
	}
}
