package budget_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// Keys of the usage-limits tests.
const (
	ulAdmin  = "gw-ul-admin-ws1"  // key-ul-admin, admin of ws-1
	ulMember = "gw-ul-member-ws1" // key-ul-member, member of ws-1
	ulAdmin2 = "gw-ul-admin-ws2"  // key-ul-admin2, admin of ws-2
	ulReader = "gw-ul-reader-ws1" // key-ul-reader, policies.read and completions.write
)

// ulEnv is a gateway over real HTTP in front of a fake provider whose
// answers report usage tokens each, with a clock the test sets and an
// error log and an audit log the test reads.
type ulEnv struct {
	t     *testing.T
	store *memstore.Store
	gw    *gateway.Gateway
	srv   *httptest.Server
	up    *httptest.Server
	logs  *gateway.LogBuffer

	usage atomic.Int64 // total tokens each answer reports
	clock atomic.Int64 // the gateway's time, in Unix nanoseconds; 0: time.Now

	// hold, when not nil, is received from before the provider answers.
	hold    chan struct{}
	arrived atomic.Int64

	errMu  sync.Mutex
	errLog bytes.Buffer
}

// newULEnv wires the budgets as a host does: a budget.Stage over the
// memory store (counted by counter; nil: its own MemoryCounter), first
// of the gateway's admissions, its routes mounted and audited. mod, when
// not nil, changes the budget's options first.
func newULEnv(t *testing.T, counter budget.Counter, mod func(*budget.Options)) *ulEnv {
	t.Helper()
	e := &ulEnv{t: t, store: memstore.New(), logs: &gateway.LogBuffer{}}
	e.usage.Store(40)
	e.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		e.arrived.Add(1)
		if e.hold != nil {
			<-e.hold
		}
		n := e.usage.Load()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"object":"list","data":[]}`) // no usage
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":`+
			strconv.FormatInt(n/2, 10)+`,"completion_tokens":`+strconv.FormatInt(n-n/2, 10)+`,"total_tokens":`+strconv.FormatInt(n, 10)+`}}`)
	}))
	t.Cleanup(e.up.Close)
	st := e.store
	st.AddAPIKey(gateway.APIKey{ID: "key-ul-admin", Digest: gateway.HashAPIKey(ulAdmin), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "key-ul-member", Digest: gateway.HashAPIKey(ulMember), WorkspaceID: "ws-1", Role: gateway.RoleMember})
	st.AddAPIKey(gateway.APIKey{ID: "key-ul-admin2", Digest: gateway.HashAPIKey(ulAdmin2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	st.AddAPIKey(gateway.APIKey{ID: "key-ul-reader", Digest: gateway.HashAPIKey(ulReader), WorkspaceID: "ws-1",
		Scopes: []gateway.Scope{gateway.ScopePoliciesRead, gateway.ScopeCompletionsWrite}})
	for _, ws := range []string{"ws-1", "ws-2"} {
		st.AddVirtualKey(gateway.VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk-stored", BaseURL: e.up.URL + "/v1", WorkspaceID: ws})
	}
	errLog := slog.New(slog.NewTextHandler(lockedWriter{&e.errMu, &e.errLog}, nil))
	bopts := budget.Options{Store: st, Counter: counter, Workspaces: st, Audit: st, ErrorLog: errLog,
		Now: func() time.Time {
			if n := e.clock.Load(); n != 0 {
				return time.Unix(0, n).UTC()
			}
			return time.Now()
		}}
	if mod != nil {
		mod(&bopts)
	}
	b := budget.New(bopts)
	e.gw = gateway.New(gateway.Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st,
		LogSink: e.logs, ErrorLog: errLog, Prices: bopts.Prices, Admissions: []gateway.Admission{b}})
	b.Mount(e.gw, &observe.Auditor{Store: st, ErrorLog: errLog})
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(func() { e.srv.Close(); e.gw.Close() })
	return e
}

// lockedWriter serialises writes to a buffer the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// errors returns what the error log holds.
func (e *ulEnv) errors() string {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.errLog.String()
}

// setTime sets the gateway's clock.
func (e *ulEnv) setTime(t time.Time) { e.clock.Store(t.UnixNano()) }

// call sends a request with key and headers ("Name: value") and returns
// the status and body.
func (e *ulEnv) call(key, method, path, body string, headers ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(gateway.HeaderAPIKey, key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, b
}

// want sends a request that must answer status, and decodes its body
// into v (when not nil).
func (e *ulEnv) want(status int, key, method, path, body string, v any) {
	e.t.Helper()
	got, b := e.call(key, method, path, body)
	if got != status {
		e.t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, got, status, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// create makes a usage-limits policy of ws-1 and returns its id.
func (e *ulEnv) create(body string) string {
	e.t.Helper()
	var c struct{ ID, Object string }
	e.want(200, ulAdmin, "POST", "/v1/policies/usage-limits", body, &c)
	if c.Object != "policy_usage_limits" || !uuidRE.MatchString(c.ID) {
		e.t.Fatalf("create answered %+v", c)
	}
	return c.ID
}

// complete sends a chat completion with key through the virtual key,
// asking for maxTokens, and returns the status and body.
func (e *ulEnv) complete(key string, maxTokens int, headers ...string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","max_tokens":`+strconv.Itoa(maxTokens)+`,"messages":[]}`))
	req.Header.Set(gateway.HeaderAPIKey, key)
	req.Header.Set(gateway.HeaderVirtualKey, "vk-up")
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Error(err)
		return 0, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// usageEntity is an entity of a policy as the entities list shows it.
type usageEntity struct {
	ID       string `json:"id"`
	ValueKey string `json:"value_key"`
	budget.EntityUsage
}

// uuidRE matches a UUID.
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// entities lists the entities of policy pid.
func (e *ulEnv) entities(pid, query string) []usageEntity {
	e.t.Helper()
	var l struct {
		Object string
		Data   []usageEntity
		Total  int
	}
	e.want(200, ulAdmin, "GET", "/v1/policies/usage-limits/"+pid+"/entities"+query, "", &l)
	if l.Object != "list" || l.Total < len(l.Data) {
		e.t.Fatalf("entities list %+v", l)
	}
	return l.Data
}

// usageOf returns the current usage of entity valueKey of pid, and its
// status ("" when it has none).
func (e *ulEnv) usageOf(pid, valueKey string) (float64, string) {
	e.t.Helper()
	for _, en := range e.entities(pid, "") {
		if en.ValueKey == valueKey {
			return en.CurrentUsage, en.Status
		}
	}
	return 0, ""
}
