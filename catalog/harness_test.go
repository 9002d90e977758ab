package catalog_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// The gateway API keys of the harness: an organisation admin key,
// admins of ws-1 and ws-2, and a member of ws-1 (completions only).
const (
	keyOrg    = "gw-org"
	keyAdmin  = "gw-admin-ws1"
	keyOther  = "gw-admin-ws2"
	keyMember = "gw-member-ws1"
)

// env is a gateway over real HTTP with admin, budgets and the catalogue
// mounted on one memstore, audited, a fake provider the operator
// allows as a custom host, and every request log sent to logs.
type env struct {
	t     testing.TB
	store *memstore.Store
	gw    *gateway.Gateway
	srv   *httptest.Server
	up    *gatewaytest.Server
	logs  chan gateway.RequestLog
}

type chanSink chan gateway.RequestLog

func (c chanSink) Log(rec *gateway.RequestLog) {
	select {
	case c <- *rec:
	default:
	}
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), up: gatewaytest.NewServer(), logs: make(chan gateway.RequestLog, 1000)}
	t.Cleanup(e.up.Close)
	for _, k := range []gateway.APIKey{
		{ID: "key-org", Digest: gateway.HashAPIKey(keyOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin},
		{ID: "key-admin", Digest: gateway.HashAPIKey(keyAdmin), WorkspaceID: "ws-1", Role: gateway.RoleAdmin},
		{ID: "key-other", Digest: gateway.HashAPIKey(keyOther), WorkspaceID: "ws-2", Role: gateway.RoleAdmin},
		{ID: "key-member", Digest: gateway.HashAPIKey(keyMember), WorkspaceID: "ws-1", Role: gateway.RoleMember},
	} {
		e.store.AddAPIKey(k)
	}
	u, _ := url.Parse(e.up.URL)
	audit := &observe.Auditor{Store: e.store}
	b := budget.New(budget.Options{Store: e.store, Workspaces: e.store})
	e.gw = gateway.New(gateway.Options{Keys: e.store, VirtualKeys: e.store, Configs: e.store, Policies: e.store,
		Admissions: []gateway.Admission{b}, CustomHostAllow: []string{u.Host}, LogSink: chanSink(e.logs)})
	admin.Mount(e.gw, admin.Options{Keys: e.store, VirtualKeys: e.store, Configs: e.store, Workspaces: e.store,
		Policies: e.store, Audit: audit})
	b.Mount(e.gw, audit)
	rs := observe.Mount(e.gw, observe.Options{Audit: audit})
	t.Cleanup(func() { rs.Close() })
	catalog.Mount(e.gw, catalog.Options{Store: e.store, VirtualKeys: e.store, Workspaces: e.store, Policies: e.store,
		Budgets: e.store, Audit: audit})
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(func() { e.srv.Close(); e.gw.Close() })
	for _, ws := range []string{"ws-1", "ws-2"} {
		e.ok(keyOrg, "POST", "/admin/workspaces", map[string]any{"name": ws, "slug": ws}, nil)
	}
	return e
}

// do sends method path with body (JSON-encoded unless a string) as key,
// and returns the status and the answer's body.
func (e *env) do(key, method, path string, body any) (int, []byte) {
	e.t.Helper()
	resp := e.send(key, method, path, body, nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (e *env) send(key, method, path string, body any, header http.Header) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+"/v1"+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set(gateway.HeaderAPIKey, key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// ok sends a request that must answer 200 and decodes its answer into
// out (unless nil).
func (e *env) ok(key, method, path string, body, out any) {
	e.t.Helper()
	code, b := e.do(key, method, path, body)
	if code != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// apiError is an OpenAI-shaped error answer.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// fails sends a request that must answer status with an OpenAI-shaped
// error naming param and, when not empty, code.
func (e *env) fails(key, method, path string, body any, status int, param, code string) apiError {
	e.t.Helper()
	got, b := e.do(key, method, path, body)
	var ae apiError
	if err := json.Unmarshal(b, &ae); err != nil || ae.Error.Message == "" {
		e.t.Fatalf("%s %s: not an OpenAI-shaped error: %s", method, path, b)
	}
	p, c := "", ""
	if ae.Error.Param != nil {
		p = *ae.Error.Param
	}
	if ae.Error.Code != nil {
		c = *ae.Error.Code
	}
	if got != status || p != param || code != "" && c != code {
		e.t.Fatalf("%s %s: %d param %q code %q, want %d param %q code %q: %s", method, path, got, p, c, status, param, code, b)
	}
	return ae
}

// integration creates integration slug of kind openai at the fake
// provider, offering every model, and grants it to the workspaces.
func (e *env) integration(slug string, workspaces ...string) {
	e.t.Helper()
	e.ok(keyOrg, "POST", "/integrations", map[string]any{"name": slug, "slug": slug, "ai_provider_id": "openai",
		"key": "sk-integration-secret-" + slug, "configurations": map[string]any{"custom_host": e.up.URL}}, nil)
	var ws []map[string]any
	for _, w := range workspaces {
		ws = append(ws, map[string]any{"id": w, "enabled": true})
	}
	if len(ws) > 0 {
		e.ok(keyOrg, "PUT", "/integrations/"+slug+"/workspaces", map[string]any{"workspaces": ws}, nil)
	}
}

// lastUpstream returns the last request the fake provider received.
func (e *env) lastUpstream() gatewaytest.Request {
	e.t.Helper()
	rs := e.up.Requests()
	if len(rs) == 0 {
		e.t.Fatal("the provider received nothing")
	}
	return rs[len(rs)-1]
}
