package users_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/users"
)

// The gateway API keys of the harness: an organisation admin key, an
// organisation key of completions only, and the admin of workspace ws-1.
const (
	keyOrg       = "gw-org-admin"
	keyOrgMember = "gw-org-member"
	keyWSAdmin   = "gw-ws1-admin"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a gateway over real HTTP with the users routes mounted on a
// memstore (workspaces ws-1 and ws-2), audited, its keys found through
// users.Keys.
type env struct {
	t     testing.TB
	store *memstore.Store
	srv   *httptest.Server
	clock *clock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), clock: &clock{t: time.Now().UTC()}}
	for _, k := range []gateway.APIKey{
		{ID: "key-org", Digest: gateway.HashAPIKey(keyOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin},
		{ID: "key-org-member", Digest: gateway.HashAPIKey(keyOrgMember), Type: gateway.KeyOrganisation, Role: gateway.RoleMember},
		{ID: "key-ws1", Digest: gateway.HashAPIKey(keyWSAdmin), WorkspaceID: "ws-1", Role: gateway.RoleAdmin},
	} {
		e.store.AddAPIKey(k)
	}
	for _, ws := range []string{"ws-1", "ws-2"} {
		if err := e.store.CreateWorkspace(context.Background(), &gateway.Workspace{ID: ws, Name: ws}); err != nil {
			t.Fatal(err)
		}
	}
	g := gateway.New(gateway.Options{Keys: users.Keys(e.store, e.store)})
	users.Mount(g, users.Options{Store: e.store, Workspaces: e.store, Audit: &observe.Auditor{Store: e.store},
		PublicURL: "https://gw.example.com/", Now: e.clock.now})
	e.srv = httptest.NewServer(g)
	t.Cleanup(func() { e.srv.Close(); g.Close() })
	return e
}

// do sends method path with body (JSON-encoded) as key, and returns the
// response with its body read.
func (e *env) do(key, method, path string, body any) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		if s, ok := body.(string); ok {
			b = []byte(s)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+"/v1"+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(gateway.HeaderAPIKey, key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

// ok sends a request that must answer 200 and decodes its answer into
// out (unless nil).
func (e *env) ok(key, method, path string, body, out any) {
	e.t.Helper()
	resp, b := e.do(key, method, path, body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// apiErr is an OpenAI-shaped error answer.
type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// fails sends a request that must fail with status, naming param, and
// returns its error.
func (e *env) fails(key, method, path string, body any, status int, param string) apiErr {
	e.t.Helper()
	resp, b := e.do(key, method, path, body)
	var ae apiErr
	if resp.StatusCode != status || json.Unmarshal(b, &ae) != nil || ae.Error.Message == "" {
		e.t.Fatalf("%s %s: %d %s, want %d with an error", method, path, resp.StatusCode, b, status)
	}
	got := ""
	if ae.Error.Param != nil {
		got = *ae.Error.Param
	}
	if got != param {
		e.t.Errorf("%s %s: param %q, want %q (%s)", method, path, got, param, b)
	}
	return ae
}

// invite creates an invite of email with role and grants as keyOrg,
// and returns its id and token.
func (e *env) invite(email string, role users.Role, grants ...map[string]string) (id, token string) {
	e.t.Helper()
	if grants == nil {
		grants = []map[string]string{}
	}
	var got struct {
		ID         string `json:"id"`
		InviteLink string `json:"invite_link"`
	}
	e.ok(keyOrg, "POST", "/admin/users/invites", map[string]any{"email": email, "role": role, "workspaces": grants}, &got)
	const pre = "https://gw.example.com/console/invite/"
	if !strings.HasPrefix(got.InviteLink, pre) || got.ID == "" {
		e.t.Fatalf("the invite's answer: %+v", got)
	}
	return got.ID, strings.TrimPrefix(got.InviteLink, pre)
}

// person accepts an invite of email with role and grants and returns
// the user made.
func (e *env) person(email string, role users.Role, grants ...map[string]string) *users.User {
	e.t.Helper()
	_, token := e.invite(email, role, grants...)
	u, err := users.Accept(context.Background(), e.store, token, "First", "Last", "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA", e.clock.now())
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// session returns the key of a console session of u.
func (e *env) session(u *users.User) string {
	e.t.Helper()
	key, err := users.NewSessionKey(context.Background(), e.store, u, e.clock.now(), time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return key
}
