package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/admin"
)

// keyRow returns the row of the API keys page p that shows key id.
func keyRow(t *testing.T, p page, id string) string {
	t.Helper()
	for _, r := range strings.Split(p.body, "<tr>") {
		if strings.Contains(r, `<span class="mono nowrap">`+id+`</span>`) {
			return r
		}
	}
	t.Fatalf("no row of key %s in\n%s", id, p.body)
	return ""
}

// TestAPIKeysSessionKey: the API keys page does not offer to revoke the
// key the session is signed in with, says which it is, and refuses to
// revoke it when asked anyway; other keys are revoked as before, and an
// organisation key's session may revoke the workspace's key.
func TestAPIKeysSessionKey(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	list := b.get("/console/api-keys")
	self, member := keyRow(t, list, "key-ws1"), keyRow(t, list, "key-member")
	if strings.Contains(self, "/revoke") || !strings.Contains(self, "signed in with it") || !strings.Contains(self, "/rotate") {
		t.Errorf("the session's key: want rotate, no revoke, and a note\n%s", self)
	}
	if !strings.Contains(member, `href="/console/api-keys/key-member/revoke"`) || strings.Contains(member, "signed in with it") {
		t.Errorf("another key: want a revoke link\n%s", member)
	}
	if p := b.get("/console/api-keys/key-ws1/revoke"); p.status != http.StatusConflict || !strings.Contains(p.body, "You are signed in with this key") ||
		strings.Contains(p.body, `class="danger"`) {
		t.Errorf("confirming the session key's revocation: %d, want 409 and no button\n%s", p.status, p.body)
	}
	p := b.post("/console/api-keys", "/console/api-keys/key-ws1/revoke", nil)
	if p.status != http.StatusConflict || !strings.Contains(p.body, "You are signed in with this key") {
		t.Errorf("revoking the session's key anyway: %d, want 409\n%s", p.status, p.body)
	}
	if st, _ := e.api(ws1Key, "GET", "/api-keys/key-ws1", ""); st != http.StatusOK {
		t.Fatalf("the session's key after the refusal: %d, want it still working", st)
	}
	if p := b.get("/console/api-keys"); p.status != http.StatusOK {
		t.Errorf("the session after the refusal: %d", p.status)
	}
	if p := b.post("/console/api-keys", "/console/api-keys/key-member/revoke", nil); p.status != http.StatusSeeOther {
		t.Errorf("revoking another key: %d, want 303", p.status)
	}
	org := e.signedIn(orgKey)
	if p := org.post("/console/api-keys", "/console/api-keys/key-ws1/revoke", nil); p.status != http.StatusSeeOther {
		t.Errorf("the organisation revoking ws-1's key: %d, want 303", p.status)
	}
}

// TestCreatedKeyCopyButton: the page of a new key has a copy button,
// shown by the console's script (a file of its own: the CSP allows no
// inline script), which is served as JavaScript.
func TestCreatedKeyCopyButton(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	p := b.post("/console/api-keys", "/console/api-keys", url.Values{"name": {"ci"}, "type": {"workspace"},
		"sub_type": {"service"}, "scope": {"completions.write"}})
	if p.status != http.StatusOK || !newKey.MatchString(p.body) {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `<button type="button" id="copy-secret" data-copy="secret" data-status="copy-status" hidden>Copy key</button>`) ||
		!strings.Contains(p.body, `id="copy-status"`) || !strings.Contains(p.body, `<script src="/console/static/console.js" defer></script>`) {
		t.Errorf("created page: no copy button and script\n%s", p.body)
	}
	js := b.get("/console/static/console.js")
	if js.status != http.StatusOK || !strings.HasPrefix(js.header.Get("Content-Type"), "text/javascript") ||
		!strings.Contains(js.body, "data-copy") {
		t.Errorf("console.js: %d %q", js.status, js.header.Get("Content-Type"))
	}
}

// TestConfigFileKeysNamedAndDated: keys of the operator's config file
// show a name and a creation date, as keys created over HTTP do.
func TestConfigFileKeysNamedAndDated(t *testing.T) {
	e := newEnv(t, Options{})
	f, err := admin.Decode(strings.NewReader(`{"api_keys":[{"id":"key-file","key":"gw-console-file","workspace_id":"ws-1"},
		{"id":"key-file-named","name":"deploy bot","key":"gw-console-file-2","workspace_id":"ws-1"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Apply(t.Context(), f, e.store); err != nil {
		t.Fatal(err)
	}
	list := e.signedIn(ws1Key).get("/console/api-keys")
	date := regexp.MustCompile(`<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</td>`)
	for id, name := range map[string]string{"key-file": "key-file", "key-file-named": "deploy bot"} {
		r := keyRow(t, list, id)
		if !strings.Contains(r, "<td>"+name+"</td>") || !date.MatchString(r) {
			t.Errorf("key %s of the config file: want the name %q and a date\n%s", id, name, r)
		}
	}
}
