package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/users"
)

// withPeople, as Options.Users of newEnv, stands for the env's own store:
// people may sign in, and the users made from invites are audited there.
var withPeople users.Store = new(memstore.Store)

// Keys of the test gateway: an organisation admin, an admin of each of
// two workspaces, and a member (completions.write only) of ws-1.
const (
	orgKey    = "gw-console-org"
	ws1Key    = "gw-console-ws1"
	ws2Key    = "gw-console-ws2"
	memberKey = "gw-console-member"
)

// clock is a time source for Options.Now that tests move ahead of the
// real time.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// env is a real gateway on a memstore.Store with the console mounted at
// /console/, served over HTTP.
type env struct {
	t     *testing.T
	store *memstore.Store
	gw    *gateway.Gateway
	srv   *httptest.Server
	clock *clock
	up    *gatewaytest.Server

	console *console
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	return newEnvServer(t, opts, httptest.NewServer)
}

func newEnvServer(t *testing.T, opts Options, start func(http.Handler) *httptest.Server) *env {
	t.Helper()
	up := gatewaytest.NewServer()
	t.Cleanup(up.Close)
	st := memstore.New()
	st.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(orgKey), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin, Name: "org admin"})
	st.AddAPIKey(gateway.APIKey{ID: "key-ws1", Digest: gateway.HashAPIKey(ws1Key), WorkspaceID: "ws-1", Role: gateway.RoleAdmin, Name: "ws-1 admin"})
	st.AddAPIKey(gateway.APIKey{ID: "key-ws2", Digest: gateway.HashAPIKey(ws2Key), WorkspaceID: "ws-2", Role: gateway.RoleAdmin, Name: "ws-2 admin"})
	st.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(memberKey), WorkspaceID: "ws-1", Role: gateway.RoleMember, Name: "ws-1 member"})
	st.AddVirtualKey(gateway.VirtualKey{Slug: "vk-1", Provider: "openai", APIKey: "sk-upstream-secret-1", BaseURL: up.URL, WorkspaceID: "ws-1"})
	st.AddVirtualKey(gateway.VirtualKey{Slug: "vk-2", Provider: "openai", APIKey: "sk-upstream-secret-2", BaseURL: up.URL, WorkspaceID: "ws-2"})
	var o gateway.Options
	o.Keys, o.VirtualKeys, o.Configs, o.Policies, o.Workspaces = users.Keys(st, st), st, st, st, st
	if opts.Users == withPeople {
		opts.Users, opts.Audit = st, st
	}
	o.LogSinks = []gateway.LogSink{observe.Sink(st)}
	ob := observe.Options{Logs: st, Audit: &observe.Auditor{Store: st}}
	u, _ := url.Parse(up.URL)
	o.CustomHostAllow = []string{u.Host}
	mount := setOptionalStores(&o, &ob, st)
	hooks := &guardrail.Hooks{Store: st, Auditor: &observe.Auditor{Store: st}}
	o.Hooks = hooks
	g := gateway.New(o)
	mount(g)
	hooks.Mount(g)
	admin.Mount(g, admin.Options{Keys: st, VirtualKeys: st, Configs: st, Workspaces: st, Policies: st,
		Guardrails: hooks, Audit: &observe.Auditor{Store: st}})
	catalog.Mount(g, catalog.Options{Store: st, VirtualKeys: st, Workspaces: st, Policies: st, Budgets: st,
		Audit: &observe.Auditor{Store: st}})
	users.Mount(g, users.Options{Store: st, Audit: &observe.Auditor{Store: st}})
	routes := observe.Mount(g, ob)
	t.Cleanup(func() { routes.Close(); g.Close() })
	ck := &clock{}
	if opts.Now == nil {
		opts.Now = ck.now
	}
	mux := http.NewServeMux()
	con := New(g, opts).(*console)
	// Every page a test renders is also rendered by html/template and
	// compared (htmlparity_test.go).
	parity := withParity(t, con.pages())
	con.pages = func() map[string]pageTemplate { return parity }
	mux.Handle("/console/", con)
	mux.Handle("/", g)
	srv := start(mux)
	t.Cleanup(srv.Close)
	return &env{t: t, store: st, gw: g, srv: srv, clock: ck, up: up, console: con}
}

// traffic sends n chat completions as key through virtual key vk, with
// trace ids trace-0 … and metadata team=t0 …, and waits for their logs.
func (e *env) traffic(key, vk, tracePrefix string, n int) {
	e.t.Helper()
	before := e.logCount()
	for i := range n {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello `+fmt.Sprint(i)+`"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.HeaderAPIKey, key)
		req.Header.Set(gateway.HeaderVirtualKey, vk)
		req.Header.Set(gateway.HeaderTraceID, fmt.Sprintf("%s-%d", tracePrefix, i))
		req.Header.Set(gateway.HeaderMetadata, fmt.Sprintf(`{"team":"t%d"}`, i%2))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			e.t.Fatalf("completion %d: %d", i, res.StatusCode)
		}
	}
	e.waitLogs(before + n)
}

// waitLogs waits until the store holds n request logs: they are stored
// by the gateway's queue, after the answer.
func (e *env) waitLogs(n int) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.logCount() < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d logs stored, want %d", e.logCount(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) logCount() int {
	recs, _ := e.store.Logs(context.Background(), &observe.Query{})
	return len(recs)
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	e   *env
	c   *http.Client
	jar *cookiejar.Jar
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := *e.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{e: e, c: &c, jar: jar}
}

// page is an answer the browser got.
type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.e.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, string(data)}
}

func (b *browser) get(path string) page { return b.do("GET", path, nil) }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the forms of p.
func csrf(p page) string {
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return m[1]
}

// post sends form to path with the CSRF token of the page at from.
func (b *browser) post(from, path string, form url.Values) page {
	b.e.t.Helper()
	p := b.get(from)
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrf(p))
	return b.do("POST", path, form)
}

// signIn signs in with key and returns the answer to the form.
func (b *browser) signIn(key string) page {
	b.e.t.Helper()
	return b.post("/console/signin", "/console/signin", url.Values{"key": {key}})
}

// signedIn returns a browser signed in with key.
func (e *env) signedIn(key string) *browser {
	e.t.Helper()
	b := e.browser()
	if p := b.signIn(key); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
		e.t.Fatalf("sign-in with %s: %d %s", key, p.status, p.body)
	}
	return b
}

// api calls the gateway's API with key and returns the status and body.
func (e *env) api(key, method, path string, body string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+"/v1"+path, strings.NewReader(body))
	req.Header.Set(gateway.HeaderAPIKey, key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}
