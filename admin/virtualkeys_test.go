package admin_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// Keys of the virtual keys and configs tests, besides those of akEnv.
const (
	cpVKReader  = "gw-cp-vk-reader"   // ws-1, virtual_keys.read and configs.read
	cpCompleter = "gw-cp-completer"   // ws-2, completions.write only
	cpNoWS      = "gw-cp-no-ws-admin" // a workspace key of no workspace, every scope
)

// newCPEnv is the core harness (custom hosts on 127.0.0.1 allowed) with
// the keys of the API keys tests and a few more.
func newCPEnv(t *testing.T) *akEnv {
	t.Helper()
	up := newCoreUpstream(t, nil)
	e := &akEnv{coreEnv: newCoreEnv(t, up, func(o *envOptions) {
		st := o.Keys.(*memstore.Store)
		st.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey(akAdmin2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
		st.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(akOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
		st.AddAPIKey(gateway.APIKey{ID: "key-vk-reader", Digest: gateway.HashAPIKey(cpVKReader), WorkspaceID: "ws-1",
			Scopes: []gateway.Scope{gateway.ScopeVirtualKeysRead, gateway.ScopeConfigsRead}})
		st.AddAPIKey(gateway.APIKey{ID: "key-completer", Digest: gateway.HashAPIKey(cpCompleter), WorkspaceID: "ws-2",
			Scopes: []gateway.Scope{gateway.ScopeCompletionsWrite}})
		st.AddAPIKey(gateway.APIKey{ID: "key-no-ws", Digest: gateway.HashAPIKey(cpNoWS), Role: gateway.RoleAdmin})
	})}
	return e
}

// upstreamCall makes a data-plane call with key and one more header, and
// returns its status and the Authorization the fake upstream received.
func (e *akEnv) upstreamCall(key, header string) (int, string) {
	e.t.Helper()
	n := len(e.up.received())
	res := e.do("GET", "/v1/models", nil, gateway.HeaderAPIKey+": "+key, header)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		var eb coreErrBody
		json.Unmarshal(b, &eb)
		return res.StatusCode, deref(eb.Error.Code)
	}
	got := e.up.received()
	if len(got) != n+1 {
		e.t.Fatalf("upstream received %d requests, want %d", len(got), n+1)
	}
	return res.StatusCode, got[n].Header.Get("Authorization")
}

// noSecrets fails the test if a GET answer or a request log holds one of
// secrets.
func (e *akEnv) noSecrets(secrets ...string) {
	e.t.Helper()
	e.gw.Close()
	recs, _ := json.Marshal(e.logs.Query(gateway.LogFilter{}))
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range secrets {
		for _, b := range e.gets {
			if strings.Contains(b, s) {
				e.t.Fatalf("a GET answer holds secret %q: %s", s, b)
			}
		}
		if strings.Contains(string(recs), s) {
			e.t.Fatalf("a request log holds secret %q", s)
		}
	}
}

type vkObject struct {
	Slug            string `json:"slug"`
	Name            string `json:"name"`
	Note            string `json:"note"`
	Provider        string `json:"provider"`
	Key             string `json:"key"`
	BaseURL         string `json:"base_url"`
	WorkspaceID     string `json:"workspace_id"`
	Status          string `json:"status"`
	Region          string `json:"region"`
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token"`
	Object          string `json:"object"`
}

type vkList struct {
	Object string
	Data   []vkObject
	Total  int
}

type vkCreated struct {
	Success bool
	Data    struct{ Slug string }
}

func TestVirtualKeysLifecycle(t *testing.T) {
	e := newCPEnv(t)
	const secret, secret2 = "sk-vk-secret-0001", "sk-vk-secret-0002"
	var c vkCreated
	e.want(200, coreAdminKey, "POST", "/v1/virtual-keys",
		`{"name":"Prod OpenAI","provider":"openai","key":"`+secret+`","note":"main","base_url":"`+e.up.URL+`/v1",
		  "region":"us-east-1","access_key_id":"AKIAEXAMPLE","secret_access_key":"aws-secret-0001","session_token":"aws-token-0001"}`, &c)
	if !c.Success || c.Data.Slug != "prod-openai" {
		t.Fatalf("create = %+v, want slug prod-openai", c)
	}

	// The data plane uses it at once, with the stored credential.
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": prod-openai"); st != 200 || auth != "Bearer "+secret {
		t.Fatalf("call through the new virtual key: %d, Authorization %q", st, auth)
	}

	var got vkObject
	e.want(200, cpVKReader, "GET", "/v1/virtual-keys/prod-openai", "", &got)
	want := vkObject{Slug: "prod-openai", Name: "Prod OpenAI", Note: "main", Provider: "openai", Key: "sk*************01",
		BaseURL: e.up.URL + "/v1", WorkspaceID: "ws-1", Status: "active", Region: "us-east-1", AccessKeyID: "AKIAEXAMPLE",
		SecretAccessKey: "aw***********01", SessionToken: "aw**********01", Object: "virtual-key"}
	if got != want {
		t.Errorf("GET = %+v\nwant  %+v", got, want)
	}

	// Update: a new credential is in force at once; other fields stay.
	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/prod-openai", `{"key":"`+secret2+`","note":"rotated"}`, nil)
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": prod-openai"); st != 200 || auth != "Bearer "+secret2 {
		t.Fatalf("call after update: %d, Authorization %q", st, auth)
	}
	e.want(200, coreAdminKey, "GET", "/v1/virtual-keys/prod-openai", "", &got)
	if got.Note != "rotated" || got.Name != "Prod OpenAI" || got.Key != "sk*************02" || got.Region != "us-east-1" {
		t.Errorf("GET after update = %+v", got)
	}

	// A taken slug is a conflict, in its workspace only.
	e.wantErr(409, "slug", coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"prod openai","provider":"openai","key":"x"}`)
	e.want(200, akAdmin2, "POST", "/v1/virtual-keys", `{"name":"Prod OpenAI","provider":"anthropic","key":"sk-ws2-secret-0003","base_url":"`+e.up.URL+`/v2"}`, &c)
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": prod-openai"); st != 200 || auth != "Bearer "+secret2 {
		t.Fatalf("ws-1's call after ws-2 took the slug: %d, Authorization %q", st, auth)
	}

	var list vkList
	e.want(200, coreAdminKey, "GET", "/v1/virtual-keys", "", &list)
	if list.Object != "list" || list.Total != 2 || len(list.Data) != 2 {
		t.Fatalf("list = %+v, want vk-up and prod-openai", list)
	}

	e.want(200, coreAdminKey, "DELETE", "/v1/virtual-keys/prod-openai", "", nil)
	// The slug now lives in ws-2 alone: unknown to ws-1, as another
	// workspace's (no existence oracle), as for store-file keys.
	if st, code := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": prod-openai"); st != 400 || code != gateway.CodeUnknownVirtualKey {
		t.Fatalf("call through ws-1's deleted virtual key: %d %s, want 400 %s", st, code, gateway.CodeUnknownVirtualKey)
	}
	e.wantErr(404, "", coreAdminKey, "GET", "/v1/virtual-keys/prod-openai", "")
	e.wantErr(404, "", coreAdminKey, "DELETE", "/v1/virtual-keys/prod-openai", "")
	e.want(200, akAdmin2, "GET", "/v1/virtual-keys/prod-openai", "", &got)
	e.want(200, akAdmin2, "DELETE", "/v1/virtual-keys/prod-openai", "", nil)
	if st, code := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": prod-openai"); st != 400 || code != gateway.CodeUnknownVirtualKey {
		t.Fatalf("call through a deleted virtual key: %d %s, want 400 %s", st, code, gateway.CodeUnknownVirtualKey)
	}

	// An error answer does not echo a secret either.
	st, b := e.call(coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"x","provider":"nope","key":"sk-in-error-0004"}`)
	if st != 400 || strings.Contains(string(b), "sk-in-error-0004") {
		t.Errorf("bad create = %d %s", st, b)
	}
	e.noSecrets(secret, secret2, "sk-ws2-secret-0003", "aws-secret-0001", "aws-token-0001")
}

func TestVirtualKeysWorkspaces(t *testing.T) {
	e := newCPEnv(t)
	e.want(200, akAdmin2, "POST", "/v1/virtual-keys", `{"name":"two","provider":"openai","key":"sk-two-secret","base_url":"`+e.up.URL+`/v1"}`, nil)

	// Another workspace's virtual key is not found, whatever the method.
	for _, m := range []struct{ method, body string }{{"GET", ""}, {"PUT", `{"note":"x"}`}, {"DELETE", ""}} {
		e.wantErr(404, "", coreAdminKey, m.method, "/v1/virtual-keys/two", m.body)
	}
	e.wantErr(403, "workspace_id", coreAdminKey, "GET", "/v1/virtual-keys/two?workspace_id=ws-2", "")
	e.wantErr(403, "workspace_id", coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"x","provider":"openai","workspace_id":"ws-2"}`)
	e.wantErr(403, "", cpNoWS, "GET", "/v1/virtual-keys", "")
	// Nor may the data plane of another workspace use it.
	if st, code := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": two"); st != 400 || code != gateway.CodeUnknownVirtualKey {
		t.Errorf("ws-1 using ws-2's virtual key: %d %s, want 400 %s", st, code, gateway.CodeUnknownVirtualKey)
	}
	if st, auth := e.upstreamCall(cpCompleter, gateway.HeaderVirtualKey+": two"); st != 200 || auth != "Bearer sk-two-secret" {
		t.Errorf("ws-2 using its virtual key: %d %q", st, auth)
	}

	var list vkList
	e.want(200, akAdmin2, "GET", "/v1/virtual-keys", "", &list)
	if list.Total != 1 || list.Data[0].Slug != "two" {
		t.Errorf("ws-2's list = %+v", list)
	}

	// The organisation key names workspaces; without one it acts on the
	// virtual keys of no workspace, which every workspace may use.
	e.want(200, akOrg, "GET", "/v1/virtual-keys", "", &list)
	if list.Total != 2 {
		t.Errorf("organisation's list total = %d, want 2", list.Total)
	}
	e.want(200, akOrg, "GET", "/v1/virtual-keys?workspace_id=ws-2&page_size=1", "", &list)
	if list.Total != 1 || list.Data[0].WorkspaceID != "ws-2" {
		t.Errorf("organisation's list of ws-2 = %+v", list)
	}
	e.wantErr(404, "", akOrg, "GET", "/v1/virtual-keys/two", "")
	e.want(200, akOrg, "PUT", "/v1/virtual-keys/two?workspace_id=ws-2", `{"note":"by org"}`, nil)
	e.want(200, akOrg, "POST", "/v1/virtual-keys", `{"name":"two","provider":"openai","key":"sk-shared-secret","base_url":"`+e.up.URL+`/v1"}`, nil)
	e.want(200, akOrg, "POST", "/v1/virtual-keys", `{"name":"x","slug":"for-ws1","provider":"openai","workspace_id":"ws-1"}`, nil)
	e.want(200, coreAdminKey, "GET", "/v1/virtual-keys/for-ws1", "", nil)
	// A caller's own workspace comes first, then the keys of no workspace.
	if st, auth := e.upstreamCall(cpCompleter, gateway.HeaderVirtualKey+": two"); st != 200 || auth != "Bearer sk-two-secret" {
		t.Errorf("ws-2 using its own \"two\": %d %q", st, auth)
	}
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": two"); st != 200 || auth != "Bearer sk-shared-secret" {
		t.Errorf("ws-1 using the shared \"two\": %d %q", st, auth)
	}
}

func TestVirtualKeysScopesAndBadInput(t *testing.T) {
	e := newCPEnv(t)
	e.wantErr(403, "", coreKey, "GET", "/v1/virtual-keys", "")
	e.wantErr(403, "", cpVKReader, "POST", "/v1/virtual-keys", `{"name":"x","provider":"openai"}`)
	e.wantErr(403, "", cpVKReader, "DELETE", "/v1/virtual-keys/vk-up", "")
	e.want(200, cpVKReader, "GET", "/v1/virtual-keys/vk-up", "", nil)

	for _, tc := range []struct {
		name, method, path, body, param string
	}{
		{"unknown field", "POST", "/v1/virtual-keys", `{"name":"x","provider":"openai","usage_limits":{}}`, "usage_limits"},
		{"no name", "POST", "/v1/virtual-keys", `{"provider":"openai"}`, "name"},
		{"name of wrong type", "POST", "/v1/virtual-keys", `{"name":1,"provider":"openai"}`, "name"},
		{"no slug to derive", "POST", "/v1/virtual-keys", `{"name":"!!","provider":"openai"}`, "name"},
		{"bad slug", "POST", "/v1/virtual-keys", `{"name":"x","slug":"Bad Slug","provider":"openai"}`, "slug"},
		{"no provider", "POST", "/v1/virtual-keys", `{"name":"x"}`, "provider"},
		{"unknown provider", "POST", "/v1/virtual-keys", `{"name":"x","provider":"nope"}`, "provider"},
		{"bad base_url", "POST", "/v1/virtual-keys", `{"name":"x","provider":"openai","base_url":"ftp://h"}`, "base_url"},
		{"private base_url", "POST", "/v1/virtual-keys", `{"name":"x","provider":"openai","base_url":"http://10.0.0.1/v1"}`, "base_url"},
		{"region of wrong type", "POST", "/v1/virtual-keys", `{"name":"x","provider":"openai","region":true}`, "region"},
		{"not JSON", "POST", "/v1/virtual-keys", `{`, ""},
		{"page_size 0", "GET", "/v1/virtual-keys?page_size=0", "", "page_size"},
		{"current_page x", "GET", "/v1/virtual-keys?current_page=x", "", "current_page"},
		{"empty workspace_id", "GET", "/v1/virtual-keys?workspace_id=", "", "workspace_id"},
		{"update provider", "PUT", "/v1/virtual-keys/vk-up", `{"provider":"anthropic"}`, "provider"},
		{"update slug", "PUT", "/v1/virtual-keys/vk-up", `{"slug":"other"}`, "slug"},
		{"update empty name", "PUT", "/v1/virtual-keys/vk-up", `{"name":""}`, "name"},
		{"update unknown field", "PUT", "/v1/virtual-keys/vk-up", `{"status":"exhausted"}`, "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.wantErr(400, tc.param, coreAdminKey, tc.method, tc.path, tc.body)
		})
	}
	e.t = t
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": vk-up"); st != 200 || auth != "Bearer sk-stored-secret" {
		t.Errorf("vk-up after refused changes: %d %q", st, auth)
	}
	e.wantErr(405, "", coreAdminKey, "PATCH", "/v1/virtual-keys", "")
}

func TestVirtualKeysPaging(t *testing.T) {
	e := newCPEnv(t)
	for i := range 24 {
		e.want(200, coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"k `+strconv.Itoa(i)+`","provider":"openai"}`, nil)
	}
	var list vkList
	e.want(200, coreAdminKey, "GET", "/v1/virtual-keys", "", &list)
	if list.Total != 25 || len(list.Data) != 20 {
		t.Fatalf("default page: total %d, %d items; want 25, 20", list.Total, len(list.Data))
	}
	seen := map[string]bool{}
	for p := range 3 {
		e.want(200, coreAdminKey, "GET", "/v1/virtual-keys?page_size=10&current_page="+strconv.Itoa(p), "", &list)
		if want := min(10, 25-10*p); len(list.Data) != want || list.Total != 25 {
			t.Fatalf("page %d: %d items, total %d; want %d, 25", p, len(list.Data), list.Total, want)
		}
		for _, vk := range list.Data {
			seen[vk.Slug] = true
		}
	}
	if len(seen) != 25 {
		t.Errorf("pages showed %d distinct keys, want 25", len(seen))
	}
}

// TestVirtualKeysNotManaged: a virtual key store without VirtualKeyAdmin
// serves no control plane, and configs likewise.
func TestVirtualKeysNotManaged(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *envOptions) {
		o.VirtualKeys = vkOnly{o.VirtualKeys}
		o.Configs = configsOnly{o.Configs}
	})
	for _, p := range []string{"/v1/virtual-keys", "/v1/configs"} {
		if res := e.do("GET", p, nil, gateway.HeaderAPIKey+": "+coreAdminKey); res.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", p, res.StatusCode)
		}
	}
}

type vkOnly struct{ gateway.VirtualKeyStore }
type configsOnly struct{ gateway.ConfigStore }
