package observe_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// coreKey is the gateway API key of the harness's member key; coreAdminKey
// that of its admin key.
const (
	coreKey      = "gw-core-test-key"
	coreAdminKey = "gw-core-admin-key"
)

// coreUpstream is a loopback fake provider that records what it received.
type coreUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []coreReceived
}

type coreReceived struct {
	Method, Path, RawPath, Query string
	Header                       http.Header
	Body                         string
}

func newCoreUpstream(t *testing.T, h http.HandlerFunc) *coreUpstream {
	t.Helper()
	u := &coreUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, coreReceived{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), string(b)})
		u.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(u.Close)
	return u
}

// Options are the gateway's options and those of the observability
// routes the harness mounts on it: Logs also reaches the gateway's
// LogSinks through observe.Sink, Audit is the Auditor's store, and
// Workspaces serves admin's workspaces routes.
type Options struct {
	gateway.Options
	Audit         observe.AuditStore
	Workspaces    admin.WorkspaceStore
	Logs          observe.Store
	Feedback      observe.FeedbackStore
	LogExports    observe.ExportStore
	PublicURL     string
	URLSigningKey []byte
}

// coreEnv is a gateway with the observability routes over real HTTP, with
// a store holding two keys and a virtual key "vk-up" pointing at up.
type coreEnv struct {
	t      *testing.T
	store  *memstore.Store
	gw     *gateway.Gateway
	routes *observe.Routes
	srv    *httptest.Server
	up     *coreUpstream
	logs   *gateway.LogBuffer
	now    func() time.Time // the routes' clock; nil: time.Now
}

func newCoreEnv(t *testing.T, up *coreUpstream, mod func(*Options)) *coreEnv {
	t.Helper()
	e := &coreEnv{t: t, store: memstore.New(), up: up, logs: &gateway.LogBuffer{}}
	e.store.AddAPIKey(gateway.APIKey{ID: "key-member", Digest: gateway.HashAPIKey(coreKey), WorkspaceID: "ws-1", Role: gateway.RoleMember})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey(coreAdminKey), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	if up != nil {
		e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk-stored-secret", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	}
	opts := Options{Options: gateway.Options{Keys: e.store, VirtualKeys: e.store, Configs: e.store, Policies: e.store, LogSink: e.logs,
		CustomHostAllow: []string{"127.0.0.1"}}}
	if mod != nil {
		mod(&opts)
	}
	if opts.Logs != nil {
		opts.LogSinks = append(opts.LogSinks, observe.Sink(opts.Logs))
	}
	e.gw = gateway.New(opts.Options)
	// The administration routes, whose writes the audit log records.
	ao := admin.Options{Now: e.clock}
	ao.Keys, _ = opts.Keys.(admin.KeyStore)
	ao.VirtualKeys, _ = opts.VirtualKeys.(admin.VirtualKeyStore)
	ao.Configs, _ = opts.Configs.(admin.ConfigStore)
	ao.Workspaces = opts.Workspaces
	ao.Policies, _ = opts.Policies.(admin.PolicyStore)
	if opts.Audit != nil {
		ao.Audit = &observe.Auditor{Store: opts.Audit, Now: e.clock}
	}
	admin.Mount(e.gw, ao)
	e.routes = observe.Mount(e.gw, observe.Options{Logs: opts.Logs, Feedback: opts.Feedback, Exports: opts.LogExports,
		Audit: &observe.Auditor{Store: opts.Audit}, PublicURL: opts.PublicURL, URLSigningKey: opts.URLSigningKey, Now: e.clock})
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(func() { e.srv.Close(); e.routes.Close(); e.gw.Close() })
	return e
}

// clock is the routes' clock: e.now when set, which a test sets before
// the requests it governs.
func (e *coreEnv) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// do sends a request with the given headers ("Name: value" pairs).
func (e *coreEnv) do(method, path string, body io.Reader, headers ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { res.Body.Close() })
	return res
}

// coreErrBody is the decoded OpenAI error body.
type coreErrBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// decodeError reads an OpenAI-shaped error body, failing the test if any of
// the four keys is missing.
func decodeError(t *testing.T, res *http.Response) coreErrBody {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("error body %q is not JSON: %v", b, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Fatalf("error body %s lacks key %q", b, k)
		}
	}
	var eb coreErrBody
	json.Unmarshal(b, &eb)
	return eb
}

// cp sends a control-plane request with key and returns its status and
// body; headers are extra "Name: value" pairs.
func cp(e *coreEnv, key, method, path, body string, headers ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	res := e.do(method, path, rd, append([]string{gateway.HeaderAPIKey + ": " + key}, headers...)...)
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, b
}

type auditWireT struct {
	Timestamp    time.Time `json:"timestamp"`
	Method       string    `json:"method"`
	URI          string    `json:"uri"`
	RequestID    string    `json:"request_id"`
	UserID       string    `json:"user_id"`
	UserType     string    `json:"user_type"`
	APIKeyID     string    `json:"api_key_id"`
	WorkspaceID  string    `json:"workspace_id"`
	Status       int       `json:"response_status_code"`
	ResourceType string    `json:"resource_type"`
	ResourceID   string    `json:"resource_id"`
	Action       string    `json:"action"`
	ClientIP     string    `json:"client_ip"`
	Detail       string    `json:"detail"`
}

type auditListT struct {
	Object  string       `json:"object"`
	Records []auditWireT `json:"records"`
	Total   int          `json:"total"`
}

// auditLogs reads GET /audit-logs with key and query.
func auditLogs(e *coreEnv, key, query string) (auditListT, string) {
	e.t.Helper()
	status, b := cp(e, key, "GET", "/v1/audit-logs"+query, "")
	if status != 200 {
		e.t.Fatalf("GET /v1/audit-logs%s = %d %s", query, status, b)
	}
	var l auditListT
	if err := json.Unmarshal(b, &l); err != nil {
		e.t.Fatal(err)
	}
	if l.Object != "list" || l.Records == nil {
		e.t.Fatalf("audit list %s has no object list or records", b)
	}
	return l, string(b)
}

func (u *coreUpstream) received() []coreReceived {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]coreReceived(nil), u.reqs...)
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}
