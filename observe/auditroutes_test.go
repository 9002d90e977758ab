package observe_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// The audit log's reading route, over writes of the gateway's own
// control routes.

// Keys of the audit tests, besides the core harness's member and admin
// keys (workspace ws-1).
const (
	wsOrg     = "gw-ws-org-all"    // organisation key, every scope
	wsOrgRead = "gw-ws-org-read"   // organisation key, workspaces.read only
	wsOrgNone = "gw-ws-org-none"   // organisation key, api_keys.read only
	wsAdmin2  = "gw-ws-admin-ws-2" // admin of ws-2
)

const auditPolicy = `{"name":"100 RPM","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpm","value":100}`

// newWSEnv is the core harness with Options.Workspaces and Options.Audit
// set (unless bare) and the keys above.
func newWSEnv(t *testing.T, bare bool) *coreEnv {
	t.Helper()
	if bare {
		return newWSEnvAudit(t, nil)
	}
	return newWSEnvAudit(t, func(s observe.AuditStore) observe.AuditStore { return s })
}

// newWSEnvAudit is newWSEnv with the audit store audit makes of the
// harness's (none when audit is nil).
func newWSEnvAudit(t *testing.T, audit func(observe.AuditStore) observe.AuditStore) *coreEnv {
	t.Helper()
	e := newCoreEnv(t, nil, func(o *Options) {
		if audit != nil {
			o.Workspaces = o.Keys.(*memstore.Store)
			o.Audit = audit(o.Keys.(*memstore.Store))
		}
	})
	all := gateway.RoleScopes(gateway.RoleAdmin)
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(wsOrg), Type: gateway.KeyOrganisation, Scopes: all})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org-read", Digest: gateway.HashAPIKey(wsOrgRead), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopeWorkspacesRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org-none", Digest: gateway.HashAPIKey(wsOrgNone), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopeAPIKeysRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey(wsAdmin2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	return e
}

// tickAudit stamps each record it stores with the time now gives.
type tickAudit struct {
	observe.AuditStore
	now func() time.Time
}

func (a tickAudit) AddAuditRecord(ctx context.Context, rec *observe.AuditRecord) error {
	rec.Time = a.now()
	return a.AuditStore.AddAuditRecord(ctx, rec)
}

// cpWant is cp that fails the test unless the answer is status, and
// decodes the body into v when v is not nil.
func cpWant(e *coreEnv, status int, key, method, path, body string, v any) {
	e.t.Helper()
	got, b := cp(e, key, method, path, body)
	if got != status {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, got, b, status)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: body %s: %v", method, path, b, err)
		}
	}
}

// cpErr checks that a request is refused with status and the error's
// param and code.
func cpErr(e *coreEnv, status int, key, method, path, body, param, code string) {
	e.t.Helper()
	got, b := cp(e, key, method, path, body)
	if got != status {
		e.t.Fatalf("%s %s %s = %d %s, want %d", method, path, body, got, b, status)
	}
	var eb coreErrBody
	if err := json.Unmarshal(b, &eb); err != nil {
		e.t.Fatalf("error body %s: %v", b, err)
	}
	if deref(eb.Error.Param) != param || deref(eb.Error.Code) != code {
		e.t.Errorf("%s %s %s: param %s, code %s, want %s, %s (%s)", method, path, body,
			deref(eb.Error.Param), deref(eb.Error.Code), param, code, eb.Error.Message)
	}
}

func TestAuditRecordsWrites(t *testing.T) {
	e := newWSEnv(t, false)
	before := time.Now().UTC()

	// A policy create, an API key create and a failed write, each with
	// a trace id of its own.
	var pol struct{ ID string }
	status, b := cp(e, coreAdminKey, "POST", "/v1/policies/rate-limits?note=x", auditPolicy, "x-gateway-trace-id: trace-policy")
	if status != 200 || json.Unmarshal(b, &pol) != nil {
		t.Fatalf("policy create = %d %s", status, b)
	}
	var key struct{ ID, Key string }
	status, b = cp(e, coreAdminKey, "POST", "/v1/api-keys/workspace/service",
		`{"name":"ci","scopes":["completions.write"]}`, "x-gateway-trace-id: trace-key")
	if status != 200 || json.Unmarshal(b, &key) != nil || !strings.HasPrefix(key.Key, "gw-") {
		t.Fatalf("key create = %d %s", status, b)
	}
	status, _ = cp(e, coreAdminKey, "PUT", "/v1/api-keys/"+key.ID, `{"scopes":["nope"]}`, "x-gateway-trace-id: trace-bad")
	if status != 400 {
		t.Fatalf("bad update = %d", status)
	}
	// Reads are not audited.
	cpWant(e, 200, coreAdminKey, "GET", "/v1/api-keys", "", nil)
	cpWant(e, 200, coreAdminKey, "GET", "/v1/api-keys/"+key.ID, "", nil)
	cpWant(e, 200, coreAdminKey, "GET", "/v1/policies/rate-limits", "", nil)
	after := time.Now().UTC()

	l, raw := auditLogs(e, coreAdminKey, "")
	if strings.Contains(raw, key.Key) || strings.Contains(raw, key.Key[3:]) {
		t.Fatalf("the audit log holds the created key's plaintext: %s", raw)
	}
	if strings.Contains(raw, "note=x") || strings.Contains(raw, "100 RPM") {
		t.Fatalf("the audit log holds a query or body: %s", raw)
	}
	want := []auditWireT{ // newest first
		{Method: "PUT", URI: "/v1/api-keys/" + key.ID, RequestID: "trace-bad", Status: 400,
			ResourceType: "api_keys", ResourceID: key.ID, Action: "api_keys.update"},
		{Method: "POST", URI: "/v1/api-keys/workspace/service", RequestID: "trace-key", Status: 200,
			ResourceType: "api_keys", ResourceID: key.ID, Action: "api_keys.create"},
		{Method: "POST", URI: "/v1/policies/rate-limits", RequestID: "trace-policy", Status: 200,
			ResourceType: "rate_limits_policies", ResourceID: pol.ID, Action: "rate_limits_policies.create"},
	}
	if l.Total != len(want) || len(l.Records) != len(want) {
		t.Fatalf("audit log = %s, want %d records", raw, len(want))
	}
	for i, w := range want {
		g := l.Records[i]
		if g.Timestamp.Before(before) || g.Timestamp.After(after) {
			t.Errorf("record %d timestamp %v not in [%v, %v]", i, g.Timestamp, before, after)
		}
		w.Timestamp, w.UserID, w.UserType, w.APIKeyID, w.WorkspaceID, w.ClientIP =
			g.Timestamp, "key-admin", "api_key", "key-admin", "ws-1", "127.0.0.1"
		if g != w {
			t.Errorf("record %d = %+v\nwant %+v", i, g, w)
		}
	}

	// Rotation and deletion are actions of their own; a missing scope is
	// recorded too.
	cpWant(e, 200, coreAdminKey, "POST", "/v1/api-keys/"+key.ID+"/rotate", "", nil)
	cpWant(e, 200, coreAdminKey, "DELETE", "/v1/api-keys/"+key.ID, "", nil)
	cpErr(e, 403, coreKey, "DELETE", "/v1/policies/rate-limits/"+pol.ID, "", "<null>", "permission_denied")
	l, _ = auditLogs(e, coreAdminKey, "?page_size=3")
	var got []string
	for _, r := range l.Records {
		got = append(got, r.Action+" "+r.ResourceID+" "+r.UserID)
	}
	if w := []string{"rate_limits_policies.delete " + pol.ID + " key-member", "api_keys.delete " + key.ID + " key-admin",
		"api_keys.rotate " + key.ID + " key-admin"}; strings.Join(got, "|") != strings.Join(w, "|") || l.Total != 6 {
		t.Errorf("records %q (total %d), want %q (total 6)", got, l.Total, w)
	}
}

func TestAuditWorkspaces(t *testing.T) {
	e := newWSEnv(t, false)
	var made struct{ ID string }
	cpWant(e, 200, wsOrg, "POST", "/v1/admin/workspaces", `{"name":"Green"}`, &made)
	cpWant(e, 200, wsOrg, "PUT", "/v1/admin/workspaces/"+made.ID, `{"name":"Greener"}`, nil)
	cpWant(e, 200, wsOrg, "GET", "/v1/admin/workspaces/"+made.ID, "", nil)
	cpErr(e, 403, coreAdminKey, "POST", "/v1/admin/workspaces", `{"name":"x"}`, "<null>", "permission_denied")
	l, _ := auditLogs(e, wsOrg, "?resource_type=workspaces")
	var got []string
	for _, r := range l.Records {
		got = append(got, r.Action+" "+r.ResourceID+" "+r.WorkspaceID+" "+r.UserID)
	}
	want := []string{"workspaces.create  ws-1 key-admin", "workspaces.update " + made.ID + " " + made.ID + " key-org",
		"workspaces.create " + made.ID + " " + made.ID + " key-org"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("records %q, want %q", got, want)
	}
}

func TestAuditFiltersAndIsolation(t *testing.T) {
	// The records are stamped a minute apart from 2030-01-01 00:00 on.
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	e := newWSEnvAudit(t, func(s observe.AuditStore) observe.AuditStore {
		return tickAudit{s, func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Minute) }}
	})

	var p1, p2 struct{ ID string }
	cpWant(e, 200, coreAdminKey, "POST", "/v1/policies/rate-limits", auditPolicy, &p1) // ws-1, 00:01
	ws2Policy := strings.Replace(auditPolicy, `"ws-1"`, `"ws-2"`, 1)
	cpWant(e, 200, wsAdmin2, "POST", "/v1/policies/rate-limits", ws2Policy, &p2) // ws-2, 00:02
	cpErr(e, 400, wsAdmin2, "PUT", "/v1/policies/rate-limits/"+p2.ID, `{"value":-1}`, "value", "invalid_parameter")
	cpWant(e, 200, wsOrg, "POST", "/v1/api-keys/workspace/service?workspace_id=ws-2",
		`{"name":"k","workspace_id":"ws-2","scopes":["completions.write"]}`, nil)
	cpWant(e, 200, wsOrg, "POST", "/v1/admin/workspaces", `{"name":"Org wide","slug":"ws-3"}`, nil)

	ids := func(l auditListT) string {
		var s []string
		for _, r := range l.Records {
			s = append(s, r.Action+"@"+r.WorkspaceID)
		}
		return strings.Join(s, ",")
	}
	all, _ := auditLogs(e, wsOrg, "")
	if len(all.Records) != 5 {
		t.Fatalf("%d records, want 5", len(all.Records))
	}
	t5 := url.QueryEscape(all.Records[3].Timestamp.Format(time.RFC3339)) // the ws-2 policy's create
	for _, c := range []struct {
		key, query, want string
		total            int
	}{
		{wsOrg, "", "workspaces.create@ws-3,api_keys.create@ws-2,rate_limits_policies.update@ws-2,rate_limits_policies.create@ws-2,rate_limits_policies.create@ws-1", 5},
		{coreAdminKey, "", "rate_limits_policies.create@ws-1", 1},
		// An organisation key's write in ws-2 is ws-2's record too.
		{wsAdmin2, "", "api_keys.create@ws-2,rate_limits_policies.update@ws-2,rate_limits_policies.create@ws-2", 3},
		{wsOrg, "?workspace_id=ws-2", "api_keys.create@ws-2,rate_limits_policies.update@ws-2,rate_limits_policies.create@ws-2", 3},
		{wsOrg, "?method=put", "rate_limits_policies.update@ws-2", 1},
		{wsOrg, "?response_status_code=400", "rate_limits_policies.update@ws-2", 1},
		{wsOrg, "?uri=/v1/policies/rate-limits", "rate_limits_policies.create@ws-2,rate_limits_policies.create@ws-1", 2},
		{wsOrg, "?action=api_keys.create", "api_keys.create@ws-2", 1},
		{wsOrg, "?resource_type=rate_limits_policies&user_id=key-admin-2", "rate_limits_policies.update@ws-2,rate_limits_policies.create@ws-2", 2},
		{wsOrg, "?end_time=" + t5, "rate_limits_policies.create@ws-2,rate_limits_policies.create@ws-1", 2},
		{wsOrg, "?start_time=" + t5 + "&end_time=" + t5, "rate_limits_policies.create@ws-2", 1},
		{wsOrg, "?user_type=api_key&client_ip=127.0.0.1&page_size=2&current_page=1", "rate_limits_policies.update@ws-2,rate_limits_policies.create@ws-2", 5},
		{wsOrg, "?user_type=user", "", 0},
		{wsOrg, "?client_ip=10.0.0.1", "", 0},
		{wsOrg, "?organisation_id=any&country=FR&page_size=1", "workspaces.create@ws-3", 5},
	} {
		l, raw := auditLogs(e, c.key, c.query)
		if got := ids(l); got != c.want || l.Total != c.total {
			t.Errorf("key %s%s: %s total %d, want %s total %d\n%s", c.key, c.query, got, l.Total, c.want, c.total, raw)
		}
	}
	rid := func() string {
		l, _ := auditLogs(e, wsOrg, "?page_size=1")
		return l.Records[0].RequestID
	}()
	if l, _ := auditLogs(e, wsOrg, "?request_id="+url.QueryEscape(rid)); l.Total != 1 || rid == "" {
		t.Errorf("request_id=%s matched %d records", rid, l.Total)
	}

	for _, c := range []struct{ key, query, param, code string }{
		{wsOrg, "?start_time=yesterday", "start_time", "invalid_parameter"},
		{wsOrg, "?end_time=2030-01-01", "end_time", "invalid_parameter"},
		{wsOrg, "?response_status_code=abc", "response_status_code", "invalid_parameter"},
		{wsOrg, "?user_type=robot", "user_type", "invalid_parameter"},
		{wsOrg, "?page_size=500", "page_size", "invalid_parameter"},
		{wsOrg, "?method=", "method", "invalid_parameter"},
		{coreAdminKey, "?workspace_id=ws-2", "workspace_id", "permission_denied"},
	} {
		status := 400
		if c.code == "permission_denied" {
			status = 403
		}
		cpErr(e, status, c.key, "GET", "/v1/audit-logs"+c.query, "", c.param, c.code)
	}
	cpErr(e, 403, coreKey, "GET", "/v1/audit-logs", "", "<null>", "permission_denied")
	cpErr(e, 403, wsOrgRead, "GET", "/v1/audit-logs", "", "<null>", "permission_denied")
	if status, _ := cp(e, wsOrg, "POST", "/v1/audit-logs", "{}"); status != 405 {
		t.Errorf("POST /v1/audit-logs = %d, want 405", status)
	}
	// GETs of the audit log are not audited either.
	if l, _ := auditLogs(e, wsOrg, ""); l.Total != 5 {
		t.Errorf("after reads: %d records, want 5", l.Total)
	}
}

func TestAuditDisabled(t *testing.T) {
	e := newWSEnv(t, true)
	cpWant(e, 200, coreAdminKey, "POST", "/v1/policies/rate-limits", auditPolicy, nil)
	cpErr(e, 404, wsOrg, "GET", "/v1/audit-logs", "", "<null>", "not_found")
}

func TestAuditVirtualKeys(t *testing.T) {
	e := newWSEnv(t, false)
	const secret = "sk-audit-canary-0123456789"
	var made struct {
		Data struct{ Slug string } `json:"data"`
	}
	cpWant(e, 200, coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"Audit VK","provider":"openai","key":"`+secret+`"}`, &made)
	if made.Data.Slug == "" {
		t.Fatal("virtual key create answered no slug")
	}
	cpWant(e, 200, coreAdminKey, "DELETE", "/v1/virtual-keys/"+made.Data.Slug, "", nil)
	l, raw := auditLogs(e, coreAdminKey, "?resource_type=virtual_keys")
	if strings.Contains(raw, secret) || strings.Contains(raw, "canary") {
		t.Fatalf("the audit log holds the provider key: %s", raw)
	}
	var got []string
	for _, r := range l.Records {
		got = append(got, r.Action+" "+r.ResourceID)
	}
	if want := []string{"virtual_keys.delete " + made.Data.Slug, "virtual_keys.create " + made.Data.Slug}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("records %q, want %q", got, want)
	}
}

// TestAuditNamesKeyWorkspace: an organisation key's writes on a
// workspace's keys are recorded in that workspace, where its own keys
// read them.
func TestAuditNamesKeyWorkspace(t *testing.T) {
	e := newWSEnv(t, false)
	var c struct{ ID string }
	cpWant(e, 200, wsOrg, "POST", "/v1/api-keys/workspace/service", `{"name":"for ws-2","workspace_id":"ws-2","scopes":["completions.write"]}`, &c)
	cpWant(e, 200, wsOrg, "POST", "/v1/api-keys/"+c.ID+"/rotate", "", nil)
	cpWant(e, 200, wsOrg, "PUT", "/v1/api-keys/"+c.ID, `{"name":"renamed"}`, nil)
	cpWant(e, 200, wsOrg, "DELETE", "/v1/api-keys/"+c.ID, "", nil)
	want := []string{"api_keys.delete " + c.ID + " ws-2 key-org", "api_keys.update " + c.ID + " ws-2 key-org",
		"api_keys.rotate " + c.ID + " ws-2 key-org", "api_keys.create " + c.ID + " ws-2 key-org"}
	for _, key := range []string{wsOrg, wsAdmin2} {
		q := "?resource_type=api_keys"
		if key == wsOrg {
			q += "&workspace_id=ws-2"
		}
		l, _ := auditLogs(e, key, q)
		var got []string
		for _, r := range l.Records {
			got = append(got, r.Action+" "+r.ResourceID+" "+r.WorkspaceID+" "+r.UserID)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("records read by %s: %q, want %q", key, got, want)
		}
	}
	// ws-1's admin does not see them.
	if l, _ := auditLogs(e, coreAdminKey, "?resource_type=api_keys"); l.Total != 0 {
		t.Errorf("ws-1 reads %d records of ws-2's keys", l.Total)
	}
}
