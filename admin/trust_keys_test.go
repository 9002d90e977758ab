package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// Tests of the trust model on the API keys, workspaces and policies control
// planes: keys ordered by scope, bounds on what tenants write, no-store
// on plaintext keys, and audit records naming the workspace acted on.

// wantPermission sends a request that must be a 403 permission_error
// naming param (when not empty), and returns its message.
func (e *akEnv) wantPermission(param, key, method, path, body string) string {
	e.t.Helper()
	res := e.do(method, path, strings.NewReader(body), gateway.HeaderAPIKey+": "+key)
	eb := decodeError(e.t, res)
	if param == "" {
		param = "<null>"
	}
	if res.StatusCode != http.StatusForbidden || eb.Error.Type != gateway.TypePermission || deref(eb.Error.Param) != param {
		e.t.Fatalf("%s %s %s = %d %s param %s (%s), want 403 %s param %s", method, path, body, res.StatusCode,
			eb.Error.Type, deref(eb.Error.Param), eb.Error.Message, gateway.TypePermission, param)
	}
	return eb.Error.Message
}

// TestAPIKeysNoTakeover: a key holding api_keys.write but not every scope
// of the workspace admin key cannot rotate, delete, rename or demote it;
// it still acts on keys whose scopes are within its own.
func TestAPIKeysNoTakeover(t *testing.T) {
	e := newAKEnv(t)
	for _, m := range []struct{ method, path, body string }{
		{"POST", "/v1/api-keys/key-admin/rotate", ""},
		{"DELETE", "/v1/api-keys/key-admin", ""},
		{"PUT", "/v1/api-keys/key-admin", `{"name":"mine now"}`},
		{"PUT", "/v1/api-keys/key-admin", `{"scopes":["completions.write"]}`}, // demotion
		{"PUT", "/v1/api-keys/key-admin", `{"rate_limits":[{"type":"requests","unit":"rpm","value":1}]}`},
		{"PUT", "/v1/api-keys/key-admin", `{"expires_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`},
		// The reader holds api_keys.read, which the writer lacks.
		{"POST", "/v1/api-keys/key-reader/rotate", ""},
		{"PUT", "/v1/api-keys/key-reader", `{"scopes":["completions.write"]}`},
	} {
		msg := e.wantPermission("", akWriter, m.method, m.path, m.body)
		if !strings.Contains(msg, "scope") || !strings.Contains(msg, "subset") {
			t.Errorf("%s %s: message %q does not say why", m.method, m.path, msg)
		}
	}
	// The admin key still works, unchanged.
	if got := e.dataPlane(coreAdminKey); got != 200 {
		t.Fatalf("admin key after the attempts: %d, want 200", got)
	}
	var adm akObject
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/key-admin", "", &adm)
	if adm.Name != "" || len(adm.Scopes) != len(gateway.RoleScopes(gateway.RoleAdmin)) || adm.RateLimits != nil || !adm.ExpiresAt.IsZero() {
		t.Errorf("admin key after the attempts: %+v", adm)
	}
	if got := e.dataPlane(akReader); got != 403 { // works, lacks completions.write
		t.Errorf("reader key after the attempts: %d, want 403", got)
	}

	// Keys within the writer's scopes: the member (completions.write).
	e.want(200, akWriter, "PUT", "/v1/api-keys/key-member", `{"name":"member"}`, nil)
	var rot akCreated
	e.want(200, akWriter, "POST", "/v1/api-keys/key-member/rotate", "", &rot)
	if got := e.dataPlane(rot.Key); got != 200 {
		t.Errorf("member key rotated by the writer: %d, want 200", got)
	}
	e.want(200, akWriter, "DELETE", "/v1/api-keys/key-member", "", nil)
}

// TestAPIKeysNoSelfLift: no key changes its own scopes, limits or expiry,
// whatever it holds; it may rename and rotate itself.
func TestAPIKeysNoSelfLift(t *testing.T) {
	e := newAKEnv(t)
	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	var c akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"limited",
		"scopes":["api_keys.read","api_keys.write","completions.write"],
		"rate_limits":[{"type":"requests","unit":"rpm","value":10}],"usage_limits":{"type":"cost","credit_limit":1},
		"expires_at":"`+exp.Format(time.RFC3339)+`"}`, &c)
	later := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct{ param, body string }{
		{"rate_limits", `{"rate_limits":null}`},
		{"rate_limits", `{"rate_limits":[{"type":"requests","unit":"rpm","value":1000}]}`},
		{"usage_limits", `{"usage_limits":null}`},
		{"usage_limits", `{"usage_limits":{"type":"cost","credit_limit":1000}}`},
		{"expires_at", `{"expires_at":null}`},
		{"expires_at", `{"expires_at":"` + later + `"}`},
		{"scopes", `{"scopes":["api_keys.read","completions.write"]}`},
	} {
		e.wantPermission(tc.param, c.Key, "PUT", "/v1/api-keys/"+c.ID, tc.body)
	}
	// Even the workspace admin cannot lift its own.
	e.wantPermission("expires_at", coreAdminKey, "PUT", "/v1/api-keys/key-admin", `{"expires_at":"`+later+`"}`)

	var got akObject
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+c.ID, "", &got)
	if len(got.Scopes) != 3 || !strings.Contains(string(got.RateLimits), `"value":10`) ||
		!strings.Contains(string(got.UsageLimits), `"credit_limit":1`) || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("after refused self-changes: %+v", got)
	}

	// Its name and description it may change, and it may rotate itself.
	e.want(200, c.Key, "PUT", "/v1/api-keys/"+c.ID, `{"name":"renamed","description":"mine"}`, nil)
	var rot akCreated
	e.want(200, c.Key, "POST", "/v1/api-keys/"+c.ID+"/rotate", "", &rot)
	e.want(200, rot.Key, "GET", "/v1/api-keys/"+c.ID, "", &got)
	if got.Name != "renamed" || got.Description != "mine" {
		t.Errorf("after renaming itself: %+v", got)
	}
	// Another key holding its scopes changes its limits.
	e.want(200, coreAdminKey, "PUT", "/v1/api-keys/"+c.ID, `{"rate_limits":null,"expires_at":null}`, nil)
}

// TestAPIKeysEqualAndOrganisation: keys of equal scopes act on each
// other; an organisation key acts on a workspace key within its scopes,
// not on one holding more.
func TestAPIKeysEqualAndOrganisation(t *testing.T) {
	e := newAKEnv(t)
	all, _ := json.Marshal(gateway.RoleScopes(gateway.RoleAdmin))
	var a2 akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"admin 2","scopes":`+string(all)+`}`, &a2)
	e.want(200, a2.Key, "PUT", "/v1/api-keys/key-admin", `{"name":"admin 1"}`, nil)
	var rot akCreated
	e.want(200, a2.Key, "POST", "/v1/api-keys/key-admin/rotate", "", &rot)
	e.want(200, rot.Key, "POST", "/v1/api-keys/"+a2.ID+"/rotate", "", nil)
	e.want(200, rot.Key, "DELETE", "/v1/api-keys/"+a2.ID, "", nil)

	// The organisation admin acts on every workspace key.
	e.want(200, akOrg, "PUT", "/v1/api-keys/key-admin-2", `{"name":"ws-2 admin"}`, nil)
	e.want(200, akOrg, "POST", "/v1/api-keys/key-admin-2/rotate", "", nil)
	e.want(200, akOrg, "PUT", "/v1/api-keys/key-writer", `{"scopes":["completions.write"]}`, nil)
	e.want(200, akOrg, "DELETE", "/v1/api-keys/key-writer", "", nil)

	// A narrower organisation key: only the workspace keys within its scopes.
	var org akCreated
	e.want(200, akOrg, "POST", "/v1/api-keys/organisation/service",
		`{"name":"org keys","scopes":["api_keys.read","api_keys.write","completions.write"]}`, &org)
	e.wantPermission("", org.Key, "POST", "/v1/api-keys/"+"key-admin"+"/rotate", "")
	e.wantPermission("", org.Key, "DELETE", "/v1/api-keys/key-org", "")
	e.want(200, org.Key, "POST", "/v1/api-keys/key-member/rotate", "", nil)
	e.want(200, org.Key, "PUT", "/v1/api-keys/key-reader", `{"name":"reader"}`, nil)
	// A workspace key still does not see organisation keys.
	e.wantErr(404, "", rot.Key, "POST", "/v1/api-keys/"+org.ID+"/rotate", "")
}

// growingKeys is a key store in which, at the first write of key grow, a
// racing writer gives that key every scope: the write finds the key
// changed (ErrConflict), as a control-plane write that lost a race does.
type growingKeys struct {
	*memstore.Store
	grow string
	done atomic.Bool
}

func (s *growingKeys) UpdateAPIKey(ctx context.Context, old, k *gateway.APIKey) error {
	if old.ID == s.grow && s.done.CompareAndSwap(false, true) {
		cur, err := s.APIKeyByID(ctx, old.ID)
		if err != nil {
			return err
		}
		up := *cur // the scopes are replaced, not shared
		up.Scopes = nil
		up.Scopes, up.UpdatedAt = gateway.RoleScopes(gateway.RoleAdmin), cur.UpdatedAt.Add(time.Second)
		if err := s.Store.UpdateAPIKey(ctx, cur, &up); err != nil {
			return err
		}
		return gateway.ErrConflict
	}
	return s.Store.UpdateAPIKey(ctx, old, k)
}

// TestAPIKeysOrderCheckedAsWritten: the subset check is made on the key
// as read for the write that lands, not only on a first read: a key that
// gained scopes meanwhile is refused, and keeps them.
func TestAPIKeysOrderCheckedAsWritten(t *testing.T) {
	var gk *growingKeys
	e := newCoreEnv(t, nil, func(o *envOptions) {
		gk = &growingKeys{Store: o.Keys.(*memstore.Store), grow: "key-narrow"}
		o.Keys = gk
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-writer", Digest: gateway.HashAPIKey(akWriter), WorkspaceID: "ws-1",
		Scopes: []gateway.Scope{gateway.ScopeAPIKeysWrite, gateway.ScopeCompletionsWrite}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-narrow", Digest: gateway.HashAPIKey("gw-narrow"), WorkspaceID: "ws-1",
		Scopes: []gateway.Scope{gateway.ScopeCompletionsWrite}})
	for _, m := range []struct{ method, path, body string }{
		{"PUT", "/v1/api-keys/key-narrow", `{"name":"x"}`},
		{"POST", "/v1/api-keys/key-narrow/rotate", ""},
	} {
		gk.done.Store(false)
		status, b := cp(e, akWriter, m.method, m.path, m.body)
		if status != http.StatusForbidden || !strings.Contains(string(b), gateway.TypePermission) {
			t.Fatalf("%s %s on a key grown meanwhile = %d %s, want 403", m.method, m.path, status, b)
		}
		k, err := gk.APIKeyByID(context.Background(), "key-narrow")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(k.Scopes, gateway.RoleScopes(gateway.RoleAdmin)) || k.Name != "" || k.Digest != gateway.HashAPIKey("gw-narrow") {
			t.Fatalf("key after the refused write: scopes %v, name %q", k.Scopes, k.Name)
		}
	}
}

// TestAPIKeysBounds: names, descriptions and defaults of keys are
// bounded, on create and update (400 naming the field).
func TestAPIKeysBounds(t *testing.T) {
	e := newAKEnv(t)
	var c akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["completions.write"]}`, &c)
	big := strings.Repeat("a", 1<<20)
	bigMD := `{"k":"` + strings.Repeat("v", 2<<20) + `"}`
	var manyKeys []string
	for i := range 65 {
		manyKeys = append(manyKeys, `"k`+string(rune('A'+i%26))+strings.Repeat("x", i/26)+`":"v"`)
	}
	create, update := "/v1/api-keys/workspace/service", "/v1/api-keys/"+c.ID
	const sc = `"scopes":["completions.write"]`
	for _, tc := range []struct{ name, method, path, body, param string }{
		{"1 MB name", "POST", create, `{"name":"` + big + `",` + sc + `}`, "name"},
		{"256-byte name", "POST", create, `{"name":"` + strings.Repeat("n", 256) + `",` + sc + `}`, "name"},
		{"NUL in name", "POST", create, `{"name":"a\u0000b",` + sc + `}`, "name"},
		{"newline in name", "POST", create, `{"name":"a\nb",` + sc + `}`, "name"},
		{"long description", "POST", create, `{"name":"x","description":"` + strings.Repeat("d", 4097) + `",` + sc + `}`, "description"},
		{"NUL in description", "POST", create, `{"name":"x","description":"a\u0000",` + sc + `}`, "description"},
		{"2 MB metadata", "POST", create, `{"name":"x",` + sc + `,"defaults":{"metadata":` + bigMD + `}}`, "defaults.metadata"},
		{"65 metadata keys", "POST", create, `{"name":"x",` + sc + `,"defaults":{"metadata":{` + strings.Join(manyKeys, ",") + `}}}`, "defaults.metadata"},
		{"long config_id", "POST", create, `{"name":"x",` + sc + `,"defaults":{"config_id":"` + strings.Repeat("c", 65) + `"}}`, "defaults.config_id"},
		{"config_id not an id", "POST", create, `{"name":"x",` + sc + `,"defaults":{"config_id":"{\"retry\":{}}"}}`, "defaults.config_id"},
		{"update 1 MB name", "PUT", update, `{"name":"` + big + `"}`, "name"},
		{"update NUL in name", "PUT", update, `{"name":"\u0000"}`, "name"},
		{"update long description", "PUT", update, `{"description":"` + strings.Repeat("d", 4097) + `"}`, "description"},
		{"update 2 MB metadata", "PUT", update, `{"defaults":{"metadata":` + bigMD + `}}`, "defaults.metadata"},
		{"update config_id", "PUT", update, `{"defaults":{"config_id":"a/b"}}`, "defaults.config_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.wantErr(400, tc.param, coreAdminKey, tc.method, tc.path, tc.body)
		})
	}
	e.t = t
	// At the bounds: accepted.
	e.want(200, coreAdminKey, "PUT", update, `{"name":"`+strings.Repeat("n", 255)+`","description":"`+
		strings.Repeat("d", 4000)+`\nsecond line","defaults":{"metadata":{"team":"a"},"config_id":"pc-Prod_1.2"}}`, nil)
	var got akObject
	e.want(200, coreAdminKey, "GET", update, "", &got)
	if len(got.Name) != 255 || got.Defaults == nil || got.Defaults.ConfigID != "pc-Prod_1.2" {
		t.Errorf("after a change at the bounds: name of %d bytes, defaults %+v", len(got.Name), got.Defaults)
	}
}

// TestAPIKeysNoStore: answers that carry a key's plaintext are not to be
// cached; reads are masked and need not say so.
func TestAPIKeysNoStore(t *testing.T) {
	e := newAKEnv(t)
	res := e.do("POST", "/v1/api-keys/workspace/service", strings.NewReader(`{"name":"x","scopes":["completions.write"]}`),
		gateway.HeaderAPIKey+": "+coreAdminKey)
	var c akCreated
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != 200 {
		t.Fatalf("create = %d, %v", res.StatusCode, err)
	}
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("create: Cache-Control %q, want no-store", got)
	}
	res = e.do("POST", "/v1/api-keys/"+c.ID+"/rotate", nil, gateway.HeaderAPIKey+": "+coreAdminKey)
	res.Body.Close()
	if got := res.Header.Get("Cache-Control"); res.StatusCode != 200 || got != "no-store" {
		t.Errorf("rotate = %d, Cache-Control %q, want 200 no-store", res.StatusCode, got)
	}
}

// TestAuditNamesKeyWorkspace: an organisation key's writes on a
// workspace's keys are recorded in that workspace, where its own keys
// read them.
func TestAuditNamesKeyWorkspace(t *testing.T) {
	e := newWSEnv(t, false)
	var c struct{ ID string }
	cpWant(e, 200, wsOrg, "POST", "/v1/api-keys/workspace/service", `{"name":"for ws-2","workspace_id":"ws-2","scopes":["completions.write"]}`, &c)
	cpWant(e, 200, wsOrg, "POST", "/v1/api-keys/"+c.ID+"/rotate", "", nil)
	cpWant(e, 200, wsOrg, "PUT", "/v1/api-keys/"+c.ID, `{"name":"renamed"}`, nil)
	cpWant(e, 200, wsOrg, "DELETE", "/v1/api-keys/"+c.ID, "", nil)
	want := []string{"api_keys.delete " + c.ID + " ws-2 key-org", "api_keys.update " + c.ID + " ws-2 key-org",
		"api_keys.rotate " + c.ID + " ws-2 key-org", "api_keys.create " + c.ID + " ws-2 key-org"}
	for _, key := range []string{wsOrg, wsAdmin2} {
		q := "?resource_type=api_keys"
		if key == wsOrg {
			q += "&workspace_id=ws-2"
		}
		l, _ := auditLogs(e, key, q)
		var got []string
		for _, r := range l.Records {
			got = append(got, r.Action+" "+r.ResourceID+" "+r.WorkspaceID+" "+r.UserID)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("records read by %s: %q, want %q", key, got, want)
		}
	}
	// ws-1's admin does not see them.
	if l, _ := auditLogs(e, coreAdminKey, "?resource_type=api_keys"); l.Total != 0 {
		t.Errorf("ws-1 reads %d records of ws-2's keys", l.Total)
	}
}

// TestWorkspacesAndPoliciesBounds: names, descriptions and metadata of
// workspaces, and names of rate-limits and usage-limits policies, are
// bounded (400 naming the field).
func TestWorkspacesAndPoliciesBounds(t *testing.T) {
	e := newWSEnv(t, false)
	big := strings.Repeat("a", 4096) // small enough to read in a failure's message
	bigMD := `{"k":"` + strings.Repeat("v", 9<<10) + `"}`
	var ws wsWire
	cpWant(e, 200, wsOrg, "POST", "/v1/admin/workspaces", `{"name":"Blue"}`, &ws)
	for _, tc := range []struct{ method, path, body, param string }{
		{"POST", "/v1/admin/workspaces", `{"name":"` + big + `"}`, "name"},
		{"POST", "/v1/admin/workspaces", `{"name":"a\u0000b"}`, "name"},
		{"POST", "/v1/admin/workspaces", `{"name":"a","description":"` + strings.Repeat("d", 4097) + `"}`, "description"},
		{"POST", "/v1/admin/workspaces", `{"name":"a","description":"\u0000"}`, "description"},
		{"POST", "/v1/admin/workspaces", `{"name":"a","defaults":{"metadata":` + bigMD + `}}`, "defaults.metadata"},
		{"PUT", "/v1/admin/workspaces/" + ws.ID, `{"name":"` + big + `"}`, "name"},
		{"PUT", "/v1/admin/workspaces/" + ws.ID, `{"name":"\u007f"}`, "name"},
		{"PUT", "/v1/admin/workspaces/" + ws.ID, `{"defaults":{"metadata":` + bigMD + `}}`, "defaults.metadata"},
	} {
		cpErr(e, 400, wsOrg, tc.method, tc.path, tc.body, tc.param, "invalid_parameter")
	}

	// Rate-limits policies.
	cpErr(e, 400, coreAdminKey, "POST", "/v1/policies/rate-limits", strings.Replace(auditPolicy, "100 RPM", "a\\u0000b", 1), "name", "invalid_parameter")
	var p struct{ ID string }
	cpWant(e, 200, coreAdminKey, "POST", "/v1/policies/rate-limits", auditPolicy, &p)
	cpErr(e, 400, coreAdminKey, "PUT", "/v1/policies/rate-limits/"+p.ID, `{"name":"a\nb"}`, "name", "invalid_parameter")
}

// TestUsageLimitsPolicyNameBounds: a usage-limits policy's name is a
// label, on create and update.
func TestUsageLimitsPolicyNameBounds(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *envOptions) { withBudgets(o) })
	const body = `{"name":"NAME","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"cost","credit_limit":10}`
	cpErr(e, 400, coreAdminKey, "POST", "/v1/policies/usage-limits", strings.Replace(body, "NAME", "a\\u0000b", 1), "name", "invalid_parameter")
	var p struct{ ID string }
	cpWant(e, 200, coreAdminKey, "POST", "/v1/policies/usage-limits", body, &p)
	cpErr(e, 400, coreAdminKey, "PUT", "/v1/policies/usage-limits/"+p.ID, `{"name":"a\u001bb"}`, "name", "invalid_parameter")
}

// TestAPIKeysPassOnLimits: a key with limits and an expiry cannot mint an
// unlimited twin: what it creates carries its rate_limits and
// usage_limits and expires no later than it does.
func TestAPIKeysPassOnLimits(t *testing.T) {
	e := newAKEnv(t)
	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	var c akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"limited",
		"scopes":["api_keys.read","api_keys.write","completions.write"],
		"rate_limits":[{"type":"requests","unit":"rpm","value":10}],"usage_limits":{"type":"cost","credit_limit":1},
		"expires_at":"`+exp.Format(time.RFC3339)+`"}`, &c)

	var twin akCreated
	e.want(200, c.Key, "POST", "/v1/api-keys/workspace/service", `{"name":"twin","scopes":["completions.write"]}`, &twin)
	var got akObject
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+twin.ID, "", &got)
	if !strings.Contains(string(got.RateLimits), `"value":10`) || !strings.Contains(string(got.UsageLimits), `"credit_limit":1`) ||
		!got.ExpiresAt.Equal(exp) {
		t.Fatalf("a key made by a limited key: %+v, want its creator's limits and expiry", got)
	}

	later := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	e.want(200, c.Key, "POST", "/v1/api-keys/workspace/service", `{"name":"later","scopes":["completions.write"],
		"expires_at":"`+later+`"}`, &twin)
	var laterGot akObject
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+twin.ID, "", &laterGot)
	if !laterGot.ExpiresAt.Equal(exp) {
		t.Errorf("expires_at %v, want the creator's %v", laterGot.ExpiresAt, exp)
	}
	e.wantPermission("rate_limits", c.Key, "POST", "/v1/api-keys/workspace/service",
		`{"name":"wide","scopes":["completions.write"],"rate_limits":[{"type":"requests","unit":"rpm","value":1000}]}`)
	e.wantPermission("usage_limits", c.Key, "POST", "/v1/api-keys/workspace/service",
		`{"name":"rich","scopes":["completions.write"],"usage_limits":{"type":"cost","credit_limit":1000}}`)
	// The same limits, written otherwise, are the same.
	e.want(200, c.Key, "POST", "/v1/api-keys/workspace/service", `{"name":"same","scopes":["completions.write"],
		"rate_limits":[ {"type":"requests", "unit":"rpm", "value":10} ]}`, &twin)

	// A key without limits passes none on.
	var free akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"free","scopes":["completions.write"]}`, &free)
	var freeGot akObject
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+free.ID, "", &freeGot)
	if len(freeGot.RateLimits) != 0 || len(freeGot.UsageLimits) != 0 || !freeGot.ExpiresAt.IsZero() {
		t.Errorf("a key made by an unlimited admin: %+v, want no limits", freeGot)
	}
}
