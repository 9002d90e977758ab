package admin_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
)

// TestScopes: a key's scopes decide what it may do on the data plane and
// the control plane (403 permission_error naming the scope otherwise);
// roles stand for their presets; an expired key is refused like an
// unknown one.
func TestScopes(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	e.store.AddAPIKey(gateway.APIKey{ID: "k-read", Digest: gateway.HashAPIKey("gw-read"), WorkspaceID: "ws-1", Scopes: []gateway.Scope{gateway.ScopePoliciesRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "k-chat", Digest: gateway.HashAPIKey("gw-chat"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin, Scopes: []gateway.Scope{gateway.ScopeCompletionsWrite}})
	e.store.AddAPIKey(gateway.APIKey{ID: "k-old", Digest: gateway.HashAPIKey("gw-old"), WorkspaceID: "ws-1", ExpiresAt: time.Now().Add(-time.Second)})
	e.store.AddAPIKey(gateway.APIKey{ID: "k-later", Digest: gateway.HashAPIKey("gw-later"), WorkspaceID: "ws-1", ExpiresAt: time.Now().Add(time.Hour)})
	chat := func(key string) *http.Response {
		return e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`), "x-gateway-api-key: "+key, "x-gateway-virtual-key: vk-up")
	}
	policies := func(method, key string) *http.Response {
		return e.do(method, "/v1/policies/rate-limits", strings.NewReader(`{}`), "x-gateway-api-key: "+key)
	}
	for _, tc := range []struct {
		name   string
		res    *http.Response
		status int
		scope  string
	}{
		{"member chats", chat(coreKey), 200, ""},
		{"member reads no policies", policies("GET", coreKey), 403, "policies.read"},
		{"admin reads policies", policies("GET", coreAdminKey), 200, ""},
		{"policies.read reads", policies("GET", "gw-read"), 200, ""},
		{"policies.read writes nothing", policies("POST", "gw-read"), 403, "policies.write"},
		{"policies.read does not chat", chat("gw-read"), 403, "completions.write"},
		{"scopes win over the role", policies("GET", "gw-chat"), 403, "policies.read"},
		{"expired", chat("gw-old"), 401, ""},
		{"not yet expired", chat("gw-later"), 200, ""},
	} {
		if tc.res.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, tc.res.StatusCode, tc.status)
			continue
		}
		if tc.status == 403 {
			if got := decodeError(t, tc.res); got.Error.Type != gateway.TypePermission || !strings.Contains(got.Error.Message, tc.scope) {
				t.Errorf("%s: error %+v, want a permission_error naming %s", tc.name, got.Error, tc.scope)
			}
		}
	}
	if n := len(up.received()); n != 2 {
		t.Errorf("the provider saw %d requests, want 2 (the member's and the unexpired key's)", n)
	}
}

// TestControlPlaneNamespaceNotPassedThrough: a path under the namespace of
// an admin route that no route matches is a 404, never a provider's.
func TestControlPlaneNamespaceNotPassedThrough(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	for _, path := range []string{"/v1/policies/rate-limits/", "/v1/policies/rate-limits/a/b"} {
		res := e.do("GET", path, nil, "x-gateway-api-key: "+coreAdminKey, "x-gateway-virtual-key: vk-up")
		if res.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", path, res.StatusCode)
		}
	}
	if n := len(up.received()); n != 0 {
		t.Errorf("provider received %d control-plane requests", n)
	}
}
