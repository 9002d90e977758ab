package guardrail_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// createGuardrail creates a guardrail through the routes with key and
// returns its slug.
func (e *env) createGuardrail(key, body string) string {
	e.t.Helper()
	code, created := e.api(key, "POST", "/guardrails", body)
	if code != 200 {
		e.t.Fatalf("create: %d %v", code, created)
	}
	return created["slug"].(string)
}

// logOnly is a guardrail that fails on "password" without denying.
func logOnly(name string) string {
	return `{"name":"` + name + `","checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":false}}`
}

// ids returns the guardrail ids of a phase's hook results.
func ids(l []any) []string {
	var out []string
	for _, r := range l {
		id, _ := r.(map[string]any)["id"].(string)
		out = append(out, id)
	}
	return out
}

// TestKeyDefaults: the guardrails of a key's defaults run on each of its
// requests, whatever routes them, and not on another key's.
func TestKeyDefaults(t *testing.T) {
	e := newEnv(t, nil)
	deny := e.createGuardrail(keyWS1, `{"name":"no passwords","checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":true}}`)
	out := e.createGuardrail(keyWS1, `{"name":"no forbidden","checks":[{"id":"default.contains","parameters":{"words":["forbidden"],"operator":"none"}}],"actions":{"deny":true}}`)
	e.store.AddAPIKey(gateway.APIKey{ID: "kd", Digest: gateway.HashAPIKey("gw-defaults"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin,
		InputGuardrails: []string{deny}, OutputGuardrails: []string{out}})

	resp := e.chat("gw-defaults", e.config(""), "my password", false)
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	if l := hookResults(t, decodeBody(t, resp), "before_request_hooks"); len(l) != 1 {
		t.Errorf("before_request_hooks = %v", l)
	}
	resp = e.chat("gw-defaults", e.config(""), "say forbidden", false)
	if resp.StatusCode != 446 {
		t.Fatalf("output default: status %d, want 446", resp.StatusCode)
	}
	if e.provider.Count("/v1/chat/completions") != 1 {
		t.Error("the input default did not keep the first request from the provider")
	}
	// Another key of the workspace has no defaults.
	resp = e.chat(keyWS1, e.config(""), "my password", false)
	if resp.StatusCode != 200 {
		t.Fatalf("key without defaults: status %d", resp.StatusCode)
	}
	if m := decodeBody(t, resp); m["hook_results"] != nil {
		t.Errorf("hook_results on a request without guardrails: %v", m["hook_results"])
	}
	// A config attaching the key's guardrail again runs it once.
	resp = e.chat("gw-defaults", e.config(`,"input_guardrails":["`+deny+`"],"output_guardrails":["`+out+`"]`), "hello", false)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	if l := hookResults(t, m, "before_request_hooks"); len(l) != 1 {
		t.Errorf("before_request_hooks = %v: want the guardrail once", l)
	}
	if l := hookResults(t, m, "after_request_hooks"); len(l) != 1 {
		t.Errorf("after_request_hooks = %v: want the guardrail once", l)
	}
}

// withWorkspaces makes the env's store the gateway's Options.Workspaces.
func withWorkspaces(o *gateway.Options) { o.Workspaces = o.Keys.(gateway.WorkspaceStore) }

// TestWorkspaceDefaultsOrder: the workspace's defaults run first, then
// the key's, then the config's top level, then its target's, a guardrail
// attached twice to a phase once, at its first place.
func TestWorkspaceDefaultsOrder(t *testing.T) {
	e := newEnvWith(t, nil, withWorkspaces)
	ws := e.createGuardrail(keyWS1, logOnly("ws"))
	key := e.createGuardrail(keyWS1, logOnly("key"))
	top := e.createGuardrail(keyWS1, logOnly("top"))
	target := e.createGuardrail(keyWS1, logOnly("target"))
	if err := e.store.CreateWorkspace(context.Background(), &gateway.Workspace{ID: "ws-1", Name: "one", InputGuardrails: []string{ws}}); err != nil {
		t.Fatal(err)
	}
	e.store.AddAPIKey(gateway.APIKey{ID: "kd", Digest: gateway.HashAPIKey("gw-defaults"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin,
		InputGuardrails: []string{key, ws}})
	config := `{"input_guardrails":["` + top + `","` + key + `"],"targets":[` +
		e.config(`,"input_guardrails":["`+target+`","`+ws+`"]`) + `]}`
	resp := e.chat("gw-defaults", config, "my password", false)
	if resp.StatusCode != 246 {
		t.Fatalf("status %d, want 246", resp.StatusCode)
	}
	got := ids(hookResults(t, decodeBody(t, resp), "before_request_hooks"))
	want := []string{ws, key, top, target}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("before_request_hooks ran %q, want %q", got, want)
	}
	// Another workspace's key is not held by ws-1's defaults.
	resp = e.chat(keyWS2, e.config(""), "my password", false)
	if resp.StatusCode != 200 {
		t.Errorf("ws-2: status %d, want 200", resp.StatusCode)
	}
}

// TestDefaultsUnknownGuardrail: a default naming a guardrail that is not
// there (deleted since, or another workspace's) refuses the key's
// requests, naming the default, rather than letting them past it.
func TestDefaultsUnknownGuardrail(t *testing.T) {
	e := newEnvWith(t, nil, withWorkspaces)
	other := e.createGuardrail(keyWS2, logOnly("theirs"))
	e.store.AddAPIKey(gateway.APIKey{ID: "kd", Digest: gateway.HashAPIKey("gw-defaults"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin,
		OutputGuardrails: []string{other}})
	resp := e.chat("gw-defaults", e.config(""), "hello", false)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	m := decodeBody(t, resp)["error"].(map[string]any)
	if m["code"] != "invalid_config" || m["param"] != "x-gateway-api-key" || !strings.Contains(m["message"].(string), "defaults.output_guardrails[0]") {
		t.Errorf("error = %v", m)
	}
	if e.provider.Count("/v1/chat/completions") != 0 {
		t.Error("the provider was called")
	}
}

// TestDefaultsWithoutHooks: a key whose defaults attach guardrails, on a
// gateway that checks none, is refused rather than let past them.
func TestDefaultsWithoutHooks(t *testing.T) {
	e := newEnvWith(t, nil, func(o *gateway.Options) { o.Hooks = nil })
	e.store.AddAPIKey(gateway.APIKey{ID: "kd", Digest: gateway.HashAPIKey("gw-defaults"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin,
		InputGuardrails: []string{"anything"}})
	resp := e.chat("gw-defaults", e.config(""), "hello", false)
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", resp.StatusCode)
	}
	io.Copy(io.Discard, resp.Body)
	if e.provider.Count("/v1/chat/completions") != 0 {
		t.Error("the provider was called")
	}
}
