package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// TestGuardrailsPages: the console lists a workspace's guardrails, shows
// one's checks, and shows the verdicts of a request a guardrail refused
// on that request's log page.
func TestGuardrailsPages(t *testing.T) {
	e := newEnv(t, Options{})
	st, body := e.api(ws1Key, "POST", "/guardrails", `{"name":"No passwords","checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":true}}`)
	var created struct{ ID, Slug string }
	if st != 200 || json.Unmarshal([]byte(body), &created) != nil {
		t.Fatalf("create: %d %s", st, body)
	}
	b := e.signedIn(ws1Key)
	if p := b.get("/console/guardrails"); p.status != 200 || !strings.Contains(p.body, created.Slug) || !strings.Contains(p.body, "No passwords") {
		t.Errorf("list: %d %s", p.status, p.body)
	}
	if p := b.get("/console/guardrails/" + created.ID); p.status != 200 || !strings.Contains(p.body, "default.regexMatch") {
		t.Errorf("detail: %d %s", p.status, p.body)
	}
	if p := e.signedIn(ws2Key).get("/console/guardrails/" + created.ID); p.status != http.StatusNotFound {
		t.Errorf("another workspace's guardrail: %d", p.status)
	}

	status, logID := e.chatLogged(ws1Key, "my password", gateway.HeaderConfig, `{"virtual_key":"vk-1","input_guardrails":["`+created.Slug+`"]}`)
	if status != 446 {
		t.Fatalf("status %d, want 446", status)
	}
	p := b.get("/console/logs/" + logID)
	if p.status != 200 || !strings.Contains(p.body, "Guardrail verdicts") || !strings.Contains(p.body, created.Slug) || !strings.Contains(p.body, "denied") {
		t.Errorf("log page: %d %s", p.status, p.body)
	}
}
