package bedrock_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway/bedrock"
)

// claudeChunk encodes one Messages event as InvokeModelWithResponseStream
// sends it: a chunk event whose bytes member is the event, base64.
func claudeChunk(ev string) []byte {
	p, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(ev))})
	return event("chunk", string(p))
}

const claudeBody = `{"model":"` + haiku + `","max_tokens":64,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],` +
	`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"Hi"}]}`

// TestMessagesClaudeInvoke: a Messages request for a Claude model goes to
// InvokeModel with the caller's body less its model, with Bedrock's
// anthropic_version, cache_control and thinking intact, signed; the
// answer comes back as Bedrock sent it.
func TestMessagesClaudeInvoke(t *testing.T) {
	const answer = `{"id":"msg_b","type":"message","role":"assistant","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`
	e, fb := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	})
	res, b := e.do(t, http.MethodPost, "/v1/messages", claudeBody, vkHeader, "bedrock-prod", "Content-Type", "application/json",
		"Anthropic-Beta", "interleaved-thinking-2025-05-14")
	if res.StatusCode != 200 || string(b) != answer {
		t.Fatalf("got %d %s", res.StatusCode, b)
	}
	n := fb.requests()[0]
	if n.Path != "/model/"+haiku+"/invoke" || n.Unsigned != "" {
		t.Errorf("Bedrock got %s (signature: %q)", n.Path, n.Unsigned)
	}
	var sent map[string]json.RawMessage
	json.Unmarshal([]byte(n.Body), &sent)
	if _, ok := sent["model"]; ok || string(sent["anthropic_version"]) != `"bedrock-2023-05-31"` ||
		string(sent["anthropic_beta"]) != `["interleaved-thinking-2025-05-14"]` ||
		string(sent["system"]) != `[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]` ||
		string(sent["thinking"]) != `{"type":"enabled","budget_tokens":1024}` {
		t.Errorf("body %s", n.Body)
	}
}

// TestMessagesClaudeStream: InvokeModelWithResponseStream's chunks come
// back as the Messages event stream, in order; an exception is an
// Anthropic error event.
func TestMessagesClaudeStream(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_s","usage":{"input_tokens":3,"output_tokens":0}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`,
		`{"type":"message_stop"}`,
	}
	var stream []byte
	for _, ev := range events {
		stream = append(stream, claudeChunk(ev)...)
	}
	e, fb := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Write(stream)
	})
	body := strings.Replace(claudeBody, `"max_tokens":64`, `"max_tokens":64,"stream":true`, 1)
	res, b := e.do(t, http.MethodPost, "/v1/messages", body, vkHeader, "bedrock-prod", "Content-Type", "application/json")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %s", res.StatusCode, b)
	}
	var want string
	for _, ev := range events {
		var typ struct{ Type string }
		json.Unmarshal([]byte(ev), &typ)
		want += "event: " + typ.Type + "\ndata: " + ev + "\n\n"
	}
	if d := cmp.Diff(want, string(b)); d != "" {
		t.Errorf("stream (-want +got):\n%s", d)
	}
	if n := fb.requests()[0]; n.Path != "/model/"+haiku+"/invoke-with-response-stream" || strings.Contains(n.Body, `"stream"`) {
		t.Errorf("Bedrock got %s %s", n.Path, n.Body)
	}

	e, _ = translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Write(claudeChunk(events[0]))
		w.Write(frame(`{"message":"too fast"}`, ":exception-type", "throttlingException", ":message-type", "exception"))
	})
	_, b = e.do(t, http.MethodPost, "/v1/messages", body, vkHeader, "bedrock-prod", "Content-Type", "application/json")
	if !strings.HasSuffix(string(b), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"too fast\"}}\n\n") {
		t.Errorf("exception: %s", b)
	}
}

// TestMessagesNonClaude: a Messages request for a model that is not
// Claude is translated to Converse, and the answer back to Messages.
func TestMessagesNonClaude(t *testing.T) {
	e, fb := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Hola"}]}},"stopReason":"end_turn","usage":{"inputTokens":2,"outputTokens":1,"totalTokens":3}}`))
	})
	res, b := e.do(t, http.MethodPost, "/v1/messages", `{"model":"amazon.nova-pro-v1:0","max_tokens":20,"messages":[{"role":"user","content":"Hi"}]}`,
		vkHeader, "bedrock-prod", "Content-Type", "application/json")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"type":"message"`) || !strings.Contains(string(b), `"text":"Hola"`) {
		t.Fatalf("got %d %s", res.StatusCode, b)
	}
	if n := fb.requests()[0]; n.Path != "/model/amazon.nova-pro-v1:0/converse" {
		t.Errorf("Bedrock got %s", n.Path)
	}
}

// FuzzClaudeStream: whatever InvokeModelWithResponseStream sends, the
// decoded stream either ends with message_stop or an error event, or
// fails (aborting the caller's connection); every event it writes is
// "event: <type>\ndata: <json>".
func FuzzClaudeStream(f *testing.F) {
	var whole []byte
	for _, ev := range []string{`{"type":"message_start","message":{"id":"m"}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`, `{"type":"message_stop"}`} {
		whole = append(whole, claudeChunk(ev)...)
	}
	f.Add(whole)
	f.Add(whole[:len(whole)/2])
	f.Add(append(claudeChunk(`{"type":"ping"}`), frame(`{"message":"x"}`, ":message-type", "exception", ":exception-type", "throttlingException")...))
	f.Add(event("chunk", `{"bytes":"bm90IGpzb24="}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := io.ReadAll(io.LimitReader(bedrock.ClaudeStream(io.NopCloser(bytes.NewReader(data))), 64<<20))
		if err == nil && !bytes.HasSuffix(out, []byte("data: {\"type\":\"message_stop\"}\n\n")) && !bytes.Contains(out, []byte("event: error\n")) &&
			!strings.Contains(string(out), `"message_stop"`) {
			t.Fatalf("the stream ended cleanly without message_stop or an error event: %q", out)
		}
		for _, ev := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
			if ev == "" {
				continue
			}
			typ, data, ok := strings.Cut(ev, "\ndata: ")
			if !ok || !strings.HasPrefix(typ, "event: ") || !json.Valid([]byte(data)) {
				t.Fatalf("event %q is not event: + JSON data", ev)
			}
		}
	})
}
