package console

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// TestDefaultGuardrails: the API keys and workspaces pages show the
// guardrails keys and workspaces attach by default, each a link to its
// page, and a request's log page shows the verdicts of its key's default
// guardrail.
func TestDefaultGuardrails(t *testing.T) {
	e := newEnv(t, Options{})
	if err := e.store.CreateWorkspace(t.Context(), &gateway.Workspace{ID: "ws-1", Name: "Team one"}); err != nil {
		t.Fatal(err)
	}
	guardrail := func(name, rule string) (string, string) {
		t.Helper()
		st, body := e.api(ws1Key, "POST", "/guardrails", `{"name":"`+name+`","checks":[{"id":"default.regexMatch","parameters":{"rule":"`+rule+`","not":true}}],"actions":{"deny":false}}`)
		var g struct{ ID, Slug string }
		if st != 200 || json.Unmarshal([]byte(body), &g) != nil {
			t.Fatalf("create guardrail: %d %s", st, body)
		}
		return g.ID, g.Slug
	}
	in, inSlug := guardrail("No passwords", "password")
	out, outSlug := guardrail("No secrets", "secret")
	if st, body := e.api(orgKey, "PUT", "/api-keys/key-ws1", `{"defaults":{"input_guardrails":["`+in+`"]}}`); st != 200 {
		t.Fatalf("key defaults: %d %s", st, body)
	}
	if st, body := e.api(orgKey, "PUT", "/admin/workspaces/ws-1", `{"defaults":{"output_guardrails":["`+out+`"]}}`); st != 200 {
		t.Fatalf("workspace defaults: %d %s", st, body)
	}

	b := e.signedIn(ws1Key)
	keys := b.get("/console/api-keys")
	if !strings.Contains(keys.body, ">Default guardrails</th>") {
		t.Error("API keys page: no default guardrails column")
	}
	link := func(id string) string {
		return `<a class="mono nowrap" href="/console/guardrails/` + id + `">` + id + `</a>`
	}
	if r := keyRow(t, keys, "key-ws1"); !strings.Contains(r, "input: "+link(in)) {
		t.Errorf("key-ws1's row: no input guardrail %s\n%s", in, r)
	}
	if r := keyRow(t, keys, "key-member"); !strings.Contains(r, "<td>none</td>") {
		t.Errorf("key-member's row: want none\n%s", r)
	}
	ws := e.signedIn(orgKey).get("/console/workspaces")
	if ws.status != http.StatusOK || !strings.Contains(ws.body, "Team one") || !strings.Contains(ws.body, "output: "+link(out)) {
		t.Errorf("workspaces page: %d, want ws-1 with its output guardrail\n%s", ws.status, ws.body)
	}
	// Workspaces are the organisation's: a workspace key sees the API's 403.
	if p := b.get("/console/workspaces"); p.status != http.StatusForbidden || !strings.Contains(p.body, "only an organisation key") {
		t.Errorf("workspaces page for a workspace key: %d", p.status)
	}

	status, logID := e.chatLogged(ws1Key, "my password", gateway.HeaderVirtualKey, "vk-1")
	if status != 246 {
		t.Fatalf("a request failing its key's default guardrail: %d, want 246", status)
	}
	p := b.get("/console/logs/" + logID)
	for _, want := range []string{"Guardrail verdicts", "<td>input</td><td class=\"mono\">" + inSlug, "<td>output</td><td class=\"mono\">" + outSlug, "failed"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("log page: no %s\n%s", want, p.body)
		}
	}
}

// chatLogged sends a chat completion of one user message, content, as
// key with the header pairs (name, value, …), waits for its log, and
// returns the status and the id of the newest log key may read.
func (e *env) chatLogged(key, content string, header ...string) (int, string) {
	e.t.Helper()
	before := e.logCount()
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]string{"role": "user", "content": content}}})
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.HeaderAPIKey, key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	e.waitLogs(before + 1)
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	_, logs := e.api(key, "GET", "/logs", "")
	if json.Unmarshal([]byte(logs), &list) != nil || len(list.Data) == 0 {
		e.t.Fatalf("logs: %s", logs)
	}
	return res.StatusCode, list.Data[0].ID
}
