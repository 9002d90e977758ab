package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSignInCookie(t *testing.T) {
	e := newEnv(t, Options{LoopbackOnly: true})
	b := e.browser()
	if p := b.get("/console/"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/signin" {
		t.Fatalf("signed out overview: %d %q, want 303 to the sign-in page", p.status, p.header.Get("Location"))
	}
	p := b.signIn(ws1Key)
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", p.status, p.body)
	}
	var session *http.Cookie
	for _, ck := range (&http.Response{Header: p.header}).Cookies() {
		if ck.Name == sessionCookie {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure ||
		session.Path != "/console/" || session.MaxAge != 12*60*60 {
		t.Errorf("session cookie %+v, want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path=/console/, 12 h", session)
	}
	if len(session.Value) != 43 || strings.Contains(session.Value, ws1Key) {
		t.Errorf("session cookie value %q, want 256 random bits only", session.Value)
	}
	for _, path := range []string{"/console/logs", "/console/api-keys", "/console/virtual-keys", "/console/configs", "/console/policies", "/console/audit"} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, p.status)
		}
		if strings.Contains(p.body, ws1Key) {
			t.Errorf("GET %s shows the signed-in key", path)
		}
	}
}

// TestSecureCookie: cookies are Secure unless the console is served on
// loopback only (docs/architecture.md, Trust), and always under TLS.
func TestSecureCookie(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		start  func(http.Handler) *httptest.Server
		secure bool
	}{
		{"tls", Options{}, httptest.NewTLSServer, true},
		{"plain HTTP, not loopback only", Options{}, httptest.NewServer, true},
		{"plain HTTP, loopback only", Options{LoopbackOnly: true}, httptest.NewServer, false},
		{"tls, loopback only", Options{LoopbackOnly: true}, httptest.NewTLSServer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvServer(t, tc.opts, tc.start)
			b := e.browser()
			p := b.signIn(ws1Key) // the form's page, then the form
			if p.status != http.StatusSeeOther {
				t.Fatalf("sign-in: %d %s", p.status, p.body)
			}
			form := b.get("/console/signin")
			for _, p := range []page{form, b.signIn(ws1Key)} {
				cookies := (&http.Response{Header: p.header}).Cookies()
				if len(cookies) == 0 {
					t.Fatal("no cookie set")
				}
				for _, ck := range cookies {
					if ck.Secure != tc.secure {
						t.Errorf("cookie %s: Secure %v, want %v", ck.Name, ck.Secure, tc.secure)
					}
				}
			}
		})
	}
}

func TestSignInRefusals(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		name string
		key  string
		want int
	}{
		{"unknown key", "gw-not-a-key", http.StatusUnauthorized},
		{"member key without logs.read", memberKey, http.StatusForbidden},
		{"empty", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := e.browser()
			p := b.signIn(tc.key)
			if p.status != tc.want {
				t.Errorf("sign-in: %d, want %d", p.status, tc.want)
			}
			for _, ck := range (&http.Response{Header: p.header}).Cookies() {
				if ck.Name == sessionCookie && ck.MaxAge > 0 {
					t.Error("a refused sign-in set a session cookie")
				}
			}
		})
	}
}

func TestSignOut(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	u, _ := url.Parse(e.srv.URL + "/console/")
	old := b.jar.Cookies(u)
	if p := b.post("/console/logs", "/console/signout", nil); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	if p := b.get("/console/logs"); p.status != http.StatusSeeOther {
		t.Errorf("logs after sign-out: %d, want 303 to the sign-in page", p.status)
	}
	// The old cookie, replayed, no longer opens a session.
	b2 := e.browser()
	b2.jar.SetCookies(u, old)
	if p := b2.get("/console/logs"); p.status != http.StatusSeeOther {
		t.Errorf("logs with the signed-out cookie: %d, want 303", p.status)
	}
}

func TestSessionExpires(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	e.clock.add(12*time.Hour - time.Second)
	if p := b.get("/console/logs"); p.status != http.StatusOK {
		t.Fatalf("logs before 12 h: %d", p.status)
	}
	e.clock.add(time.Second)
	if p := b.get("/console/logs"); p.status != http.StatusSeeOther {
		t.Errorf("logs after 12 h: %d, want 303 to the sign-in page", p.status)
	}
}

func TestCSRFRefused(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.signedIn(ws1Key)
	other := e.signedIn(ws1Key)
	create := url.Values{"name": {"csrf-probe"}, "type": {"workspace"}, "sub_type": {"service"}, "scope": {"completions.write"}}
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"missing", ""},
		{"wrong", "not-the-token"},
		{"another session's", csrf(other.get("/console/api-keys"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := url.Values{}
			for k, v := range create {
				f[k] = v
			}
			if tc.token != "" {
				f.Set("csrf", tc.token)
			}
			if p := b.do("POST", "/console/api-keys", f); p.status != http.StatusForbidden {
				t.Errorf("create without the right token: %d, want 403", p.status)
			}
		})
	}
	if _, body := e.api(ws1Key, "GET", "/api-keys", ""); strings.Contains(body, "csrf-probe") {
		t.Error("a key was created by a refused form")
	}
	// Revoking and signing out need the token too.
	if p := b.do("POST", "/console/api-keys/key-member/revoke", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("revoke without a token: %d, want 403", p.status)
	}
	if p := b.do("POST", "/console/signout", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("sign-out without a token: %d, want 403", p.status)
	}
	// The sign-in form's token must match its cookie.
	fresh := e.browser()
	if p := fresh.do("POST", "/console/signin", url.Values{"key": {ws1Key}, "csrf": {"guess"}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without the form's token: %d, want 403", p.status)
	}
}

// inline matches what Content-Security-Policy: default-src 'self' would
// block: inline scripts, styles and event handlers.
var inline = regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|javascript:`)

// scriptTag matches a script element, which must load one of the
// console's own files and hold nothing itself.
var scriptTag = regexp.MustCompile(`(?i)<script\b[^>]*>[^<]*(</script>)?`)

// externalScript is the one shape of script element the pages may hold.
var externalScript = regexp.MustCompile(`^<script src="/console/static/[a-z]+\.js" defer></script>$`)

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, Options{})
	e.traffic(ws1Key, "vk-1", "trace", 1)
	b := e.signedIn(ws1Key)
	paths := append(pagePaths(t, b), "/console/signin", "/console/static/console.css", "/console/static/console.js", "/console/nowhere")
	for _, path := range paths {
		p := b.get(path)
		csp := p.header.Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if p.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
		if strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
			if p.header.Get("Cache-Control") != "no-store" {
				t.Errorf("GET %s: Cache-Control %q, want no-store", path, p.header.Get("Cache-Control"))
			}
			if m := inline.FindString(p.body); m != "" {
				t.Errorf("GET %s: inline %q, which the CSP blocks", path, m)
			}
			for _, m := range scriptTag.FindAllString(p.body, -1) {
				if !externalScript.MatchString(m) {
					t.Errorf("GET %s: script %q, want only the console's own files, no inline script", path, m)
				}
			}
		}
	}
}

// TestSignInNeverLocksOut: wrong keys beyond the limit are answered 429,
// but a correct key from the same address still signs in (docs/architecture.md, Trust).
func TestSignInNeverLocksOut(t *testing.T) {
	e := newEnv(t, Options{})
	b := e.browser()
	for i := range 5 {
		if p := b.signIn("gw-guess"); p.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, p.status)
		}
	}
	p := b.signIn("gw-guess")
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("a wrong key after 5 failures: %d (Retry-After %q), want 429 with Retry-After", p.status, p.header.Get("Retry-After"))
	}
	if p := b.signIn(ws1Key); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
		t.Errorf("the correct key after 6 failures: %d, want 303 to the console", p.status)
	}
	if p := b.get("/console/logs"); p.status != http.StatusOK {
		t.Errorf("logs after signing in: %d, want 200", p.status)
	}
	e.clock.add(time.Minute)
	if p := b.signIn("gw-guess"); p.status != http.StatusUnauthorized {
		t.Errorf("a wrong key a minute later: %d, want 401", p.status)
	}
}

func TestBruteForceGlobal(t *testing.T) {
	e := newEnv(t, Options{GlobalSignInFailures: 3})
	h := New(e.gw, Options{GlobalSignInFailures: 3, Now: e.clock.now})
	try := func(addr, key string) int {
		get := httptest.NewRequest("GET", "/console/signin", nil)
		get.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, get)
		tok := csrf(page{body: w.Body.String()})
		post := httptest.NewRequest("POST", "/console/signin", strings.NewReader(url.Values{"key": {key}, "csrf": {tok}}.Encode()))
		post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		post.AddCookie(&http.Cookie{Name: preSessionCookie, Value: tok})
		post.RemoteAddr = addr
		w = httptest.NewRecorder()
		h.ServeHTTP(w, post)
		return w.Code
	}
	for i := range 3 {
		if got := try("192.0.2."+string(rune('1'+i))+":1000", "gw-guess"); got != http.StatusUnauthorized {
			t.Fatalf("guess from address %d: %d", i, got)
		}
	}
	if got := try("198.51.100.7:1000", "gw-guess"); got != http.StatusTooManyRequests {
		t.Errorf("a wrong key from a fresh address after 3 failures in all: %d, want 429", got)
	}
	if got := try("198.51.100.7:1000", ws1Key); got != http.StatusSeeOther {
		t.Errorf("the correct key from a fresh address after 3 failures in all: %d, want 303", got)
	}
}
