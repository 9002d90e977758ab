package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// redacted is what a kept body holds in place of a credential.
const redacted = "[REDACTED]"

// bodyCanaries are secrets a request and its answer carry where
// credentials go; none may be kept.
var bodyCanaries = []string{"CANARY-API-KEY-1", "CANARY-API-KEY-2", "CANARY-X-API-KEY", "CANARY-PASSWORD",
	"CANARY-CLIENT-SECRET", "CANARY-ANSWER-TOKEN", "gw-canary-key-7f3a9c1e", "sk-stored-secret"}

// canaryChat is a chat request with credentials in its body: under
// credential-like names, and the caller's own gateway key in a message.
const canaryChat = `{"model":"gpt-4o","api_key":"CANARY-API-KEY-1","apiKey":"CANARY-API-KEY-2",
	"X-Api-Key":"CANARY-X-API-KEY","login":{"user":"u","password":"CANARY-PASSWORD"},"metadata":{"client_secret":"CANARY-CLIENT-SECRET"},
	"max_tokens":12,"messages":[{"role":"user","content":"my key is gw-canary-key-7f3a9c1e"}]}`

// newBodiesEnv is the logs harness keeping bodies (when keep), with a key
// whose value is a canary, and an upstream answering with a credential
// in its body.
func newBodiesEnv(t *testing.T, keep bool, max int, h http.HandlerFunc) *coreEnv {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","access_token":"CANARY-ANSWER-TOKEN",`+
				`"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		}
	}
	e := newCoreEnv(t, newCoreUpstream(t, h), func(o *Options) {
		o.Logs = o.Keys.(*memstore.Store)
		o.LogBodies, o.LogBodyMax = keep, max
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-canary", Digest: gateway.HashAPIKey("gw-canary-key-7f3a9c1e"), WorkspaceID: "ws-1", Role: gateway.RoleMember})
	return e
}

// chatLog sends body as a chat completion with the canary key and returns
// its stored record and GET /logs/{id}'s answer.
func (e *coreEnv) chatLog(body string, headers ...string) (*gateway.RequestLog, string) {
	e.t.Helper()
	before, _ := e.store.Logs(context.Background(), &observe.Query{})
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(body),
		append([]string{gateway.HeaderAPIKey + ": gw-canary-key-7f3a9c1e", gateway.HeaderVirtualKey + ": vk-up", "Content-Type: application/json"}, headers...)...)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	waitLogs(e.t, e.store, len(before)+1)
	recs, _ := e.store.Logs(context.Background(), &observe.Query{Limit: 1})
	rec, err := e.store.Log(context.Background(), "", recs[0].ID)
	if err != nil {
		e.t.Fatal(err)
	}
	st, got := e.getJSON(coreAdminKey, "/v1/logs/"+rec.ID, nil)
	if st != 200 {
		e.t.Fatalf("GET /logs/%s: %d %s", rec.ID, st, got)
	}
	return rec, got
}

// TestLogBodiesKeptAndRedacted: with LogBodies, GET /logs/{id} shows the
// request's and the answer's bodies as JSON, with every credential
// redacted; the list pages leave them out.
func TestLogBodiesKeptAndRedacted(t *testing.T) {
	e := newBodiesEnv(t, true, 0, nil)
	rec, got := e.chatLog(canaryChat, "Authorization: Bearer CANARY-API-KEY-1")
	for _, c := range bodyCanaries {
		if strings.Contains(got, c) || strings.Contains(rec.RequestBody+rec.ResponseBody, c) {
			t.Errorf("canary %s kept: %s", c, got)
		}
	}
	var detail struct {
		Request, Response struct {
			Body          map[string]any `json:"body"`
			BodyTruncated bool           `json:"body_truncated"`
		}
	}
	if err := json.Unmarshal([]byte(got), &detail); err != nil {
		t.Fatal(err)
	}
	req, resp := detail.Request.Body, detail.Response.Body
	if req["model"] != "gpt-4o" || req["api_key"] != redacted || req["apiKey"] != redacted || req["X-Api-Key"] != redacted ||
		req["login"].(map[string]any)["password"] != redacted || req["max_tokens"] != 12.0 || detail.Request.BodyTruncated {
		t.Errorf("request body = %v", req)
	}
	if msg := req["messages"].([]any)[0].(map[string]any)["content"]; msg != "my key is "+redacted {
		t.Errorf("message = %q, want the caller's key redacted", msg)
	}
	if resp["id"] != "chatcmpl-1" || resp["access_token"] != redacted {
		t.Errorf("response body = %v", resp)
	}
	_, list := e.getJSON(coreAdminKey, "/v1/logs", nil)
	if strings.Contains(list, `"request"`) || strings.Contains(list, "chatcmpl-1") {
		t.Errorf("GET /logs shows bodies: %s", list)
	}
}

// TestLogBodiesOff: without LogBodies no body is kept, and GET
// /logs/{id} has none.
func TestLogBodiesOff(t *testing.T) {
	e := newBodiesEnv(t, false, 0, nil)
	rec, got := e.chatLog(canaryChat)
	if rec.RequestBody != "" || rec.ResponseBody != "" || strings.Contains(got, `"request"`) || strings.Contains(got, "gpt-4o\",\"api_key") {
		t.Errorf("bodies kept with LogBodies off: %+v\n%s", rec, got)
	}
}

// TestLogBodiesCapped: bodies past LogBodyMax are cut and say so; a cut
// JSON body is shown as a string.
func TestLogBodiesCapped(t *testing.T) {
	e := newBodiesEnv(t, true, 64, nil)
	long := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 500) + `"}],"api_key":"CANARY-API-KEY-1"}`
	rec, got := e.chatLog(long)
	if !rec.RequestBodyTruncated || len(rec.RequestBody) > 64 || !strings.HasPrefix(rec.RequestBody, `{"model":"gpt-4o"`) {
		t.Errorf("request body = %q (truncated %v), want its first 64 bytes", rec.RequestBody, rec.RequestBodyTruncated)
	}
	if !rec.ResponseBodyTruncated || len(rec.ResponseBody) > 64+len(redacted) {
		t.Errorf("response body = %q (truncated %v)", rec.ResponseBody, rec.ResponseBodyTruncated)
	}
	var detail struct {
		Request struct {
			Body          string `json:"body"`
			BodyTruncated bool   `json:"body_truncated"`
		}
	}
	if err := json.Unmarshal([]byte(got), &detail); err != nil || !detail.Request.BodyTruncated || detail.Request.Body != rec.RequestBody {
		t.Errorf("GET /logs/{id} = %s (%v)", got, err)
	}
}

// TestLogBodiesStream: a streamed answer is kept as the event stream's
// bytes, credentials in its data lines redacted.
func TestLogBodiesStream(t *testing.T) {
	e := newBodiesEnv(t, true, 0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"he"}}]}`,
			`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"llo"}}],"secret":"CANARY-ANSWER-TOKEN"}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
	})
	rec, got := e.chatLog(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	want := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"he\"}}]}\n\n"
	if !strings.HasPrefix(rec.ResponseBody, want) || !strings.HasSuffix(rec.ResponseBody, "data: [DONE]\n\n") ||
		!strings.Contains(rec.ResponseBody, `"secret":"[REDACTED]"`) || strings.Contains(got, "CANARY") {
		t.Errorf("streamed answer kept as %q", rec.ResponseBody)
	}
}

// Secrets the gateway injects upstream in TestLogBodiesRedactInjected.
const (
	injectedVKSecret     = "sk-injected-vk-9c2e41f0b7"
	injectedConfigSecret = "sk-injected-config-55ab03"
	injectedKindSecret   = "kind-own-secret-7781d2"
	injectedCallerSecret = "sk-caller-bearer-3f9a61"
)

// TestLogBodiesRedactInjected: a provider echoing the credential the
// gateway sent it (a virtual key's, a config's api_key, one its Provider
// adds, the caller's bearer token passed on) in its answer: the caller
// gets the answer unchanged, the kept response body has it redacted.
func TestLogBodiesRedactInjected(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if k := r.Header.Get("X-Api-Key"); k != "" {
			tok = k
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-echo","object":"chat.completion","model":"gpt-4o",`+
			`"error_detail":"Incorrect API key provided: %s","echo":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"you sent %s"},"finish_reason":"stop"}]}`, tok, tok, tok)
	}
	e := newBodiesEnv(t, true, 0, echo)
	// A second gateway on the same store, with a provider kind that adds
	// its own credential, and the same echoing upstream.
	kind := gateway.ProviderFunc(func(pr *gateway.ProxyRequest) error {
		u, _ := url.Parse(e.up.URL + "/v1")
		pr.SetURL(u)
		pr.Out.Header.Set("X-Api-Key", injectedKindSecret)
		return nil
	})
	e2 := newCoreEnv(t, e.up, func(o *Options) {
		o.Keys, o.VirtualKeys, o.Configs, o.Policies = e.store, e.store, e.store, e.store
		o.Logs, o.LogBodies = e.store, true
		o.Providers = map[string]gateway.Provider{"echo-kind": kind}
	})
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-echo", Provider: "openai", APIKey: injectedVKSecret, BaseURL: e.up.URL + "/v1", WorkspaceID: "ws-1"})
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk-kind", Provider: "echo-kind", WorkspaceID: "ws-1"})
	cfg := `{"provider":"openai","api_key":"` + injectedConfigSecret + `","custom_host":"` + e.up.URL + `/v1"}`
	for _, c := range []struct {
		name, secret string
		env          *coreEnv
		headers      []string
	}{
		{"virtual key", injectedVKSecret, e, []string{gateway.HeaderVirtualKey + ": vk-echo"}},
		{"config api_key", injectedConfigSecret, e, []string{gateway.HeaderConfig + ": " + cfg}},
		{"provider's own", injectedKindSecret, e2, []string{gateway.HeaderVirtualKey + ": vk-kind"}},
		{"caller's bearer", injectedCallerSecret, e, []string{gateway.HeaderProvider + ": openai", gateway.HeaderCustomHost + ": " + e.up.URL + "/v1",
			"Authorization: Bearer " + injectedCallerSecret}},
	} {
		before, _ := e.store.Logs(context.Background(), &observe.Query{})
		res := c.env.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","messages":[]}`),
			append([]string{gateway.HeaderAPIKey + ": " + coreKey, "Content-Type: application/json"}, c.headers...)...)
		answer, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || strings.Count(string(answer), c.secret) != 3 {
			t.Errorf("%s: the caller got %d %s, want the provider's answer unchanged", c.name, res.StatusCode, answer)
			continue
		}
		waitLogs(t, e.store, len(before)+1)
		recs, _ := e.store.Logs(context.Background(), &observe.Query{Limit: 1})
		rec, err := e.store.Log(context.Background(), "", recs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		_, got := e.getJSON(coreAdminKey, "/v1/logs/"+rec.ID, nil)
		if rec.ResponseBody == "" || strings.Contains(rec.ResponseBody+rec.RequestBody, c.secret) || strings.Contains(got, c.secret) {
			t.Errorf("%s: the kept answer holds the injected secret: %s", c.name, got)
		}
		if !strings.Contains(rec.ResponseBody, "you sent "+redacted) {
			t.Errorf("%s: kept answer = %s, want the secret replaced by %s", c.name, rec.ResponseBody, redacted)
		}
	}
}
