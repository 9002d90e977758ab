package prompt_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/prompt"
)

// The gateway API keys of the harness: admins of workspaces ws-1 and
// ws-2, a member of ws-1 (completions only), an organisation key, and a
// ws-1 key that may read prompts and run completions only.
const (
	keyAdmin  = "gw-admin-ws1"
	keyOther  = "gw-admin-ws2"
	keyMember = "gw-member-ws1"
	keyOrg    = "gw-org"
	keyReader = "gw-reader-ws1"
)

// env is a gateway over real HTTP with the prompt routes mounted on a
// memstore, audited, a fake provider behind virtual key "vk" of ws-1, and
// every request log sent to logs.
type env struct {
	t     testing.TB
	store *memstore.Store
	gw    *gateway.Gateway
	srv   *httptest.Server
	up    *gatewaytest.Server
	logs  chan gateway.RequestLog
}

// chanSink sends every request log to a channel, dropping those that
// find it full (a benchmark reads none), so that Close never waits.
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
		{ID: "key-admin", Digest: gateway.HashAPIKey(keyAdmin), WorkspaceID: "ws-1", Role: gateway.RoleAdmin},
		{ID: "key-other", Digest: gateway.HashAPIKey(keyOther), WorkspaceID: "ws-2", Role: gateway.RoleAdmin},
		{ID: "key-member", Digest: gateway.HashAPIKey(keyMember), WorkspaceID: "ws-1", Role: gateway.RoleMember},
		{ID: "key-org", Digest: gateway.HashAPIKey(keyOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin},
		{ID: "key-reader", Digest: gateway.HashAPIKey(keyReader), WorkspaceID: "ws-1",
			Scopes: []gateway.Scope{gateway.ScopePromptsRead, gateway.ScopeCompletionsWrite}},
	} {
		e.store.AddAPIKey(k)
	}
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-upstream", BaseURL: e.up.URL, WorkspaceID: "ws-1"})
	e.gw = gateway.New(gateway.Options{Keys: e.store, VirtualKeys: e.store, LogSink: chanSink(e.logs)})
	prompt.Mount(e.gw, prompt.Options{Store: e.store, Audit: &observe.Auditor{Store: e.store}})
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(func() { e.srv.Close(); e.gw.Close() })
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

// send sends a request and returns the response unread.
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
	status, b := e.do(key, method, path, body)
	if status != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// apiError is the OpenAI-shaped error of an answer.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// fails sends a request that must fail with status, naming param ("" for
// none), and returns the error's message.
func (e *env) fails(key, method, path string, body any, status int, param string) string {
	e.t.Helper()
	got, b := e.do(key, method, path, body)
	var ae apiError
	if err := json.Unmarshal(b, &ae); err != nil || ae.Error.Message == "" {
		e.t.Fatalf("%s %s: %d %s is not an OpenAI-shaped error", method, path, got, b)
	}
	gotParam := ""
	if ae.Error.Param != nil {
		gotParam = *ae.Error.Param
	}
	if got != status || gotParam != param {
		e.t.Fatalf("%s %s: %d param %q (%s); want %d param %q", method, path, got, gotParam, ae.Error.Message, status, param)
	}
	return ae.Error.Message
}

// log waits for the request log of path (the test's deadline bounds the
// wait).
func (e *env) log(path string) gateway.RequestLog {
	e.t.Helper()
	for rec := range e.logs {
		if rec.Path == path {
			return rec
		}
	}
	panic("unreachable")
}

// created is the answer of a create.
type created struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	VersionID string `json:"version_id"`
	Object    string `json:"object"`
}

// seed makes collection "Support" and prompt "Greeter" in ws-1, with
// template tmpl, and returns the prompt's create answer.
func (e *env) seed(tmpl string) created {
	e.t.Helper()
	var c created
	e.ok(keyAdmin, "POST", "/collections", map[string]any{"name": "Support"}, &c)
	var p created
	e.ok(keyAdmin, "POST", "/prompts", map[string]any{"name": "Greeter", "collection_id": c.ID, "string": tmpl,
		"parameters": map[string]any{"temperature": 0.2, "max_tokens": 50}, "virtual_key": "vk", "model": "gpt-4o-mini"}, &p)
	return p
}
