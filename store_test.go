package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeStoreFile(t *testing.T) {
	t.Setenv("TEST_OPENAI_KEY", `sk-"quoted"\`)
	doc := `{
	  "api_keys": [
	    {"id": "key-admin", "key": "gw-admin", "workspace_id": "ws-1", "role": "admin",
	     "metadata": {"_environment": "dev"}, "default_config": "pc-default"},
	    {"id": "key-hashed", "key_sha256": "` + strings.Repeat("ab", 32) + `", "workspace_id": "ws-2", "disabled": true}
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
	f, err := DecodeStoreFile(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := &MemoryStore{}
	if err := s.Load(f); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, err := s.APIKey(ctx, HashAPIKey("gw-admin"))
	if err != nil {
		t.Fatal(err)
	}
	want := &APIKey{ID: "key-admin", Digest: HashAPIKey("gw-admin"), WorkspaceID: "ws-1", Role: RoleAdmin,
		Metadata: map[string]string{"_environment": "dev"}, DefaultConfig: "pc-default"}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("api key (-want +got):\n%s", diff)
	}
	var d [32]byte
	for i := range d {
		d[i] = 0xab
	}
	if k, err := s.APIKey(ctx, d); err != nil || !k.Disabled || k.Role != RoleMember {
		t.Errorf("hashed key = %+v, %v; want a disabled member key", k, err)
	}
	vk, err := s.VirtualKey(ctx, "openai-prod")
	if err != nil || vk.APIKey != `sk-"quoted"\` || vk.ResourceName != "res" {
		t.Errorf("virtual key = %+v, %v; want the expanded secret and host settings", vk, err)
	}
	if c, err := s.Config(ctx, "pc-default"); err != nil || c.WorkspaceID != "ws-1" {
		t.Errorf("config = %+v, %v", c, err)
	}
	ps, err := s.Policies(ctx, "ws-1")
	if err != nil || len(ps) != 1 || ps[0].Status != PolicyActive {
		t.Errorf("policies = %+v, %v; want one active policy", ps, err)
	}
	if diff := cmp.Diff([]string{"localhost:11434"}, f.CustomHosts.Allow); diff != "" {
		t.Errorf("custom hosts (-want +got):\n%s", diff)
	}
	if _, err := s.VirtualKey(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown slug: err = %v, want ErrNotFound", err)
	}
}

func TestStoreFileErrors(t *testing.T) {
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
			f, err := DecodeStoreFile(strings.NewReader(tc.doc))
			if err == nil {
				s := &MemoryStore{}
				err = s.Load(f)
				if err != nil {
					// Load is all or nothing.
					if _, kerr := s.APIKey(context.Background(), HashAPIKey("k")); !errors.Is(kerr, ErrNotFound) {
						t.Error("a failed Load stored keys")
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

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		typ    string
		code   string
	}{
		{"gateway error", badRequest(CodeInvalidConfig, "x", "bad"), 400, TypeInvalidRequest, CodeInvalidConfig},
		{"wrapped gateway error", errors.Join(errors.New("ctx"), badRequest(CodeUnknownProvider, "x", "bad")), 400, TypeInvalidRequest, CodeUnknownProvider},
		{"timeout", errTimeout{1500e6}, 408, TypeTimeout, CodeTimeout},
		{"unreachable", errors.Join(ErrUpstreamUnreachable, errors.New("dial tcp 10.0.0.1:443: refused")), 502, TypeGateway, CodeUpstreamUnreachable},
		{"blocked address", &blockedAddrError{host: "x", addr: mustAddr("10.0.0.1")}, 400, TypeInvalidRequest, CodeInvalidCustomHost},
		{"anything else", errors.New("store down at 10.0.0.9"), 500, TypeGateway, CodeInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := errorFor(tc.err)
			if e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code {
				t.Errorf("errorFor = %d %s %s; want %d %s %s", e.Status, e.Type, e.Code, tc.status, tc.typ, tc.code)
			}
			if strings.Contains(e.Message, "10.0.0") {
				t.Errorf("message leaks an internal address: %s", e.Message)
			}
		})
	}
	if got := errorFor(errTimeout{1500e6}).Message; got != "Request exceeded the timeout sent in the request: 1500ms" {
		t.Errorf("timeout message = %q", got)
	}
}

func sha256Of(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// TestMemoryStorePolicies: ids are kept in lower case and found in any
// case; a workspace's list includes the policies of no workspace; a
// compare-and-swap replaces only the policy as read, and never one
// deleted meanwhile.
func TestMemoryStorePolicies(t *testing.T) {
	ctx := context.Background()
	s := &MemoryStore{}
	mk := func(id, ws, created string) *RateLimitsPolicy {
		return &RateLimitsPolicy{ID: id, Conditions: []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
			GroupBy: []PolicyGroupBy{{Key: "api_key"}}, Type: PolicyRequests, Unit: PolicyPerHour, Value: 3,
			Status: PolicyActive, WorkspaceID: ws, CreatedAt: created}
	}
	const (
		upper = "AAAAAAAA-0000-4000-8000-000000000001"
		lower = "aaaaaaaa-0000-4000-8000-000000000001"
		op    = "bbbbbbbb-0000-4000-8000-000000000002"
		other = "cccccccc-0000-4000-8000-000000000003"
	)
	for _, p := range []*RateLimitsPolicy{mk(upper, "ws-1", "1"), mk(op, "", "2"), mk(other, "ws-2", "3")} {
		if err := s.PutPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ws string) []string {
		ps, err := s.Policies(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{lower, op}, ids("ws-1")); diff != "" {
		t.Errorf("policies of ws-1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{op, other}, ids("ws-2")); diff != "" {
		t.Errorf("policies of ws-2 (-want +got):\n%s", diff)
	}

	read, err := s.Policy(ctx, upper)
	if err != nil || read.ID != lower {
		t.Fatalf("Policy(%q) = %+v, %v; want the policy, id in lower case", upper, read, err)
	}
	changed := *read
	changed.Value = 5
	if ok, err := s.CompareAndSwapPolicy(ctx, read, &changed); !ok || err != nil {
		t.Fatalf("swap of the policy as read: %t, %v; want true", ok, err)
	}
	stale := changed
	stale.Value = 9
	if ok, err := s.CompareAndSwapPolicy(ctx, read, &stale); ok || err != nil {
		t.Fatalf("swap of a stale read: %t, %v; want false", ok, err)
	}
	if p, _ := s.Policy(ctx, lower); p.Value != 5 {
		t.Fatalf("value %v after a refused swap, want 5", p.Value)
	}
	if err := s.DeletePolicy(ctx, upper); err != nil {
		t.Fatalf("DeletePolicy(%q): %v", upper, err)
	}
	if ok, err := s.CompareAndSwapPolicy(ctx, &changed, &stale); ok || !errors.Is(err, ErrNotFound) {
		t.Fatalf("swap of a deleted policy: %t, %v; want ErrNotFound", ok, err)
	}
	if _, err := s.Policy(ctx, lower); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted policy found: %v", err)
	}
}
