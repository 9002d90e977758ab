package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
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

func (u *coreUpstream) received() []coreReceived {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]coreReceived(nil), u.reqs...)
}

// coreEnv is a gateway over real HTTP with a store holding two keys and a
// virtual key "vk-up" pointing at up.
type coreEnv struct {
	t     *testing.T
	store *testStore
	gw    *Gateway
	srv   *httptest.Server
	up    *coreUpstream
	logs  *LogBuffer
}

func newCoreEnv(t *testing.T, up *coreUpstream, mod func(*Options)) *coreEnv {
	t.Helper()
	e := &coreEnv{t: t, store: &testStore{}, up: up, logs: &LogBuffer{}}
	e.store.AddAPIKey(APIKey{ID: "key-member", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1", Role: RoleMember})
	e.store.AddAPIKey(APIKey{ID: "key-admin", Digest: HashAPIKey(coreAdminKey), WorkspaceID: "ws-1", Role: RoleAdmin})
	if up != nil {
		e.store.AddVirtualKey(VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk-stored-secret", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	}
	opts := Options{Keys: e.store, VirtualKeys: e.store, Configs: e.store, Policies: e.store, LogSink: e.logs,
		CustomHostAllow: []string{"127.0.0.1"}}
	if mod != nil {
		mod(&opts)
	}
	e.gw = New(opts)
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(func() { e.srv.Close(); e.gw.Close() })
	return e
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
	var e coreErrBody
	json.Unmarshal(b, &e)
	return e
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}
