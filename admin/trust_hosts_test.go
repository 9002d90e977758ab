package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// loopNet is a DNS that answers 127.0.0.1 for each of its names: a name a
// tenant controls, pointing at the gateway's own loopback. The operator's
// transport (dial) and the custom-host guard (LookupNetIP) both resolve
// through it, so a host that is not guarded reaches the loopback for
// real.
type loopNet map[string]bool

func (n loopNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if n[host] {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (n loopNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && n[host] {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// newTrustEnv is the core harness with nothing allowlisted but allow, the
// names of loopNet resolving to the loopback, an audit log, and the keys
// of the virtual keys tests (ws-2's admin, an organisation key).
func newTrustEnv(t *testing.T, up *coreUpstream, allow ...string) *akEnv {
	t.Helper()
	n := loopNet{"tenant.test": true, "other.test": true}
	return &akEnv{coreEnv: newCoreEnv(t, up, func(o *envOptions) {
		st := o.Keys.(*memstore.Store)
		st.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey(akAdmin2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
		st.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(akOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
		o.Audit = st
		o.CustomHostAllow = allow
		o.Resolver = n
		o.Transport = &http.Transport{DialContext: n.dial}
	})}
}

// port is the port of an httptest server's URL.
func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// dataCall makes a data-plane GET /v1/models with key and headers, and
// returns its status, error code (when not 200) and how many requests up
// received meanwhile.
func (e *akEnv) dataCall(up *coreUpstream, key string, headers ...string) (status int, code string, reached int) {
	e.t.Helper()
	n := len(up.received())
	res := e.do("GET", "/v1/models", nil, append([]string{gateway.HeaderAPIKey + ": " + key}, headers...)...)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		var eb coreErrBody
		json.Unmarshal(b, &eb)
		code = deref(eb.Error.Code)
	}
	return res.StatusCode, code, len(up.received()) - n
}

// A virtual key written through the control plane (a tenant's) whose
// base_url names a host resolving to the loopback is refused at dial, and
// the loopback server gets nothing; the same host written by the
// operator (the store, a store file) is trusted; an allowlisted host
// works for the tenant too.
func TestTenantVirtualKeyHostGuarded(t *testing.T) {
	up := newCoreUpstream(t, nil)
	p := port(t, up.URL)
	e := newTrustEnv(t, up)

	e.want(200, coreAdminKey, "POST", "/v1/virtual-keys",
		`{"name":"loop","provider":"openai","key":"sk-tenant-loop","base_url":"http://tenant.test:`+p+`/v1"}`, nil)
	if st, code, reached := e.dataCall(up, coreKey, gateway.HeaderVirtualKey+": loop"); st != 400 || code != gateway.CodeInvalidCustomHost || reached != 0 {
		t.Errorf("tenant base_url resolving to the loopback: %d %s, upstream reached %d times; want 400 %s, never",
			st, code, reached, gateway.CodeInvalidCustomHost)
	}
	// The refusal at dial names the virtual key, not the caller's header.
	res := e.do("GET", "/v1/models", nil, gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": loop")
	if eb := decodeError(t, res); deref(eb.Error.Param) != gateway.HeaderVirtualKey || !strings.Contains(eb.Error.Message, `"loop" base_url`) {
		t.Errorf("tenant base_url refused at dial: %+v, want it to name the virtual key", eb.Error)
	}
	// The issue's own case: localhost, resolved by the system.
	e2 := &akEnv{coreEnv: newCoreEnv(t, up, func(o *envOptions) { o.CustomHostAllow = nil })}
	e2.want(200, coreAdminKey, "POST", "/v1/virtual-keys",
		`{"name":"local","provider":"openai","key":"sk-tenant-local","base_url":"http://localhost:`+p+`/v1"}`, nil)
	if st, code, reached := e2.dataCall(up, coreKey, gateway.HeaderVirtualKey+": local"); st == 200 || reached != 0 {
		t.Errorf("tenant base_url on localhost: %d %s, upstream reached %d times; want refused", st, code, reached)
	}

	// A tenant's literal loopback address, stored when it was allowed (or
	// by an older gateway), is refused before any dial.
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "literal", Provider: "openai", APIKey: "sk-literal", BaseURL: up.URL + "/v1",
		WorkspaceID: "ws-1", Tenant: true})
	res = e.do("GET", "/v1/models", nil, gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": literal")
	eb := decodeError(t, res)
	if res.StatusCode != 400 || deref(eb.Error.Code) != gateway.CodeInvalidCustomHost || deref(eb.Error.Param) != gateway.HeaderVirtualKey ||
		!strings.Contains(eb.Error.Message, "base_url") {
		t.Errorf("tenant literal loopback base_url: %d %+v", res.StatusCode, eb.Error)
	}

	// The operator's: stored by Go code, or from a store file.
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "op", Provider: "openai", APIKey: "sk-operator", BaseURL: "http://tenant.test:" + p + "/v1", WorkspaceID: "ws-1"})
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": op"); st != 200 || auth != "Bearer sk-operator" {
		t.Errorf("operator's virtual key: %d %q", st, auth)
	}
	// As a store file adds it (admin.Apply).
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "op-file", Provider: "openai", APIKey: "sk-file", BaseURL: "http://tenant.test:" + p + "/v1"})
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": op-file"); st != 200 || auth != "Bearer sk-file" {
		t.Errorf("store file's virtual key: %d %q", st, auth)
	}
	// A tenant's change that moves no host leaves the operator's key
	// trusted; one that moves it makes the key a tenant's.
	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/op", `{"note":"renamed by the workspace admin"}`, nil)
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": op"); st != 200 || auth != "Bearer sk-operator" {
		t.Errorf("operator's virtual key after a tenant's note: %d %q", st, auth)
	}
	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/op", `{"key":"sk-operator-2","base_url":"http://other.test:`+p+`/v1"}`, nil)
	if st, code, reached := e.dataCall(up, coreKey, gateway.HeaderVirtualKey+": op"); st != 400 || code != gateway.CodeInvalidCustomHost || reached != 0 {
		t.Errorf("operator's key after a tenant moved its host: %d %s, reached %d; want 400 %s", st, code, reached, gateway.CodeInvalidCustomHost)
	}

	// Allowlisted by the operator, the tenant's host works.
	ea := newTrustEnv(t, up, "tenant.test:"+p)
	ea.want(200, coreAdminKey, "POST", "/v1/virtual-keys",
		`{"name":"loop","provider":"openai","key":"sk-tenant-loop","base_url":"http://tenant.test:`+p+`/v1"}`, nil)
	if st, auth := ea.upstreamCall(coreKey, gateway.HeaderVirtualKey+": loop"); st != 200 || auth != "Bearer sk-tenant-loop" {
		t.Errorf("allowlisted tenant host: %d %q", st, auth)
	}
}

// A saved config written through the control plane has its custom_host
// guarded when used; the operator's is trusted; an allowlisted host works
// and gets the config's own credential.
func TestTenantConfigCustomHostGuarded(t *testing.T) {
	up := newCoreUpstream(t, nil)
	p := port(t, up.URL)
	cfg := `{"provider":"openai","api_key":"sk-cfg-secret","custom_host":"http://tenant.test:` + p + `/v1"}`
	e := newTrustEnv(t, up)
	e.want(200, coreAdminKey, "POST", "/v1/configs", `{"name":"loop","config":`+cfg+`}`, nil)
	if st, code, reached := e.dataCall(up, coreKey, gateway.HeaderConfig+": loop"); st != 400 || code != gateway.CodeInvalidCustomHost || reached != 0 {
		t.Errorf("tenant custom_host resolving to the loopback: %d %s, upstream reached %d times; want 400 %s, never",
			st, code, reached, gateway.CodeInvalidCustomHost)
	}
	// In a target, under a fallback: still guarded.
	e.want(200, coreAdminKey, "POST", "/v1/configs",
		`{"name":"nested","config":{"strategy":{"mode":"fallback"},"targets":[`+cfg+`]}}`, nil)
	if st, code, reached := e.dataCall(up, coreKey, gateway.HeaderConfig+": nested"); st != 400 || code != gateway.CodeInvalidCustomHost || reached != 0 {
		t.Errorf("tenant custom_host in a target: %d %s, reached %d", st, code, reached)
	}

	e.store.AddConfig(gateway.SavedConfig{ID: "op", WorkspaceID: "ws-1", Config: json.RawMessage(cfg)})
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderConfig+": op"); st != 200 || auth != "Bearer sk-cfg-secret" {
		t.Errorf("operator's config: %d %q", st, auth)
	}
	// Renaming it keeps the operator's host trusted.
	e.want(200, coreAdminKey, "PUT", "/v1/configs/op", `{"name":"renamed"}`, nil)
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderConfig+": op"); st != 200 || auth != "Bearer sk-cfg-secret" {
		t.Errorf("operator's config after a rename: %d %q", st, auth)
	}

	// Moving its host makes it a tenant's.
	cfg2 := strings.Replace(cfg, "tenant.test", "other.test", 1)
	e.want(200, coreAdminKey, "PUT", "/v1/configs/op", `{"config":`+cfg2+`}`, nil)
	if st, code, reached := e.dataCall(up, coreKey, gateway.HeaderConfig+": op"); st != 400 || code != gateway.CodeInvalidCustomHost || reached != 0 {
		t.Errorf("operator's config after a tenant moved its host: %d %s, reached %d", st, code, reached)
	}
	if rec := e.auditOf("PUT", "/v1/configs/op"); rec.Detail != "custom_host: http://tenant.test:"+p+"/v1 → http://other.test:"+p+"/v1" {
		t.Errorf("audit detail of the move: %q", rec.Detail)
	}

	ea := newTrustEnv(t, up, "tenant.test:"+p)
	ea.want(200, coreAdminKey, "POST", "/v1/configs", `{"name":"loop","config":`+cfg+`}`, nil)
	if st, auth := ea.upstreamCall(coreKey, gateway.HeaderConfig+": loop"); st != 200 || auth != "Bearer sk-cfg-secret" {
		t.Errorf("allowlisted tenant custom_host: %d %q", st, auth)
	}
}

// auditOf returns the newest audit record of method on path.
func (e *akEnv) auditOf(method, path string) observe.AuditRecord {
	e.t.Helper()
	recs, _, err := e.store.AuditRecords(context.Background(), observe.AuditQuery{Method: method, URI: path})
	if err != nil || len(recs) == 0 {
		e.t.Fatalf("audit records of %s %s: %v, %v", method, path, recs, err)
	}
	return recs[0]
}

// Changing where a virtual key's secret goes needs the secret again: the
// stored one never reaches the new host, and the audit record of the
// change names both hosts.
func TestVirtualKeyHostChangeNeedsSecret(t *testing.T) {
	up := newCoreUpstream(t, nil)
	evil := newCoreUpstream(t, nil)
	p, pe := port(t, up.URL), port(t, evil.URL)
	e := newTrustEnv(t, up, "tenant.test:"+p, "other.test:"+pe)
	oldURL, newURL := "http://tenant.test:"+p+"/v1", "http://other.test:"+pe+"/v1"
	e.want(200, coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"moving","provider":"openai","key":"sk-stored-0001","base_url":"`+oldURL+`"}`, nil)

	for _, body := range []string{
		`{"base_url":"` + newURL + `"}`,
		`{"base_url":"` + newURL + `","note":"moved"}`,
		`{"region":"us-east-1"}`,
		`{"resource_name":"other-resource"}`,
		`{"project_id":"other-project"}`,
	} {
		res := e.do("PUT", "/v1/virtual-keys/moving", strings.NewReader(body), gateway.HeaderAPIKey+": "+coreAdminKey)
		eb := decodeError(t, res)
		if res.StatusCode != 400 || deref(eb.Error.Code) != gateway.CodeSecretRequired || deref(eb.Error.Param) != "key" {
			t.Errorf("PUT %s without key: %d %+v; want 400 %s on key", body, res.StatusCode, eb.Error, gateway.CodeSecretRequired)
		}
	}
	// The key still goes to its own host, and the new one got nothing.
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderVirtualKey+": moving"); st != 200 || auth != "Bearer sk-stored-0001" {
		t.Errorf("after refused moves: %d %q", st, auth)
	}
	if n := len(evil.received()); n != 0 {
		t.Fatalf("the new host received %d requests", n)
	}
	// Changes that move nothing need no secret.
	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/moving", `{"note":"n","base_url":"`+oldURL+`","deployment_id":"d"}`, nil)
	if rec := e.auditOf("PUT", "/v1/virtual-keys/moving"); rec.Detail != "" {
		t.Errorf("audit detail of a change that moves nothing: %q", rec.Detail)
	}

	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/moving", `{"key":"sk-new-0002","base_url":"`+newURL+`"}`, nil)
	rec := e.auditOf("PUT", "/v1/virtual-keys/moving")
	if want := "base_url: " + oldURL + " → " + newURL; rec.Detail != want || rec.Status != 200 {
		t.Errorf("audit record: %d %q, want 200 %q", rec.Status, rec.Detail, want)
	}
	n := len(evil.received())
	if st, _, _ := e.dataCall(evil, coreKey, gateway.HeaderVirtualKey+": moving"); st != 200 {
		t.Fatalf("after the move: %d", st)
	}
	if got := evil.received(); len(got) != n+1 || got[n].Header.Get("Authorization") != "Bearer sk-new-0002" {
		t.Errorf("the new host received %d requests, the last with %q", len(got)-n, got[len(got)-1].Header.Get("Authorization"))
	}
	for _, r := range evil.received() {
		if strings.Contains(r.Header.Get("Authorization"), "sk-stored-0001") {
			t.Error("the new host received the old secret")
		}
	}

	// A key pair: secret_access_key (and the session token) again.
	e.want(200, coreAdminKey, "POST", "/v1/virtual-keys", `{"name":"aws","provider":"openai","access_key_id":"AKIA1",
		"secret_access_key":"aws-secret-0003","session_token":"aws-token-0003","region":"us-east-1"}`, nil)
	e.wantErr(400, "secret_access_key", coreAdminKey, "PUT", "/v1/virtual-keys/aws", `{"region":"eu-west-1"}`)
	e.wantErr(400, "session_token", coreAdminKey, "PUT", "/v1/virtual-keys/aws", `{"region":"eu-west-1","secret_access_key":"aws-secret-0004"}`)
	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/aws", `{"region":"eu-west-1","secret_access_key":"aws-secret-0004","session_token":"t"}`, nil)
	if rec := e.auditOf("PUT", "/v1/virtual-keys/aws"); rec.Detail != `region: "us-east-1" → "eu-west-1"` {
		t.Errorf("audit detail of a region change: %q", rec.Detail)
	}
	// Host settings that could leave the provider's domain are refused.
	for _, tc := range []struct{ field, value string }{
		{"resource_name", "evil.example.com/x"}, {"resource_name", "a.b"}, {"project_id", "p/../q"},
		{"region", "evil.example.com#"}, {"region", "US-EAST-1"},
	} {
		e.wantErr(400, tc.field, coreAdminKey, "POST", "/v1/virtual-keys",
			`{"name":"bad","provider":"openai","`+tc.field+`":"`+tc.value+`"}`)
	}
	all, _, _ := e.store.AuditRecords(t.Context(), observe.AuditQuery{})
	recs, _ := json.Marshal(all)
	for _, s := range []string{"sk-stored-0001", "sk-new-0002", "aws-secret-000", "aws-token-0003"} {
		if bytes.Contains(recs, []byte(s)) {
			t.Errorf("an audit record holds secret %q", s)
		}
	}
}

// allowed_routes narrows a virtual key, named directly or by a config
// target; it is validated when written and read back.
func TestVirtualKeyAllowedRoutes(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newTrustEnv(t, up, "127.0.0.1")
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "narrow", Provider: "openai", APIKey: "sk-narrow", BaseURL: up.URL + "/v1",
		WorkspaceID: "ws-1", AllowedRoutes: []string{"POST /chat/completions", "GET /models", "* /files"}})
	e.store.AddConfig(gateway.SavedConfig{ID: "via-config", WorkspaceID: "ws-1", Config: json.RawMessage(`{"virtual_key":"narrow"}`)})

	call := func(method, path, header string) (int, string, int) {
		n := len(up.received())
		res := e.do(method, path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`),
			gateway.HeaderAPIKey+": "+coreKey, header, "Content-Type: application/json")
		b, _ := io.ReadAll(res.Body)
		var eb coreErrBody
		json.Unmarshal(b, &eb)
		return res.StatusCode, deref(eb.Error.Code), len(up.received()) - n
	}
	for _, h := range []string{gateway.HeaderVirtualKey + ": narrow", gateway.HeaderConfig + ": via-config", gateway.HeaderConfig + `: {"virtual_key":"narrow"}`} {
		for _, tc := range []struct {
			method, path string
			allowed      bool
		}{
			{"GET", "/v1/models", true},
			{"GET", "/v1/models/gpt-4o", true},
			{"POST", "/v1/chat/completions", true},
			{"DELETE", "/v1/files/f-1", true},
			{"POST", "/v1/embeddings", false},
			{"POST", "/v1/models", false},
			{"GET", "/v1/modelsx", false},
			{"GET", "/v1/chat/completions", false},
		} {
			st, code, reached := call(tc.method, tc.path, h)
			if tc.allowed && (st != 200 || reached != 1) {
				t.Errorf("%s: %s %s = %d %s (reached %d), want 200", h, tc.method, tc.path, st, code, reached)
			}
			if !tc.allowed && (st != 403 || code != gateway.CodeRouteNotAllowed || reached != 0) {
				t.Errorf("%s: %s %s = %d %s (reached %d), want 403 %s", h, tc.method, tc.path, st, code, reached, gateway.CodeRouteNotAllowed)
			}
		}
	}

	// Through the control plane: validated, stored, read back, enforced.
	for _, tc := range []struct{ routes, param string }{
		{`["post /chat/completions"]`, "allowed_routes[0]"},
		{`["GET /models","POST chat"]`, "allowed_routes[1]"},
		{`["POST"]`, "allowed_routes[0]"},
		{`["GET /a/../b"]`, "allowed_routes[0]"},
		{`["GET /models?x=1"]`, "allowed_routes[0]"},
		{`["GET  /models"]`, "allowed_routes[0]"},
		{`"GET /models"`, ""},
	} {
		e.wantErr(400, tc.param, coreAdminKey, "POST", "/v1/virtual-keys",
			`{"name":"r","provider":"openai","key":"k","allowed_routes":`+tc.routes+`}`)
	}
	e.want(200, coreAdminKey, "POST", "/v1/virtual-keys",
		`{"name":"tenant narrow","provider":"openai","key":"sk-t","base_url":"`+up.URL+`/v1","allowed_routes":["GET /models"]}`, nil)
	var got struct {
		AllowedRoutes []string `json:"allowed_routes"`
	}
	e.want(200, coreAdminKey, "GET", "/v1/virtual-keys/tenant-narrow", "", &got)
	if len(got.AllowedRoutes) != 1 || got.AllowedRoutes[0] != "GET /models" {
		t.Errorf("read back: %q", got.AllowedRoutes)
	}
	if st, _, _ := call("GET", "/v1/models", gateway.HeaderVirtualKey+": tenant-narrow"); st != 200 {
		t.Errorf("tenant's allowed route: %d", st)
	}
	if st, code, reached := call("POST", "/v1/chat/completions", gateway.HeaderVirtualKey+": tenant-narrow"); st != 403 || code != gateway.CodeRouteNotAllowed || reached != 0 {
		t.Errorf("tenant's other route: %d %s %d", st, code, reached)
	}
	// Emptied, every route is open again.
	e.want(200, coreAdminKey, "PUT", "/v1/virtual-keys/tenant-narrow", `{"allowed_routes":[]}`, nil)
	if st, _, _ := call("POST", "/v1/chat/completions", gateway.HeaderVirtualKey+": tenant-narrow"); st != 200 {
		t.Errorf("after emptying allowed_routes: %d", st)
	}

	// A store file's entries are checked too: admin's TestFileAllowedRoutes.
}

// Another workspace's virtual key or config, named on the data plane,
// answers byte for byte as an unknown one.
func TestNoExistenceOracle(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newTrustEnv(t, up, "127.0.0.1")
	answer := func(header string) (int, string) {
		res := e.do("GET", "/v1/models", nil, gateway.HeaderAPIKey+": "+coreKey, header)
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	headers := []string{
		gateway.HeaderVirtualKey + ": two",
		gateway.HeaderConfig + ": two",
		gateway.HeaderConfig + `: {"virtual_key":"two"}`,
		gateway.HeaderConfig + `: {"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"two"}]}`,
	}
	type ans struct {
		status int
		body   string
	}
	unknown := make([]ans, len(headers))
	for i, h := range headers {
		unknown[i].status, unknown[i].body = answer(h)
		if unknown[i].status != 400 {
			t.Fatalf("%s unknown: %d %s", h, unknown[i].status, unknown[i].body)
		}
	}
	e.want(200, akAdmin2, "POST", "/v1/virtual-keys", `{"name":"two","provider":"openai","key":"sk-two","base_url":"`+up.URL+`/v1"}`, nil)
	e.want(200, akAdmin2, "POST", "/v1/configs", `{"name":"two","config":{"virtual_key":"two"}}`, nil)
	for i, h := range headers {
		if st, b := answer(h); st != unknown[i].status || b != unknown[i].body {
			t.Errorf("%s of another workspace: %d %s\nunknown: %d %s", h, st, b, unknown[i].status, unknown[i].body)
		}
	}
	if st, auth := e.upstreamCall(cpCompleterKey(e), gateway.HeaderVirtualKey+": two"); st != 200 || auth != "Bearer sk-two" {
		t.Errorf("ws-2 using its own virtual key: %d %q", st, auth)
	}
}

// cpCompleterKey adds a ws-2 key that may call the data plane, and
// returns it.
func cpCompleterKey(e *akEnv) string {
	e.store.AddAPIKey(gateway.APIKey{ID: "key-completer", Digest: gateway.HashAPIKey(cpCompleter), WorkspaceID: "ws-2",
		Scopes: []gateway.Scope{gateway.ScopeCompletionsWrite}})
	return cpCompleter
}

// An organisation key acting in a workspace named by the body or the
// query leaves an audit record naming that workspace.
func TestAuditNamesWorkspaceOfOrganisationKey(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newTrustEnv(t, up, "127.0.0.1")
	e.want(200, akOrg, "POST", "/v1/virtual-keys", `{"name":"org made","provider":"openai","key":"k","workspace_id":"ws-2"}`, nil)
	e.want(200, akOrg, "POST", "/v1/configs", `{"name":"org made","config":{"virtual_key":"org-made"},"workspace_id":"ws-2"}`, nil)
	for _, path := range []string{"/v1/virtual-keys", "/v1/configs"} {
		if rec := e.auditOf("POST", path); rec.WorkspaceID != "ws-2" || rec.Status != 200 {
			t.Errorf("audit of POST %s by an organisation key: workspace %q, status %d; want ws-2", path, rec.WorkspaceID, rec.Status)
		}
	}
	e.want(200, akOrg, "PUT", "/v1/virtual-keys/org-made?workspace_id=ws-2", `{"note":"n"}`, nil)
	if rec := e.auditOf("PUT", "/v1/virtual-keys/org-made"); rec.WorkspaceID != "ws-2" {
		t.Errorf("audit of PUT by an organisation key: workspace %q, want ws-2", rec.WorkspaceID)
	}
	// Of no workspace: none.
	e.want(200, akOrg, "POST", "/v1/virtual-keys", `{"name":"shared","provider":"openai","key":"k"}`, nil)
	if rec := e.auditOf("POST", "/v1/virtual-keys"); rec.WorkspaceID != "" {
		t.Errorf("audit of a virtual key of no workspace: workspace %q", rec.WorkspaceID)
	}
}
