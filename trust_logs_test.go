package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The request-log rules of DESIGN §14.

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
	e := newCoreEnv(t, up, func(o *Options) { o.Logs = o.Keys.(*MemoryStore) })
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-down", Provider: "openai", APIKey: "sk-down", BaseURL: "http://127.0.0.1:1/v1", WorkspaceID: "ws-1"})
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
		{"no config", "POST", "/v1/chat/completions", `{"model":"a"}`, []string{HeaderVirtualKey + ": vk-up"}, "DISABLED"},
		{"miss", "POST", "/v1/chat/completions", `{"model":"b"}`, []string{HeaderConfig + ": " + cached}, "MISS"},
		{"hit", "POST", "/v1/chat/completions", `{"model":"b"}`, []string{HeaderConfig + ": " + cached}, "HIT"},
		{"refresh", "POST", "/v1/chat/completions", `{"model":"b"}`, []string{HeaderConfig + ": " + cached, HeaderCacheForceRefresh + ": true"}, "REFRESH"},
		{"stream miss", "POST", "/v1/chat/completions", `{"model":"c","stream":true}`, []string{HeaderConfig + ": " + cached}, "MISS"},
		{"stream hit", "POST", "/v1/chat/completions", `{"model":"c","stream":true}`, []string{HeaderConfig + ": " + cached}, "HIT"},
		{"provider error", "POST", "/v1/chat/completions", `{"model":"fail500"}`, []string{HeaderConfig + ": " + cached}, "MISS"},
		{"unreachable", "POST", "/v1/chat/completions", `{"model":"d"}`, []string{HeaderConfig + ": " + down}, ""},
		{"fallback to an uncached target", "POST", "/v1/chat/completions", `{"model":"e"}`, []string{HeaderConfig + ": " + fallback}, "DISABLED"},
		{"pass-through", "GET", "/v1/models", "", []string{HeaderVirtualKey + ": vk-up"}, "DISABLED"},
		{"unknown virtual key", "POST", "/v1/chat/completions", `{"model":"f"}`, []string{HeaderVirtualKey + ": nope"}, ""},
	}
	for i, s := range steps {
		h := append([]string{HeaderAPIKey + ": " + coreKey, "Content-Type: application/json", HeaderTraceID + ": cache-" + fmt.Sprint(i)}, s.headers...)
		var body io.Reader
		if s.body != "" {
			body = strings.NewReader(s.body)
		}
		res := e.do(s.method, s.path, body, h...)
		io.Copy(io.Discard, res.Body)
		if got := res.Header.Get(HeaderCacheStatus); got != s.want {
			t.Errorf("%s: the caller got %s %q, want %q", s.name, HeaderCacheStatus, got, s.want)
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
