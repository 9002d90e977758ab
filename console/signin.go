package console

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/users"
)

// preSessionTTL is how long the sign-in form's token stays valid.
const preSessionTTL = time.Hour

// signInPage shows the sign-in form, with a fresh CSRF token in a
// short-lived cookie and in the form (the double-submit pattern: there
// is no session yet to keep it in).
func (c *console) signInPage(w http.ResponseWriter, r *http.Request) {
	c.showSignIn(w, r, http.StatusOK, "")
}

func (c *console) showSignIn(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.signInForm(w, r, status, &pageData{Error: msg})
}

// showSignInFlash is the sign-in page with a success message.
func (c *console) showSignInFlash(w http.ResponseWriter, r *http.Request, flash string) {
	c.signInForm(w, r, http.StatusOK, &pageData{Flash: flash})
}

// signInForm renders the sign-in page d with a fresh form token.
func (c *console) signInForm(w http.ResponseWriter, r *http.Request, status int, d *pageData) {
	w.Header().Set("Cache-Control", "no-store")
	tok := randomToken()
	c.setCookie(w, r, preSessionCookie, tok, preSessionTTL)
	d.Title, d.CSRF, d.Data = "Sign in", tok, c.signInOptions()
	c.render(w, r, status, "signin", nil, d)
}

// signInChoices is what the sign-in page offers besides an API key.
type signInChoices struct {
	Passwords bool   // email and password
	OIDC      string // the label of the OIDC button, empty for none
}

func (c *console) signInOptions() signInChoices {
	ch := signInChoices{Passwords: c.opts.Users != nil}
	if c.oidc != nil {
		ch.OIDC = c.oidc.label
	}
	return ch
}

// signIn checks the key the form gives against the API (it must
// authenticate and hold logs.read) and starts a session for it. A
// correct key always signs in (docs/architecture.md, Trust): keys are 128-bit random, so
// throttling them would only lock out the people sharing an address with
// someone who mistyped. Wrong keys are counted per client address and in
// total; beyond the limits they are answered 429 with Retry-After rather
// than 401, which tells a script to slow down, but the key is still
// checked first.
func (c *console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	form := r.PostFormValue("csrf")
	ck, err := r.Cookie(preSessionCookie)
	if err != nil || !sameToken(form, ck.Value) {
		c.showSignIn(w, r, http.StatusForbidden, "The form's security token is missing or stale. Try again.")
		return
	}
	if r.PostForm.Has("email") {
		c.signInPerson(w, r)
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if key == "" || len(key) > 512 {
		c.showSignIn(w, r, http.StatusBadRequest, "Enter a gateway API key.")
		return
	}
	// GET /logs checks the key first, then its logs.read scope, then
	// whether logs are kept: a 404 means a valid key that may read logs.
	err = c.call(r, key, http.MethodGet, "/logs", url.Values{"page_size": {"1"}}, nil, nil)
	switch statusOf(err) {
	case 0, http.StatusNotFound:
	case http.StatusUnauthorized:
		client := clientAddr(r)
		ok, wait := c.limiter.allowed(client)
		c.limiter.fail(client)
		if !ok {
			secs := int(wait/time.Second) + 1
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			c.showSignIn(w, r, http.StatusTooManyRequests, "Too many wrong keys. Try again in "+strconv.Itoa(secs)+" seconds.")
			return
		}
		c.showSignIn(w, r, http.StatusUnauthorized, "That key is not a valid gateway API key.")
		return
	case http.StatusForbidden:
		c.showSignIn(w, r, http.StatusForbidden, "That key may not read logs (it lacks the logs.read scope); the console needs a key with the read scopes.")
		return
	default:
		c.showSignIn(w, r, http.StatusBadGateway, "The gateway could not check the key: "+err.Error())
		return
	}
	if c.startSession(w, r, key) {
		http.Redirect(w, r, c.base+"/", http.StatusSeeOther)
	}
}

// startSession starts a session for key, replacing the browser's, and
// sets its cookie; on failure it answers the sign-in page and reports
// false.
func (c *console) startSession(w http.ResponseWriter, r *http.Request, key string) bool {
	if old, id := c.session(r); id != "" {
		c.endSession(r, old, id) // a new sign-in replaces the browser's session
	}
	id, _, err := c.sessions.create(r.Context(), key)
	if err != nil {
		c.showSignIn(w, r, http.StatusInternalServerError, "The console could not start a session: its session store failed. Try again.")
		return false
	}
	c.setCookie(w, r, preSessionCookie, "", -1)
	c.setCookie(w, r, sessionCookie, id, c.opts.SessionTTL)
	return true
}

// endSession ends the session s of id and, for a person's, deletes its
// session key.
func (c *console) endSession(r *http.Request, s *session, id string) {
	c.sessions.end(r.Context(), id)
	if c.opts.Users != nil && strings.HasPrefix(s.key, users.SessionKeyPrefix) {
		users.EndSession(r.Context(), c.opts.Users, s.key)
	}
}

// signOut ends the session and forgets its cookie.
func (c *console) signOut(w http.ResponseWriter, r *http.Request, _ *session) {
	if s, id := c.session(r); id != "" {
		c.endSession(r, s, id)
	}
	c.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, c.base+"/signin", http.StatusSeeOther)
}

// clientAddr is the address of the connection's peer, by which wrong
// sign-ins are counted. Forwarding headers are not trusted: anyone
// could set them.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// apiFailed answers a failed API call on a page: a key the API no longer
// accepts ends the session.
func (c *console) apiFailed(w http.ResponseWriter, r *http.Request, s *session, err error) bool {
	if statusOf(err) == http.StatusUnauthorized {
		if s, id := c.session(r); id != "" {
			c.endSession(r, s, id)
		}
		c.setCookie(w, r, sessionCookie, "", -1)
		http.Redirect(w, r, c.base+"/signin", http.StatusSeeOther)
		return true
	}
	return false
}
