package budget_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/observe"
)

// TestUsageLimitsCalendarReset: an exhausted entity of a weekly budget is
// admitted again from Monday 00:00 UTC, of a monthly one from the 1st.
func TestUsageLimitsCalendarReset(t *testing.T) {
	for _, c := range []struct{ reset, before, after string }{
		{"weekly", "2026-11-29T23:59:00Z", "2026-11-30T00:00:00Z"},
		{"monthly", "2026-11-30T23:59:00Z", "2026-12-01T00:00:00Z"},
	} {
		t.Run(c.reset, func(t *testing.T) {
			e := newULEnv(t, nil, nil)
			before, _ := time.Parse(time.RFC3339, c.before)
			after, _ := time.Parse(time.RFC3339, c.after)
			e.setTime(before.Add(-time.Hour))
			pid := e.create(`{"conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"tokens","credit_limit":50,"periodic_reset":"` + c.reset + `"}`)
			e.setTime(before)
			for _, want := range []int{200, 200, 412} {
				if code, b := e.complete(ulMember, 1); code != want {
					t.Fatalf("before the reset: %d %s, want %d", code, b, want)
				}
			}
			var got map[string]any
			e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &got)
			if got["next_usage_reset_at"] != c.after {
				t.Errorf("next_usage_reset_at = %v, want %s", got["next_usage_reset_at"], c.after)
			}
			e.setTime(after)
			if u, st := e.usageOf(pid, "key-ul-member"); u != 0 || st != "active" {
				t.Fatalf("new period: entity %v %s, want 0 active", u, st)
			}
			if code, b := e.complete(ulMember, 1); code != 200 {
				t.Fatalf("after the reset: %d %s", code, b)
			}
			if u, _ := e.usageOf(pid, "key-ul-member"); u != 40 {
				t.Fatalf("usage in the new period %v, want 40", u)
			}
			e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &got)
			if got["last_reset_at"] != c.after {
				t.Errorf("last_reset_at = %v, want %s", got["last_reset_at"], c.after)
			}
		})
	}
}

// TestUsageLimitsAlertOnce: crossing alert_threshold sets
// is_threshold_alerts_sent and writes one warning and one audit record,
// however many requests follow.
func TestUsageLimitsAlertOnce(t *testing.T) {
	e := newULEnv(t, nil, nil)
	pid := e.create(`{"name":"alerting","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"tokens","credit_limit":1000,"alert_threshold":100}`)
	for range 6 { // 40 … 240: crosses 100 at the 3rd
		if code, b := e.complete(ulMember, 1); code != 200 {
			t.Fatalf("%d %s", code, b)
		}
	}
	if n := strings.Count(e.errors(), "alert threshold reached"); n != 1 {
		t.Fatalf("%d alert warnings, want 1:\n%s", n, e.errors())
	}
	recs, _, err := e.store.AuditRecords(context.Background(), observe.AuditQuery{Action: "usage_limits_policies.alert_threshold"})
	if err != nil || len(recs) != 1 || recs[0].ResourceID != pid || recs[0].KeyID != "key-ul-member" || recs[0].WorkspaceID != "ws-1" {
		t.Fatalf("alert audit records %+v %v, want one of policy %s", recs, err, pid)
	}
	var got struct {
		Map map[string]budget.EntityUsage `json:"value_key_usage_map"`
	}
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid+"?include_usage=true", "", &got)
	if u := got.Map["key-ul-member"]; !u.IsThresholdAlertsSent || u.IsExhaustedAlertsSent || u.CurrentUsage != 240 {
		t.Fatalf("usage %+v", u)
	}
	// A reset re-arms the alert.
	e.want(200, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid, `{"reset_usage_for_value":"key-ul-member"}`, nil)
	for range 3 {
		e.complete(ulMember, 1)
	}
	if n := strings.Count(e.errors(), "alert threshold reached"); n != 2 {
		t.Fatalf("%d alert warnings after a reset, want 2", n)
	}
}

// TestUsageLimitsResets: reset_usage_for_value and the entity reset set
// an entity's usage to zero, so that it is admitted again.
func TestUsageLimitsResets(t *testing.T) {
	e := newULEnv(t, nil, nil)
	pid := e.create(perKeyTokens)
	exhaust := func() {
		t.Helper()
		for e.arrived.Load() < 1000 {
			code, b := e.complete(ulMember, 1)
			if code == 412 {
				return
			}
			if code != 200 {
				t.Fatalf("%d %s", code, b)
			}
		}
	}
	exhaust()
	e.want(200, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid, `{"reset_usage_for_value":"key-ul-member"}`, nil)
	if u, st := e.usageOf(pid, "key-ul-member"); u != 0 || st != "active" {
		t.Fatalf("after reset_usage_for_value: %v %s", u, st)
	}
	var got map[string]any
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &got)
	if got["last_reset_at"] == nil {
		t.Errorf("last_reset_at is null after a reset")
	}
	if code, _ := e.complete(ulMember, 1); code != 200 {
		t.Fatalf("after reset_usage_for_value: %d", code)
	}
	exhaust()
	es := e.entities(pid, "")
	if len(es) != 1 {
		t.Fatalf("entities %+v", es)
	}
	e.want(404, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid+"/entities/0123456789abcdef0123456789abcdef/reset", "", nil)
	e.want(404, ulAdmin2, "PUT", "/v1/policies/usage-limits/"+pid+"/entities/"+es[0].ID+"/reset", "", nil)
	e.want(403, ulReader, "PUT", "/v1/policies/usage-limits/"+pid+"/entities/"+es[0].ID+"/reset", "", nil)
	e.want(200, ulAdmin, "PUT", "/v1/policies/usage-limits/"+pid+"/entities/"+es[0].ID+"/reset", "", nil)
	if u, st := e.usageOf(pid, "key-ul-member"); u != 0 || st != "active" {
		t.Fatalf("after the entity reset: %v %s", u, st)
	}
	if code, _ := e.complete(ulMember, 1); code != 200 {
		t.Fatalf("after the entity reset: %d", code)
	}
}

// TestKeyUsageLimits: an API key's usage_limits and a workspace's are
// budgets of that key and that workspace, enforced like policies.
func TestKeyUsageLimits(t *testing.T) {
	e := newULEnv(t, nil, nil)
	// Keys and their usage_limits are made through the admin routes, which
	// test that; here they are stored as those routes store them.
	ctx := context.Background()
	limits := func(raw string) json.RawMessage {
		ul, err := gateway.UsageLimitsJSON(json.RawMessage(raw), false)
		if err != nil {
			t.Fatal(err)
		}
		return ul
	}
	k := struct{ ID, Key string }{"key-budgeted", "gw-ul-budgeted"}
	e.store.AddAPIKey(gateway.APIKey{ID: k.ID, Digest: gateway.HashAPIKey(k.Key), WorkspaceID: "ws-1", Scopes: []gateway.Scope{gateway.ScopeCompletionsWrite},
		UsageLimits: limits(`{"type":"tokens","credit_limit":50,"alert_threshold":30,"periodic_reset":"monthly"}`)})
	for _, want := range []int{200, 200, 412} {
		code, b := e.complete(k.Key, 1)
		if code != want {
			t.Fatalf("budgeted key: %d %s, want %d", code, b, want)
		}
		if code == 412 && !strings.Contains(string(b), "API key") {
			t.Fatalf("412 does not name the API key: %s", b)
		}
	}
	if code, _ := e.complete(ulMember, 1); code != 200 {
		t.Fatalf("another key: %d", code)
	}
	recs, _, _ := e.store.AuditRecords(context.Background(), observe.AuditQuery{Action: "api_keys.alert_threshold"})
	if len(recs) != 1 || recs[0].ResourceType != "api_keys" || recs[0].ResourceID != k.ID {
		t.Fatalf("alert audit records of the key: %+v", recs)
	}
	// Raised in the store: in force at once.
	old, err := e.store.APIKeyByID(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	raised := *old
	raised.UsageLimits = limits(`{"type":"tokens","credit_limit":500}`)
	if err := e.store.UpdateAPIKey(ctx, old, &raised); err != nil {
		t.Fatal(err)
	}
	if code, _ := e.complete(k.Key, 1); code != 200 {
		t.Fatalf("after raising the key's limit: %d", code)
	}

	// A workspace's usage_limits bound every key of it together.
	if err := e.store.CreateWorkspace(ctx, &gateway.Workspace{ID: "ws-2", Name: "two",
		UsageLimits: json.RawMessage(`[{"type":"tokens","credit_limit":60}]`)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{200, 200, 412} {
		if code, b := e.complete(ulAdmin2, 1); code != want {
			t.Fatalf("workspace budget: %d %s, want %d", code, b, want)
		}
	}
}

// TestUsageLimitsBadInput: every bad field or parameter is a 400 naming
// it.
func TestUsageLimitsBadInput(t *testing.T) {
	e := newULEnv(t, nil, nil)
	pid := e.create(perKeyTokens)
	base := `"conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}]`
	for _, c := range []struct{ method, path, body, param string }{
		{"POST", "", `{` + base + `,"type":"tokens","credit_limit":-1}`, "credit_limit"},
		{"POST", "", `{` + base + `,"type":"tokens","credit_limit":10,"alert_threshold":11}`, "alert_threshold"},
		{"POST", "", `{` + base + `,"type":"tokens","credit_limit":10,"alert_threshold":-1}`, "alert_threshold"},
		{"POST", "", `{` + base + `,"type":"tokens"}`, "credit_limit"},
		{"POST", "", `{` + base + `,"type":"requests","credit_limit":1}`, "type"},
		{"POST", "", `{` + base + `,"credit_limit":1}`, "type"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":1,"periodic_reset":"daily"}`, "periodic_reset"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":1,"periodic_reset_days":0}`, "periodic_reset_days"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":1,"periodic_reset_days":400}`, "periodic_reset_days"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":1,"periodic_reset":"weekly","periodic_reset_days":7}`, "periodic_reset_days"},
		{"POST", "", `{"conditions":[],"group_by":[{"key":"api_key"}],"type":"cost","credit_limit":1}`, "conditions"},
		{"POST", "", `{"conditions":[{"key":"api_key","value":"x"}],"group_by":[],"type":"cost","credit_limit":1}`, "group_by"},
		{"POST", "", `{"conditions":[{"key":"user","value":"x"}],"group_by":[{"key":"api_key"}],"type":"cost","credit_limit":1}`, "conditions[0].key"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":"10"}`, "credit_limit"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":1,"colour":"red"}`, "colour"},
		{"POST", "", `{` + base + `,"type":"cost","credit_limit":1,"name":"` + strings.Repeat("n", 256) + `"}`, "name"},
		{"PUT", "/" + pid, `{"credit_limit":-5}`, "credit_limit"},
		{"PUT", "/" + pid, `{"alert_threshold":500}`, "alert_threshold"},
		{"PUT", "/" + pid, `{"credit_limit":5,"alert_threshold":6}`, "alert_threshold"},
		{"PUT", "/" + pid, `{"periodic_reset":"hourly"}`, "periodic_reset"},
		{"PUT", "/" + pid, `{"reset_usage_for_value":5}`, "reset_usage_for_value"},
		{"PUT", "/" + pid, `{"type":"cost"}`, "type"},
		{"PUT", "/" + pid, `[]`, ""},
		{"GET", "?page_size=0", "", "page_size"},
		{"GET", "?page_size=101", "", "page_size"},
		{"GET", "?status=deleted", "", "status"},
		{"GET", "?type=requests", "", "type"},
		{"GET", "/" + pid + "?include_usage=yes", "", "include_usage"},
		{"GET", "/" + pid + "/entities?status=archived", "", "status"},
		{"GET", "/" + pid + "/entities?page_size=1000", "", "page_size"},
		{"GET", "/not-a-uuid", "", "policyUsageLimitsId"},
	} {
		code, b := e.call(ulAdmin, c.method, "/v1/policies/usage-limits"+c.path, c.body)
		var eb struct{ Error struct{ Param *string } }
		json.Unmarshal(b, &eb)
		param := ""
		if eb.Error.Param != nil {
			param = *eb.Error.Param
		}
		if code != 400 || param != c.param {
			t.Errorf("%s %s %s: %d param %q, want 400 naming %q: %s", c.method, c.path, c.body, code, param, c.param, b)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"UT", "/" + pid}, {"PATCH", "/" + pid}, {"POST", "/" + pid + "/entities"}, {"GET", "/" + pid + "/entities/x/reset"}, {"DELETE", ""},
	} {
		if code, b := e.call(ulAdmin, c.method, "/v1/policies/usage-limits"+c.path, ""); code != 405 {
			t.Errorf("%s %s: %d %s, want 405", c.method, c.path, code, b)
		}
	}
	var p map[string]any
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid, "", &p) // still active
	// usage_limits of workspaces (those of keys are checked by the admin
	// routes that take them: the admin package's tests).
	_, err := gateway.UsageLimitsJSON([]byte(`[{"type":"cost","credit_limit":1},{"type":"cost","credit_limit":2}]`), true)
	if e, ok := err.(*gateway.Error); !ok || e.Param != "usage_limits[1]" {
		t.Errorf("duplicate workspace usage limits: %v", err)
	}
}
