package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Cookie names. The session cookie holds the session's random id only;
// the pre-session cookie holds the sign-in form's CSRF token.
const (
	sessionCookie    = "gateway_console"
	preSessionCookie = "gateway_console_signin"
)

// session is one signed-in person. key is the gateway API key they
// signed in with: it never leaves the server.
type session struct {
	key     string
	csrf    string
	expires time.Time
}

// sessions holds the sessions of one console, by the SHA-256 digest of
// their ids, so that a lookup's timing says nothing of stored ids. It is
// safe for concurrent use.
type sessions struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex // guards byID
	byID map[[sha256.Size]byte]*session
}

func newSessions(max int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{max: max, ttl: ttl, now: now, byID: make(map[[sha256.Size]byte]*session)}
}

// randomToken returns 256 random bits, base64url-encoded.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for key and returns its id and the session.
// At MaxSessions, expired sessions are dropped first, then the one
// closest to its end.
func (s *sessions) create(key string) (string, *session) {
	id := randomToken()
	now := s.now()
	ss := &session{key: key, csrf: randomToken(), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= s.max {
		var oldest [sha256.Size]byte
		var first time.Time
		for d, o := range s.byID {
			if !now.Before(o.expires) {
				delete(s.byID, d)
				continue
			}
			if first.IsZero() || o.expires.Before(first) {
				oldest, first = d, o.expires
			}
		}
		if len(s.byID) >= s.max {
			delete(s.byID, oldest)
		}
	}
	s.byID[sha256.Sum256([]byte(id))] = ss
	return id, ss
}

// get returns the live session of id.
func (s *sessions) get(id string) (*session, bool) {
	d := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[d]
	if !ok {
		return nil, false
	}
	if !s.now().Before(ss.expires) {
		delete(s.byID, d)
		return nil, false
	}
	return ss, true
}

// end ends the session of id, if any.
func (s *sessions) end(id string) {
	d := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.byID, d)
	s.mu.Unlock()
}

// session returns the signed-in session of r.
func (c *console) session(r *http.Request) (*session, string) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || len(ck.Value) != 43 {
		return nil, ""
	}
	ss, ok := c.sessions.get(ck.Value)
	if !ok {
		return nil, ""
	}
	return ss, ck.Value
}

// secure reports whether cookies set in answer to r must be Secure:
// always, but on plain-HTTP requests to a console served on loopback
// only (Options.LoopbackOnly).
func (c *console) secure(r *http.Request) bool { return !c.opts.LoopbackOnly || r.TLS != nil }

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, scoped to
// the console's path, Secure (see secure); maxAge < 0 deletes it.
func (c *console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{Name: name, Value: value, Path: c.base + "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(r), MaxAge: int(maxAge / time.Second)}
	if maxAge < 0 {
		ck.MaxAge = -1
	}
	http.SetCookie(w, ck)
}

// signedIn wraps a page that needs a session: without one, a GET is sent
// to the sign-in page and anything else is 403. A POST must carry the
// session's CSRF token in its csrf field, else it is refused with 403.
func (c *console) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		s, _ := c.session(r)
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, c.base+"/signin", http.StatusSeeOther)
				return
			}
			c.render(w, r, http.StatusForbidden, "error", nil, &pageData{Title: "Signed out",
				Error: "Your session has ended. Sign in again."})
			return
		}
		if r.Method != http.MethodGet {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if !sameToken(r.PostFormValue("csrf"), s.csrf) {
				c.render(w, r, http.StatusForbidden, "error", s, &pageData{Title: "Refused",
					Error: "The form's security token is missing or stale. Reload the page and try again."})
				return
			}
		}
		h(w, r, s)
	}
}

// sameToken compares a token a form sent with the expected one in
// constant time; an empty token never matches.
func sameToken(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
