package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// newULKeyEnv is the core harness with the usage-limits store and a
// provider whose answers report 40 tokens each.
func newULKeyEnv(t *testing.T) *coreEnv {
	t.Helper()
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":20,"total_tokens":40}}`)
	})
	return newCoreEnv(t, up, func(o *envOptions) { withBudgets(o) })
}

// call sends a request with a gateway key and returns the status and body.
func (e *coreEnv) call(key, method, path, body string, headers ...string) (int, []byte) {
	e.t.Helper()
	res := e.do(method, path, strings.NewReader(body), append([]string{gateway.HeaderAPIKey + ": " + key}, headers...)...)
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, b
}

// TestKeyUsageLimits: the usage_limits an API key is created or updated
// with through the routes are a budget of that key, in force at once.
func TestKeyUsageLimits(t *testing.T) {
	e := newULKeyEnv(t)
	code, b := e.call(coreAdminKey, "POST", "/v1/api-keys/workspace/service",
		`{"name":"budgeted","scopes":["completions.write"],"usage_limits":{"type":"tokens","credit_limit":50,"alert_threshold":30,"periodic_reset":"monthly"}}`)
	var k struct{ ID, Key string }
	if code != 200 || json.Unmarshal(b, &k) != nil {
		t.Fatalf("create: %d %s", code, b)
	}
	complete := func(key string) (int, []byte) {
		return e.call(key, "POST", "/v1/chat/completions", `{"model":"gpt-4o","max_tokens":1,"messages":[]}`,
			gateway.HeaderVirtualKey+": vk-up", "Content-Type: application/json")
	}
	for _, want := range []int{200, 200, 412} {
		code, b := complete(k.Key)
		if code != want {
			t.Fatalf("budgeted key: %d %s, want %d", code, b, want)
		}
		if code == 412 && !strings.Contains(string(b), "API key") {
			t.Fatalf("412 does not name the API key: %s", b)
		}
	}
	if code, _ := complete(coreKey); code != 200 {
		t.Fatalf("another key: %d", code)
	}
	// Raised through PUT /api-keys/{id}: in force at once.
	if code, b := e.call(coreAdminKey, "PUT", "/v1/api-keys/"+k.ID, `{"usage_limits":{"type":"tokens","credit_limit":500}}`); code != 200 {
		t.Fatalf("raise: %d %s", code, b)
	}
	if code, b := complete(k.Key); code != 200 {
		t.Fatalf("after raising the key's limit: %d %s", code, b)
	}
}

// TestKeyUsageLimitsBadInput: every bad field of a key's usage_limits is a
// 400 naming it.
func TestKeyUsageLimitsBadInput(t *testing.T) {
	e := newULKeyEnv(t)
	for _, c := range []struct{ body, param string }{
		{`{"usage_limits":{"type":"tokens","credit_limit":-1}}`, "usage_limits.credit_limit"},
		{`{"usage_limits":{"type":"tokens"}}`, "usage_limits.credit_limit"},
		{`{"usage_limits":{"type":"tokens","credit_limit":5,"alert_threshold":6}}`, "usage_limits.alert_threshold"},
		{`{"usage_limits":{"type":"pennies","credit_limit":5}}`, "usage_limits.type"},
		{`{"usage_limits":{"credit_limit":5,"periodic_reset":"yearly"}}`, "usage_limits.periodic_reset"},
		{`{"usage_limits":{"credit_limit":5,"colour":1}}`, "usage_limits.colour"},
		{`{"usage_limits":[]}`, "usage_limits"},
	} {
		code, b := e.call(coreAdminKey, "POST", "/v1/api-keys/workspace/service", `{"name":"k","scopes":["completions.write"],`+c.body[1:])
		var eb struct{ Error struct{ Param *string } }
		json.Unmarshal(b, &eb)
		if code != 400 || eb.Error.Param == nil || *eb.Error.Param != c.param {
			t.Errorf("key %s: %d %s, want 400 naming %s", c.body, code, b, c.param)
		}
	}
}
