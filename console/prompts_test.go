package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/prompt"
)

// TestPromptPages: the prompts list, a prompt's page with its versions
// and labels, and the render preview, for the key's workspace only.
func TestPromptPages(t *testing.T) {
	e := newEnv(t, Options{})
	prompt.Mount(e.gw, prompt.Options{Store: memstore.New()})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/collections", `{"name":"Support"}`},
		{"POST", "/prompts", `{"name":"Greeter","collection_id":"support","model":"gpt-4o-mini","parameters":{"temperature":0.2},
			"string":"[{\"role\":\"user\",\"content\":\"Hello {{name}}\"}]"}`},
		{"PUT", "/prompts/greeter", `{"patch":true,"string":"[{\"role\":\"user\",\"content\":\"Hi {{name}}\"}]","version_description":"shorter"}`},
		{"PUT", "/prompts/greeter/versions/2", `{"label_id":"staging"}`},
	} {
		status, body := e.api(ws1Key, c.method, c.path, c.body)
		if status != 200 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, status, body)
		}
	}
	b := e.signedIn(ws1Key)
	list := b.get("/console/prompts")
	if list.status != 200 || !strings.Contains(list.body, ">greeter</a>") || !strings.Contains(list.body, "gpt-4o-mini") {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	page := b.get("/console/prompts/greeter")
	for _, want := range []string{"version 1 is the default", "Hello {{name}}", "shorter", "staging", "&#34;temperature&#34;: 0.2"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the prompt's page lacks %q:\n%s", want, page.body)
		}
	}
	preview := b.post("/console/prompts/greeter", "/console/prompts/greeter", url.Values{"variables": {`{"name":"Ada \"the\" first"}`}})
	if preview.status != 200 || !strings.Contains(preview.body, `Hello Ada \&#34;the\&#34; first`) {
		t.Fatalf("preview: %d %s", preview.status, preview.body)
	}
	missing := b.post("/console/prompts/greeter", "/console/prompts/greeter", url.Values{"variables": {`{}`}})
	if missing.status != http.StatusBadRequest || !strings.Contains(missing.body, `&#34;name&#34;`) {
		t.Fatalf("preview without the variable: %d %s", missing.status, missing.body)
	}
	// Another workspace's prompt is not found.
	if p := e.signedIn(ws2Key).get("/console/prompts/greeter"); p.status != http.StatusNotFound {
		t.Fatalf("ws-2 reads ws-1's prompt: %d", p.status)
	}
}
