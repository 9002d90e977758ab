package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// TestCatalogPages: the catalogue's pages list the integrations a key
// may see (masked on an integration's page, with its models and grants),
// the providers of its workspace and the models it may use; another
// workspace sees none of ws-1's, and no page shows a secret.
func TestCatalogPages(t *testing.T) {
	e := newEnv(t, Options{})
	if err := e.store.CreateWorkspace(t.Context(), &gateway.Workspace{ID: "ws-1", Name: "Team one"}); err != nil {
		t.Fatal(err)
	}
	const secret = "sk-integration-secret-0123456789"
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/integrations", `{"name":"OpenAI Prod","slug":"openai-prod","ai_provider_id":"openai","key":"` + secret +
			`","description":"the production account","configurations":{"custom_host":"` + e.up.URL + `"}}`},
		{"PUT", "/integrations/openai-prod/workspaces", `{"workspaces":[{"id":"ws-1","enabled":true}]}`},
		{"PUT", "/integrations/openai-prod/models", `{"allow_all_models":false,"models":[{"slug":"gpt-4o","enabled":true},{"slug":"my-ft","enabled":true,"is_custom":true}]}`},
	} {
		if st, body := e.api(orgKey, c.method, c.path, c.body); st != http.StatusOK {
			t.Fatalf("%s %s: %d %s", c.method, c.path, st, body)
		}
	}
	org, ws1, ws2 := e.signedIn(orgKey), e.signedIn(ws1Key), e.signedIn(ws2Key)
	pages := map[*browser][]string{org: {"/console/integrations", "/console/integrations/openai-prod", "/console/providers"},
		ws1: {"/console/integrations", "/console/providers", "/console/models"}, ws2: {"/console/integrations", "/console/providers", "/console/models"}}
	body := map[*browser]map[string]string{org: {}, ws1: {}, ws2: {}}
	for b, paths := range pages {
		for _, path := range paths {
			p := b.get(path)
			if p.status != http.StatusOK {
				t.Errorf("GET %s: %d\n%s", path, p.status, p.body)
			}
			if strings.Contains(p.body, secret) || strings.Contains(p.body, "sk-upstream-secret") {
				t.Errorf("GET %s shows a secret", path)
			}
			if !strings.Contains(p.body, `<nav class="tabs" aria-label="Catalogue">`) || !strings.Contains(p.body, `aria-current="page">Catalogue</a>`) {
				t.Errorf("GET %s: not a catalogue page", path)
			}
			body[b][path] = p.body
		}
	}
	if l := body[org]["/console/integrations"]; !strings.Contains(l, `href="/console/integrations/openai-prod"`) || !strings.Contains(l, "the production account") {
		t.Errorf("the organisation's integrations: no openai-prod\n%s", l)
	}
	d := body[org]["/console/integrations/openai-prod"]
	for _, want := range []string{"sk*", `<td class="mono">ws-1</td><td>yes</td>`, "@openai-prod", `<td class="mono">gpt-4o</td>`,
		`<td class="mono">my-ft</td><td>my-ft</td><td>yes</td><td>custom</td>`, "those listed below", e.up.URL} {
		if !strings.Contains(d, want) {
			t.Errorf("the integration's page: no %s\n%s", want, d)
		}
	}
	if !strings.Contains(body[ws1]["/console/integrations"], "openai-prod") || strings.Contains(body[ws2]["/console/integrations"], "openai-prod") {
		t.Error("integrations: want openai-prod for ws-1, to which it is granted, and not for ws-2")
	}
	if p := body[ws1]["/console/providers"]; !strings.Contains(p, "@openai-prod") || !strings.Contains(p, "@vk-1") || strings.Contains(p, "@vk-2") {
		t.Errorf("ws-1's providers: want @openai-prod and @vk-1 only\n%s", p)
	}
	if p := body[ws2]["/console/providers"]; strings.Contains(p, "@openai-prod") || !strings.Contains(p, "@vk-2") {
		t.Errorf("ws-2's providers: want @vk-2 only\n%s", p)
	}
	if m := body[ws1]["/console/models"]; !strings.Contains(m, `<td class="mono">@openai-prod/gpt-4o</td>`) || !strings.Contains(m, "@openai-prod/my-ft") {
		t.Errorf("ws-1's models: want @openai-prod/gpt-4o and @openai-prod/my-ft\n%s", m)
	}
	if m := body[ws2]["/console/models"]; strings.Contains(m, "@openai-prod") {
		t.Errorf("ws-2's models: want none of openai-prod's")
	}
	// An integration ws-2 may not see is the API's 404.
	if p := ws2.get("/console/integrations/openai-prod"); p.status != http.StatusNotFound {
		t.Errorf("ws-2 reading openai-prod: %d, want 404", p.status)
	}
}
