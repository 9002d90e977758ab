package observe_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// The request-log rules of the trust model: requests that fail authentication
// are counted, not logged; records carry the cache status the caller saw.
// (Kept bodies lose the credentials the gateway injected: logbodies_test.go;
// only WebSocket upgrades pass: upgrade_test.go.)

// TestUnauthenticatedNotLogged: requests with no key, an unknown key or an
// expired one reach neither the Store (GET /logs, which the analytics
// read too) nor the LogSink; AuthFailures counts them by what the caller was told.
func TestUnauthenticatedNotLogged(t *testing.T) {
	e := newLogsEnv(t)
	e.store.AddAPIKey(gateway.APIKey{ID: "key-expired", Digest: gateway.HashAPIKey("gw-expired-key"), WorkspaceID: "ws-1",
		ExpiresAt: time.Now().Add(-time.Minute)})
	chat := `{"model":"gpt-4o","messages":[]}`
	for _, c := range []struct {
		name   string
		header []string
		code   string
	}{
		{"no key", nil, gateway.CodeMissingAPIKey},
		{"unknown key", []string{gateway.HeaderAPIKey + ": gw-nobody"}, gateway.CodeInvalidAPIKey},
		{"expired key", []string{gateway.HeaderAPIKey + ": gw-expired-key"}, gateway.CodeInvalidAPIKey},
		{"two keys", []string{gateway.HeaderAPIKey + ": " + coreKey, gateway.HeaderAPIKey + ": " + coreKey}, gateway.CodeInvalidAPIKey},
	} {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(chat), append(c.header, gateway.HeaderVirtualKey+": vk-up")...)
		if res.StatusCode != 401 || deref(decodeError(t, res).Error.Code) != c.code {
			t.Errorf("%s: %d, want 401 %s", c.name, res.StatusCode, c.code)
		}
	}
	res := e.do("GET", "/v1/logs", nil) // the control plane too
	if res.StatusCode != 401 {
		t.Errorf("GET /logs without a key: %d", res.StatusCode)
	}
	res = e.do("POST", "/v1/chat/completions", strings.NewReader(chat), gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": vk-up")
	if res.StatusCode != 200 {
		t.Fatalf("authenticated request: %d", res.StatusCode)
	}
	e.routes.Close()
	e.gw.Close() // every queued record reaches the store and the sink

	var l logsList
	if st, b := e.getJSON("gw-logs-org", "/v1/logs", &l); st != 200 {
		t.Fatalf("GET /logs: %d %s", st, b)
	}
	if len(l.Data) != 1 || l.Data[0].ResponseStatusCode != 200 || l.Data[0].APIKeyID != "key-member" {
		t.Errorf("stored records = %+v, want the authenticated request's alone", l.Data)
	}
	if recs := e.logs.Query(gateway.LogFilter{}); len(recs) != 1 || recs[0].Status != 200 {
		t.Errorf("the LogSink got %d records (%+v), want the authenticated request's alone", len(recs), recs)
	}
	if got, want := e.gw.AuthFailures(), (gateway.AuthFailures{Missing: 2, Invalid: 3}); got != want {
		t.Errorf("AuthFailures = %+v, want %+v", got, want)
	}
}

// TestUnauthenticatedFloodKeepsLogQueue: a flood of requests without a
// key while the Store stalls drops no record: they never enter the log
// queues, which stay free for the records of real requests.
func TestUnauthenticatedFloodKeepsLogQueue(t *testing.T) {
	st := &stallStore{Store: memstore.New(), release: make(chan struct{})}
	e := newCoreEnv(t, newCoreUpstream(t, nil), func(o *Options) { o.Logs = st; o.LogQueueSize = 4 })
	for i := range 40 {
		if res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), gateway.HeaderAPIKey+": gw-guess-"+fmt.Sprint(i)); res.StatusCode != 401 {
			t.Fatalf("request %d: %d, want 401", i, res.StatusCode)
		}
	}
	if d := e.gw.DroppedLogs(); d != 0 {
		t.Errorf("DroppedLogs = %d after a flood of unauthenticated requests, want 0", d)
	}
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": vk-up")
	if res.StatusCode != 200 {
		t.Fatalf("authenticated request: %d", res.StatusCode)
	}
	close(st.release)
	e.routes.Close()
	e.gw.Close()
	recs, _ := st.Logs(context.Background(), &observe.Query{})
	if len(recs) != 1 || recs[0].KeyID != "key-member" {
		t.Errorf("stored %d records, want the authenticated request's alone", len(recs))
	}
	if f := e.gw.AuthFailures(); f.Invalid != 40 {
		t.Errorf("AuthFailures = %+v, want 40 invalid", f)
	}
}

// TestLogCacheStatusAsSent: for every x-gateway-cache-status a caller
// gets (and for none), the stored record's cache_status, read back with
// GET /logs, is the same: DISABLED where no config asked for the cache,
// MISS, HIT and REFRESH, streamed or not, a provider's error, the
// gateway's own error, a fallback from a cached target to one without,
// and pass-through.
func TestLogCacheStatusAsSent(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), "fail500"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		case strings.Contains(string(b), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[]}`)
		}
	})
	e := newCoreEnv(t, up, func(o *Options) { o.Logs = o.Keys.(*memstore.Store) })
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-down", Provider: "openai", APIKey: "sk-down", BaseURL: "http://127.0.0.1:1/v1", WorkspaceID: "ws-1"})
	const (
		cached   = `{"virtual_key":"vk-up","cache":{"mode":"simple"}}`
		down     = `{"virtual_key":"vk-down","cache":{"mode":"simple"}}`
		fallback = `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-down","cache":{"mode":"simple"}},{"virtual_key":"vk-up"}]}`
	)
	steps := []struct {
		name, method, path, body string
		headers                  []string
		want                     string // the header the caller gets
	}{
		{"no config", "POST", "/v1/chat/completions", `{"model":"a"}`, []string{gateway.HeaderVirtualKey + ": vk-up"}, "DISABLED"},
		{"miss", "POST", "/v1/chat/completions", `{"model":"b"}`, []string{gateway.HeaderConfig + ": " + cached}, "MISS"},
		{"hit", "POST", "/v1/chat/completions", `{"model":"b"}`, []string{gateway.HeaderConfig + ": " + cached}, "HIT"},
		{"refresh", "POST", "/v1/chat/completions", `{"model":"b"}`, []string{gateway.HeaderConfig + ": " + cached, gateway.HeaderCacheForceRefresh + ": true"}, "REFRESH"},
		{"stream miss", "POST", "/v1/chat/completions", `{"model":"c","stream":true}`, []string{gateway.HeaderConfig + ": " + cached}, "MISS"},
		{"stream hit", "POST", "/v1/chat/completions", `{"model":"c","stream":true}`, []string{gateway.HeaderConfig + ": " + cached}, "HIT"},
		{"provider error", "POST", "/v1/chat/completions", `{"model":"fail500"}`, []string{gateway.HeaderConfig + ": " + cached}, "MISS"},
		{"unreachable", "POST", "/v1/chat/completions", `{"model":"d"}`, []string{gateway.HeaderConfig + ": " + down}, ""},
		{"fallback to an uncached target", "POST", "/v1/chat/completions", `{"model":"e"}`, []string{gateway.HeaderConfig + ": " + fallback}, "DISABLED"},
		{"pass-through", "GET", "/v1/models", "", []string{gateway.HeaderVirtualKey + ": vk-up"}, "DISABLED"},
		{"unknown virtual key", "POST", "/v1/chat/completions", `{"model":"f"}`, []string{gateway.HeaderVirtualKey + ": nope"}, ""},
	}
	for i, s := range steps {
		h := append([]string{gateway.HeaderAPIKey + ": " + coreKey, "Content-Type: application/json", gateway.HeaderTraceID + ": cache-" + fmt.Sprint(i)}, s.headers...)
		var body io.Reader
		if s.body != "" {
			body = strings.NewReader(s.body)
		}
		res := e.do(s.method, s.path, body, h...)
		io.Copy(io.Discard, res.Body)
		if got := res.Header.Get(gateway.HeaderCacheStatus); got != s.want {
			t.Errorf("%s: the caller got %s %q, want %q", s.name, gateway.HeaderCacheStatus, got, s.want)
		}
	}
	waitLogs(t, e.store, len(steps))
	for i, s := range steps {
		var l logsList
		if st, b := e.getJSON(coreAdminKey, "/v1/logs?trace_id=cache-"+fmt.Sprint(i), &l); st != 200 || len(l.Data) != 1 {
			t.Fatalf("%s: GET /logs: %d %s", s.name, st, b)
		}
		if got := string(l.Data[0].CacheStatus); got != s.want {
			t.Errorf("%s: the record's cache_status is %q, the caller got %q", s.name, got, s.want)
		}
	}
}
