package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMessagesQueryNotTranslated: Claude Code's /v1/messages?beta=true
// keeps its query to an anthropic target (see
// TestMessagesToAnthropicUnchanged), but a target the request is
// translated for, to chat or natively, never sees it: the query is of
// the Messages API, not of the one the target is called with. The same
// holds for a Responses request.
func TestMessagesQueryNotTranslated(t *testing.T) {
	e, _ := protoEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(r.URL.Path, ":generateContent"):
			io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1,"totalTokenCount":5}}`)
		case strings.HasSuffix(r.URL.Path, ":rawPredict"):
			io.WriteString(w, `{"id":"msg_v","type":"message","content":[]}`)
		default:
			io.WriteString(w, chatAnswer)
		}
	})
	for _, c := range []struct{ name, path, vk, body string }{
		{"messages to chat", "/v1/messages?beta=true", "vk-oai", claudeCodeBody},
		{"messages to gemini", "/v1/messages?beta=true", "vk-gem", strings.Replace(claudeCodeBody, "claude-sonnet-4-5", "gemini-2.5-pro", 1)},
		{"messages to vertex claude", "/v1/messages?beta=true", "vk-vtx", strings.Replace(claudeCodeBody, "claude-sonnet-4-5", "claude-sonnet-4-5@20250929", 1)},
		{"responses to chat", "/v1/responses?beta=true", "vk-deep", `{"model":"deepseek-chat","input":"hi","store":false}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := len(e.up.received())
			res := e.do("POST", c.path, strings.NewReader(c.body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: "+c.vk)
			if b := bodyOf(t, res); res.StatusCode != 200 {
				t.Fatalf("got %d %s", res.StatusCode, b)
			}
			rec := e.up.received()
			if len(rec) != n+1 {
				t.Fatalf("%d calls", len(rec)-n)
			}
			if r := rec[n]; strings.Contains(r.Query, "beta") {
				t.Errorf("sent %s?%s: want the caller's query left out", r.Path, r.Query)
			}
		})
	}
}
