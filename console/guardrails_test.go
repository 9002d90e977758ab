package console

import (
	"encoding/json"
	"io"
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

	before := e.logCount()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"my password"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.HeaderAPIKey, ws1Key)
	req.Header.Set(gateway.HeaderConfig, `{"virtual_key":"vk-1","input_guardrails":["`+created.Slug+`"]}`)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 446 {
		t.Fatalf("status %d, want 446", res.StatusCode)
	}
	e.waitLogs(before + 1)
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	_, body = e.api(ws1Key, "GET", "/logs", "")
	if json.Unmarshal([]byte(body), &list) != nil || len(list.Data) == 0 {
		t.Fatalf("logs: %s", body)
	}
	p := b.get("/console/logs/" + list.Data[0].ID)
	if p.status != 200 || !strings.Contains(p.body, "Guardrail verdicts") || !strings.Contains(p.body, created.Slug) || !strings.Contains(p.body, "denied") {
		t.Errorf("log page: %d %s", p.status, p.body)
	}
}
