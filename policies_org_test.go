package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// Organisation keys of the policy tests, added to the policy harness.
const (
	polOrg     = "gw-pol-org-admin" // key-pol-org, organisation admin
	polOrgRead = "gw-pol-org-read"  // key-pol-org-read, organisation, policies.read only
	polOrgNone = "gw-pol-org-none"  // key-pol-org-none, organisation, api_keys.read only
)

// newPolOrgEnv is the policy harness with audit records, the organisation
// keys and a virtual key "vk-2" of ws-2. mod may change the gateway's
// options, adminMod admin's.
func newPolOrgEnv(t *testing.T, mod func(*gateway.Options), adminMod func(*admin.Options)) *polEnv {
	t.Helper()
	var st *memstore.Store
	e := newPolEnvAdmin(t, nil, func(o *gateway.Options) {
		st = o.Keys.(*memstore.Store)
		if mod != nil {
			mod(o)
		}
	}, func(o *admin.Options) {
		o.Audit = &observe.Auditor{Store: st}
		if adminMod != nil {
			adminMod(o)
		}
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-pol-org", Digest: gateway.HashAPIKey(polOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-pol-org-read", Digest: gateway.HashAPIKey(polOrgRead), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopePoliciesRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-pol-org-none", Digest: gateway.HashAPIKey(polOrgNone), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopeAPIKeysRead}})
	e.addVirtualKey("vk-2", func(vk *gateway.VirtualKey) { vk.WorkspaceID = "ws-2" })
	return e
}

// want sends a request that must answer status, and decodes the answer
// into v when v is not nil. It returns the error's param, if any.
func (e *polEnv) want(status int, key, method, path, body string, v any) string {
	e.t.Helper()
	res := e.do(key, method, path, body)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		e.t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, res.StatusCode, status, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	var eb struct{ Error struct{ Param *string } }
	json.Unmarshal(b, &eb)
	return polDeref(eb.Error.Param)
}

// orgPolicyList is the list answer of the rate-limits policy route.
type orgPolicyList struct {
	Data []struct {
		ID          string `json:"id"`
		WorkspaceID string `json:"workspace_id"`
	}
	Total int
}

// ids returns "id:workspace" of each listed policy ordered by workspace,
// joined by spaces.
func (l orgPolicyList) ids() string {
	var s []string
	for _, p := range l.Data {
		s = append(s, p.ID+":"+p.WorkspaceID)
	}
	slices.SortFunc(s, func(a, b string) int {
		return strings.Compare(a[strings.IndexByte(a, ':'):], b[strings.IndexByte(b, ':'):])
	})
	return strings.Join(s, " ")
}

// TestRateLimitsPoliciesOrganisationKey: an organisation key (the
// server's bootstrap key) creates, lists, reads, updates and deletes the
// rate-limits policies of two workspaces; the one it made for ws-1 is
// enforced on ws-1's requests; a workspace key still sees only its own;
// the audit records name each policy's workspace.
func TestRateLimitsPoliciesOrganisationKey(t *testing.T) {
	e := newPolOrgEnv(t, nil, nil)
	const base = "/v1/policies/rate-limits"
	body := func(ws string, value int) string {
		return `{"name":"` + ws + ` per key","conditions":[{"key":"workspace_id","value":"` + ws + `"}],"group_by":[{"key":"api_key"}],` +
			`"type":"requests","unit":"rpd","value":` + strings.Repeat("9", value) + `,"workspace_id":"` + ws + `"}`
	}
	// workspace_id is required of an organisation key.
	if p := e.want(400, polOrg, "POST", base,
		`{"conditions":[{"key":"api_key","value":"x"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpd","value":2}`, nil); p != "workspace_id" {
		t.Errorf("no workspace_id: param %q, want workspace_id", p)
	}
	var c1, c2 struct{ ID, Object string }
	e.want(200, polOrg, "POST", base, body("ws-1", 1), &c1) // 9 a day
	e.want(200, polOrg, "POST", base, body("ws-2", 3), &c2)
	if c1.Object != "policy_rate_limits" || c1.ID == "" || c2.ID == "" {
		t.Fatalf("created %+v %+v", c1, c2)
	}

	// Lists: every workspace's, or the one named.
	var l orgPolicyList
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 2 || l.ids() != c1.ID+":ws-1 "+c2.ID+":ws-2" {
		t.Fatalf("organisation list: %+v", l)
	}
	e.want(200, polOrgRead, "GET", base+"?workspace_id=ws-2", "", &l)
	if l.Total != 1 || l.ids() != c2.ID+":ws-2" {
		t.Fatalf("organisation list of ws-2: %+v", l)
	}
	// A workspace key sees its own alone.
	e.want(200, polAdmin2, "GET", base, "", &l)
	if l.Total != 1 || l.ids() != c2.ID+":ws-2" {
		t.Fatalf("ws-2 list: %+v", l)
	}
	e.want(403, polAdmin2, "GET", base+"?workspace_id=ws-1", "", nil)
	e.want(404, polAdmin2, "GET", base+"/"+c1.ID, "", nil)
	e.want(404, polAdmin2, "PUT", base+"/"+c1.ID, `{"value":1000}`, nil)
	e.want(404, polAdmin2, "DELETE", base+"/"+c1.ID, "", nil)
	if p := e.want(403, polAdmin2, "POST", base, body("ws-1", 1), nil); p != "workspace_id" {
		t.Errorf("ws-2 admin creating in ws-1: param %q, want workspace_id", p)
	}

	// Scopes: policies.read reads, policies.write writes.
	e.want(403, polOrgRead, "POST", base, body("ws-1", 1), nil)
	e.want(403, polOrgRead, "PUT", base+"/"+c1.ID, `{"value":1000}`, nil)
	e.want(403, polOrgNone, "GET", base, "", nil)
	e.want(403, polOrgNone, "GET", base+"/"+c1.ID, "", nil)

	// Reads and updates of either workspace's policy.
	var got struct {
		WorkspaceID string `json:"workspace_id"`
		Value       float64
	}
	e.want(200, polOrgRead, "GET", base+"/"+c1.ID, "", &got)
	if got.WorkspaceID != "ws-1" || got.Value != 9 {
		t.Fatalf("read ws-1's policy: %+v", got)
	}
	e.want(200, polOrg, "PUT", base+"/"+c2.ID, `{"name":"renamed","value":500}`, nil)
	var got2 map[string]any
	e.want(200, polOrg, "GET", base+"/"+c2.ID, "", &got2)
	if got2["name"] != "renamed" || got2["value"] != 500.0 || got2["workspace_id"] != "ws-2" {
		t.Fatalf("ws-2's policy after PUT: %v", got2)
	}

	// The policy made for ws-1 holds ws-1's member to 9 requests; ws-2's
	// admin is not held by it.
	ws2 := func() int {
		return e.do(polAdmin2, "POST", "/v1/chat/completions", `{"model":"m","messages":[]}`, "x-gateway-virtual-key: vk-2", "Content-Type: application/json").StatusCode
	}
	if got := e.statuses(10, polMember); !slices.Equal(got, []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 429}) {
		t.Fatalf("ws-1 member: %v, want 9 answers then a 429", got)
	}
	for i := range 10 {
		if code := ws2(); code != 200 {
			t.Fatalf("ws-2 request %d: %d", i+1, code)
		}
	}

	e.want(200, polOrg, "DELETE", base+"/"+c1.ID, "", nil)
	e.want(200, polOrg, "DELETE", base+"/"+c2.ID, "", nil)
	e.want(404, polOrg, "GET", base+"/"+c1.ID, "", nil)
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 0 {
		t.Fatalf("list after delete: %+v", l)
	}
	if code := e.complete(polMember).StatusCode; code != 200 {
		t.Fatalf("ws-1 after the policy's delete: %d", code)
	}

	want := []string{
		"rate_limits_policies.create  ", // the 400: no workspace named
		"rate_limits_policies.create " + c1.ID + " ws-1",
		"rate_limits_policies.create " + c2.ID + " ws-2",
		"rate_limits_policies.update " + c2.ID + " ws-2",
		"rate_limits_policies.delete " + c1.ID + " ws-1",
		"rate_limits_policies.delete " + c2.ID + " ws-2",
	}
	recs, _, err := e.store.AuditRecords(context.Background(), observe.AuditQuery{KeyID: "key-pol-org", ResourceType: "rate_limits_policies"})
	if err != nil {
		t.Fatal(err)
	}
	var gotAudit []string
	for _, r := range slices.Backward(recs) {
		gotAudit = append(gotAudit, r.Action+" "+r.ResourceID+" "+r.WorkspaceID)
	}
	if strings.Join(gotAudit, "|") != strings.Join(want, "|") {
		t.Errorf("audit records:\n%q\nwant\n%q", gotAudit, want)
	}
}

// TestOrganisationRateLimitsListFallback: over a store that cannot list
// every workspace's rate-limits policies, an organisation key's list shows
// those of the workspaces admin.Options.Workspaces registers.
func TestOrganisationRateLimitsListFallback(t *testing.T) {
	var st *memstore.Store
	e := newPolOrgEnv(t, func(o *gateway.Options) {
		st = o.Keys.(*memstore.Store)
		o.Policies = struct{ admin.PolicyStore }{st}
	}, func(o *admin.Options) { o.Workspaces = st })
	for _, ws := range []string{"ws-1", "ws-2"} {
		e.want(200, polOrg, "POST", "/v1/admin/workspaces", `{"name":"`+ws+`","slug":"`+ws+`"}`, nil)
	}
	const base = "/v1/policies/rate-limits"
	var ids []string
	for _, ws := range []string{"ws-1", "ws-2", "ws-unregistered"} {
		var c struct{ ID string }
		e.want(200, polOrg, "POST", base, `{"conditions":[{"key":"workspace_id","value":"`+ws+`"}],"group_by":[{"key":"api_key"}],"workspace_id":"`+ws+
			`","type":"tokens","unit":"rpd","value":10}`, &c)
		ids = append(ids, c.ID+":"+ws)
	}
	var l orgPolicyList
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 2 || l.ids() != ids[0]+" "+ids[1] {
		t.Errorf("organisation list %q, want %q", l.ids(), ids[:2])
	}
	e.want(200, polOrg, "GET", base+"?workspace_id=ws-unregistered", "", &l)
	if l.Total != 1 || l.ids() != ids[2] {
		t.Errorf("list of ws-unregistered %q, want %q", l.ids(), ids[2])
	}
}
