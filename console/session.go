package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/modelgateway/gateway"
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

// SessionStore keeps the console's sessions, so that replicas behind a
// load balancer share them and a restart signs nobody out
// (sqlstore.Store implements it in the gateway's database). A session is
// stored under the SHA-256 digest of its id: the id itself, the cookie's
// value, is never given to the store. key is the gateway API key the
// person signed in with, which the store must not keep in plaintext
// (sqlstore seals it under its master key); csrf is the session's form
// token; expires is when it ends (the console checks it too, with its own
// clock).
//
// ConsoleSession returns gateway.ErrNotFound for a digest it does not
// hold (an expired session may be forgotten at any time), and
// DeleteConsoleSession returns nil for one. Implementations must be safe
// for concurrent use.
type SessionStore interface {
	CreateConsoleSession(ctx context.Context, digest [sha256.Size]byte, key, csrf string, expires time.Time) error
	ConsoleSession(ctx context.Context, digest [sha256.Size]byte) (key, csrf string, expires time.Time, err error)
	DeleteConsoleSession(ctx context.Context, digest [sha256.Size]byte) error
}

// sessions are the console's sessions in their store.
type sessions struct {
	store SessionStore
	ttl   time.Duration
	now   func() time.Time
}

// randomToken returns 256 random bits, base64url-encoded.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for key and returns its id and the session.
func (s *sessions) create(ctx context.Context, key string) (string, *session, error) {
	id := randomToken()
	ss := &session{key: key, csrf: randomToken(), expires: s.now().Add(s.ttl)}
	if err := s.store.CreateConsoleSession(ctx, sha256.Sum256([]byte(id)), ss.key, ss.csrf, ss.expires); err != nil {
		return "", nil, err
	}
	return id, ss, nil
}

// get returns the live session of id. A session the store cannot read
// is taken as none: the person is asked to sign in again.
func (s *sessions) get(ctx context.Context, id string) (*session, bool) {
	d := sha256.Sum256([]byte(id))
	key, csrf, expires, err := s.store.ConsoleSession(ctx, d)
	if err != nil {
		return nil, false
	}
	if !s.now().Before(expires) {
		s.store.DeleteConsoleSession(ctx, d)
		return nil, false
	}
	return &session{key: key, csrf: csrf, expires: expires}, true
}

// end ends the session of id, if any.
func (s *sessions) end(ctx context.Context, id string) {
	s.store.DeleteConsoleSession(ctx, sha256.Sum256([]byte(id)))
}

// memorySessions is the SessionStore of a console without
// Options.Sessions: a map by digest in this process, of at most max
// sessions. It is safe for concurrent use.
type memorySessions struct {
	max int
	now func() time.Time

	mu   sync.Mutex // guards byID
	byID map[[sha256.Size]byte]session
}

func newMemorySessions(max int, now func() time.Time) *memorySessions {
	return &memorySessions{max: max, now: now, byID: make(map[[sha256.Size]byte]session)}
}

// CreateConsoleSession implements SessionStore. At max sessions, expired
// sessions are dropped first, then the one closest to its end.
func (m *memorySessions) CreateConsoleSession(_ context.Context, d [sha256.Size]byte, key, csrf string, expires time.Time) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byID) >= m.max {
		var oldest [sha256.Size]byte
		var first time.Time
		for od, o := range m.byID {
			if !now.Before(o.expires) {
				delete(m.byID, od)
				continue
			}
			if first.IsZero() || o.expires.Before(first) {
				oldest, first = od, o.expires
			}
		}
		if len(m.byID) >= m.max {
			delete(m.byID, oldest)
		}
	}
	m.byID[d] = session{key: key, csrf: csrf, expires: expires}
	return nil
}

// ConsoleSession implements SessionStore.
func (m *memorySessions) ConsoleSession(_ context.Context, d [sha256.Size]byte) (string, string, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss, ok := m.byID[d]
	if !ok {
		return "", "", time.Time{}, gateway.ErrNotFound
	}
	return ss.key, ss.csrf, ss.expires, nil
}

// DeleteConsoleSession implements SessionStore.
func (m *memorySessions) DeleteConsoleSession(_ context.Context, d [sha256.Size]byte) error {
	m.mu.Lock()
	delete(m.byID, d)
	m.mu.Unlock()
	return nil
}

// session returns the signed-in session of r.
func (c *console) session(r *http.Request) (*session, string) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || len(ck.Value) != 43 {
		return nil, ""
	}
	ss, ok := c.sessions.get(r.Context(), ck.Value)
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
