package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// TestControlPlaneMethodNotAllowed pins the 405 of every control-plane
// route that dispatches by method through internal/httpapi: its Allow
// header (methods in the order GET, POST, PUT, DELETE), code and message,
// as they were before the dispatchers were made one.
func TestControlPlaneMethodNotAllowed(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *envOptions) {
		o.Workspaces = o.Keys.(*memstore.Store)
		withBudgets(o)
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(wsOrg), Type: gateway.KeyOrganisation, Scopes: gateway.RoleScopes(gateway.RoleAdmin)})
	const pid = "0b6c3bb4-2a44-4b69-9c1c-8f1c62b7e001"
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
		{"PATCH", "/v1/policies/usage-limits", "GET, POST"},
		{"POST", "/v1/policies/usage-limits/" + pid, "GET, PUT, DELETE"},
		{"POST", "/v1/policies/usage-limits/" + pid + "/entities", "GET"},
		{"GET", "/v1/policies/usage-limits/" + pid + "/entities/e/reset", "PUT"},
		{"POST", "/v1/audit-logs", "GET"},
		{"PUT", "/v1/logs", "GET, POST"},
		{"POST", "/v1/logs/l1", "GET"},
		{"DELETE", "/v1/logs/exports", "GET, POST"},
		{"DELETE", "/v1/logs/exports/x1", "GET, PUT"},
		{"GET", "/v1/logs/exports/x1/start", "POST"},
		{"POST", "/v1/logs/exports/x1/download", "GET"},
		{"POST", "/v1/analytics/graphs/requests", "GET"},
		{"GET", "/v1/feedback", "POST"},
		{"POST", "/v1/feedback/f1", "PUT"},
	} {
		res := e.do(c.method, c.path, nil, gateway.HeaderAPIKey+": "+wsOrg)
		body, _ := io.ReadAll(res.Body)
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
// JSON type is a 400 naming the field as the body spells it, for both
// kinds of policy, whose create bodies share their skeleton.
func TestPolicyCreateTypeErrorNamesField(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *envOptions) { withBudgets(o) })
	for _, path := range []string{"/v1/policies/rate-limits", "/v1/policies/usage-limits"} {
		for _, c := range []struct{ body, param string }{
			{`{"name":5}`, "name"},
			{`{"conditions":5}`, "conditions"},
			{`{"group_by":"x"}`, "group_by"},
			{`{"workspace_id":1}`, "workspace_id"},
		} {
			res := e.do("POST", path, strings.NewReader(c.body), gateway.HeaderAPIKey+": "+coreAdminKey)
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
