package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestControlPlaneMethodNotAllowed pins the 405 of every control-plane
// route that dispatches by method through internal/httpapi: its Allow
// header (methods in the order GET, POST, PUT, DELETE), code and message,
// as they were before the dispatchers were made one. (The observe
// package pins those of its routes.)
func TestControlPlaneMethodNotAllowed(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *Options) {
		o.Workspaces = o.Keys.(*MemoryStore)
	})
	e.store.AddAPIKey(APIKey{ID: "key-org", Digest: HashAPIKey(wsOrg), Type: KeyOrganisation, Scopes: allScopes})
	for _, c := range []struct{ method, path, allow string }{
		{"PATCH", "/v1/api-keys", "GET"},
		{"GET", "/v1/api-keys/organisation/service", "POST"},
		{"GET", "/v1/api-keys/k1/rotate", "POST"},
		{"POST", "/v1/api-keys/k1", "GET, PUT, DELETE"},
		{"PUT", "/v1/virtual-keys", "GET, POST"},
		{"POST", "/v1/virtual-keys/vk", "GET, PUT, DELETE"},
		{"DELETE", "/v1/configs", "GET, POST"},
		{"PATCH", "/v1/configs/c", "GET, PUT, DELETE"},
		{"POST", "/v1/configs/c/versions", "GET"},
		{"PUT", "/v1/admin/workspaces", "GET, POST"},
		{"POST", "/v1/admin/workspaces/ws-1", "GET, PUT, DELETE"},
		{"DELETE", "/v1/policies/rate-limits", "GET, POST"},
		{"POST", "/v1/policies/rate-limits/not-a-uuid", "GET, PUT, DELETE"},
	} {
		res := e.do(c.method, c.path, nil, HeaderAPIKey+": "+wsOrg)
		body, _ := io.ReadAll(res.Body)
		var got struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		json.Unmarshal(body, &got)
		want := c.method + " is not allowed on " + c.path + "; allowed: " + c.allow
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != c.allow ||
			got.Error.Code != CodeMethodNotAllowed || got.Error.Type != TypeInvalidRequest || got.Error.Message != want {
			t.Errorf("%s %s: %d, Allow %q, %s; want 405, Allow %q, %q", c.method, c.path, res.StatusCode,
				res.Header.Get("Allow"), body, c.allow, want)
		}
	}
}

// TestPolicyCreateTypeErrorNamesField: a create body's field of the wrong
// JSON type is a 400 naming the field as the body spells it, for both
// kinds of policy, whose create bodies share their skeleton.
func TestPolicyCreateTypeErrorNamesField(t *testing.T) {
	e := newCoreEnv(t, nil, nil)
	for _, path := range []string{"/v1/policies/rate-limits"} {
		for _, c := range []struct{ body, param string }{
			{`{"name":5}`, "name"},
			{`{"conditions":5}`, "conditions"},
			{`{"group_by":"x"}`, "group_by"},
			{`{"workspace_id":1}`, "workspace_id"},
		} {
			res := e.do("POST", path, strings.NewReader(c.body), HeaderAPIKey+": "+coreAdminKey)
			body, _ := io.ReadAll(res.Body)
			var got struct {
				Error struct {
					Param *string `json:"param"`
				} `json:"error"`
			}
			json.Unmarshal(body, &got)
			if res.StatusCode != http.StatusBadRequest || got.Error.Param == nil || *got.Error.Param != c.param {
				t.Errorf("POST %s %s: %d %s; want 400 naming %s", path, c.body, res.StatusCode, body, c.param)
			}
		}
	}
}
