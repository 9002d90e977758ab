package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/gatewaytest"
)

// TestGuardrailsOverHTTP drives the guardrails product through the
// server: the /guardrails routes (audited), a stored guardrail that
// refuses a request with a 446, and an inline one that redacts an email
// address before the provider sees it.
func TestGuardrailsOverHTTP(t *testing.T) {
	fake := gatewaytest.NewServer()
	t.Cleanup(fake.Close)
	host := strings.TrimPrefix(strings.TrimSuffix(fake.URL, "/v1"), "http://")
	cfgFile := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(cfgFile, []byte(`{"custom_hosts":{"allow":["`+host+`"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEWAY_API_KEY", "gw-guardrails-admin")
	base, _, _, _ := runServer(t, "-config", cfgFile)
	admin := map[string]string{"x-gateway-api-key": "gw-guardrails-admin", "Content-Type": "application/json"}

	res := call(t, "POST", base+"/v1/guardrails", `{"name":"no secrets","checks":[{"id":"default.regexMatch","parameters":{"rule":"(?i)secret","not":true}}],"actions":{"deny":true}}`, admin)
	body := readAll(t, res)
	var created struct{ ID, Slug string }
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &created) != nil || created.Slug == "" {
		t.Fatalf("create: %d %s", res.StatusCode, body)
	}
	if res := call(t, "GET", base+"/v1/guardrails/"+created.Slug, "", admin); res.StatusCode != 200 {
		t.Errorf("get: %d %s", res.StatusCode, readAll(t, res))
	} else {
		readAll(t, res)
	}

	chat := func(config, content string) *http.Response {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []map[string]string{{"role": "user", "content": content}}})
		return call(t, "POST", base+"/v1/chat/completions", string(b), map[string]string{
			"x-gateway-api-key": "gw-guardrails-admin", "Content-Type": "application/json", "Authorization": "Bearer sk-fake",
			"x-gateway-config": `{"provider":"openai","custom_host":"` + fake.URL + `"` + config + `}`})
	}
	res = chat(`,"input_guardrails":["`+created.Slug+`"]`, "the secret is 42")
	body = readAll(t, res)
	if res.StatusCode != 446 || errorCode(t, body) != "guardrail_denied" || !strings.Contains(body, `"hook_results"`) {
		t.Errorf("denied request: %d %s", res.StatusCode, body)
	}
	if n := fake.Count("/v1/chat/completions"); n != 0 {
		t.Errorf("the provider saw %d requests", n)
	}

	res = chat(`,"input_guardrails":[{"checks":[{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS"]}}]}]`, "write to bob@example.org")
	if body := readAll(t, res); res.StatusCode != 200 || !strings.Contains(body, `"hook_results"`) {
		t.Errorf("redacted request: %d %s", res.StatusCode, body)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || strings.Contains(string(reqs[0].Body), "bob@example.org") || !strings.Contains(string(reqs[0].Body), "[EMAIL_ADDRESS]") {
		t.Errorf("the provider got %d requests: %v", len(reqs), reqs)
	}

	if res := call(t, "PUT", base+"/v1/guardrails/"+created.ID, `{"name":"renamed"}`, admin); res.StatusCode != 200 {
		t.Errorf("update: %d %s", res.StatusCode, readAll(t, res))
	} else {
		readAll(t, res)
	}
	res = call(t, "GET", base+"/v1/guardrails", "", admin)
	if body := readAll(t, res); res.StatusCode != 200 || !strings.Contains(body, `"renamed"`) || !strings.Contains(body, `"total":1`) {
		t.Errorf("list: %d %s", res.StatusCode, body)
	}
	if res := call(t, "DELETE", base+"/v1/guardrails/"+created.ID, "", admin); res.StatusCode != 200 {
		t.Errorf("delete: %d %s", res.StatusCode, readAll(t, res))
	} else {
		readAll(t, res)
	}
	res = call(t, "GET", base+"/v1/audit-logs", "", admin)
	if body := readAll(t, res); strings.Count(body, `"guardrails.`) < 3 {
		t.Errorf("audit log: %s, want the create, update and delete of guardrails", body)
	}
}
