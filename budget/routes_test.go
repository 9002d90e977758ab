package budget_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/observe"
)

// Organisation keys of the policy tests, added to the usage-limits
// harness (which holds ws-1 and ws-2, each with a virtual key vk-up).
const (
	polOrg     = "gw-pol-org-admin" // key-pol-org, organisation admin
	polOrgRead = "gw-pol-org-read"  // key-pol-org-read, organisation, policies.read only
	polOrgNone = "gw-pol-org-none"  // key-pol-org-none, organisation, api_keys.read only
)

func newPolOrgEnv(t *testing.T, mod func(*budget.Options)) *ulEnv {
	t.Helper()
	e := newULEnv(t, nil, mod)
	e.store.AddAPIKey(gateway.APIKey{ID: "key-pol-org", Digest: gateway.HashAPIKey(polOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-pol-org-read", Digest: gateway.HashAPIKey(polOrgRead), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopePoliciesRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-pol-org-none", Digest: gateway.HashAPIKey(polOrgNone), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopeAPIKeysRead}})
	return e
}

// wantParam sends a request that must fail with status and name param.
func (e *ulEnv) wantParam(status int, param, key, method, path, body string) {
	e.t.Helper()
	var eb struct {
		Error struct {
			Param *string
		}
	}
	e.want(status, key, method, path, body, &eb)
	if eb.Error.Param == nil || *eb.Error.Param != param {
		e.t.Errorf("%s %s %s: param %v, want %s", method, path, body, eb.Error.Param, param)
	}
}

// policyList is the list answer of the policy routes.
type policyList struct {
	Object string
	Data   []struct {
		ID          string `json:"id"`
		WorkspaceID string `json:"workspace_id"`
	}
	Total int
}

// ids returns "id:workspace" of each listed policy, ordered by
// workspace, joined by spaces.
func (l policyList) ids() string {
	var s []string
	for _, p := range l.Data {
		s = append(s, p.ID+":"+p.WorkspaceID)
	}
	slices.SortFunc(s, func(a, b string) int {
		return strings.Compare(a[strings.IndexByte(a, ':'):], b[strings.IndexByte(b, ':'):])
	})
	return strings.Join(s, " ")
}

// policyAudit returns "action id workspace" of the audit records of the
// key keyID, oldest first.
func policyAudit(t *testing.T, e *ulEnv, keyID, resourceType string) []string {
	t.Helper()
	recs, _, err := e.store.AuditRecords(context.Background(), observe.AuditQuery{KeyID: keyID, ResourceType: resourceType})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		out = append(out, r.Action+" "+r.ResourceID+" "+r.WorkspaceID)
	}
	return out
}

// TestUsageLimitsPoliciesOrganisationKey: the same for usage-limits
// policies, with their entities and resets.
func TestUsageLimitsPoliciesOrganisationKey(t *testing.T) {
	e := newPolOrgEnv(t, nil)
	const base = "/v1/policies/usage-limits"
	body := func(ws string) string {
		return `{"name":"` + ws + ` tokens","conditions":[{"key":"workspace_id","value":"` + ws + `"}],"group_by":[{"key":"api_key"}],` +
			`"type":"tokens","credit_limit":100,"workspace_id":"` + ws + `"}`
	}
	e.wantParam(400, "workspace_id", polOrg, "POST", base,
		`{"conditions":[{"key":"api_key","value":"x"}],"group_by":[{"key":"api_key"}],"type":"tokens","credit_limit":100}`)
	var c1, c2 struct{ ID, Object string }
	e.want(200, polOrg, "POST", base, body("ws-1"), &c1)
	e.want(200, polOrg, "POST", base, body("ws-2"), &c2)
	if c1.Object != "policy_usage_limits" || c1.ID == "" || c2.ID == "" {
		t.Fatalf("created %+v %+v", c1, c2)
	}

	var l policyList
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 2 || l.ids() != c1.ID+":ws-1 "+c2.ID+":ws-2" {
		t.Fatalf("organisation list: %+v", l)
	}
	e.want(200, polOrgRead, "GET", base+"?workspace_id=ws-1", "", &l)
	if l.Total != 1 || l.ids() != c1.ID+":ws-1" {
		t.Fatalf("organisation list of ws-1: %+v", l)
	}
	e.want(200, ulAdmin2, "GET", base, "", &l)
	if l.Total != 1 || l.ids() != c2.ID+":ws-2" {
		t.Fatalf("ws-2 list: %+v", l)
	}
	e.want(403, ulAdmin2, "GET", base+"?workspace_id=ws-1", "", nil)
	e.want(404, ulAdmin2, "GET", base+"/"+c1.ID, "", nil)
	e.want(404, ulAdmin2, "GET", base+"/"+c1.ID+"/entities", "", nil)
	e.want(404, ulAdmin2, "PUT", base+"/"+c1.ID+"/entities/key-ul-member/reset", "", nil)
	e.wantParam(403, "workspace_id", ulAdmin2, "POST", base, body("ws-1"))
	e.want(403, polOrgRead, "POST", base, body("ws-1"), nil)
	e.want(403, polOrgRead, "PUT", base+"/"+c1.ID+"/entities/key-ul-member/reset", "", nil)
	e.want(403, polOrgNone, "GET", base, "", nil)

	// Enforced on ws-1: 40, 80, 120 tokens, then 412.
	for i := range 3 {
		if code, b := e.complete(ulMember, 10); code != 200 {
			t.Fatalf("request %d: %d %s", i+1, code, b)
		}
	}
	if code, b := e.complete(ulMember, 10); code != 412 {
		t.Fatalf("4th request of ws-1: %d %s, want 412", code, b)
	}
	var ents struct {
		Data []usageEntity
	}
	e.want(200, polOrgRead, "GET", base+"/"+c1.ID+"/entities", "", &ents)
	if len(ents.Data) != 1 || ents.Data[0].ValueKey != "key-ul-member" || ents.Data[0].CurrentUsage != 120 {
		t.Fatalf("entities of ws-1's policy: %+v", ents.Data)
	}
	var got map[string]any
	e.want(200, polOrgRead, "GET", base+"/"+c1.ID+"?include_usage=true", "", &got)
	if got["workspace_id"] != "ws-1" || got["value_key_usage_map"] == nil {
		t.Fatalf("read ws-1's policy: %v", got)
	}
	// The organisation key resets the entity: ws-1's member goes on.
	e.want(200, polOrg, "PUT", base+"/"+c1.ID+"/entities/"+ents.Data[0].ID+"/reset", "", nil)
	if code, b := e.complete(ulMember, 10); code != 200 {
		t.Fatalf("after reset: %d %s", code, b)
	}
	e.want(200, polOrg, "PUT", base+"/"+c2.ID, `{"name":"renamed","credit_limit":500}`, nil)
	e.want(200, polOrg, "GET", base+"/"+c2.ID, "", &got)
	if got["name"] != "renamed" || got["credit_limit"] != 500.0 || got["workspace_id"] != "ws-2" {
		t.Fatalf("ws-2's policy after PUT: %v", got)
	}
	e.want(200, polOrg, "DELETE", base+"/"+c1.ID, "", nil)
	e.want(200, polOrg, "DELETE", base+"/"+c2.ID, "", nil)
	e.want(200, polOrg, "GET", base+"?status=archived", "", &l)
	if l.Total != 2 {
		t.Fatalf("archived list: %+v", l)
	}
	for i := range 4 {
		if code, b := e.complete(ulMember, 10); code != 200 {
			t.Fatalf("ws-1 request %d after the archive: %d %s", i+1, code, b)
		}
	}

	want := []string{
		"usage_limits_policies.create  ",
		"usage_limits_policies.create " + c1.ID + " ws-1",
		"usage_limits_policies.create " + c2.ID + " ws-2",
		"usage_limits_policies.update " + c1.ID + " ws-1", // the reset
		"usage_limits_policies.update " + c2.ID + " ws-2",
		"usage_limits_policies.delete " + c1.ID + " ws-1",
		"usage_limits_policies.delete " + c2.ID + " ws-2",
	}
	if got := policyAudit(t, e, "key-pol-org", "usage_limits_policies"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("audit records:\n%q\nwant\n%q", got, want)
	}
}

// TestOrganisationPolicyListFallback: over a Store that cannot list every
// workspace's policies, an organisation key's list shows those of the
// workspaces Options.Workspaces registers.
func TestOrganisationPolicyListFallback(t *testing.T) {
	e := newPolOrgEnv(t, func(o *budget.Options) { o.Store = struct{ budget.Store }{o.Store} })
	for _, ws := range []string{"ws-1", "ws-2"} { // registered as the admin routes do
		if err := e.store.CreateWorkspace(t.Context(), &gateway.Workspace{ID: ws, Name: ws}); err != nil {
			t.Fatal(err)
		}
	}
	const base = "/v1/policies/usage-limits"
	var ids []string
	for _, ws := range []string{"ws-1", "ws-2", "ws-unregistered"} {
		var c struct{ ID string }
		e.want(200, polOrg, "POST", base, `{"conditions":[{"key":"workspace_id","value":"`+ws+`"}],"group_by":[{"key":"api_key"}],"workspace_id":"`+ws+`","type":"tokens","credit_limit":10}`, &c)
		ids = append(ids, c.ID+":"+ws)
	}
	var l policyList
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 2 || l.ids() != ids[0]+" "+ids[1] {
		t.Errorf("organisation list %q, want %q", l.ids(), ids[:2])
	}
	e.want(200, polOrg, "GET", base+"?workspace_id=ws-unregistered", "", &l)
	if l.Total != 1 || l.ids() != ids[2] {
		t.Errorf("list of ws-unregistered %q, want %q", l.ids(), ids[2])
	}
}

// TestUsageLimitsPolicyNameBounds: a usage-limits policy's name is a
// label, on create and update.
func TestUsageLimitsPolicyNameBounds(t *testing.T) {
	e := newULEnv(t, nil, nil)
	const body = `{"name":"NAME","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"cost","credit_limit":10}`
	e.wantParam(400, "name", ulAdmin, "POST", "/v1/policies/usage-limits", strings.Replace(body, "NAME", "a\\u0000b", 1))
	var p struct{ ID string }
	e.want(200, ulAdmin, "POST", "/v1/policies/usage-limits", body, &p)
	e.wantParam(400, "name", ulAdmin, "PUT", "/v1/policies/usage-limits/"+p.ID, `{"name":"a\u001bb"}`)
}

// TestControlPlaneMethodNotAllowed pins the 405 of every usage-limits
// route: its Allow header (methods in the order GET, POST, PUT, DELETE),
// code and message.
func TestControlPlaneMethodNotAllowed(t *testing.T) {
	e := newULEnv(t, nil, nil)
	const pid = "0b6c3bb4-2a44-4b69-9c1c-8f1c62b7e001"
	for _, c := range []struct{ method, path, allow string }{
		{"PATCH", "/v1/policies/usage-limits", "GET, POST"},
		{"POST", "/v1/policies/usage-limits/" + pid, "GET, PUT, DELETE"},
		{"POST", "/v1/policies/usage-limits/" + pid + "/entities", "GET"},
		{"GET", "/v1/policies/usage-limits/" + pid + "/entities/e/reset", "PUT"},
	} {
		req, _ := http.NewRequest(c.method, e.srv.URL+c.path, nil)
		req.Header.Set(gateway.HeaderAPIKey, ulAdmin)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var got struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		json.Unmarshal(body, &got)
		want := c.method + " is not allowed on " + c.path + "; allowed: " + c.allow
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != c.allow ||
			got.Error.Code != gateway.CodeMethodNotAllowed || got.Error.Type != gateway.TypeInvalidRequest || got.Error.Message != want {
			t.Errorf("%s %s: %d, Allow %q, %s; want 405, Allow %q, %q", c.method, c.path, res.StatusCode,
				res.Header.Get("Allow"), body, c.allow, want)
		}
	}
}

// TestPolicyCreateTypeErrorNamesField: a create body's field of the wrong
// JSON type is a 400 naming the field as the body spells it.
func TestPolicyCreateTypeErrorNamesField(t *testing.T) {
	e := newULEnv(t, nil, nil)
	for _, c := range []struct{ body, param string }{
		{`{"name":5}`, "name"},
		{`{"conditions":5}`, "conditions"},
		{`{"group_by":"x"}`, "group_by"},
		{`{"workspace_id":1}`, "workspace_id"},
	} {
		e.wantParam(400, c.param, ulAdmin, "POST", "/v1/policies/usage-limits", c.body)
	}
}
