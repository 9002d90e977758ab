package admin_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// Keys of the workspaces and audit tests, besides the core harness's
// member and admin keys (workspace ws-1).
const (
	wsOrg     = "gw-ws-org-all"    // organisation key, every scope
	wsOrgRead = "gw-ws-org-read"   // organisation key, workspaces.read only
	wsOrgNone = "gw-ws-org-none"   // organisation key, api_keys.read only
	wsAdmin2  = "gw-ws-admin-ws-2" // admin of ws-2
)

// newWSEnv is the core harness with Options.Workspaces and Options.Audit
// set (unless bare) and the keys above.
func newWSEnv(t *testing.T, bare bool) *coreEnv {
	t.Helper()
	e := newCoreEnv(t, nil, func(o *envOptions) {
		if !bare {
			o.Workspaces = o.Keys.(*memstore.Store)
			o.Audit = o.Keys.(*memstore.Store)
		}
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(wsOrg), Type: gateway.KeyOrganisation, Scopes: gateway.RoleScopes(gateway.RoleAdmin)})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org-read", Digest: gateway.HashAPIKey(wsOrgRead), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopeWorkspacesRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org-none", Digest: gateway.HashAPIKey(wsOrgNone), Type: gateway.KeyOrganisation,
		Scopes: []gateway.Scope{gateway.ScopeAPIKeysRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey(wsAdmin2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	return e
}

// cp sends a control-plane request with key and returns its status and
// body; headers are extra "Name: value" pairs.
func cp(e *coreEnv, key, method, path, body string, headers ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	res := e.do(method, path, rd, append([]string{gateway.HeaderAPIKey + ": " + key}, headers...)...)
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, b
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

type wsWire struct {
	ID          string  `json:"id"`
	Slug        string  `json:"slug"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	CreatedAt   string  `json:"created_at"`
	Updated     string  `json:"last_updated_at"`
	Defaults    *struct {
		Metadata map[string]string `json:"metadata"`
		Object   string            `json:"object"`
	} `json:"defaults"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	Users       []any           `json:"users"`
	Object      string          `json:"object"`
}

type wsList struct {
	Object string   `json:"object"`
	Data   []wsWire `json:"data"`
	Total  int      `json:"total"`
}

func TestWorkspaceLifecycle(t *testing.T) {
	e := newWSEnv(t, false)
	const coll = "/v1/admin/workspaces"
	var made wsWire
	cpWant(e, 200, wsOrg, "POST", coll, `{"name":"Team Blue","description":"the blue team","defaults":{"metadata":{"env":"prod"}},"rate_limits":[{"type":"requests","unit":"rpm","value":10}],"usage_limits":[]}`, &made)
	if !strings.HasPrefix(made.ID, "ws-team-blue-") || made.Slug != made.ID || made.Object != "workspace" ||
		made.Name != "Team Blue" || made.Description == nil || *made.Description != "the blue team" ||
		made.Defaults == nil || made.Defaults.Metadata["env"] != "prod" || made.CreatedAt == "" {
		t.Fatalf("create answered %+v", made)
	}
	one := coll + "/" + made.ID

	var got wsWire
	cpWant(e, 200, wsOrgRead, "GET", one, "", &got)
	if got.ID != made.ID || got.Name != "Team Blue" || got.Users == nil || len(got.Users) != 0 ||
		!strings.Contains(string(got.RateLimits), `"rpm"`) {
		t.Fatalf("GET answered %+v", got)
	}

	// A workspace keys already name can be registered under its id.
	var ws1 wsWire
	cpWant(e, 200, wsOrg, "POST", coll, `{"name":"One","slug":"ws-1"}`, &ws1)
	if ws1.ID != "ws-1" {
		t.Fatalf("slug create answered id %q", ws1.ID)
	}
	cpErr(e, 409, wsOrg, "POST", coll, `{"name":"Again","slug":"ws-1"}`, "slug", "conflict")

	for _, c := range []struct {
		query string
		ids   []string
		total int
	}{
		{"", []string{made.ID, "ws-1"}, 2},
		{"?page_size=1&current_page=1", []string{"ws-1"}, 2},
		{"?name=Blue", []string{made.ID}, 1},
		{"?exact_name=Team", nil, 0},
		{"?exact_name=One", []string{"ws-1"}, 1},
		{"?status=archived", nil, 0},
		{"?status=active,archived", []string{made.ID, "ws-1"}, 2},
	} {
		var l wsList
		cpWant(e, 200, wsOrg, "GET", coll+c.query, "", &l)
		var ids []string
		for _, w := range l.Data {
			ids = append(ids, w.ID)
		}
		if l.Object != "list" || l.Total != c.total || strings.Join(ids, ",") != strings.Join(c.ids, ",") {
			t.Errorf("list%s = %+v, want ids %v total %d", c.query, l, c.ids, c.total)
		}
	}

	var empty map[string]any
	cpWant(e, 200, wsOrg, "PUT", one, `{"description":"renamed team","defaults":{"metadata":{"env":"dev"}}}`, &empty)
	if len(empty) != 0 {
		t.Errorf("PUT answered %v, want {}", empty)
	}
	cpWant(e, 200, wsOrg, "GET", one, "", &got)
	if got.Name != "Team Blue" || *got.Description != "renamed team" || got.Defaults.Metadata["env"] != "dev" ||
		got.CreatedAt != made.CreatedAt {
		t.Errorf("after PUT: %+v", got)
	}

	cpWant(e, 200, wsOrg, "DELETE", one, "", nil)
	cpErr(e, 404, wsOrg, "GET", one, "", "<null>", "not_found")
	cpErr(e, 404, wsOrg, "DELETE", one, "", "<null>", "not_found")
	cpErr(e, 404, wsOrg, "PUT", one, `{"name":"x"}`, "<null>", "not_found")
}

func TestWorkspaceDeleteWithKeys(t *testing.T) {
	e := newWSEnv(t, false)
	const coll = "/v1/admin/workspaces"
	// ws-1 holds the harness's keys.
	cpWant(e, 200, wsOrg, "POST", coll, `{"name":"One","slug":"ws-1"}`, nil)
	cpErr(e, 409, wsOrg, "DELETE", coll+"/ws-1", "", "<null>", "conflict")

	// A new workspace with a key made through the control plane.
	cpWant(e, 200, wsOrg, "POST", coll, `{"name":"New","slug":"ws-new"}`, nil)
	var key struct{ ID string }
	cpWant(e, 200, wsOrg, "POST", "/v1/api-keys/workspace/service",
		`{"name":"k","workspace_id":"ws-new","scopes":["completions.write"]}`, &key)
	cpErr(e, 409, wsOrg, "DELETE", coll+"/ws-new", "", "<null>", "conflict")
	cpWant(e, 200, wsOrg, "GET", coll+"/ws-new", "", nil) // still there
	cpWant(e, 200, wsOrg, "DELETE", "/v1/api-keys/"+key.ID, "", nil)

	// A virtual key holds it too.
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-new", Provider: "openai", APIKey: "sk-x", WorkspaceID: "ws-new"})
	cpErr(e, 409, wsOrg, "DELETE", coll+"/ws-new", "", "<null>", "conflict")
	if err := e.store.DeleteVirtualKey(t.Context(), "ws-new", "vk-new"); err != nil {
		t.Fatal(err)
	}
	cpWant(e, 200, wsOrg, "DELETE", coll+"/ws-new", "", nil)
}

func TestWorkspaceAccess(t *testing.T) {
	e := newWSEnv(t, false)
	const coll = "/v1/admin/workspaces"
	cpWant(e, 200, wsOrg, "POST", coll, `{"name":"One","slug":"ws-1"}`, nil)
	for _, c := range []struct {
		name, key, method, path, body string
		status                        int
	}{
		{"workspace admin lists", coreAdminKey, "GET", coll, "", 403},
		{"workspace admin reads its own", coreAdminKey, "GET", coll + "/ws-1", "", 403},
		{"workspace admin creates", coreAdminKey, "POST", coll, `{"name":"x"}`, 403},
		{"workspace admin deletes", coreAdminKey, "DELETE", coll + "/ws-1", "", 403},
		{"member lists", coreKey, "GET", coll, "", 403},
		{"reader creates", wsOrgRead, "POST", coll, `{"name":"x"}`, 403},
		{"reader updates", wsOrgRead, "PUT", coll + "/ws-1", `{"name":"x"}`, 403},
		{"reader lists", wsOrgRead, "GET", coll, "", 200},
		{"no scope lists", wsOrgNone, "GET", coll, "", 403},
		{"no scope reads", wsOrgNone, "GET", coll + "/ws-1", "", 403},
		{"unknown", wsOrg, "GET", coll + "/ws-nope", "", 404},
		{"users", wsOrg, "GET", coll + "/ws-1/users", "", 404},
		{"add user", wsOrg, "POST", coll + "/ws-1/users", `{"users":[]}`, 404},
		{"one user", wsOrg, "GET", coll + "/ws-1/users/u-1", "", 404},
		{"method", wsOrg, "PATCH", coll + "/ws-1", `{}`, 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, b := cp(e, c.key, c.method, c.path, c.body)
			if got != c.status {
				t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, got, b, c.status)
			}
			if got == 403 && !strings.Contains(string(b), `"permission_error"`) {
				t.Errorf("403 body %s is not a permission_error", b)
			}
		})
	}
	// Nothing was changed by the refused writes.
	var l wsList
	cpWant(e, 200, wsOrg, "GET", coll, "", &l)
	if l.Total != 1 || l.Data[0].Name != "One" {
		t.Errorf("after refused writes: %+v", l)
	}
}

func TestWorkspaceNotManaged(t *testing.T) {
	e := newWSEnv(t, true)
	cpErr(e, 404, wsOrg, "GET", "/v1/admin/workspaces", "", "<null>", "not_found")
	cpErr(e, 404, wsOrg, "POST", "/v1/admin/workspaces", `{"name":"x"}`, "<null>", "not_found")
}

func TestWorkspaceBadInput(t *testing.T) {
	e := newWSEnv(t, false)
	const coll = "/v1/admin/workspaces"
	cpWant(e, 200, wsOrg, "POST", coll, `{"name":"One","slug":"ws-1"}`, nil)
	for _, c := range []struct {
		method, path, body, param string
	}{
		{"POST", coll, `{}`, "name"},
		{"POST", coll, `{"name":"  "}`, "name"},
		{"POST", coll, `{"name":1}`, "name"},
		{"POST", coll, `{"name":"x","users":["u-1"]}`, "users"},
		{"POST", coll, `{"name":"x","bogus":true}`, "bogus"},
		{"POST", coll, `{"name":"x","slug":"has space"}`, "slug"},
		{"POST", coll, `{"name":"x","slug":"-lead"}`, "slug"},
		{"POST", coll, `{"name":"x","rate_limits":{}}`, "rate_limits"},
		{"POST", coll, `{"name":"x","usage_limits":"much"}`, "usage_limits"},
		{"POST", coll, `{"name":"x","defaults":{"metadata":{"a":1}}}`, "defaults.metadata"},
		{"POST", coll, `{"name":"x","defaults":{"config":"c"}}`, "config"},
		{"POST", coll, `[1]`, ""},
		{"PUT", coll + "/ws-1", `{"slug":"ws-9"}`, "slug"},
		{"PUT", coll + "/ws-1", `{"name":""}`, "name"},
		{"PUT", coll + "/ws-1", `{"users":[]}`, "users"},
		{"GET", coll + "?page_size=0", "", "page_size"},
		{"GET", coll + "?page_size=101", "", "page_size"},
		{"GET", coll + "?current_page=-1", "", "current_page"},
		{"GET", coll + "?status=deleted", "", "status"},
	} {
		param := c.param
		if param == "" {
			param = "<null>"
		}
		cpErr(e, 400, wsOrg, c.method, c.path, c.body, param, "invalid_parameter")
	}
	var got wsWire
	cpWant(e, 200, wsOrg, "GET", coll+"/ws-1", "", &got)
	if got.Name != "One" {
		t.Errorf("a refused PUT changed the workspace: %+v", got)
	}
}
