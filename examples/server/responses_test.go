package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunResponsesStored: over real HTTP through the server, a Responses
// request to a chat target is answered and kept, so that
// previous_response_id and GET /v1/responses/{id} work, in memory and in
// a database that survives a restart; a Messages request to the same
// target is answered as Messages.
func TestRunResponsesStored(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(apiKeyEnv, "")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "gateway.json", fmt.Sprintf(`{"api_keys": [{"id": "key-ws", "key": "gw-resp", "workspace_id": "ws-1", "role": "member"}],
		"virtual_keys": [{"slug": "chat", "provider": "groq", "api_key": "sk-up", "base_url": %q, "workspace_id": "ws-1"}]}`, up.URL))
	hdr := map[string]string{"x-gateway-api-key": "gw-resp", "x-gateway-virtual-key": "chat", "Content-Type": "application/json"}
	for _, db := range []string{":memory:", filepath.Join(dir, "gw.db")} {
		t.Run(filepath.Base(db), func(t *testing.T) {
			r := startRun(t, "-db", db, "-config", cfg)
			res := call(t, "POST", r.base+"/v1/responses", `{"model":"m","input":"hello"}`, hdr)
			body := readAll(t, res)
			var resp struct{ ID string }
			if err := json.Unmarshal([]byte(body), &resp); res.StatusCode != 200 || err != nil || resp.ID == "" {
				t.Fatalf("POST /v1/responses: %d %s", res.StatusCode, body)
			}
			res = call(t, "POST", r.base+"/v1/responses", `{"model":"m","input":"again","previous_response_id":"`+resp.ID+`"}`, hdr)
			if b := readAll(t, res); res.StatusCode != 200 {
				t.Fatalf("previous_response_id: %d %s", res.StatusCode, b)
			}
			res = call(t, "POST", r.base+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, hdr)
			if b := readAll(t, res); res.StatusCode != 200 || !strings.Contains(b, `"type":"message"`) {
				t.Errorf("POST /v1/messages: %d %s", res.StatusCode, b)
			}
			if db != ":memory:" {
				r.stop(t)
				r = startRun(t, "-db", db, "-config", cfg)
			}
			res = call(t, "GET", r.base+"/v1/responses/"+resp.ID, "", hdr)
			if b := readAll(t, res); res.StatusCode != 200 || b != body {
				t.Errorf("GET /v1/responses/%s: %d %s, want %s", resp.ID, res.StatusCode, b, body)
			}
			r.stop(t)
		})
	}
}
