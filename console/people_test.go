package console

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/console/internal/oidctest"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/users"
)

// cheapHash is the argon2id hash of cheapPassword with the smallest
// parameters, for tests that check many passwords: verifyPassword reads
// the parameters from the hash.
const (
	cheapPassword = "a long enough password"
	cheapHash     = "$argon2id$v=19$m=8,t=1,p=1$c29tZXNhbHQ$SuJ3RG4qnXQg5aEgvx9yTvOnszSM/1QueeneqJTCoNM"
)

// addUser stores a user of email and role, with password hash hash
// ("" for none), member of the workspaces of grants (id → role).
func (e *env) addUser(email string, role users.Role, hash string, grants map[string]users.WorkspaceRole) *users.User {
	e.t.Helper()
	ctx := context.Background()
	u := &users.User{ID: "u-" + email, Email: email, FirstName: "F", LastName: "L", Role: role, PasswordHash: hash,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := e.store.CreateUser(ctx, u); err != nil {
		e.t.Fatal(err)
	}
	for ws, r := range grants {
		if err := e.store.PutMember(ctx, &users.Member{WorkspaceID: ws, UserID: u.ID, Role: r}); err != nil {
			e.t.Fatal(err)
		}
	}
	return u
}

// signInPassword posts the sign-in form with email and password.
func (b *browser) signInPassword(email, password string) page {
	b.e.t.Helper()
	return b.post("/console/signin", "/console/signin", url.Values{"email": {email}, "password": {password}})
}

// sessionKey returns the API key behind the browser's console session.
func (b *browser) sessionKey() string {
	b.e.t.Helper()
	u, _ := url.Parse(b.e.srv.URL + "/console/")
	for _, ck := range b.jar.Cookies(u) {
		if ck.Name == sessionCookie {
			key, _, _, err := b.e.console.sessions.store.ConsoleSession(context.Background(), sha256.Sum256([]byte(ck.Value)))
			if err != nil {
				b.e.t.Fatal(err)
			}
			return key
		}
	}
	b.e.t.Fatal("no session cookie")
	return ""
}

var inviteLink = regexp.MustCompile(`"invite_link":"([^"]+)"`)

// TestInviteThenPassword: an invite's link opens a form that creates
// the user once (an unknown link is 404, a used one 410); the person
// then signs in with the password, acts with their workspace role's
// scopes, and signing out ends their session key.
func TestInviteThenPassword(t *testing.T) {
	e := newEnv(t, Options{Users: withPeople})
	st, body := e.api(orgKey, "POST", "/admin/users/invites",
		`{"email":"ann@example.com","role":"member","workspaces":[{"id":"ws-1","role":"member"}]}`)
	m := inviteLink.FindStringSubmatch(body)
	if st != 200 || m == nil {
		t.Fatalf("the invite: %d %s", st, body)
	}
	link, _ := url.Parse(m[1])
	if link.Host != strings.TrimPrefix(e.srv.URL, "http://") || !strings.HasPrefix(link.Path, "/console/invite/") {
		t.Fatalf("the link %s is not the console's invite page on the request's origin", link)
	}
	b := e.browser()
	if p := b.get(link.Path); p.status != 200 || !strings.Contains(p.body, "ann@example.com") || p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the invite page: %d %s", p.status, p.body)
	}
	for _, bad := range []url.Values{
		{"first_name": {"Ann"}, "password": {"short"}, "password2": {"short"}},
		{"first_name": {"Ann"}, "password": {cheapPassword}, "password2": {cheapPassword + "!"}},
		{"first_name": {""}, "password": {cheapPassword}, "password2": {cheapPassword}},
		{"first_name": {"Ann\x00"}, "password": {cheapPassword}, "password2": {cheapPassword}},
	} {
		if p := b.post(link.Path, link.Path, bad); p.status != http.StatusBadRequest || !strings.Contains(p.body, `name="first_name"`) {
			t.Errorf("the form with %v: %d", bad, p.status)
		}
	}
	if p := b.do("POST", link.Path, url.Values{"first_name": {"Ann"}, "password": {cheapPassword}, "password2": {cheapPassword}, "csrf": {"forged"}}); p.status != http.StatusForbidden {
		t.Errorf("the form without its token: %d", p.status)
	}
	p := b.post(link.Path, link.Path, url.Values{"first_name": {"Ann"}, "last_name": {"Smith"}, "password": {cheapPassword}, "password2": {cheapPassword}})
	if p.status != 200 || !strings.Contains(p.body, "Your account is ready") {
		t.Fatalf("accepting: %d %s", p.status, p.body)
	}
	u, err := e.store.UserByEmail(context.Background(), "ann@example.com")
	if err != nil || u.FirstName != "Ann" || u.LastName != "Smith" || !strings.HasPrefix(u.PasswordHash, "$argon2id$v=19$m=65536,t=3,p=4$") {
		t.Fatalf("the user made: %+v %v", u, err)
	}
	if p := b.get(link.Path); p.status != http.StatusGone {
		t.Errorf("the used link: %d, want 410", p.status)
	}
	recs, _, _ := e.store.AuditRecords(context.Background(), observe.AuditQuery{})
	audited := false
	for _, rec := range recs {
		token := strings.TrimPrefix(link.Path, "/console/invite/")
		if strings.Contains(rec.URI+rec.Detail+rec.ResourceID, token) {
			t.Errorf("an audit record holds the invite's token: %+v", rec)
		}
		audited = audited || rec.Action == "users.create" && rec.ResourceID == u.ID && rec.KeyID == "user-"+u.ID
	}
	if !audited {
		t.Errorf("no audit record of the user made from the invite: %+v", recs)
	}
	if p := b.post("/console/signin", link.Path, url.Values{"first_name": {"Eve"}, "password": {cheapPassword}, "password2": {cheapPassword}}); p.status != http.StatusGone {
		t.Errorf("posting the used link's form again: %d, want 410", p.status)
	}
	if p := b.get("/console/invite/" + strings.Repeat("x", 43)); p.status != http.StatusNotFound {
		t.Errorf("an unknown link: %d, want 404", p.status)
	}

	if p := b.signInPassword("Ann@Example.com", cheapPassword); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
		t.Fatalf("signing in: %d %s", p.status, p.body)
	}
	key := b.sessionKey()
	if !strings.HasPrefix(key, users.SessionKeyPrefix) {
		t.Errorf("the session's key %q is not a session key", key)
	}
	if p := b.get("/console/logs"); p.status != 200 {
		t.Errorf("a member's logs page: %d", p.status)
	}
	if p := b.get("/console/users"); p.status != http.StatusForbidden || !strings.Contains(p.body, "only an organisation key may manage users") {
		t.Errorf("a member's users page: %d", p.status)
	}
	if st, body := e.api(orgKey, "GET", "/api-keys", ""); st != 200 || strings.Contains(body, "console session") || strings.Contains(body, u.ID) {
		t.Errorf("the API keys list: %d %s (the session key must not be listed)", st, body)
	}
	if st, _ := e.api(key, "GET", "/virtual-keys?workspace_id=ws-2", ""); st != http.StatusForbidden {
		t.Errorf("the member naming another workspace: %d, want 403", st)
	}
	if p := b.post("/console/", "/console/signout", nil); p.status != http.StatusSeeOther {
		t.Fatalf("signing out: %d", p.status)
	}
	if st, _ := e.api(key, "GET", "/logs", ""); st != http.StatusUnauthorized {
		t.Errorf("the session key after signing out: %d, want 401", st)
	}
}

// TestPasswordThrottled: wrong passwords are counted per account and
// per address; beyond the limit even the right one is refused with 429
// until the window ends. An unknown email is answered as a wrong
// password.
func TestPasswordThrottled(t *testing.T) {
	e := newEnv(t, Options{Users: withPeople, SignInFailures: 3})
	e.addUser("bob@example.com", users.RoleAdmin, cheapHash, nil)
	b := e.browser()
	for i := range 3 {
		if p := b.signInPassword("bob@example.com", "wrong password "+string(rune('a'+i))); p.status != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d", i, p.status)
		}
	}
	p := b.signInPassword("bob@example.com", cheapPassword)
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("the right password past the limit: %d %v", p.status, p.header)
	}
	e.clock.add(time.Minute)
	if p := b.signInPassword("bob@example.com", cheapPassword); p.status != http.StatusSeeOther {
		t.Fatalf("the right password a minute later: %d %s", p.status, p.body)
	}
	if p := b.get("/console/users"); p.status != 200 || !strings.Contains(p.body, "bob@example.com") {
		t.Errorf("an admin's users page: %d", p.status)
	}
	if p := e.browser().signInPassword("nobody@example.com", cheapPassword); p.status != http.StatusUnauthorized ||
		!strings.Contains(p.body, "do not match an account") {
		t.Errorf("an unknown email: %d", p.status)
	}
	if p := e.browser().signInPassword("bob@example.com", ""); p.status != http.StatusBadRequest {
		t.Errorf("no password: %d", p.status)
	}
	// Without Options.Users, a password is not taken.
	if p := newEnv(t, Options{}).browser().signInPassword("bob@example.com", cheapPassword); p.status != http.StatusBadRequest {
		t.Errorf("a password on a console without users: %d", p.status)
	}
}

// TestUsersPages: an admin invites from the console and is shown the
// link once with a copy button; resend and withdraw work; roles change.
func TestUsersPages(t *testing.T) {
	e := newEnv(t, Options{Users: withPeople})
	b := e.signedIn(orgKey)
	p := b.post("/console/users", "/console/users/invites", url.Values{"email": {"cy@example.com"}, "role": {"member"},
		"workspace_id": {"ws-1"}, "workspace_role": {"manager"}})
	if p.status != 200 || !strings.Contains(p.body, `data-copy="link"`) || !strings.Contains(p.body, "/console/invite/") ||
		!strings.Contains(p.body, "/static/console.js") {
		t.Fatalf("creating an invite: %d %s", p.status, p.body)
	}
	if p := b.get("/console/static/console.js"); p.status != 200 {
		t.Errorf("the copy script: %d", p.status)
	}
	if p := b.post("/console/users", "/console/users/invites", url.Values{"email": {"not-an-email"}, "role": {"member"}}); p.status != 400 {
		t.Errorf("an invite of a bad email: %d", p.status)
	}
	ivs, _ := e.store.Invites(context.Background())
	if len(ivs) != 1 || ivs[0].Workspaces[0].Role != users.WorkspaceManager {
		t.Fatalf("the invites: %+v", ivs)
	}
	list := b.get("/console/users")
	if list.status != 200 || !strings.Contains(list.body, "cy@example.com") || strings.Contains(list.body, "/console/invite/") {
		t.Errorf("the users page (it must not show links): %d", list.status)
	}
	if p := b.post("/console/users", "/console/users/invites/"+ivs[0].ID+"/resend", url.Values{"email": {"cy@example.com"}}); p.status != 200 || !strings.Contains(p.body, "/console/invite/") {
		t.Errorf("resending: %d", p.status)
	}
	if p := b.post("/console/users", "/console/users/invites/"+ivs[0].ID+"/delete", nil); p.status != http.StatusSeeOther {
		t.Errorf("withdrawing: %d", p.status)
	}
	u := e.addUser("dee@example.com", users.RoleMember, "", nil)
	if p := b.post("/console/users", "/console/users/"+u.ID+"/role", url.Values{"role": {"admin"}}); p.status != http.StatusSeeOther {
		t.Errorf("changing the role: %d %s", p.status, p.body)
	}
	if got, _ := e.store.User(context.Background(), u.ID); got.Role != users.RoleAdmin {
		t.Errorf("the role: %s", got.Role)
	}
	if p := b.post("/console/users", "/console/users/"+u.ID+"/delete", nil); p.status != http.StatusSeeOther {
		t.Errorf("deleting: %d", p.status)
	}
	if _, err := e.store.User(context.Background(), u.ID); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("the deleted user: %v", err)
	}
}

// oidcEnv is a console with OIDC sign-in through a throwaway provider.
func oidcEnv(t *testing.T) (*env, *oidctest.Provider) {
	t.Helper()
	prov := oidctest.NewProvider("console", "console-secret")
	t.Cleanup(prov.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	e := newEnvServer(t, Options{Users: withPeople, OIDC: &OIDC{Issuer: prov.URL, ClientID: "console", ClientSecret: "console-secret",
		RedirectURL: base + "/console/oidc/callback", Name: "Test IdP"}}, func(h http.Handler) *httptest.Server {
		s := httptest.NewUnstartedServer(h)
		s.Listener.Close()
		s.Listener = ln
		s.Start()
		return s
	})
	return e, prov
}

// oidcSignIn runs the code flow in the browser and returns the answer
// to the callback.
func (b *browser) oidcSignIn() page {
	b.e.t.Helper()
	p := b.get("/console/oidc/signin")
	if p.status != http.StatusFound {
		b.e.t.Fatalf("the start of the OIDC sign-in: %d %s", p.status, p.body)
	}
	res, err := b.c.Get(p.header.Get("Location")) // the provider
	if err != nil {
		b.e.t.Fatal(err)
	}
	res.Body.Close()
	back, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(back.String(), b.e.srv.URL+"/console/oidc/callback") {
		b.e.t.Fatalf("the provider's answer: %d %s", res.StatusCode, back)
	}
	return b.get(back.RequestURI())
}

// TestOIDCCodeFlow: a person whose verified email is a user's signs in
// through the provider; one whose email has a pending invite takes it
// up; no one else does, nor an unverified email, a forged state or a
// replayed code.
func TestOIDCCodeFlow(t *testing.T) {
	e, prov := oidcEnv(t)
	e.addUser("admin@example.com", users.RoleAdmin, "", nil)
	b := e.browser()
	if p := b.get("/console/signin"); !strings.Contains(p.body, "Sign in with Test IdP") {
		t.Errorf("the sign-in page has no OIDC button")
	}
	prov.SignIn(oidctest.Person{Email: "Admin@example.com", EmailVerified: true})
	p := b.oidcSignIn()
	if p.status != 200 || !strings.Contains(p.body, `http-equiv="refresh"`) {
		t.Fatalf("the callback: %d %s", p.status, p.body)
	}
	if p := b.get("/console/users"); p.status != 200 || !strings.Contains(p.body, "admin@example.com") {
		t.Fatalf("the admin's users page after OIDC: %d", p.status)
	}

	// A pending invite's email: the invite is taken up, once.
	st, _ := e.api(orgKey, "POST", "/admin/users/invites", `{"email":"new@example.com","role":"member","workspaces":[{"id":"ws-2","role":"admin"}]}`)
	if st != 200 {
		t.Fatal(st)
	}
	prov.SignIn(oidctest.Person{Email: "new@example.com", EmailVerified: true, GivenName: "New", FamilyName: "Person"})
	b2 := e.browser()
	if p := b2.oidcSignIn(); p.status != 200 {
		t.Fatalf("the invited person's callback: %d %s", p.status, p.body)
	}
	u, err := e.store.UserByEmail(context.Background(), "new@example.com")
	if err != nil || u.FirstName != "New" || u.LastName != "Person" || u.PasswordHash != "" {
		t.Fatalf("the user made from the invite: %+v %v", u, err)
	}
	if st, body := e.api(b2.sessionKey(), "GET", "/virtual-keys", ""); st != 200 || !strings.Contains(body, "vk-2") || strings.Contains(body, "vk-1") {
		t.Errorf("the invited person's virtual keys (ws-2 only): %d %s", st, body)
	}

	for _, c := range []struct {
		who  oidctest.Person
		want int
	}{
		{oidctest.Person{Email: "admin@example.com", EmailVerified: false}, http.StatusForbidden},
		{oidctest.Person{Email: "stranger@example.com", EmailVerified: true}, http.StatusForbidden},
	} {
		prov.SignIn(c.who)
		if p := e.browser().oidcSignIn(); p.status != c.want || strings.Contains(p.body, "refresh") {
			t.Errorf("%+v: %d, want %d", c.who, p.status, c.want)
		}
	}

	// A forged state; a spent state cookie; another sign-in's code.
	prov.SignIn(oidctest.Person{Email: "admin@example.com", EmailVerified: true})
	b3 := e.browser()
	start := b3.get("/console/oidc/signin")
	res, err := b3.c.Get(start.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	back, _ := url.Parse(res.Header.Get("Location"))
	q := back.Query()
	q.Set("state", "forged")
	if p := b3.get("/console/oidc/callback?" + q.Encode()); p.status != http.StatusForbidden {
		t.Errorf("a forged state: %d", p.status)
	}
	if p := b3.get(back.RequestURI()); p.status != http.StatusForbidden {
		t.Errorf("the callback after its cookie was spent: %d, want 403", p.status)
	}
	code := back.Query().Get("code")
	b5 := e.browser()
	loc, _ := url.Parse(b5.get("/console/oidc/signin").header.Get("Location"))
	refused := prov.Refused()
	if p := b5.get("/console/oidc/callback?" + url.Values{"code": {code}, "state": {loc.Query().Get("state")}}.Encode()); p.status != http.StatusUnauthorized {
		t.Errorf("a code of another sign-in (another PKCE verifier): %d, want 401", p.status)
	}
	if prov.Refused() <= refused {
		t.Error("the provider was not asked, or did not refuse, the exchange")
	}
}
