package main

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunPeople: over real HTTP, on a database, an organisation key
// invites a person into a workspace; the invite link is the console's
// page on -public-url; posting its form creates the user; the person
// then signs in with the password and their session acts with their
// workspace role; the link does not work twice.
func TestRunPeople(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	const key = "gw-people-org-key-5e21"
	t.Setenv(apiKeyEnv, key)
	r := startRun(t, "-db", filepath.Join(t.TempDir(), "gw.db"), "-public-url", "https://gateway.example.com")
	api := func(method, path, body string) (int, string) {
		t.Helper()
		req := mustRequest(t, method, r.base+"/v1"+path, body)
		req.Header.Set("x-gateway-api-key", key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, readAll(t, res)
	}
	if st, body := api("POST", "/admin/workspaces", `{"name":"Team A","slug":"team-a"}`); st != 200 {
		t.Fatalf("creating a workspace: %d %s", st, body)
	}
	st, body := api("POST", "/admin/users/invites", `{"email":"ann@example.com","role":"member","workspaces":[{"id":"team-a","role":"manager"}]}`)
	var inv struct {
		Link string `json:"invite_link"`
	}
	if st != 200 || json.Unmarshal([]byte(body), &inv) != nil || !strings.HasPrefix(inv.Link, "https://gateway.example.com/console/invite/") {
		t.Fatalf("the invite: %d %s", st, body)
	}
	link := r.base + strings.TrimPrefix(inv.Link, "https://gateway.example.com")

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(page, action string, v url.Values) (int, string, *http.Response) {
		t.Helper()
		res, err := browser.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		m := csrfRE.FindStringSubmatch(readAll(t, res))
		if m == nil {
			t.Fatalf("no form on %s: %d", page, res.StatusCode)
		}
		v.Set("csrf", m[1])
		res, err = browser.PostForm(action, v)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, readAll(t, res), res
	}
	const password = "a password long enough"
	if st, body, _ := form(link, link, url.Values{"first_name": {"Ann"}, "last_name": {"Lee"}, "password": {password}, "password2": {password}}); st != 200 ||
		!strings.Contains(body, "Your account is ready") {
		t.Fatalf("accepting the invite: %d %s", st, body)
	}
	if res, err := browser.Get(link); err != nil || res.StatusCode != http.StatusGone {
		t.Errorf("the link a second time: %v %v, want 410", res.StatusCode, err)
	}
	st, body, res := form(r.base+"/console/signin", r.base+"/console/signin", url.Values{"email": {"ann@example.com"}, "password": {password}})
	if st != http.StatusSeeOther || res.Header.Get("Location") != "/console/" {
		t.Fatalf("signing in with the password: %d %s", st, body)
	}
	for path, want := range map[string]int{"/console/logs": 200, "/console/virtual-keys": 200, "/console/users": 403} {
		res, err := browser.Get(r.base + path)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, res)
		if res.StatusCode != want {
			t.Errorf("%s as a manager of team-a: %d, want %d", path, res.StatusCode, want)
		}
	}
	if st, body := api("GET", "/admin/workspaces/team-a/users", ""); st != 200 || !strings.Contains(body, `"role":"manager"`) ||
		!strings.Contains(body, `"email":"ann@example.com"`) {
		t.Errorf("team-a's members: %d %s", st, body)
	}
	if st, body := api("GET", "/audit-logs", ""); st != 200 || !strings.Contains(body, "user_invites.create") {
		t.Errorf("the audit log: %d %s", st, body)
	}
}

// TestOIDCFlags: -oidc-issuer needs the client id, secret and
// -public-url, whose callback becomes the redirect URI; the secret may
// come from the environment; the client flags need the issuer.
func TestOIDCFlags(t *testing.T) {
	t.Setenv("GATEWAY_OIDC_CLIENT_SECRET", "")
	if o, err := consoleOIDC("", "", "", ""); o != nil || err != nil {
		t.Errorf("no flags: %v %v", o, err)
	}
	for _, c := range [][4]string{
		{"", "id", "", ""},
		{"issuer.example.com", "id", "secret", "https://gw.example.com"},
		{"https://idp.example.com", "", "secret", "https://gw.example.com"},
		{"https://idp.example.com", "id", "", "https://gw.example.com"},
		{"https://idp.example.com", "id", "secret", ""},
	} {
		if _, err := consoleOIDC(c[0], c[1], c[2], c[3]); err == nil || !strings.Contains(err.Error(), "-oidc") {
			t.Errorf("consoleOIDC%q: %v, want an error naming the flag", c, err)
		}
	}
	t.Setenv("GATEWAY_OIDC_CLIENT_SECRET", "from-env")
	o, err := consoleOIDC("https://idp.example.com", "id", "", "https://gw.example.com/")
	if err != nil || o.ClientSecret != "from-env" || o.RedirectURL != "https://gw.example.com/console/oidc/callback" {
		t.Errorf("consoleOIDC: %+v %v", o, err)
	}
}
