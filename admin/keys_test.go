package admin_test

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// Keys of the API keys tests, besides the core harness's member and admin
// keys (workspace ws-1).
const (
	akAdmin2 = "gw-ak-admin-ws2"  // admin of ws-2
	akOrg    = "gw-ak-org-admin"  // organisation key, every scope
	akReader = "gw-ak-reader-ws1" // ws-1, api_keys.read only
	akWriter = "gw-ak-writer-ws1" // ws-1, api_keys.write and completions.write
)

// akEnv is the core harness with more keys, a clock the test moves
// (offset), and a record of every GET answer, to be scanned for secrets.
type akEnv struct {
	*coreEnv
	offset atomic.Int64 // nanoseconds added to the admin routes' clock

	mu   sync.Mutex
	gets []string // bodies of GET answers
}

func newAKEnv(t *testing.T) *akEnv {
	t.Helper()
	up := newCoreUpstream(t, nil)
	e := &akEnv{coreEnv: &coreEnv{t: t, store: memstore.New(), up: up, logs: &gateway.LogBuffer{}}}
	st := e.store
	st.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(coreKey), WorkspaceID: "ws-1", Role: gateway.RoleMember})
	st.AddAPIKey(gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey(coreAdminKey), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey(akAdmin2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(akOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "key-reader", Digest: gateway.HashAPIKey(akReader), WorkspaceID: "ws-1", Scopes: []gateway.Scope{gateway.ScopeAPIKeysRead}})
	st.AddAPIKey(gateway.APIKey{ID: "key-writer", Digest: gateway.HashAPIKey(akWriter), WorkspaceID: "ws-1",
		Scopes: []gateway.Scope{gateway.ScopeAPIKeysWrite, gateway.ScopeCompletionsWrite}})
	st.AddVirtualKey(gateway.VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk-stored-secret", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	e.clock = func() time.Time { return time.Now().Add(time.Duration(e.offset.Load())) }
	e.start(envOptions{Options: gateway.Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st, LogSink: e.logs}})
	return e
}

// call sends a control-plane request with key and returns the status and
// body.
func (e *akEnv) call(key, method, path, body string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	res := e.do(method, path, rd, gateway.HeaderAPIKey+": "+key)
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if method == http.MethodGet {
		e.mu.Lock()
		e.gets = append(e.gets, string(b))
		e.mu.Unlock()
	}
	return res.StatusCode, b
}

// want sends a request that must answer status, and decodes its body
// into v (when not nil).
func (e *akEnv) want(status int, key, method, path, body string, v any) {
	e.t.Helper()
	got, b := e.call(key, method, path, body)
	if got != status {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, got, b, status)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: body %s: %v", method, path, b, err)
		}
	}
}

// wantErr sends a request that must fail with status and param (and code,
// when not empty).
func (e *akEnv) wantErr(status int, param, key, method, path, body string) {
	e.t.Helper()
	res := e.do(method, path, strings.NewReader(body), gateway.HeaderAPIKey+": "+key)
	if res.StatusCode != status {
		b, _ := io.ReadAll(res.Body)
		e.t.Fatalf("%s %s %s = %d %s, want %d", method, path, body, res.StatusCode, b, status)
	}
	eb := decodeError(e.t, res)
	if got := deref(eb.Error.Param); param != "" && got != param {
		e.t.Errorf("%s %s %s: param = %s (%s), want %s", method, path, body, got, eb.Error.Message, param)
	}
}

// dataPlane returns the status of a data-plane call made with key.
func (e *akEnv) dataPlane(key string) int {
	e.t.Helper()
	res := e.do("GET", "/v1/models", nil, gateway.HeaderAPIKey+": "+key, gateway.HeaderVirtualKey+": vk-up")
	io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

type akCreated struct {
	ID, Key, Object string
}

type akObject struct {
	ID          string          `json:"id"`
	Key         string          `json:"key"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Type        string          `json:"type"`
	WorkspaceID string          `json:"workspace_id"`
	UserID      string          `json:"user_id"`
	Status      string          `json:"status"`
	Scopes      []gateway.Scope `json:"scopes"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	Defaults    *struct {
		Metadata map[string]string `json:"metadata"`
		ConfigID string            `json:"config_id"`
	} `json:"defaults"`
	ExpiresAt time.Time `json:"expires_at"`
	Object    string    `json:"object"`
}

type akList struct {
	Object string
	Data   []akObject
	Total  int
}

func akMask(plain string) string {
	d := gateway.HashAPIKey(plain)
	return "gw-****" + hex.EncodeToString(d[30:])
}

func TestAPIKeysLifecycle(t *testing.T) {
	e := newAKEnv(t)
	exp := time.Now().Add(365 * 24 * time.Hour).UTC().Truncate(time.Second)
	var c akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"ci","description":"the CI's key",
		"scopes":["completions.write","api_keys.read"],"rate_limits":[{"type":"requests","unit":"rpm","value":100}],
		"usage_limits":{"type":"cost","credit_limit":100},"defaults":{"metadata":{"team":"infra"},"config_id":"pc-1"},
		"expires_at":"`+exp.Format(time.RFC3339)+`"}`, &c)
	if !strings.HasPrefix(c.Key, "gw-") || len(c.Key) != 3+64 || c.Object != "api-key" || c.ID == "" {
		t.Fatalf("create answered %+v", c)
	}
	plains := []string{c.Key}

	if got := e.dataPlane(c.Key); got != 200 {
		t.Fatalf("new key on the data plane: %d, want 200", got)
	}

	var list akList
	e.want(200, coreAdminKey, "GET", "/v1/api-keys", "", &list)
	if list.Object != "list" || list.Total != 5 || len(list.Data) != 5 { // member, admin, reader, writer, new
		t.Fatalf("list = %+v, want 5 keys of ws-1", list)
	}
	var got akObject
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+c.ID, "", &got)
	if got.Key != akMask(c.Key) || got.Name != "ci" || got.Description != "the CI's key" || got.Type != "workspace-service" ||
		got.WorkspaceID != "ws-1" || got.Object != "api-key" || !got.ExpiresAt.Equal(exp) ||
		len(got.Scopes) != 2 || got.Defaults == nil || got.Defaults.ConfigID != "pc-1" || got.Defaults.Metadata["team"] != "infra" ||
		!strings.Contains(string(got.RateLimits), `"rpm"`) || !strings.Contains(string(got.UsageLimits), `"credit_limit"`) {
		t.Fatalf("GET = %+v", got)
	}
	var inList bool
	for _, o := range list.Data {
		inList = inList || o.ID == c.ID && o.Key == got.Key
	}
	if !inList {
		t.Errorf("list lacks the new key, masked: %+v", list.Data)
	}

	// The new key reads keys but may not write them.
	e.want(200, c.Key, "GET", "/v1/api-keys", "", nil)
	e.wantErr(403, "", c.Key, "DELETE", "/v1/api-keys/"+c.ID, "")

	// A change of scopes holds from the next request on.
	e.want(200, coreAdminKey, "PUT", "/v1/api-keys/"+c.ID, `{"scopes":["api_keys.read"],"name":"ci-2"}`, nil)
	if got := e.dataPlane(c.Key); got != 403 {
		t.Fatalf("key without completions.write on the data plane: %d, want 403", got)
	}
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+c.ID, "", &got)
	if got.Name != "ci-2" || len(got.Scopes) != 1 || got.Description != "the CI's key" {
		t.Errorf("after PUT: %+v", got)
	}
	e.want(200, coreAdminKey, "PUT", "/v1/api-keys/"+c.ID, `{"scopes":["completions.write"]}`, nil)

	// Rotation with a transition: both work until it ends, then only the new.
	var rot struct {
		ID, Key string
		Exp     time.Time `json:"key_transition_expires_at"`
	}
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/"+c.ID+"/rotate", `{"key_transition_period_ms":3600000}`, &rot)
	plains = append(plains, rot.Key)
	if rot.ID != c.ID || rot.Key == c.Key || !strings.HasPrefix(rot.Key, "gw-") ||
		rot.Exp.Before(time.Now().Add(59*time.Minute)) || rot.Exp.After(time.Now().Add(61*time.Minute)) {
		t.Fatalf("rotate answered %+v", rot)
	}
	for _, k := range []string{c.Key, rot.Key} {
		if got := e.dataPlane(k); got != 200 {
			t.Fatalf("during the transition: %d, want 200", got)
		}
	}
	// The transition ends at the deadline the admin clock wrote: a
	// rotation written 61 minutes ago with a 60-minute transition is over
	// (the gateway checks the deadline with the time of the request).
	e.offset.Store(int64(-61 * time.Minute))
	var late struct{ Key string }
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/"+c.ID+"/rotate", `{"key_transition_period_ms":3600000}`, &late)
	e.offset.Store(0)
	plains = append(plains, late.Key)
	if got := e.dataPlane(rot.Key); got != 401 {
		t.Fatalf("old key after the transition: %d, want 401", got)
	}
	if got := e.dataPlane(late.Key); got != 200 {
		t.Fatalf("new key after the transition: %d, want 200", got)
	}
	rot.Key = late.Key

	// Rotation without a transition: the old key stops at once.
	var rot2 struct{ Key string }
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/"+c.ID+"/rotate", "", &rot2)
	plains = append(plains, rot2.Key)
	if got := e.dataPlane(rot.Key); got != 401 {
		t.Fatalf("key rotated without transition: %d, want 401", got)
	}
	if got := e.dataPlane(rot2.Key); got != 200 {
		t.Fatalf("newest key: %d, want 200", got)
	}
	e.want(200, coreAdminKey, "GET", "/v1/api-keys/"+c.ID, "", &got)
	if got.Key != akMask(rot2.Key) {
		t.Errorf("masked key after rotation = %s, want %s", got.Key, akMask(rot2.Key))
	}

	e.want(200, coreAdminKey, "DELETE", "/v1/api-keys/"+c.ID, "", nil)
	if got := e.dataPlane(rot2.Key); got != 401 {
		t.Fatalf("deleted key: %d, want 401", got)
	}
	e.wantErr(404, "", coreAdminKey, "GET", "/v1/api-keys/"+c.ID, "")

	// No answer to a read, and no request log, ever held a key.
	e.gw.Close()
	logged := e.logs.Query(gateway.LogFilter{})
	if len(logged) == 0 {
		t.Fatal("no request logs to check")
	}
	recs, _ := json.Marshal(logged)
	for _, p := range plains {
		for _, b := range e.gets {
			if strings.Contains(b, p) || strings.Contains(b, p[3:]) {
				t.Fatalf("a GET answer holds a plaintext key: %s", b)
			}
		}
		if strings.Contains(string(recs), p[3:]) {
			t.Fatal("a request log holds a plaintext key")
		}
	}
}

func TestAPIKeysWorkspaces(t *testing.T) {
	e := newAKEnv(t)
	var c akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/user", `{"name":"u","user_id":"u-1","scopes":["completions.write"]}`, &c)

	// Another workspace's key is not found, whatever the method.
	for _, m := range []struct{ method, path, body string }{
		{"GET", "/v1/api-keys/" + c.ID, ""},
		{"PUT", "/v1/api-keys/" + c.ID, `{"name":"x"}`},
		{"DELETE", "/v1/api-keys/" + c.ID, ""},
		{"POST", "/v1/api-keys/" + c.ID + "/rotate", ""},
		{"GET", "/v1/api-keys/key-org", ""},
	} {
		e.wantErr(404, "", akAdmin2, m.method, m.path, m.body)
	}
	e.wantErr(404, "", coreAdminKey, "GET", "/v1/api-keys/key-org", "")
	if got := e.dataPlane(c.Key); got != 200 {
		t.Fatalf("key after another workspace's attempts: %d, want 200", got)
	}
	var list akList
	e.want(200, akAdmin2, "GET", "/v1/api-keys", "", &list)
	if list.Total != 1 || list.Data[0].ID != "key-admin-2" {
		t.Errorf("ws-2's list = %+v, want its own key only", list)
	}
	e.wantErr(403, "workspace_id", akAdmin2, "GET", "/v1/api-keys?workspace_id=ws-1", "")
	e.wantErr(403, "workspace_id", akAdmin2, "POST", "/v1/api-keys/workspace/service", `{"name":"x","workspace_id":"ws-1","scopes":["completions.write"]}`)
	e.wantErr(403, "type", coreAdminKey, "POST", "/v1/api-keys/organisation/service", `{"name":"x","scopes":["completions.write"]}`)

	// The organisation key acts on every workspace.
	e.want(200, akOrg, "GET", "/v1/api-keys", "", &list)
	if list.Total != 7 {
		t.Errorf("organisation's list total = %d, want 7", list.Total)
	}
	e.want(200, akOrg, "GET", "/v1/api-keys?workspace_id=ws-2&page_size=1", "", &list)
	if list.Total != 1 || len(list.Data) != 1 || list.Data[0].WorkspaceID != "ws-2" {
		t.Errorf("organisation's list of ws-2 = %+v", list)
	}
	var got akObject
	e.want(200, akOrg, "GET", "/v1/api-keys/"+c.ID, "", &got)
	if got.Type != "workspace-user" || got.UserID != "u-1" {
		t.Errorf("GET by the organisation = %+v", got)
	}
	e.wantErr(400, "workspace_id", akOrg, "POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["completions.write"]}`)
	var c2, org akCreated
	e.want(200, akOrg, "POST", "/v1/api-keys/workspace/service", `{"name":"x","workspace_id":"ws-2","scopes":["api_keys.read"]}`, &c2)
	e.want(200, akAdmin2, "GET", "/v1/api-keys/"+c2.ID, "", &got)
	if got.WorkspaceID != "ws-2" {
		t.Errorf("key made for ws-2 lives in %q", got.WorkspaceID)
	}
	e.want(200, akOrg, "POST", "/v1/api-keys/organisation/service", `{"name":"o","scopes":["api_keys.read"]}`, &org)
	e.want(200, org.Key, "GET", "/v1/api-keys/"+c.ID, "", nil)
	e.wantErr(404, "", coreAdminKey, "GET", "/v1/api-keys/"+org.ID, "")
}

func TestAPIKeysScopes(t *testing.T) {
	e := newAKEnv(t)
	e.wantErr(403, "", coreKey, "GET", "/v1/api-keys", "")
	e.wantErr(403, "", akReader, "POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["api_keys.read"]}`)
	e.wantErr(403, "", akReader, "PUT", "/v1/api-keys/key-member", `{"name":"x"}`)
	e.want(200, akReader, "GET", "/v1/api-keys/key-member", "", nil)

	// A key grants only the scopes it holds.
	e.wantErr(403, "scopes[1]", akWriter, "POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["completions.write","configs.write"]}`)
	e.wantErr(403, "scopes[0]", akWriter, "PUT", "/v1/api-keys/key-member", `{"scopes":["api_keys.read"]}`)
	var c akCreated
	e.want(200, akWriter, "POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["completions.write"]}`, &c)
	if got := e.dataPlane(c.Key); got != 200 {
		t.Errorf("key made by a narrow key: %d, want 200", got)
	}
}

func TestAPIKeysBadInput(t *testing.T) {
	e := newAKEnv(t)
	var c akCreated
	e.want(200, coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["completions.write"]}`, &c)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	create := "/v1/api-keys/workspace/service"
	for _, tc := range []struct {
		name, method, path, body, param string
	}{
		{"unknown field", "POST", create, `{"name":"x","scopes":["completions.write"],"alert_emails":[]}`, "alert_emails"},
		{"unknown nested field", "POST", create, `{"name":"x","scopes":["completions.write"],"defaults":{"allow_config_override":false}}`, "allow_config_override"},
		{"bad type", "POST", "/v1/api-keys/team/service", `{"name":"x","scopes":["completions.write"]}`, "type"},
		{"bad sub-type", "POST", "/v1/api-keys/workspace/robot", `{"name":"x","scopes":["completions.write"]}`, "sub-type"},
		{"bad scope", "POST", create, `{"name":"x","scopes":["completions.write","nope"]}`, "scopes[1]"},
		{"no scopes", "POST", create, `{"name":"x","scopes":[]}`, "scopes"},
		{"no name", "POST", create, `{"scopes":["completions.write"]}`, "name"},
		{"name of wrong type", "POST", create, `{"name":1,"scopes":["completions.write"]}`, "name"},
		{"user without user_id", "POST", "/v1/api-keys/workspace/user", `{"name":"x","scopes":["completions.write"]}`, "user_id"},
		{"expires_at past", "POST", create, `{"name":"x","scopes":["completions.write"],"expires_at":"` + past + `"}`, "expires_at"},
		{"expires_at not a time", "POST", create, `{"name":"x","scopes":["completions.write"],"expires_at":"soon"}`, "expires_at"},
		{"rate_limits not an array", "POST", create, `{"name":"x","scopes":["completions.write"],"rate_limits":{}}`, "rate_limits"},
		{"not JSON", "POST", create, `{`, ""},
		{"page_size 0", "GET", "/v1/api-keys?page_size=0", "", "page_size"},
		{"page_size 101", "GET", "/v1/api-keys?page_size=101", "", "page_size"},
		{"current_page -1", "GET", "/v1/api-keys?current_page=-1", "", "current_page"},
		{"update unknown field", "PUT", "/v1/api-keys/" + c.ID, `{"type":"organisation"}`, "type"},
		{"update expires_at past", "PUT", "/v1/api-keys/" + c.ID, `{"expires_at":"` + past + `"}`, "expires_at"},
		{"update bad scope", "PUT", "/v1/api-keys/" + c.ID, `{"scopes":["nope"]}`, "scopes[0]"},
		{"rotate too short", "POST", "/v1/api-keys/" + c.ID + "/rotate", `{"key_transition_period_ms":1799999}`, "key_transition_period_ms"},
		{"rotate unknown field", "POST", "/v1/api-keys/" + c.ID + "/rotate", `{"period":1}`, "period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.wantErr(400, tc.param, coreAdminKey, tc.method, tc.path, tc.body)
		})
	}
	e.t = t
	if got := e.dataPlane(c.Key); got != 200 {
		t.Errorf("key after refused changes: %d, want 200", got)
	}
	e.wantErr(405, "", coreAdminKey, "DELETE", "/v1/api-keys", "")
	e.wantErr(405, "", coreAdminKey, "GET", "/v1/api-keys/workspace/service", "")
}

// TestAPIKeysNotManaged: a key store that is no admin.KeyStore serves no
// control plane.
func TestAPIKeysNotManaged(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *envOptions) { o.Keys = keysOnly{o.Keys} })
	res := e.do("GET", "/v1/api-keys", nil, gateway.HeaderAPIKey+": "+coreAdminKey)
	if res.StatusCode != 404 {
		t.Fatalf("status = %d, want 404", res.StatusCode)
	}
}

type keysOnly struct{ gateway.KeyStore }
