package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Keys of the policy tests.
const (
	ulAdmin  = "gw-ul-admin-ws1"  // key-ul-admin, admin of ws-1
	ulMember = "gw-ul-member-ws1" // key-ul-member, member of ws-1
	ulAdmin2 = "gw-ul-admin-ws2"  // key-ul-admin2, admin of ws-2
	ulReader = "gw-ul-reader-ws1" // key-ul-reader, policies.read and completions.write
)

// ulEnv is a gateway (with rate-limits policies) over real HTTP in front of a fake provider whose
// answers report usage tokens each, with an error log and an
// audit log the test reads.
type ulEnv struct {
	t     *testing.T
	store *MemoryStore
	gw    *Gateway
	srv   *httptest.Server
	up    *httptest.Server
	logs  *LogBuffer

	usage atomic.Int64 // total tokens each answer reports

	// hold, when not nil, is received from before the provider answers.
	hold    chan struct{}
	arrived atomic.Int64

	errMu  sync.Mutex
	errLog bytes.Buffer
}

func newULEnv(t *testing.T, mod func(*Options)) *ulEnv {
	t.Helper()
	e := &ulEnv{t: t, store: &MemoryStore{}, logs: &LogBuffer{}}
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
	st.AddAPIKey(APIKey{ID: "key-ul-admin", Digest: HashAPIKey(ulAdmin), WorkspaceID: "ws-1", Role: RoleAdmin})
	st.AddAPIKey(APIKey{ID: "key-ul-member", Digest: HashAPIKey(ulMember), WorkspaceID: "ws-1", Role: RoleMember})
	st.AddAPIKey(APIKey{ID: "key-ul-admin2", Digest: HashAPIKey(ulAdmin2), WorkspaceID: "ws-2", Role: RoleAdmin})
	st.AddAPIKey(APIKey{ID: "key-ul-reader", Digest: HashAPIKey(ulReader), WorkspaceID: "ws-1",
		Scopes: []Scope{ScopePoliciesRead, ScopeCompletionsWrite}})
	for _, ws := range []string{"ws-1", "ws-2"} {
		st.AddVirtualKey(VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk-stored", BaseURL: e.up.URL + "/v1", WorkspaceID: ws})
	}
	opts := Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st,
		Workspaces: st, Audit: st, LogSink: e.logs,
		ErrorLog: slog.New(slog.NewTextHandler(lockedWriter{&e.errMu, &e.errLog}, nil))}
	if mod != nil {
		mod(&opts)
	}
	e.gw = New(opts)
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
	req.Header.Set(HeaderAPIKey, key)
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

// complete sends a chat completion with key through the virtual key,
// asking for maxTokens, and returns the status and body.
func (e *ulEnv) complete(key string, maxTokens int, headers ...string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","max_tokens":`+strconv.Itoa(maxTokens)+`,"messages":[]}`))
	req.Header.Set(HeaderAPIKey, key)
	req.Header.Set(HeaderVirtualKey, "vk-up")
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
