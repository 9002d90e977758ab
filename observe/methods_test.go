package observe_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/modelgateway/gateway"
)

// TestMethodNotAllowed pins the 405 of every observability route that
// dispatches by method: its Allow header (methods in the order GET, POST,
// PUT, DELETE), code and message.
func TestMethodNotAllowed(t *testing.T) {
	e := newCoreEnv(t, nil, nil)
	const orgKey = "gw-methods-org"
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(orgKey), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	for _, c := range []struct{ method, path, allow string }{
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
		res := e.do(c.method, c.path, nil, gateway.HeaderAPIKey+": "+orgKey)
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
