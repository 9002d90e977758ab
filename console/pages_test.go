package console

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

// pagePaths returns a path of every page a signed-in browser can see:
// the lists, a log's page, a config's page and the confirmations.
func pagePaths(t *testing.T, b *browser) []string {
	t.Helper()
	paths := []string{"/console/", "/console/logs", "/console/api-keys", "/console/virtual-keys", "/console/configs",
		"/console/policies", "/console/audit", "/console/api-keys/key-member/rotate", "/console/api-keys/key-member/revoke",
		"/console/virtual-keys/vk-1/rotate", "/console/virtual-keys/vk-1/delete",
		"/console/integrations", "/console/providers", "/console/models"}
	if m := regexp.MustCompile(`href="(/console/logs/[^"?]+)"`).FindStringSubmatch(b.get("/console/logs").body); m != nil {
		paths = append(paths, m[1])
	}
	if p := b.post("/console/configs", "/console/configs", url.Values{"name": {"Page config"},
		"config": {`{"targets":[{"virtual_key":"vk-1"}]}`}}); p.status != http.StatusSeeOther {
		t.Fatalf("create config: %d %s", p.status, p.body)
	}
	return append(paths, "/console/configs/page-config", "/console/configs/page-config/delete")
}

func TestPagesRender(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "trace", 3)
	// Full pages: 60 admin keys (every scope), 60 virtual keys.
	for i := range 60 {
		e.store.AddAPIKey(gateway.APIKey{ID: fmt.Sprintf("key-full-%02d-with-a-long-identifier", i), Name: "a key with a long name for the list",
			Digest: gateway.HashAPIKey(fmt.Sprint("gw-full-", i)), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
		e.store.AddVirtualKey(gateway.VirtualKey{Slug: fmt.Sprintf("vk-full-%02d", i), Provider: "openai", APIKey: "sk-full-provider-key",
			BaseURL: e.up.URL, WorkspaceID: "ws-1"})
	}
	b := e.signedIn(ws1Key)
	css, _ := fs.ReadFile(files, "static/console.css")
	for _, path := range pagePaths(t, b) {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, p.status)
		}
		t.Logf("GET %s: %d bytes of HTML, %d of CSS", path, len(p.body), len(css))
		if size := len(p.body) + len(css); size > 100<<10 {
			t.Errorf("GET %s: %d bytes of HTML and CSS, want under 100 KB", path, size)
		}
		if !strings.Contains(p.body, `<main id="main"`) || !strings.Contains(p.body, `lang="en"`) {
			t.Errorf("GET %s: not a console page", path)
		}
	}
}

// unlabelled matches a form control without an id, which no label can
// then name.
var control = regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`)

func TestControlsLabelled(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	for _, path := range append(pagePaths(t, b), "/console/signin") {
		body := b.get(path).body
		for _, c := range control.FindAllString(body, -1) {
			if strings.Contains(c, `type="hidden"`) || strings.Contains(c, `type="checkbox"`) {
				continue
			}
			m := regexp.MustCompile(`id="([^"]+)"`).FindStringSubmatch(c)
			if m == nil || !strings.Contains(body, `for="`+m[1]+`"`) {
				t.Errorf("GET %s: control without a label: %s", path, c)
			}
		}
	}
}

func TestLogsFilteredByTrace(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "trace", 4)
	b := e.signedIn(ws1Key)
	all := b.get("/console/logs")
	for _, id := range []string{"trace-0", "trace-1", "trace-2", "trace-3"} {
		if !strings.Contains(all.body, `href="/console/logs?trace_id=`+id+`"`) {
			t.Errorf("logs page: no link to trace %s", id)
		}
	}
	p := b.get("/console/logs?trace_id=trace-2")
	if strings.Count(p.body, `href="/console/logs/`) != 1 || !strings.Contains(p.body, "trace-2") {
		t.Fatalf("logs of trace-2: want one record\n%s", p.body)
	}
	detail := regexp.MustCompile(`href="(/console/logs/[^"]+)"`).FindStringSubmatch(p.body)[1]
	d := b.get(detail)
	if d.status != 200 || !strings.Contains(d.body, "trace-2") || !strings.Contains(d.body, "gpt-4o-mini") {
		t.Errorf("log page: %d\n%s", d.status, d.body)
	}
	// Metadata filters go to the API as a JSON object.
	p = b.get("/console/logs?meta_key=team&meta_value=t1")
	if n := strings.Count(p.body, `href="/console/logs/`); n != 2 {
		t.Errorf("logs of team t1: %d records, want 2", n)
	}
	// A bad filter is the API's 400, shown.
	if p := b.get("/console/logs?status_code=abc"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "status_code") {
		t.Errorf("bad status_code: %d", p.status)
	}
}

func TestLogsPaged(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "page", 55)
	b := e.signedIn(ws1Key)
	first := b.get("/console/logs")
	if n := strings.Count(first.body, `href="/console/logs/`); n != 50 {
		t.Fatalf("first page: %d records, want 50", n)
	}
	next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatal("no next page link")
	}
	second := b.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if n := strings.Count(second.body, `href="/console/logs/`); n != 5 || strings.Contains(second.body, `rel="next"`) {
		t.Errorf("second page: %d records, want the last 5 and no next link", n)
	}
}

func TestWorkspaceIsolation(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "one", 2)
	e.traffic(ws2Key, "vk-2", "two", 2)
	b := e.signedIn(ws1Key)
	logs := b.get("/console/logs")
	if !strings.Contains(logs.body, "one-0") || strings.Contains(logs.body, "two-0") {
		t.Error("ws-1's logs page: want ws-1's traces only")
	}
	// Another workspace's record is 404, as in the API.
	var ws2 struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_, body := e.api(ws2Key, "GET", "/logs", "")
	json.Unmarshal([]byte(body), &ws2)
	if p := b.get("/console/logs/" + ws2.Data[0].ID); p.status != http.StatusNotFound {
		t.Errorf("ws-2's log from ws-1: %d, want 404", p.status)
	}
	if p := b.get("/console/logs?workspace_id=ws-2"); p.status != http.StatusForbidden {
		t.Errorf("ws-1 asking for ws-2's logs: %d, want 403", p.status)
	}
	keys := b.get("/console/api-keys")
	if !strings.Contains(keys.body, "key-ws1") || strings.Contains(keys.body, "key-ws2") || strings.Contains(keys.body, "key-org") {
		t.Error("ws-1's API keys page: want ws-1's keys only")
	}
	vks := b.get("/console/virtual-keys")
	if !strings.Contains(vks.body, "vk-1") || strings.Contains(vks.body, "vk-2") {
		t.Error("ws-1's virtual keys page: want ws-1's only")
	}
	if strings.Contains(vks.body, "sk-upstream-secret-1") {
		t.Error("virtual keys page shows a provider key")
	}
	// The organisation key sees both workspaces.
	org := e.signedIn(orgKey)
	all := org.get("/console/logs")
	if !strings.Contains(all.body, "one-0") || !strings.Contains(all.body, "two-0") {
		t.Error("the organisation's logs page: want both workspaces")
	}
}

// newKey is the plaintext key a created page shows.
var newKey = regexp.MustCompile(`id="secret" class="mono secret" readonly value="(gw-[0-9a-f]+)"`)

func TestCreateRotateRevokeKey(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	p := b.post("/console/api-keys", "/console/api-keys", url.Values{"name": {"reader"}, "type": {"workspace"},
		"sub_type": {"service"}, "scope": {"logs.read", "completions.write"}})
	m := newKey.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	key := m[1]
	if st, _ := e.api(key, "GET", "/logs", ""); st != http.StatusOK {
		t.Fatalf("the new key reading logs: %d", st)
	}
	list := b.get("/console/api-keys")
	if !strings.Contains(list.body, "reader") || strings.Contains(list.body, key) {
		t.Fatal("the list: want the new key's name, never the key")
	}
	id := regexp.MustCompile(`href="/console/api-keys/([^/"]+)/revoke"><span class="vh"> reader|href="/console/api-keys/([^/"]+)/rotate">Rotate<span class="vh"> reader`).FindStringSubmatch(list.body)
	if id == nil {
		t.Fatal("no rotate link for the new key")
	}
	kid := id[1] + id[2]

	// Rotate: the new key works, the old one stops at once.
	p = b.post("/console/api-keys/"+kid+"/rotate", "/console/api-keys/"+kid+"/rotate", url.Values{"transition_ms": {"0"}})
	m = newKey.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("rotate: %d\n%s", p.status, p.body)
	}
	rotated := m[1]
	if st, _ := e.api(key, "GET", "/logs", ""); st != http.StatusUnauthorized {
		t.Errorf("the old key after rotation: %d, want 401", st)
	}
	if st, _ := e.api(rotated, "GET", "/logs", ""); st != http.StatusOK {
		t.Errorf("the rotated key: %d, want 200", st)
	}

	// Revoke.
	p = b.post("/console/api-keys/"+kid+"/revoke", "/console/api-keys/"+kid+"/revoke", nil)
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "done=revoked") {
		t.Fatalf("revoke: %d %s", p.status, p.body)
	}
	if st, _ := e.api(rotated, "GET", "/logs", ""); st != http.StatusUnauthorized {
		t.Errorf("the revoked key: %d, want 401", st)
	}
	// The audit page shows the writes, made from the browser's address.
	audit := b.get("/console/audit")
	if strings.Count(audit.body, kid) < 2 || !strings.Contains(audit.body, "127.0.0.1") {
		t.Errorf("audit page: want the rotation and revocation of %s from 127.0.0.1\n%s", kid, audit.body)
	}
	// A key may not grant scopes it lacks: the API's 403 is shown.
	p = b.post("/console/api-keys", "/console/api-keys", url.Values{"name": {"org"}, "type": {"organisation"}, "sub_type": {"service"}})
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "organisation") {
		t.Errorf("a workspace key creating an organisation key: %d", p.status)
	}
}

func TestRevokedSessionKeySignsOut(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws2Key)
	if st, _ := e.api(orgKey, "DELETE", "/api-keys/key-ws2", ""); st != http.StatusOK {
		t.Fatalf("delete: %d", st)
	}
	if p := b.get("/console/logs"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/signin" {
		t.Errorf("a page after the session's key was revoked: %d, want 303 to the sign-in page", p.status)
	}
}

func TestVirtualKeysAndConfigs(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	p := b.post("/console/virtual-keys", "/console/virtual-keys", url.Values{"name": {"Second OpenAI"},
		"provider": {"openai"}, "key": {"sk-secret-one-two"}, "base_url": {e.up.URL}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("create virtual key: %d %s", p.status, p.body)
	}
	list := b.get("/console/virtual-keys")
	if !strings.Contains(list.body, "second-openai") || strings.Contains(list.body, "sk-secret-one-two") {
		t.Fatal("virtual keys: want the new slug, never its provider key")
	}
	if p := b.post("/console/virtual-keys/second-openai/rotate", "/console/virtual-keys/second-openai/rotate",
		url.Values{"key": {"sk-secret-three-four"}}); p.status != http.StatusSeeOther {
		t.Fatalf("rotate virtual key: %d %s", p.status, p.body)
	}
	_, body := e.api(ws1Key, "GET", "/virtual-keys/second-openai", "")
	if !strings.Contains(body, `"sk****************ur"`) {
		t.Errorf("the virtual key after rotation: %s", body)
	}
	if p := b.post("/console/virtual-keys/second-openai/delete", "/console/virtual-keys/second-openai/delete", nil); p.status != http.StatusSeeOther {
		t.Fatalf("delete virtual key: %d", p.status)
	}
	if st, _ := e.api(ws1Key, "GET", "/virtual-keys/second-openai", ""); st != http.StatusNotFound {
		t.Errorf("deleted virtual key: %d", st)
	}

	// Configs: a bad one is the API's 400 naming the path; a good one is
	// created, saved as version 2, and deleted.
	p = b.post("/console/configs", "/console/configs", url.Values{"name": {"Bad"}, "config": {`{"retry":{"attempts":"x"}}`}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "retry") {
		t.Errorf("bad config: %d", p.status)
	}
	p = b.post("/console/configs", "/console/configs", url.Values{"name": {"Main"}, "config": {`{"targets":[{"virtual_key":"vk-1"}]}`}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("create config: %d %s", p.status, p.body)
	}
	p = b.post("/console/configs/main", "/console/configs/main", url.Values{"config": {`{"retry":{"attempts":2},"targets":[{"virtual_key":"vk-1"}]}`}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("update config: %d %s", p.status, p.body)
	}
	if d := b.get("/console/configs/main"); !strings.Contains(d.body, "Version 2") || !strings.Contains(d.body, "&#34;attempts&#34;: 2") {
		t.Errorf("config page after update:\n%s", d.body)
	}
	if p := b.post("/console/configs/main/delete", "/console/configs/main/delete", nil); p.status != http.StatusSeeOther {
		t.Fatalf("delete config: %d", p.status)
	}
	if st, _ := e.api(ws1Key, "GET", "/configs/main", ""); st != http.StatusNotFound {
		t.Errorf("deleted config: %d", st)
	}
}

func TestScopesAreTheAPIs(t *testing.T) {
	e := newEnv(t, Options{})
	// A key that may read logs and nothing else: the other pages show
	// the API's 403 naming the scope it lacks.
	e.store.AddAPIKey(gateway.APIKey{ID: "key-logs", Digest: gateway.HashAPIKey("gw-logs-only"), WorkspaceID: "ws-1",
		Scopes: []gateway.Scope{gateway.ScopeLogsRead}})
	b := e.signedIn("gw-logs-only")
	if p := b.get("/console/logs"); p.status != http.StatusOK {
		t.Errorf("logs: %d", p.status)
	}
	for path, scope := range map[string]string{"/console/": "analytics.read", "/console/api-keys": "api_keys.read",
		"/console/virtual-keys": "virtual_keys.read", "/console/configs": "configs.read", "/console/audit": "audit_logs.read"} {
		if p := b.get(path); p.status != http.StatusForbidden || !strings.Contains(p.body, scope) {
			t.Errorf("GET %s: %d, want 403 naming %s", path, p.status, scope)
		}
	}
	if p := b.get("/console/policies"); !strings.Contains(p.body, "policies.read") {
		t.Error("policies page: want the API's 403 naming policies.read")
	}
	p := b.post("/console/api-keys", "/console/api-keys", url.Values{"name": {"x"}, "type": {"workspace"}, "sub_type": {"service"}})
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "api_keys.write") {
		t.Errorf("create without api_keys.write: %d", p.status)
	}
}
