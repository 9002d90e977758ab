package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// fullAPIKey is an API key with every field set.
func fullAPIKey(id, key string) *gateway.APIKey {
	t0 := time.Date(2026, 2, 3, 4, 5, 6, 789000, time.UTC)
	return &gateway.APIKey{ID: id, Digest: gateway.HashAPIKey(key), WorkspaceID: "ws-1", Role: gateway.RoleAdmin,
		Disabled: true, Metadata: map[string]string{"_environment": "prod", "team": "a"}, DefaultConfig: "pc-default",
		Scopes:    []gateway.Scope{gateway.ScopeCompletionsWrite, gateway.ScopeConfigsRead},
		ExpiresAt: t0.Add(365 * 24 * time.Hour), Type: gateway.KeyWorkspace, SubType: gateway.KeyUser, UserID: "user-1",
		Name: "Team A", Description: "the key of team A", CreatedAt: t0, UpdatedAt: t0.Add(time.Minute),
		RateLimits:     json.RawMessage(`[{"type": "requests", "unit": "rpm", "value": 10}]`),
		UsageLimits:    json.RawMessage(`{"credit_limit": 100, "type": "cost"}`),
		PreviousDigest: gateway.HashAPIKey(key + "-before"), PreviousValidUntil: time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond),
		InputGuardrails: []string{"guard_in"}, OutputGuardrails: []string{"guard_out", "guard_out2"}}
}

// fullVirtualKey is a virtual key with every field set.
func fullVirtualKey(slug, secret string) *gateway.VirtualKey {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 891000, time.UTC)
	return &gateway.VirtualKey{Slug: slug, Provider: "bedrock", APIKey: "sk-" + secret, BaseURL: "https://llm.example.com/v1",
		WorkspaceID: "ws-1", HostSettings: gateway.HostSettings{ResourceName: "res", DeploymentID: "dep", APIVersion: "2024-02-01",
			ModelName: "model", ProjectID: "proj", Region: "eu-west-1", AccessKeyID: "AKIAEXAMPLE",
			SecretAccessKey: "aws-secret-" + secret, SessionToken: "aws-session-" + secret},
		Name: "Bedrock " + slug, Note: "the team's account", CreatedAt: t0, UpdatedAt: t0.Add(time.Hour),
		Tenant: true, AllowedRoutes: []string{"POST /chat/completions", "* /files"},
		Models: []string{"anthropic.claude-3-haiku"}, Prices: gateway.PriceTable{"my-model": {Input: 1, Output: 2, CachedInput: 0.5}},
		NamedOnly: true}
}

// policy is a valid rate-limits policy.
func policy(id, ws, created string) *gateway.RateLimitsPolicy {
	return &gateway.RateLimitsPolicy{ID: id, Name: "per key", Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
		GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: gateway.PolicyRequests, Unit: gateway.PolicyPerHour, Value: 3.5,
		Status: gateway.PolicyActive, WorkspaceID: ws, OrganisationID: "org-1", CreatedAt: created, LastUpdatedAt: created}
}

const (
	policyA = "aaaaaaaa-0000-4000-8000-000000000001"
	policyB = "bbbbbbbb-0000-4000-8000-000000000002"
	policyC = "cccccccc-0000-4000-8000-000000000003"
)

// TestRoundTrip: every record type reads back as written, from the
// snapshot and after the store is closed and opened again; replacing and
// deleting work; unknown ids are gateway.ErrNotFound.
func TestRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		full := fullAPIKey("key-full", "gw-full")
		bare := &gateway.APIKey{ID: "key-bare", Digest: gateway.HashAPIKey("gw-bare")}
		emptyMaps := &gateway.APIKey{ID: "key-empty", Digest: gateway.HashAPIKey("gw-empty"), Metadata: map[string]string{}, Scopes: []gateway.Scope{}}
		vk := fullVirtualKey("vk-full", "one")
		vkBare := &gateway.VirtualKey{Slug: "vk-bare", Provider: "openai"}
		cfg := &gateway.SavedConfig{ID: "pc-default", WorkspaceID: "ws-1", Config: json.RawMessage(`{"virtual_key": "vk-full",  "retry": {"attempts": 2}}`),
			Name: "Default", Version: 3, VersionID: "0b6a9c2e-7f1d-4c3b-9a8e-5d4c3b2a1f00",
			CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 0, 0, 0, 1000, time.UTC), Tenant: true}
		pol := policy(policyA, "ws-1", "2025-01-01T00:00:00Z")
		polBare := &gateway.RateLimitsPolicy{ID: policyB, Type: gateway.PolicyTokens, Unit: gateway.PolicyPerDay, Value: 1e6, Status: gateway.PolicyArchived}
		for _, k := range []*gateway.APIKey{full, bare, emptyMaps} {
			if err := s.PutAPIKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range []*gateway.VirtualKey{vk, vkBare} {
			if err := s.PutVirtualKey(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutConfig(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*gateway.RateLimitsPolicy{pol, polBare} {
			if err := s.PutPolicy(ctx, p); err != nil {
				t.Fatal(err)
			}
		}

		check := func(t *testing.T, s *sqlstore.Store) {
			t.Helper()
			for _, want := range []*gateway.APIKey{full, bare, emptyMaps} {
				got, err := s.APIKey(ctx, want.Digest)
				if err != nil {
					t.Fatalf("APIKey(%s): %v", want.ID, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("APIKey(%s) (-want +got):\n%s", want.ID, diff)
				}
			}
			for _, want := range []*gateway.VirtualKey{vk, vkBare} {
				got, err := s.VirtualKey(ctx, want.Slug)
				if err != nil {
					t.Fatalf("VirtualKey(%s): %v", want.Slug, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("VirtualKey(%s) (-want +got):\n%s", want.Slug, diff)
				}
			}
			got, err := s.Config(ctx, cfg.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(cfg, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			for _, want := range []*gateway.RateLimitsPolicy{pol, polBare} {
				got, err := s.Policy(ctx, strings.ToUpper(want.ID))
				if err != nil {
					t.Fatalf("Policy(%s): %v", want.ID, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Policy(%s) (-want +got):\n%s", want.ID, diff)
				}
			}
			ps, err := s.Policies(ctx, "ws-1")
			if err != nil {
				t.Fatal(err)
			}
			// polBare has no workspace and no creation time: it sorts first.
			if diff := cmp.Diff([]gateway.RateLimitsPolicy{*polBare, *pol}, ps); diff != "" {
				t.Errorf("Policies(ws-1) (-want +got):\n%s", diff)
			}
		}
		check(t, s)
		s.Close()
		s = openStore(t, dsn, sqlstore.Options{})
		t.Run("after reopening", func(t *testing.T) { check(t, s) })

		// Unknown records.
		if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-nope")); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("APIKey of an unknown key: %v, want ErrNotFound", err)
		}
		if _, err := s.VirtualKey(ctx, "nope"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("VirtualKey(nope): %v, want ErrNotFound", err)
		}
		if _, err := s.Config(ctx, "nope"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("Config(nope): %v, want ErrNotFound", err)
		}
		if _, err := s.Policy(ctx, policyC); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("Policy(unknown): %v, want ErrNotFound", err)
		}
		for name, del := range map[string]func() error{
			"DeleteAPIKey":                          func() error { return s.DeleteAPIKey(ctx, "nope") },
			"DeleteVirtualKey":                      func() error { return s.DeleteVirtualKey(ctx, "", "nope") },
			"DeleteConfig":                          func() error { return s.DeleteConfig(ctx, "", "nope") },
			"DeleteVirtualKey of another workspace": func() error { return s.DeleteVirtualKey(ctx, "ws-2", vkBare.Slug) },
			"DeleteConfig of another workspace":     func() error { return s.DeleteConfig(ctx, "", cfg.ID) },
			"DeletePolicy":                          func() error { return s.DeletePolicy(ctx, policyC) },
		} {
			if err := del(); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("%s of an unknown record: %v, want ErrNotFound", name, err)
			}
		}

		// Replacing: a key id given a new key loses the old one; a virtual
		// key replaced without credentials has none left.
		rotated := *full
		rotated.Digest = gateway.HashAPIKey("gw-rotated")
		rotated.Disabled = false
		if err := s.PutAPIKey(ctx, &rotated); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKey(ctx, full.Digest); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("the replaced key still works: %v", err)
		}
		if k, err := s.APIKey(ctx, rotated.Digest); err != nil || k.ID != full.ID || k.Disabled {
			t.Errorf("rotated key = %+v, %v", k, err)
		}
		if err := s.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: vk.Slug, WorkspaceID: vk.WorkspaceID, Provider: "openai"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.VirtualKey(ctx, vk.Slug); err != nil || got.APIKey != "" || got.SecretAccessKey != "" || got.SessionToken != "" || got.Region != "" {
			t.Errorf("replaced virtual key = %+v, %v; want no credential and no host settings", got, err)
		}

		// Deleting.
		for _, del := range []func() error{
			func() error { return s.DeleteAPIKey(ctx, bare.ID) },
			func() error { return s.DeleteVirtualKey(ctx, vkBare.WorkspaceID, vkBare.Slug) },
			func() error { return s.DeleteConfig(ctx, cfg.WorkspaceID, cfg.ID) },
			func() error { return s.DeletePolicy(ctx, strings.ToUpper(policyA)) },
		} {
			if err := del(); err != nil {
				t.Fatal(err)
			}
		}
		gone := func(t *testing.T, s *sqlstore.Store) {
			t.Helper()
			if _, err := s.APIKey(ctx, bare.Digest); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("deleted key: %v", err)
			}
			if _, err := s.VirtualKey(ctx, vkBare.Slug); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("deleted virtual key: %v", err)
			}
			if _, err := s.Config(ctx, cfg.ID); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("deleted config: %v", err)
			}
			if _, err := s.Policy(ctx, policyA); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("deleted policy: %v", err)
			}
			if ps, _ := s.Policies(ctx, "ws-1"); len(ps) != 1 || ps[0].ID != policyB {
				t.Errorf("policies after a delete = %+v, want %s alone", ps, policyB)
			}
		}
		gone(t, s)
		s.Close()
		t.Run("deletes after reopening", func(t *testing.T) { gone(t, openStore(t, dsn, sqlstore.Options{})) })
	})
}

// TestRecordsAreNotShared: records written are copied, so that a caller
// changing what it wrote, or what a lookup gave it a copy of, changes
// nothing stored.
func TestRecordsAreNotShared(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, sqliteDSN(t), sqlstore.Options{})
	k := fullAPIKey("key-1", "gw-1")
	if err := s.PutAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	k.Metadata["team"] = "changed"
	k.Scopes[0] = "changed"
	cfg := &gateway.SavedConfig{ID: "pc", Config: json.RawMessage(`{"provider":"openai"}`)}
	if err := s.PutConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Config[2] = 'X'
	p := policy(policyA, "ws-1", "1")
	if err := s.PutPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Conditions[0].Value = "changed"
	got, _ := s.Policy(ctx, policyA)
	got.Conditions[0].Value = "changed too"
	got.GroupBy[0].Key = "changed too"

	if k, _ := s.APIKey(ctx, gateway.HashAPIKey("gw-1")); k.Metadata["team"] != "a" || k.Scopes[0] != gateway.ScopeCompletionsWrite {
		t.Errorf("stored key changed with the caller's copy: %+v", k)
	}
	if c, _ := s.Config(ctx, "pc"); string(c.Config) != `{"provider":"openai"}` {
		t.Errorf("stored config changed with the caller's copy: %s", c.Config)
	}
	if p, _ := s.Policy(ctx, policyA); p.Conditions[0].Value != "ws-1" || p.GroupBy[0].Key != "api_key" {
		t.Errorf("stored policy changed with a caller's copy: %+v", p)
	}
	ps, _ := s.Policies(ctx, "ws-1")
	_ = append(ps, gateway.RateLimitsPolicy{ID: "appended"})
	if again, _ := s.Policies(ctx, "ws-1"); len(again) != 1 {
		t.Errorf("an append to Policies' slice changed the store: %+v", again)
	}
}

// TestAPIKeyConflict: a key already held by another id is refused, and
// nothing changes.
func TestAPIKeyConflict(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		if err := s.PutAPIKey(ctx, &gateway.APIKey{ID: "a", Digest: gateway.HashAPIKey("gw-1"), WorkspaceID: "ws-a"}); err != nil {
			t.Fatal(err)
		}
		err := s.PutAPIKey(ctx, &gateway.APIKey{ID: "b", Digest: gateway.HashAPIKey("gw-1"), WorkspaceID: "ws-b"})
		if !errors.Is(err, gateway.ErrConflict) || !strings.Contains(err.Error(), `"a"`) {
			t.Fatalf("PutAPIKey of a key id a holds: %v, want ErrConflict naming a", err)
		}
		if k, err := s.APIKey(ctx, gateway.HashAPIKey("gw-1")); err != nil || k.ID != "a" || k.WorkspaceID != "ws-a" {
			t.Errorf("key after a refused write = %+v, %v; want id a unchanged", k, err)
		}
	})
}

// TestPolicies mirrors memstore.s TestPolicies: ids are kept in
// lower case and found in any case; a workspace's list includes the
// policies of no workspace; a compare-and-swap replaces only the policy as
// read, and never one deleted meanwhile.
func TestPolicies(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		const (
			upper = "AAAAAAAA-0000-4000-8000-000000000001"
			lower = "aaaaaaaa-0000-4000-8000-000000000001"
			op    = "bbbbbbbb-0000-4000-8000-000000000002"
			other = "cccccccc-0000-4000-8000-000000000003"
		)
		for _, p := range []*gateway.RateLimitsPolicy{policy(upper, "ws-1", "1"), policy(op, "", "2"), policy(other, "ws-2", "3")} {
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
		if diff := cmp.Diff([]string{op}, ids("ws-without-policies")); diff != "" {
			t.Errorf("policies of a workspace without its own (-want +got):\n%s", diff)
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
		if _, err := s.CompareAndSwapPolicy(ctx, read, &gateway.RateLimitsPolicy{ID: other}); err == nil {
			t.Error("a swap to another id succeeded")
		}
		if err := s.DeletePolicy(ctx, upper); err != nil {
			t.Fatalf("DeletePolicy(%q): %v", upper, err)
		}
		if ok, err := s.CompareAndSwapPolicy(ctx, &changed, &stale); ok || !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("swap of a deleted policy: %t, %v; want ErrNotFound", ok, err)
		}
		if _, err := s.Policy(ctx, lower); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("deleted policy found: %v", err)
		}
	})
}

// TestLoad: a store file creates or replaces each entry it names and
// leaves the others alone; a file admin.Apply refuses is refused
// with its message, and changes nothing.
func TestLoad(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		load := func(doc string) error {
			t.Helper()
			f, err := admin.Decode(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			return s.Load(ctx, f)
		}
		first := `{
		  "api_keys": [{"id": "keep", "key": "gw-keep", "workspace_id": "ws-1"},
		               {"id": "replace", "key": "gw-replace-old", "workspace_id": "ws-1", "role": "admin"}],
		  "virtual_keys": [{"slug": "keep", "provider": "openai", "api_key": "sk-keep"},
		                   {"slug": "replace", "provider": "openai", "api_key": "sk-old"}],
		  "configs": [{"id": "keep", "config": {"virtual_key": "keep"}},
		              {"id": "replace", "config": {"virtual_key": "keep"}}],
		  "rate_limits_policies": [{"id": "` + strings.ToUpper(policyA) + `", "type": "requests", "unit": "rpm", "value": 10},
		                           {"id": "` + policyB + `", "type": "requests", "unit": "rpm", "value": 10}]
		}`
		if err := load(first); err != nil {
			t.Fatal(err)
		}
		second := `{
		  "api_keys": [{"id": "replace", "key_sha256": "` + hexDigest("gw-replace-new") + `", "workspace_id": "ws-2"},
		               {"id": "new", "key": "gw-new", "workspace_id": "ws-1", "metadata": {"team": "b"}}],
		  "virtual_keys": [{"slug": "replace", "provider": "anthropic", "api_key": "sk-new"}],
		  "configs": [{"id": "replace", "config": {"virtual_key": "replace"}}],
		  "rate_limits_policies": [{"id": "` + policyB + `", "type": "tokens", "unit": "rpd", "value": 1000, "status": "archived"}]
		}`
		if err := load(second); err != nil {
			t.Fatal(err)
		}
		wantKeys := map[string]*gateway.APIKey{
			"gw-keep":        {ID: "keep", Name: "keep", Digest: gateway.HashAPIKey("gw-keep"), WorkspaceID: "ws-1", Role: gateway.RoleMember},
			"gw-replace-new": {ID: "replace", Name: "replace", Digest: gateway.HashAPIKey("gw-replace-new"), WorkspaceID: "ws-2", Role: gateway.RoleMember},
			"gw-new":         {ID: "new", Name: "new", Digest: gateway.HashAPIKey("gw-new"), WorkspaceID: "ws-1", Role: gateway.RoleMember, Metadata: map[string]string{"team": "b"}},
			"gw-replace-old": nil,
		}
		for key, want := range wantKeys {
			got, err := s.APIKey(ctx, gateway.HashAPIKey(key))
			if want == nil {
				if !errors.Is(err, gateway.ErrNotFound) {
					t.Errorf("key %s: %v, want ErrNotFound", key, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("key %s: %v", key, err)
				continue
			}
			// Each key is dated when its file was applied.
			if got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) {
				t.Errorf("key %s created %v, updated %v; want the time the file was applied", key, got.CreatedAt, got.UpdatedAt)
			}
			undated := *got
			undated.CreatedAt, undated.UpdatedAt = time.Time{}, time.Time{}
			if diff := cmp.Diff(want, &undated); diff != "" {
				t.Errorf("key %s (-want +got):\n%s", key, diff)
			}
		}
		if vk, err := s.VirtualKey(ctx, "keep"); err != nil || vk.APIKey != "sk-keep" {
			t.Errorf("virtual key keep = %+v, %v", vk, err)
		}
		if vk, err := s.VirtualKey(ctx, "replace"); err != nil || vk.APIKey != "sk-new" || vk.Provider != "anthropic" {
			t.Errorf("virtual key replace = %+v, %v", vk, err)
		}
		if c, err := s.Config(ctx, "keep"); err != nil || string(c.Config) != `{"virtual_key": "keep"}` {
			t.Errorf("config keep = %s, %v", c.Config, err)
		}
		if c, err := s.Config(ctx, "replace"); err != nil || string(c.Config) != `{"virtual_key": "replace"}` {
			t.Errorf("config replace = %+v, %v", c, err)
		}
		if p, err := s.Policy(ctx, policyA); err != nil || p.ID != policyA || p.Status != gateway.PolicyActive || p.Value != 10 {
			t.Errorf("policy A = %+v, %v; want it active, id in lower case", p, err)
		}
		if p, err := s.Policy(ctx, policyB); err != nil || p.Type != gateway.PolicyTokens || p.Status != gateway.PolicyArchived {
			t.Errorf("policy B = %+v, %v; want it replaced", p, err)
		}

		// Refused files change nothing, whichever entry is at fault.
		for _, tc := range []struct{ name, doc, want string }{
			{"invalid config", `{"api_keys": [{"id": "refused", "key": "gw-refused"}],
			  "configs": [{"id": "c", "config": {"strategy": {"mode": "random"}}}]}`, "configs[0].config"},
			{"bad role", `{"virtual_keys": [{"slug": "refused", "provider": "openai"}],
			  "api_keys": [{"id": "refused", "key": "gw-refused", "role": "root"}]}`, "api_keys[0].role"},
			{"key of another id", `{"virtual_keys": [{"slug": "refused", "provider": "openai"}],
			  "api_keys": [{"id": "refused", "key": "gw-keep"}]}`, `api key "refused" has the same key as api key "keep"`},
		} {
			err := load(tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Load error = %v, want one mentioning %q", tc.name, err, tc.want)
			}
			if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-refused")); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("%s: a refused Load stored a key", tc.name)
			}
			if _, err := s.VirtualKey(ctx, "refused"); !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("%s: a refused Load stored a virtual key", tc.name)
			}
		}
		if err := load(`{"api_keys": [{"id": "x", "key": "gw-keep"}]}`); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("Load of a key another id holds: %v, want ErrConflict", err)
		}
	})
}

func hexDigest(key string) string {
	d := gateway.HashAPIKey(key)
	return hex.EncodeToString(d[:])
}

// TestSameFileTwoForms: a path and sqlite:PATH open the same database.
func TestSameFileTwoForms(t *testing.T) {
	ctx := context.Background()
	path := sqliteDSN(t)
	s := openStore(t, path, sqlstore.Options{})
	if err := s.PutAPIKey(ctx, &gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-k")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, "sqlite:"+path, sqlstore.Options{})
	if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-k")); err != nil {
		t.Errorf("the key written through %s is not found through sqlite:%s: %v", path, path, err)
	}
}

// TestOpenRefuses: DSNs that name no database file, malformed master
// keys, and a Postgres URL whose server is not there, each with an error
// that says so and never quotes a secret.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, dsn string
		key       []byte
		want      string
	}{
		{"empty", "", nil, "empty database name"},
		{"memory", ":memory:", nil, "not a database file path"},
		{"sqlite memory", "sqlite::memory:", nil, "not a database file path"},
		{"file URI", "file:" + dir + "/x.db", nil, "not a database file path"},
		{"missing directory", dir + "/no/such/dir/x.db", nil, "no such file or directory"},
		{"short master key", dir + "/x.db", []byte("0123456789abcdef"), "32 bytes"},
		{"unreachable postgres", "postgres://gw:hunter2-secret@127.0.0.1:1/gw?sslmode=disable&connect_timeout=5", nil, "127.0.0.1"},
		{"malformed postgres URL", "postgres://gw:hunter2-secret@127.0.0.1:port/gw", nil, "malformed postgres:// URL"},
		{"bad postgres parameter", "postgres://gw:hunter2-secret@127.0.0.1/gw?sslmode=hunter2-secret", nil, "sslmode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlstore.Open(ctx, tc.dsn, sqlstore.Options{MasterKey: tc.key})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sqlstore: ") {
				t.Errorf("error = %q, want one prefixed sqlstore: mentioning %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("error quotes a secret: %q", err)
			}
		})
	}
}

// TestPostgresPrefersTLS: a postgres:// URL without sslmode connects to a
// server without TLS, as libpq's default (prefer) does; the driver's own
// default would require TLS and fail.
func TestPostgresPrefersTLS(t *testing.T) {
	u, err := url.Parse(postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("sslmode")
	u.RawQuery = q.Encode()
	s := openStore(t, u.String(), sqlstore.Options{})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// TestParseMasterKey: 64 hex digits or base64 of 32 bytes; anything else
// is refused without being quoted.
func TestParseMasterKey(t *testing.T) {
	want := bytes.Repeat([]byte{0xfb}, 32)
	for _, s := range []string{
		strings.Repeat("fb", 32),
		strings.Repeat("FB", 32) + "\n",
		"+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/s=",
		"+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/s",
		"-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_s=",
	} {
		got, err := sqlstore.ParseMasterKey(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ParseMasterKey(%q) = %x, %v; want %x", s, got, err, want)
		}
	}
	for _, s := range []string{"", strings.Repeat("fb", 31), strings.Repeat("fb", 33), strings.Repeat("zz", 32),
		"+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+w==", "not a key at all"} {
		got, err := sqlstore.ParseMasterKey(s)
		if err == nil {
			t.Errorf("ParseMasterKey(%q) = %x, want an error", s, got)
			continue
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("ParseMasterKey error quotes the key: %q", err)
		}
	}
}

// TestSlugsPerWorkspace: a virtual key's slug and a config's id are unique
// within a workspace. The lookups of the data plane, which name no
// workspace, answer as memstore.Store does: the entry of no
// workspace, else the one of the workspace whose id sorts first.
func TestSlugsPerWorkspace(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		for _, ws := range []string{"ws-2", "ws-1"} {
			if err := s.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: "shared", Provider: "openai", APIKey: "sk-" + ws, WorkspaceID: ws}); err != nil {
				t.Fatal(err)
			}
			if err := s.PutConfig(ctx, &gateway.SavedConfig{ID: "pc-shared", WorkspaceID: ws, Config: json.RawMessage(`{"name":"` + ws + `"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if vk, err := s.VirtualKey(ctx, "shared"); err != nil || vk.WorkspaceID != "ws-1" || vk.APIKey != "sk-ws-1" {
			t.Errorf("VirtualKey(shared) = %+v, %v; want ws-1's", vk, err)
		}
		if c, err := s.Config(ctx, "pc-shared"); err != nil || c.WorkspaceID != "ws-1" || c.Version != 1 {
			t.Errorf("Config(pc-shared) = %+v, %v; want ws-1's, version 1", c, err)
		}
		if err := s.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: "shared", Provider: "openai", APIKey: "sk-all"}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutConfig(ctx, &gateway.SavedConfig{ID: "pc-shared", Config: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if vk, _ := s.VirtualKey(ctx, "shared"); vk.WorkspaceID != "" || vk.APIKey != "sk-all" {
			t.Errorf("VirtualKey(shared) = %+v; want the one of no workspace", vk)
		}
		if c, _ := s.Config(ctx, "pc-shared"); c.WorkspaceID != "" {
			t.Errorf("Config(pc-shared) = %+v; want the one of no workspace", c)
		}
		for _, ws := range []string{"", "ws-1"} {
			if err := s.DeleteVirtualKey(ctx, ws, "shared"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteConfig(ctx, ws, "pc-shared"); err != nil {
				t.Fatal(err)
			}
		}
		if vk, err := s.VirtualKey(ctx, "shared"); err != nil || vk.WorkspaceID != "ws-2" || vk.APIKey != "sk-ws-2" {
			t.Errorf("VirtualKey(shared) after deletes = %+v, %v; want ws-2's", vk, err)
		}
		if c, err := s.Config(ctx, "pc-shared"); err != nil || c.WorkspaceID != "ws-2" || string(c.Config) != `{"name":"ws-2"}` {
			t.Errorf("Config(pc-shared) after deletes = %+v, %v; want ws-2's", c, err)
		}
	})
}
