package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// stores is every store interface the control plane serves from.
type stores interface {
	gateway.KeyStore
	gateway.VirtualKeyStore
	gateway.ConfigStore
	admin.KeyStore
	admin.VirtualKeyStore
	admin.ConfigStore
	admin.PolicyStore
	admin.WorkspaceStore
	observe.AuditStore
}

var (
	_ stores = (*sqlstore.Store)(nil)
	_ stores = (*memstore.Store)(nil)
)

// mountAdmin mounts the admin routes on g over s, audited into s.
func mountAdmin(g *gateway.Gateway, s stores) {
	admin.Mount(g, admin.Options{Keys: s, VirtualKeys: s, Configs: s, Workspaces: s, Policies: s,
		Audit: &observe.Auditor{Store: s}})
}

// Keys the control-plane tests bootstrap with.
const (
	cpOrgKey    = "gw-cp-org-admin"   // organisation key, every scope
	cpAdminKey  = "gw-cp-admin-ws1"   // admin of ws-1
	cpMemberKey = "gw-cp-member-ws1"  // completions.write in ws-1
	cpAdmin2Key = "gw-cp-admin-ws2"   // admin of ws-2
	cpSecret1   = "sk-cp-secret-0001" // provider credentials, which must never come back
	cpSecret2   = "sk-cp-secret-0002"
)

// eachStore runs f against a memstore.Store and, as eachBackend
// does, a SQLite and a Postgres Store: one table of cases holds the
// durable stores to the in-memory one's answers.
func eachStore(t *testing.T, f func(t *testing.T, s stores)) {
	t.Run("memory", func(t *testing.T) { f(t, memstore.New()) })
	eachBackend(t, func(t *testing.T, dsn string) { f(t, openStore(t, dsn, sqlstore.Options{})) })
}

// cpEnv is a gateway over one store, an upstream that reports the
// credential it saw, and every answer body, to be scanned for secrets.
type cpEnv struct {
	t      *testing.T
	srv    *httptest.Server
	up     *httptest.Server
	bodies strings.Builder
}

func newCPEnv(t *testing.T, s stores) *cpEnv {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	for _, k := range []gateway.APIKey{
		{ID: "key-org", Digest: gateway.HashAPIKey(cpOrgKey), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now},
		{ID: "key-admin", Digest: gateway.HashAPIKey(cpAdminKey), WorkspaceID: "ws-1", Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now},
		{ID: "key-member", Digest: gateway.HashAPIKey(cpMemberKey), WorkspaceID: "ws-1", Role: gateway.RoleMember, CreatedAt: now, UpdatedAt: now},
		{ID: "key-admin-2", Digest: gateway.HashAPIKey(cpAdmin2Key), WorkspaceID: "ws-2", Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now},
	} {
		if err := s.CreateAPIKey(ctx, &k); err != nil {
			t.Fatal(err)
		}
	}
	e := &cpEnv{t: t}
	e.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"auth": r.Header.Get("Authorization")})
	}))
	g := gateway.New(gateway.Options{Keys: s, VirtualKeys: s, Configs: s, Policies: s,
		LogSink: &gateway.LogBuffer{}, CustomHostAllow: []string{"127.0.0.1"}})
	mountAdmin(g, s)
	observe.Mount(g, observe.Options{Audit: &observe.Auditor{Store: s}})
	e.srv = httptest.NewServer(g)
	t.Cleanup(func() { e.srv.Close(); e.up.Close(); g.Close() })
	return e
}

// do sends a request with key and returns the status and body.
func (e *cpEnv) do(key, method, path, body string, header ...string) (int, []byte) {
	e.t.Helper()
	return doTo(e.t, e.srv.URL, &e.bodies, key, method, path, body, header...)
}

func doTo(t *testing.T, base string, seen *strings.Builder, key, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(gateway.HeaderAPIKey, key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if seen != nil {
		seen.Write(b)
	}
	return res.StatusCode, b
}

// step is one request of a control-plane case and what must come back.
type step struct {
	key, method, path, body string
	header                  []string // name, value pairs
	status                  int
	has                     []string // substrings the body must hold
	hasNot                  []string // and must not
}

// TestControlPlaneOnEveryStore runs the control plane's lifecycles
// through HTTP on every store, each step's answer checked the same way.
func TestControlPlaneOnEveryStore(t *testing.T) {
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name  string
		steps func(e *cpEnv) []step
	}{
		{"virtual keys", func(e *cpEnv) []step {
			return []step{
				{key: cpAdminKey, method: "POST", path: "/v1/virtual-keys", status: 200, has: []string{`"slug":"prod-openai"`},
					body: `{"name":"Prod OpenAI","provider":"openai","key":"` + cpSecret1 + `","base_url":"` + e.up.URL + `/v1"}`},
				{key: cpMemberKey, method: "POST", path: "/v1/chat/completions", body: chat, header: []string{gateway.HeaderVirtualKey, "prod-openai"},
					status: 200, has: []string{`"auth":"Bearer ` + cpSecret1 + `"`}},
				{key: cpAdminKey, method: "GET", path: "/v1/virtual-keys/prod-openai", status: 200,
					has: []string{`"key":"sk*************01"`, `"workspace_id":"ws-1"`}},
				{key: cpAdminKey, method: "POST", path: "/v1/virtual-keys", status: 409, has: []string{`"code":"conflict"`},
					body: `{"name":"prod openai","provider":"openai","key":"x"}`},
				{key: cpAdminKey, method: "PUT", path: "/v1/virtual-keys/prod-openai", body: `{"key":"` + cpSecret2 + `","note":"rotated"}`, status: 200},
				{key: cpMemberKey, method: "POST", path: "/v1/chat/completions", body: chat, header: []string{gateway.HeaderVirtualKey, "prod-openai"},
					status: 200, has: []string{`"auth":"Bearer ` + cpSecret2 + `"`}},
				{key: cpAdmin2Key, method: "GET", path: "/v1/virtual-keys/prod-openai", status: 404},
				{key: cpAdmin2Key, method: "GET", path: "/v1/virtual-keys", status: 200, has: []string{`"total":0`}},
				{key: cpAdminKey, method: "GET", path: "/v1/virtual-keys", status: 200, has: []string{`"total":1`, `"note":"rotated"`}},
				{key: cpAdminKey, method: "DELETE", path: "/v1/virtual-keys/prod-openai", status: 200},
				{key: cpMemberKey, method: "POST", path: "/v1/chat/completions", body: chat, header: []string{gateway.HeaderVirtualKey, "prod-openai"},
					status: 400},
				{key: cpAdminKey, method: "DELETE", path: "/v1/virtual-keys/prod-openai", status: 404},
			}
		}},
		{"configs and versions", func(e *cpEnv) []step {
			cfg := func(secret string) string {
				return `{"provider":"openai","api_key":"` + secret + `","custom_host":"` + e.up.URL + `/v1"}`
			}
			return []step{
				{key: cpAdminKey, method: "POST", path: "/v1/configs", body: `{"name":"Routing","config":` + cfg(cpSecret1) + `}`, status: 200,
					has: []string{`"slug":"routing"`}},
				{key: cpAdminKey, method: "POST", path: "/v1/configs", body: `{"name":"x","config":{"strategy":{"mode":"nope"}}}`, status: 400,
					has: []string{`"code":"invalid_config"`, `strategy.mode`}},
				{key: cpMemberKey, method: "POST", path: "/v1/chat/completions", body: chat, header: []string{gateway.HeaderConfig, "routing"},
					status: 200, has: []string{`"auth":"Bearer ` + cpSecret1 + `"`}},
				{key: cpAdminKey, method: "PUT", path: "/v1/configs/routing", body: `{"config":` + cfg(cpSecret2) + `}`, status: 200},
				{key: cpAdminKey, method: "PUT", path: "/v1/configs/routing", body: `{"name":"Renamed"}`, status: 200},
				{key: cpMemberKey, method: "POST", path: "/v1/chat/completions", body: chat, header: []string{gateway.HeaderConfig, "routing"},
					status: 200, has: []string{`"auth":"Bearer ` + cpSecret2 + `"`}},
				{key: cpAdminKey, method: "GET", path: "/v1/configs/routing/versions", status: 200,
					has: []string{`"total":3`, `sk*************01`}},
				{key: cpAdminKey, method: "GET", path: "/v1/configs/routing/versions?page_size=1&current_page=2", status: 200,
					has: []string{`"total":3`, `"version":1`}, hasNot: []string{`"version":2`, `"version":3`}},
				{key: cpAdmin2Key, method: "GET", path: "/v1/configs/routing", status: 404},
				{key: cpAdminKey, method: "DELETE", path: "/v1/configs/routing", status: 200},
				{key: cpAdminKey, method: "GET", path: "/v1/configs/routing/versions", status: 404},
				{key: cpAdminKey, method: "POST", path: "/v1/configs", body: `{"name":"routing","config":{"provider":"openai"}}`, status: 200},
				{key: cpAdminKey, method: "GET", path: "/v1/configs/routing/versions", status: 200, has: []string{`"total":1`}},
			}
		}},
		{"workspaces", func(e *cpEnv) []step {
			return []step{
				{key: cpOrgKey, method: "POST", path: "/v1/admin/workspaces", body: `{"name":"Team Three","description":"d","defaults":{"metadata":{"team":"3"}}}`,
					status: 200, has: []string{`"id":"`}},
				{key: cpAdminKey, method: "POST", path: "/v1/admin/workspaces", body: `{"name":"Nope"}`, status: 403},
				{key: cpOrgKey, method: "GET", path: "/v1/admin/workspaces", status: 200, has: []string{`"name":"Team Three"`, `"total":1`}},
			}
		}},
		{"api keys", func(e *cpEnv) []step {
			return []step{
				{key: cpAdminKey, method: "POST", path: "/v1/api-keys/workspace/service", body: `{"name":"svc","scopes":["completions.write"]}`,
					status: 200, has: []string{`"key":"`}},
				{key: cpAdminKey, method: "GET", path: "/v1/api-keys", status: 200, has: []string{`"name":"svc"`}},
				{key: cpAdmin2Key, method: "GET", path: "/v1/api-keys/key-member", status: 404},
				{key: cpMemberKey, method: "GET", path: "/v1/api-keys", status: 403},
				{key: cpAdminKey, method: "PUT", path: "/v1/api-keys/key-member", body: `{"name":"renamed"}`, status: 200},
				{key: cpAdminKey, method: "GET", path: "/v1/api-keys/key-member", status: 200, has: []string{`"name":"renamed"`}},
				{key: cpAdminKey, method: "DELETE", path: "/v1/api-keys/key-member", status: 200},
				{key: cpMemberKey, method: "POST", path: "/v1/chat/completions", body: chat, status: 401},
			}
		}},
		{"audit log", func(e *cpEnv) []step {
			return []step{
				{key: cpAdminKey, method: "POST", path: "/v1/virtual-keys", body: `{"name":"a","provider":"openai","key":"` + cpSecret1 + `"}`, status: 200},
				{key: cpAdminKey, method: "DELETE", path: "/v1/virtual-keys/a", status: 200},
				{key: cpAdmin2Key, method: "POST", path: "/v1/virtual-keys", body: `{"name":"b","provider":"openai","key":"` + cpSecret2 + `"}`, status: 200},
				{key: cpAdminKey, method: "GET", path: "/v1/audit-logs", status: 200,
					has: []string{`"total":2`, `virtual_keys.delete`, `virtual_keys.create`}, hasNot: []string{"key-admin-2"}},
				{key: cpAdminKey, method: "GET", path: "/v1/audit-logs?method=DELETE", status: 200, has: []string{`"total":1`}},
				{key: cpOrgKey, method: "GET", path: "/v1/audit-logs?page_size=1", status: 200, has: []string{`"total":3`, `"key-admin-2"`}},
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, s stores) {
				e := newCPEnv(t, s)
				for i, st := range c.steps(e) {
					status, body := e.do(st.key, st.method, st.path, st.body, st.header...)
					if status != st.status {
						t.Fatalf("step %d: %s %s = %d %s, want %d", i, st.method, st.path, status, body, st.status)
					}
					for _, h := range st.has {
						if !strings.Contains(string(body), h) {
							t.Errorf("step %d: %s %s = %s, want %s in it", i, st.method, st.path, body, h)
						}
					}
					for _, h := range st.hasNot {
						if strings.Contains(string(body), h) {
							t.Errorf("step %d: %s %s = %s, want no %s in it", i, st.method, st.path, body, h)
						}
					}
				}
				for _, secret := range []string{cpSecret1, cpSecret2} {
					// Only the upstream's echo of the credential may carry it.
					if n := strings.Count(e.bodies.String(), secret); n != strings.Count(e.bodies.String(), `"auth":"Bearer `+secret+`"`) {
						t.Errorf("a control-plane answer holds the provider secret %s", secret)
					}
				}
			})
		})
	}
}

// TestStoreConflicts: the compare-and-swap writes refuse a stale read on
// every store.
func TestStoreConflicts(t *testing.T) {
	eachStore(t, func(t *testing.T, s stores) {
		ctx := context.Background()
		t0 := time.Now().UTC().Truncate(time.Microsecond)
		vk := &gateway.VirtualKey{Slug: "v", Provider: "openai", APIKey: "sk-1", WorkspaceID: "ws-1", CreatedAt: t0, UpdatedAt: t0}
		if err := s.CreateVirtualKey(ctx, vk); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateVirtualKey(ctx, vk); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("second CreateVirtualKey = %v, want ErrConflict", err)
		}
		next := *vk
		next.UpdatedAt = t0.Add(time.Second)
		if err := s.UpdateVirtualKey(ctx, vk, &next); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateVirtualKey(ctx, vk, &next); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("UpdateVirtualKey from a stale read = %v, want ErrConflict", err)
		}
		if err := s.UpdateVirtualKey(ctx, &gateway.VirtualKey{Slug: "none", WorkspaceID: "ws-1"}, &next); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("UpdateVirtualKey of an unknown slug = %v, want ErrNotFound", err)
		}

		c := &gateway.SavedConfig{ID: "c", WorkspaceID: "ws-1", Config: json.RawMessage(`{"provider":"openai"}`), Version: 1, CreatedAt: t0, UpdatedAt: t0}
		if err := s.CreateConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateConfig(ctx, c); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("second CreateConfig = %v, want ErrConflict", err)
		}
		v2 := *c
		v2.Version, v2.UpdatedAt = 2, t0.Add(time.Second)
		if err := s.UpdateConfig(ctx, c, &v2); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateConfig(ctx, c, &v2); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("UpdateConfig from a stale read = %v, want ErrConflict", err)
		}
		vs, err := s.ConfigVersions(ctx, "ws-1", "c")
		if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 {
			t.Errorf("ConfigVersions = %+v, %v; want versions 2 and 1", vs, err)
		}

		w := &gateway.Workspace{ID: "ws-x", Name: "x", Metadata: map[string]string{"a": "b"}, CreatedAt: t0, UpdatedAt: t0}
		if err := s.CreateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateWorkspace(ctx, w); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("second CreateWorkspace = %v, want ErrConflict", err)
		}
		w2 := *w
		w2.Name, w2.UpdatedAt = "y", t0.Add(time.Second)
		if err := s.UpdateWorkspace(ctx, w, &w2); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateWorkspace(ctx, w, &w2); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("UpdateWorkspace from a stale read = %v, want ErrConflict", err)
		}
		if got, err := s.Workspace(ctx, "ws-x"); err != nil || got.Name != "y" || got.Metadata["a"] != "b" {
			t.Errorf("Workspace = %+v, %v", got, err)
		}
		if err := s.DeleteWorkspace(ctx, "ws-x"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteWorkspace(ctx, "ws-x"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("second DeleteWorkspace = %v, want ErrNotFound", err)
		}
	})
}

// TestTwoGatewaysOnePostgres: a write through one gateway's control plane
// is in force on the other's data plane within 2 s — a new key
// authenticates, a revoked one is refused, a new config routes.
func TestTwoGatewaysOnePostgres(t *testing.T) {
	dsn := postgresDSN(t)
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"auth": r.Header.Get("Authorization")})
	}))
	defer up.Close()
	var urls [2]string
	for i := range urls {
		s := openStore(t, dsn, sqlstore.Options{RefreshInterval: 250 * time.Millisecond})
		if i == 0 {
			now := time.Now()
			if err := s.CreateAPIKey(context.Background(), &gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey(cpAdminKey),
				WorkspaceID: "ws-1", Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		g := gateway.New(gateway.Options{Keys: s, VirtualKeys: s, Configs: s, Policies: s,
			LogSink: &gateway.LogBuffer{}, CustomHostAllow: []string{"127.0.0.1"}})
		mountAdmin(g, s)
		observe.Mount(g, observe.Options{Audit: &observe.Auditor{Store: s}})
		srv := httptest.NewServer(g)
		t.Cleanup(func() { srv.Close(); g.Close() })
		urls[i] = srv.URL
	}
	a, b := urls[0], urls[1]
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	waitFor(t, 2*time.Second, "the admin key on replica b", func() bool {
		st, _ := doTo(t, b, nil, cpAdminKey, "GET", "/v1/api-keys", "")
		return st == 200
	})

	st, body := doTo(t, a, nil, cpAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"svc","scopes":["completions.write"]}`)
	if st != 200 {
		t.Fatalf("create key on a: %d %s", st, body)
	}
	var created struct{ ID, Key string }
	json.Unmarshal(body, &created)
	st, body = doTo(t, a, nil, cpAdminKey, "POST", "/v1/configs", `{"name":"route","config":{"provider":"openai","api_key":"sk-two","custom_host":"`+up.URL+`/v1"}}`)
	if st != 200 {
		t.Fatalf("create config on a: %d %s", st, body)
	}
	took := waitFor(t, 2*time.Second, "the new key and config in force on b", func() bool {
		st, body := doTo(t, b, nil, created.Key, "POST", "/v1/chat/completions", chat, gateway.HeaderConfig, "route")
		return st == 200 && strings.Contains(string(body), "Bearer sk-two")
	})
	t.Logf("new key and config in force on the other gateway after %v", took)

	if st, body := doTo(t, b, nil, cpAdminKey, "DELETE", "/v1/api-keys/"+created.ID, ""); st != 200 {
		t.Fatalf("revoke on b: %d %s", st, body)
	}
	took = waitFor(t, 2*time.Second, "the revoked key refused on a", func() bool {
		st, _ := doTo(t, a, nil, created.Key, "POST", "/v1/chat/completions", chat, gateway.HeaderConfig, "route")
		return st == 401
	})
	t.Logf("revocation in force on the other gateway after %v", took)
}
