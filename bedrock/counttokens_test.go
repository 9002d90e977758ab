package bedrock_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/bedrock"
	"github.com/modelgateway/gateway/gatewaytest"
)

// countAnswer answers a CountTokens request as Bedrock does.
func countAnswer(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"inputTokens":`+strconv.Itoa(n)+`}`)
	}
}

// invokeBody returns the InvokeModel body a CountTokens request carries.
func invokeBody(t *testing.T, body string) string {
	t.Helper()
	var req struct {
		Input struct {
			InvokeModel struct {
				Body string `json:"body"`
			} `json:"invokeModel"`
		} `json:"input"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("CountTokens body %s: %v", body, err)
	}
	b, err := base64.StdEncoding.DecodeString(req.Input.InvokeModel.Body)
	if err != nil {
		t.Fatalf("invokeModel.body %q is not base64: %v", req.Input.InvokeModel.Body, err)
	}
	return string(b)
}

// anthropicError reads an Anthropic-shaped error body.
func anthropicError(t *testing.T, b []byte) (typ, message string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" || e.Error.Type == "" {
		t.Fatalf("not an Anthropic error: %s", b)
	}
	return e.Error.Type, e.Error.Message
}

// TestCountTokensClaude: count_tokens for a Claude model is Bedrock's
// CountTokens of the InvokeModel body /v1/messages would send, signed,
// to the foundation model (an inference profile's id names one), with
// max_tokens when the request has none (more than a thinking budget);
// Bedrock's {"inputTokens":n} comes back as Anthropic's.
func TestCountTokensClaude(t *testing.T) {
	const messages = `"messages":[{"role":"user","content":[{"type":"text","text":"List files","cache_control":{"type":"ephemeral"}}]}]`
	for _, tc := range []struct {
		name, body, beta, path, sent string
	}{
		{"no max_tokens", `{"model":"` + haiku + `","system":"Be brief.",` + messages + `}`, "token-efficient-tools-2025-02-19",
			"/model/" + haiku + "/count-tokens",
			`{"anthropic_beta":["token-efficient-tools-2025-02-19"],"anthropic_version":"bedrock-2023-05-31","max_tokens":1,` + messages + `,"system":"Be brief."}`},
		{"inference profile, thinking", `{"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","thinking":{"type":"enabled","budget_tokens":2048},` + messages + `}`, "",
			"/model/anthropic.claude-sonnet-4-5-20250929-v1:0/count-tokens",
			`{"anthropic_version":"bedrock-2023-05-31","max_tokens":2049,` + messages + `,"thinking":{"type":"enabled","budget_tokens":2048}}`},
		{"max_tokens kept", `{"model":"` + haiku + `","max_tokens":64,"stream":false,` + messages + `}`, "",
			"/model/" + haiku + "/count-tokens",
			`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,` + messages + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fb := translationEnv(t, countAnswer(1234))
			hdr := []string{vkHeader, "bedrock-prod", "Content-Type", "application/json"}
			if tc.beta != "" {
				hdr = append(hdr, "Anthropic-Beta", tc.beta)
			}
			res, b := e.do(t, http.MethodPost, "/v1/messages/count_tokens", tc.body, hdr...)
			if res.StatusCode != 200 || string(b) != `{"input_tokens":1234}` || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("got %d %s", res.StatusCode, b)
			}
			reqs := fb.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d calls to Bedrock", len(reqs))
			}
			n := reqs[0]
			if n.Path != tc.path || n.Unsigned != "" {
				t.Errorf("Bedrock got %s (signature: %q)", n.Path, n.Unsigned)
			}
			if d := jsonDiff(t, tc.sent, []byte(invokeBody(t, n.Body))); d != "" {
				t.Errorf("InvokeModel body (-want +got):\n%s", d)
			}
		})
	}
}

// TestCountTokensNotClaude: a model that is not Claude gets the gateway's
// estimate, and Bedrock is not called.
func TestCountTokensNotClaude(t *testing.T) {
	e, fb := translationEnv(t, countAnswer(1))
	res, b := e.do(t, http.MethodPost, "/v1/messages/count_tokens", `{"model":"amazon.nova-pro-v1:0","messages":[{"role":"user","content":"Hello there"}]}`,
		vkHeader, "bedrock-prod", "Content-Type", "application/json")
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if json.Unmarshal(b, &n) != nil || res.StatusCode != 200 || n.InputTokens < 3 {
		t.Fatalf("got %d %s", res.StatusCode, b)
	}
	if got := fb.requests(); len(got) != 0 {
		t.Errorf("Bedrock was called: %v", got[0].Path)
	}
}

// TestCountTokensErrors: Bedrock's errors come back Anthropic-shaped
// with Bedrock's status, and an answer without a count is a 502, never
// a count of 0.
func TestCountTokensErrors(t *testing.T) {
	bedrockErr := func(status int, kind, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", kind+":http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(status)
			io.WriteString(w, `{"message":"`+msg+`"}`)
		}
	}
	answer := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}
	}
	for _, tc := range []struct {
		name    string
		answer  http.HandlerFunc
		status  int
		typ     string
		message string
	}{
		{"400", bedrockErr(400, "ValidationException", "The provided model doesn't support counting tokens."), 400, "invalid_request_error", "counting tokens"},
		{"429", bedrockErr(429, "ThrottlingException", "Too many requests"), 429, "rate_limit_error", "Too many requests"},
		{"500", bedrockErr(500, "InternalServerException", "boom"), 500, "api_error", "boom"},
		{"503", bedrockErr(503, "ServiceUnavailableException", "try later"), 503, "overloaded_error", "try later"},
		{"no count", answer(`{}`), 502, "api_error", ""},
		{"null", answer(`{"inputTokens":null}`), 502, "api_error", ""},
		{"string", answer(`{"inputTokens":"12"}`), 502, "api_error", ""},
		{"negative", answer(`{"inputTokens":-1}`), 502, "api_error", ""},
		{"fraction", answer(`{"inputTokens":1.5}`), 502, "api_error", ""},
		{"not JSON", answer(`inputTokens=12`), 502, "api_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := translationEnv(t, tc.answer)
			res, b := e.do(t, http.MethodPost, "/v1/messages/count_tokens", claudeBody, vkHeader, "bedrock-prod", "Content-Type", "application/json")
			typ, msg := anthropicError(t, b)
			if res.StatusCode != tc.status || typ != tc.typ || !strings.Contains(msg, tc.message) {
				t.Errorf("got %d %s, want %d %s", res.StatusCode, b, tc.status, tc.typ)
			}
		})
	}
}

// TestCountTokensFallback: a config falling back from Bedrock, which
// throttles, to Anthropic answers count_tokens with Anthropic's count of
// the caller's body, sent as it came.
func TestCountTokensFallback(t *testing.T) {
	anth := gatewaytest.NewServer()
	t.Cleanup(anth.Close)
	fb := &fakeBedrock{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-Errortype", "ThrottlingException")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"message":"slow down"}`)
	}}
	store := strings.Replace(storeJSON, `"virtual_keys": [`, `"virtual_keys": [
    {"slug": "anthropic-fake", "provider": "anthropic", "api_key": "sk-ant", "base_url": "`+anth.URL+`"},`, 1)
	e := newEnvStore(t, bedrock.Options{}, fb.ServeHTTP, store)
	go func() {
		for range e.logs {
		}
	}()
	const config = `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"bedrock-prod"},{"virtual_key":"anthropic-fake"}]}`
	body := `{"model":"` + haiku + `","messages":[{"role":"user","content":"Hello there"}]}`
	res, b := e.do(t, http.MethodPost, "/v1/messages/count_tokens", body, "X-Gateway-Config", config,
		"Content-Type", "application/json", "Anthropic-Version", "2023-06-01")
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(b, &n); err != nil || res.StatusCode != 200 || n.InputTokens <= 0 || res.Header.Get("X-Gateway-Provider") != "anthropic" {
		t.Fatalf("got %d %s (provider %q)", res.StatusCode, b, res.Header.Get("X-Gateway-Provider"))
	}
	if got := fb.requests(); len(got) != 1 || got[0].Path != "/model/"+haiku+"/count-tokens" {
		t.Errorf("Bedrock calls %v", got)
	}
	if got := anth.Requests(); len(got) != 1 || got[0].Path != "/v1/messages/count_tokens" || string(got[0].Body) != body {
		t.Errorf("Anthropic calls %+v", got)
	}
}
