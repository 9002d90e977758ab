package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
)

// guardEnv is a gateway with the admin routes and the guardrails product
// over real HTTP, in front of a fake provider.
type guardEnv struct {
	t        *testing.T
	srv      *httptest.Server
	provider *gatewaytest.Server
}

const (
	guardOrg = "gw-guard-org"
	guardWS1 = "gw-guard-ws1"
	guardWS2 = "gw-guard-ws2"
)

func newGuardEnv(t *testing.T) *guardEnv {
	t.Helper()
	e := &guardEnv{t: t, provider: gatewaytest.NewServer()}
	t.Cleanup(e.provider.Close)
	st := memstore.New()
	st.AddAPIKey(gateway.APIKey{ID: "org", Digest: gateway.HashAPIKey(guardOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "ws1", Digest: gateway.HashAPIKey(guardWS1), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "ws2", Digest: gateway.HashAPIKey(guardWS2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	hooks := &guardrail.Hooks{Store: st}
	g := gateway.New(gateway.Options{Keys: st, Configs: st, Workspaces: st, Hooks: hooks,
		CustomHostAllow: []string{strings.TrimPrefix(strings.TrimSuffix(e.provider.URL, "/v1"), "http://")}})
	admin.Mount(g, admin.Options{Keys: st, Configs: st, Workspaces: st, Guardrails: hooks})
	hooks.Mount(g)
	e.srv = httptest.NewServer(g)
	t.Cleanup(func() { e.srv.Close(); g.Close() })
	return e
}

// do calls the gateway with key and an optional x-gateway-config.
func (e *guardEnv) do(key, method, path, body, config string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+"/v1"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", key)
	req.Header.Set("Authorization", "Bearer sk-test")
	if config != "" {
		req.Header.Set("x-gateway-config", config)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func (e *guardEnv) guardrail(key, name string) string {
	e.t.Helper()
	code, m := e.do(key, "POST", "/guardrails", `{"name":"`+name+`","checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":true}}`, "")
	if code != 200 {
		e.t.Fatalf("create guardrail: %d %v", code, m)
	}
	return m["slug"].(string)
}

// wantInvalid checks a 400 naming param, in a message that names the
// id and not whose it is.
func wantInvalid(t *testing.T, what string, code int, m map[string]any, errCode, param string) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if code != 400 || e["code"] != errCode || e["param"] != param {
		t.Errorf("%s: %d %v, want 400 %s naming %s", what, code, m, errCode, param)
	}
}

// TestKeyGuardrailDefaults: the admin routes check the guardrail ids of a
// key's defaults against the key's workspace, the same 400 for an
// unknown id and another workspace's, and a key created with them has
// its requests checked.
func TestKeyGuardrailDefaults(t *testing.T) {
	e := newGuardEnv(t)
	mine, theirs := e.guardrail(guardWS1, "mine"), e.guardrail(guardWS2, "theirs")
	create := func(ids string) (int, map[string]any) {
		return e.do(guardWS1, "POST", "/api-keys/workspace/service",
			`{"name":"k","scopes":["completions.write","api_keys.read","api_keys.write"],"defaults":{"input_guardrails":[`+ids+`]}}`, "")
	}
	for _, id := range []string{theirs, "no-such-guardrail"} {
		code, m := create(`"` + id + `"`)
		wantInvalid(t, id, code, m, "invalid_parameter", "defaults.input_guardrails[0]")
		if s := mustJSONText(m); strings.Contains(s, "ws-2") {
			t.Errorf("the error tells whose the guardrail is: %s", s)
		}
	}
	code, m := create(`"` + mine + `"`)
	if code != 200 {
		t.Fatalf("create: %d %v", code, m)
	}
	key, kid := m["key"].(string), m["id"].(string)
	_, got := e.do(guardWS1, "GET", "/api-keys/"+kid, "", "")
	if d, _ := got["defaults"].(map[string]any); mustJSONText(d["input_guardrails"]) != `["`+mine+`"]` {
		t.Errorf("read back defaults %v", got["defaults"])
	}
	config := `{"provider":"openai","custom_host":"` + e.provider.URL + `"}`
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"my password"}]}`
	if code, m := e.do(key, "POST", "/chat/completions", chat, config); code != 446 {
		t.Errorf("the key's request: %d %v, want 446", code, m)
	}
	// A key may not drop its own guardrails.
	if code, _ := e.do(key, "PUT", "/api-keys/"+kid, `{"defaults":{"input_guardrails":[]}}`, ""); code != 403 {
		t.Errorf("a key clearing its own guardrails: %d, want 403", code)
	}
	// Another key may; then the request passes.
	if code, m := e.do(guardWS1, "PUT", "/api-keys/"+kid, `{"defaults":{"input_guardrails":[]}}`, ""); code != 200 {
		t.Fatalf("clear: %d %v", code, m)
	}
	if code, m := e.do(key, "POST", "/chat/completions", chat, config); code != 200 {
		t.Errorf("after clearing: %d %v, want 200", code, m)
	}
}

// TestWorkspaceGuardrailDefaults: the same for a workspace's defaults,
// applied to every key of the workspace.
func TestWorkspaceGuardrailDefaults(t *testing.T) {
	e := newGuardEnv(t)
	mine, theirs := e.guardrail(guardWS1, "mine"), e.guardrail(guardWS2, "theirs")
	for _, id := range []string{theirs, "no-such-guardrail"} {
		code, m := e.do(guardOrg, "POST", "/admin/workspaces", `{"slug":"ws-1","name":"one","defaults":{"output_guardrails":["`+id+`"]}}`, "")
		wantInvalid(t, id, code, m, "invalid_parameter", "defaults.output_guardrails[0]")
	}
	if code, m := e.do(guardOrg, "POST", "/admin/workspaces", `{"slug":"ws-1","name":"one","defaults":{"metadata":{"team":"a"}}}`, ""); code != 200 {
		t.Fatalf("create workspace: %d %v", code, m)
	}
	if code, m := e.do(guardOrg, "PUT", "/admin/workspaces/ws-1", `{"defaults":{"input_guardrails":["`+theirs+`"]}}`, ""); code != 400 {
		t.Errorf("update with another workspace's: %d %v", code, m)
	}
	if code, m := e.do(guardOrg, "PUT", "/admin/workspaces/ws-1", `{"defaults":{"input_guardrails":["`+mine+`"]}}`, ""); code != 200 {
		t.Fatalf("update: %d %v", code, m)
	}
	_, got := e.do(guardOrg, "GET", "/admin/workspaces/ws-1", "", "")
	d, _ := got["defaults"].(map[string]any)
	if mustJSONText(d["input_guardrails"]) != `["`+mine+`"]` || mustJSONText(d["metadata"]) != `{"team":"a"}` {
		t.Errorf("read back defaults %v", d)
	}
	config := `{"provider":"openai","custom_host":"` + e.provider.URL + `"}`
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"my password"}]}`
	if code, m := e.do(guardWS1, "POST", "/chat/completions", chat, config); code != 446 {
		t.Errorf("a request of the workspace: %d %v, want 446", code, m)
	}
	if code, m := e.do(guardWS2, "POST", "/chat/completions", chat, config); code != 200 {
		t.Errorf("another workspace's request: %d %v, want 200", code, m)
	}
}

// TestConfigGuardrailIDs: a saved config naming a guardrail its
// workspace cannot attach is 400 invalid_config naming the path, the same
// for an unknown id and another workspace's.
func TestConfigGuardrailIDs(t *testing.T) {
	e := newGuardEnv(t)
	mine, theirs := e.guardrail(guardWS1, "mine"), e.guardrail(guardWS2, "theirs")
	save := func(method, path, config string) (int, map[string]any) {
		return e.do(guardWS1, method, path, `{"name":"c","config":`+config+`}`, "")
	}
	for _, id := range []string{theirs, "no-such-guardrail"} {
		code, m := save("POST", "/configs", `{"provider":"openai","targets":[{"provider":"openai","output_guardrails":["`+id+`"]}]}`)
		wantInvalid(t, id, code, m, "invalid_config", "config")
		if msg, _ := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "targets[0].output_guardrails[0]") {
			t.Errorf("%s: message %q names no path", id, msg)
		}
	}
	code, m := save("POST", "/configs", `{"provider":"openai","input_guardrails":["`+mine+`"]}`)
	if code != 200 {
		t.Fatalf("save: %d %v", code, m)
	}
	slug := m["data"].(map[string]any)["slug"].(string)
	code, m = save("PUT", "/configs/"+slug, `{"provider":"openai","before_request_hooks":["`+theirs+`"]}`)
	wantInvalid(t, "update", code, m, "invalid_config", "config")
}

func mustJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
