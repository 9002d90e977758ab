package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Organisation keys of the policy tests, added to the policy
// harness (which holds ws-1 and ws-2, each with a virtual key vk-up).
const (
	polOrg     = "gw-pol-org-admin" // key-pol-org, organisation admin
	polOrgRead = "gw-pol-org-read"  // key-pol-org-read, organisation, policies.read only
	polOrgNone = "gw-pol-org-none"  // key-pol-org-none, organisation, api_keys.read only
)

func newPolOrgEnv(t *testing.T) *ulEnv {
	t.Helper()
	e := newULEnv(t, nil)
	e.store.AddAPIKey(APIKey{ID: "key-pol-org", Digest: HashAPIKey(polOrg), Type: KeyOrganisation, Role: RoleAdmin})
	e.store.AddAPIKey(APIKey{ID: "key-pol-org-read", Digest: HashAPIKey(polOrgRead), Type: KeyOrganisation,
		Scopes: []Scope{ScopePoliciesRead}})
	e.store.AddAPIKey(APIKey{ID: "key-pol-org-none", Digest: HashAPIKey(polOrgNone), Type: KeyOrganisation,
		Scopes: []Scope{ScopeAPIKeysRead}})
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

// policyList is the list answer of both policy routes.
type policyList struct {
	Object string
	Data   []struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		WorkspaceID string `json:"workspace_id"`
	}
	Total int
}

// ids returns "id:workspace" of each listed policy, ordered by
// workspace (policies made in the same millisecond are listed by id),
// joined by spaces.
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
	recs, _, err := e.store.AuditRecords(context.Background(), AuditQuery{KeyID: keyID, ResourceType: resourceType})
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

// TestRateLimitsPoliciesOrganisationKey: an organisation key (the
// server's bootstrap key) creates, lists, reads, updates and deletes the
// rate-limits policies of two workspaces; the one it made for ws-1 is
// enforced on ws-1's requests; a workspace key still sees only its own;
// the audit records name each policy's workspace (the control plane, §14).
func TestRateLimitsPoliciesOrganisationKey(t *testing.T) {
	e := newPolOrgEnv(t)
	const base = "/v1/policies/rate-limits"
	body := func(ws string, value int) string {
		return `{"name":"` + ws + ` per key","conditions":[{"key":"workspace_id","value":"` + ws + `"}],"group_by":[{"key":"api_key"}],` +
			`"type":"requests","unit":"rpd","value":` + strings.Repeat("9", value) + `,"workspace_id":"` + ws + `"}`
	}
	// workspace_id is required of an organisation key.
	e.wantParam(400, "workspace_id", polOrg, "POST", base,
		`{"conditions":[{"key":"api_key","value":"x"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpd","value":2}`)
	var c1, c2 struct{ ID, Object string }
	e.want(200, polOrg, "POST", base, body("ws-1", 1), &c1) // 9 a day
	e.want(200, polOrg, "POST", base, body("ws-2", 3), &c2)
	if c1.Object != "policy_rate_limits" || c1.ID == "" || c2.ID == "" {
		t.Fatalf("created %+v %+v", c1, c2)
	}

	// Lists: every workspace's, or the one named.
	var l policyList
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 2 || l.ids() != c1.ID+":ws-1 "+c2.ID+":ws-2" {
		t.Fatalf("organisation list: %+v", l)
	}
	e.want(200, polOrgRead, "GET", base+"?workspace_id=ws-2", "", &l)
	if l.Total != 1 || l.ids() != c2.ID+":ws-2" {
		t.Fatalf("organisation list of ws-2: %+v", l)
	}
	// A workspace key sees its own alone.
	e.want(200, ulAdmin2, "GET", base, "", &l)
	if l.Total != 1 || l.ids() != c2.ID+":ws-2" {
		t.Fatalf("ws-2 list: %+v", l)
	}
	e.want(403, ulAdmin2, "GET", base+"?workspace_id=ws-1", "", nil)
	e.want(404, ulAdmin2, "GET", base+"/"+c1.ID, "", nil)
	e.want(404, ulAdmin2, "PUT", base+"/"+c1.ID, `{"value":1000}`, nil)
	e.want(404, ulAdmin2, "DELETE", base+"/"+c1.ID, "", nil)
	e.wantParam(403, "workspace_id", ulAdmin2, "POST", base, body("ws-1", 1))

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
	for i := range 9 {
		if code, b := e.complete(ulMember, 10); code != 200 {
			t.Fatalf("request %d: %d %s", i+1, code, b)
		}
	}
	if code, b := e.complete(ulMember, 10); code != 429 {
		t.Fatalf("10th request of ws-1: %d %s, want 429", code, b)
	}
	for i := range 10 {
		if code, b := e.complete(ulAdmin2, 10); code != 200 {
			t.Fatalf("ws-2 request %d: %d %s", i+1, code, b)
		}
	}

	e.want(200, polOrg, "DELETE", base+"/"+c1.ID, "", nil)
	e.want(200, polOrg, "DELETE", base+"/"+c2.ID, "", nil)
	e.want(404, polOrg, "GET", base+"/"+c1.ID, "", nil)
	e.want(200, polOrg, "GET", base, "", &l)
	if l.Total != 0 {
		t.Fatalf("list after delete: %+v", l)
	}
	if code, b := e.complete(ulMember, 10); code != 200 {
		t.Fatalf("ws-1 after the policy's delete: %d %s", code, b)
	}

	want := []string{
		"rate_limits_policies.create  ", // the 400: no workspace named
		"rate_limits_policies.create " + c1.ID + " ws-1",
		"rate_limits_policies.create " + c2.ID + " ws-2",
		"rate_limits_policies.update " + c2.ID + " ws-2",
		"rate_limits_policies.delete " + c1.ID + " ws-1",
		"rate_limits_policies.delete " + c2.ID + " ws-2",
	}
	if got := policyAudit(t, e, "key-pol-org", "rate_limits_policies"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("audit records:\n%q\nwant\n%q", got, want)
	}
}

// TestOrganisationPolicyListFallback: over stores that cannot list every
// workspace's policies, an organisation key's list shows those of the
// workspaces Options.Workspaces registers.
func TestOrganisationPolicyListFallback(t *testing.T) {
	e := newULEnv(t, func(o *Options) {
		o.Policies = struct{ PolicyStore }{o.Policies}
	})
	e.store.AddAPIKey(APIKey{ID: "key-pol-org", Digest: HashAPIKey(polOrg), Type: KeyOrganisation, Role: RoleAdmin})
	for _, ws := range []string{"ws-1", "ws-2"} {
		e.want(200, polOrg, "POST", "/v1/admin/workspaces", `{"name":"`+ws+`","slug":"`+ws+`"}`, nil)
	}
	for _, base := range []string{"/v1/policies/rate-limits"} {
		var ids []string
		for _, ws := range []string{"ws-1", "ws-2", "ws-unregistered"} {
			var c struct{ ID string }
			e.want(200, polOrg, "POST", base, policyBodyFor(base, ws), &c)
			ids = append(ids, c.ID+":"+ws)
		}
		var l policyList
		e.want(200, polOrg, "GET", base, "", &l)
		if l.Total != 2 || l.ids() != ids[0]+" "+ids[1] {
			t.Errorf("%s: organisation list %q, want %q", base, l.ids(), ids[:2])
		}
		e.want(200, polOrg, "GET", base+"?workspace_id=ws-unregistered", "", &l)
		if l.Total != 1 || l.ids() != ids[2] {
			t.Errorf("%s: list of ws-unregistered %q, want %q", base, l.ids(), ids[2])
		}
	}
}

// policyBodyFor is a create body of the policy route base for workspace ws.
func policyBodyFor(_, ws string) string {
	return `{"conditions":[{"key":"workspace_id","value":"` + ws + `"}],"group_by":[{"key":"api_key"}],"workspace_id":"` + ws + `","type":"tokens","unit":"rpd","value":10}`
}
