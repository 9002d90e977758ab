package console

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// recordingSessions is a SessionStore that records the digests it was
// given, in front of the in-memory one.
type recordingSessions struct {
	*memorySessions
	mu      sync.Mutex
	digests [][sha256.Size]byte
}

func (r *recordingSessions) CreateConsoleSession(ctx context.Context, d [sha256.Size]byte, key, csrf string, expires time.Time) error {
	r.mu.Lock()
	r.digests = append(r.digests, d)
	r.mu.Unlock()
	return r.memorySessions.CreateConsoleSession(ctx, d, key, csrf, expires)
}

// TestSessionsShared: consoles sharing Options.Sessions (replicas) share
// sign-ins and sign-outs; the store is given the digest of the session
// id, never the id; consoles without it do not share (docs/architecture.md, Trust).
func TestSessionsShared(t *testing.T) {
	shared := &recordingSessions{memorySessions: newMemorySessions(10, time.Now)}
	e := newEnv(t, Options{Sessions: shared})
	replica := httptest.NewServer(New(e.gw, Options{Sessions: shared}))
	t.Cleanup(replica.Close)
	alone := httptest.NewServer(New(e.gw, Options{}))
	t.Cleanup(alone.Close)

	b := e.signedIn(ws1Key)
	u, _ := url.Parse(e.srv.URL + "/console/")
	var cookie *http.Cookie
	for _, ck := range b.jar.Cookies(u) {
		if ck.Name == sessionCookie {
			cookie = ck
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie")
	}
	shared.mu.Lock()
	digests := shared.digests
	shared.mu.Unlock()
	if len(digests) != 1 || digests[0] != sha256.Sum256([]byte(cookie.Value)) {
		t.Errorf("the store got %d digests, want the one of the session id", len(digests))
	}

	get := func(base string) int {
		req, _ := http.NewRequest("GET", base+"/console/logs", nil)
		req.AddCookie(cookie)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := get(replica.URL); st != http.StatusOK {
		t.Errorf("the session on a replica sharing the store: %d, want 200", st)
	}
	if st := get(alone.URL); st != http.StatusSeeOther {
		t.Errorf("the session on a console with its own sessions: %d, want 303 to the sign-in page", st)
	}
	if p := b.post("/console/logs", "/console/signout", nil); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	if st := get(replica.URL); st != http.StatusSeeOther {
		t.Errorf("the session on the replica after signing out: %d, want 303 to the sign-in page", st)
	}
}
