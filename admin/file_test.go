package admin_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

func TestDecode(t *testing.T) {
	t.Setenv("TEST_OPENAI_KEY", `sk-"quoted"\`)
	doc := `{
	  "api_keys": [
	    {"id": "key-admin", "key": "gw-admin", "workspace_id": "ws-1", "role": "admin",
	     "metadata": {"_environment": "dev"}, "default_config": "pc-default"},
	    {"id": "key-hashed", "key_sha256": "` + strings.Repeat("ab", 32) + `", "workspace_id": "ws-2", "disabled": true, "name": "ops"}
	  ],
	  "virtual_keys": [{"slug": "openai-prod", "provider": "openai", "api_key": "${TEST_OPENAI_KEY}",
	                    "base_url": "https://api.openai.com/v1", "workspace_id": "ws-1",
	                    "resource_name": "res", "deployment_id": "dep", "api_version": "2024-02-01"}],
	  "configs": [{"id": "pc-default", "workspace_id": "ws-1", "config": {"virtual_key": "openai-prod"}}],
	  "rate_limits_policies": [{"id": "7d1e8a4c-1b2c-4d5e-8f90-123456789abc", "conditions": [{"key": "workspace_id", "value": "ws-1"}],
	                            "group_by": [{"key": "api_key"}], "type": "requests", "unit": "rph", "value": 1000,
	                            "workspace_id": "ws-1"}],
	  "custom_hosts": {"allow": ["localhost:11434"]}
	}`
	f, err := admin.Decode(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	before := time.Now()
	if err := admin.Apply(t.Context(), f, s); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	ctx := context.Background()
	k, err := s.APIKey(ctx, gateway.HashAPIKey("gw-admin"))
	if err != nil {
		t.Fatal(err)
	}
	// A key of the file is named after its id unless the file names it,
	// and created when the file is applied, as the API keys page shows.
	if k.CreatedAt.Before(before.Truncate(time.Microsecond)) || k.CreatedAt.After(after) || !k.UpdatedAt.Equal(k.CreatedAt) {
		t.Errorf("api key created %v, updated %v; want both between %v and %v", k.CreatedAt, k.UpdatedAt, before, after)
	}
	got := *k
	got.CreatedAt, got.UpdatedAt = time.Time{}, time.Time{}
	want := &gateway.APIKey{ID: "key-admin", Name: "key-admin", Digest: gateway.HashAPIKey("gw-admin"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin,
		Metadata: map[string]string{"_environment": "dev"}, DefaultConfig: "pc-default"}
	if diff := cmp.Diff(want, &got); diff != "" {
		t.Errorf("api key (-want +got):\n%s", diff)
	}
	var d [32]byte
	for i := range d {
		d[i] = 0xab
	}
	if k, err := s.APIKey(ctx, d); err != nil || !k.Disabled || k.Role != gateway.RoleMember || k.Name != "ops" || k.CreatedAt.IsZero() {
		t.Errorf("hashed key = %+v, %v; want a disabled member key named ops, with a creation time", k, err)
	}
	vk, err := s.VirtualKey(ctx, "openai-prod")
	if err != nil || vk.APIKey != `sk-"quoted"\` || vk.ResourceName != "res" {
		t.Errorf("virtual key = %+v, %v; want the expanded secret and host settings", vk, err)
	}
	if c, err := s.Config(ctx, "pc-default"); err != nil || c.WorkspaceID != "ws-1" {
		t.Errorf("config = %+v, %v", c, err)
	}
	ps, err := s.Policies(ctx, "ws-1")
	if err != nil || len(ps) != 1 || ps[0].Status != gateway.PolicyActive {
		t.Errorf("policies = %+v, %v; want one active policy", ps, err)
	}
	if diff := cmp.Diff([]string{"localhost:11434"}, f.CustomHosts.Allow); diff != "" {
		t.Errorf("custom hosts (-want +got):\n%s", diff)
	}
	if _, err := s.VirtualKey(ctx, "nope"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("unknown slug: err = %v, want gateway.ErrNotFound", err)
	}
}

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown top-level field", `{"api_kyes": []}`, `unknown field "api_kyes"`},
		{"unknown nested field", `{"api_keys": [{"id": "a", "key": "k", "colour": "red"}]}`, `unknown field "colour"`},
		{"key and digest", `{"api_keys": [{"id": "a", "key": "k", "key_sha256": "` + strings.Repeat("0", 64) + `"}]}`, "exactly one of key and key_sha256"},
		{"no key", `{"api_keys": [{"id": "a"}]}`, "exactly one of key and key_sha256"},
		{"bad digest", `{"api_keys": [{"id": "a", "key_sha256": "xyz"}]}`, "api_keys[0].key_sha256"},
		{"bad role", `{"api_keys": [{"id": "a", "key": "k", "role": "root"}]}`, "api_keys[0].role"},
		{"virtual key without provider", `{"virtual_keys": [{"slug": "a"}]}`, "virtual_keys[0]"},
		{"invalid config", `{"configs": [{"id": "c", "config": {"strategy": {"mode": "random"}}}]}`, "configs[0].config"},
		{"invalid policy", `{"rate_limits_policies": [{"id": "not-a-uuid", "type": "requests", "unit": "rph", "value": 1}]}`, "rate_limits_policies[0]"},
		{"trailing data", `{} {}`, "trailing data"},
		{"repeated key id", `{"api_keys": [{"id": "a", "key": "k"}, {"id": "a", "key": "k2"}]}`, "api_keys[1].id repeats api_keys[0].id"},
		{"repeated key", `{"api_keys": [{"id": "a", "key": "k"}, {"id": "b", "key_sha256": "` + hex.EncodeToString(sha256Of("k")) + `"}]}`, "api_keys[1] has the same key as api_keys[0]"},
		{"repeated slug", `{"virtual_keys": [{"slug": "v", "provider": "openai"}, {"slug": "v", "provider": "anthropic"}]}`, "virtual_keys[1].slug repeats virtual_keys[0].slug"},
		{"repeated config id", `{"configs": [{"id": "c", "config": {}}, {"id": "c", "config": {}}]}`, "configs[1].id repeats configs[0].id"},
		{"repeated policy id", `{"rate_limits_policies": [{"id": "7d1e0000-0000-4000-8000-00000000000a", "type": "requests", "unit": "rph", "value": 1}, {"id": "7D1E0000-0000-4000-8000-00000000000A", "type": "requests", "unit": "rph", "value": 1}]}`, "rate_limits_policies[1].id repeats rate_limits_policies[0].id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := admin.Decode(strings.NewReader(tc.doc))
			if err == nil {
				s := memstore.New()
				err = admin.Apply(t.Context(), f, s)
				if err != nil {
					// Load is all or nothing.
					if _, kerr := s.APIKey(context.Background(), gateway.HashAPIKey("k")); !errors.Is(kerr, gateway.ErrNotFound) {
						t.Error("a failed Apply stored keys")
					}
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.want)
			}
			if err != nil && (strings.Count(err.Error(), "gateway:") != 1 || strings.Contains(err.Error(), "(x-gateway-")) {
				t.Errorf("error = %q, want one gateway: prefix and no header name", err)
			}
		})
	}
}

// TestStoreFileScopes: a store file names scopes and an expiry, and an
// unknown scope is refused naming its place.
func TestFileScopes(t *testing.T) {
	f, err := admin.Decode(strings.NewReader(`{"api_keys":[{"id":"k","key":"gw-k","workspace_id":"ws","scopes":["logs.read"],"expires_at":"2030-01-02T03:04:05Z"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var s memstore.Store
	if err := admin.Apply(t.Context(), f, &s); err != nil {
		t.Fatal(err)
	}
	k, _ := s.APIKey(t.Context(), gateway.HashAPIKey("gw-k"))
	if len(k.Scopes) != 1 || k.Scopes[0] != gateway.ScopeLogsRead || !k.ExpiresAt.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("key %+v", k)
	}
	f, _ = admin.Decode(strings.NewReader(`{"api_keys":[{"id":"k","key":"gw-k","workspace_id":"ws","scopes":["logs.read","root"]}]}`))
	if err := admin.Apply(t.Context(), f, memstore.New()); err == nil || !strings.Contains(err.Error(), "api_keys[0].scopes[1]") {
		t.Errorf("Apply: %v, want an error naming api_keys[0].scopes[1]", err)
	}
}

// TestFileAllowedRoutes: a file's virtual keys have their allowed_routes
// checked as the control plane checks them.
func TestFileAllowedRoutes(t *testing.T) {
	f, err := admin.Decode(strings.NewReader(`{"virtual_keys":[{"slug":"x","provider":"openai","allowed_routes":["GET /models","get /files"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var st memstore.Store
	if err := admin.Apply(t.Context(), f, &st); err == nil || !strings.Contains(err.Error(), "virtual_keys[0].allowed_routes[1]") {
		t.Errorf("store file with a bad allowed route: %v", err)
	}
}

func sha256Of(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
