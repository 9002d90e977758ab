package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// slugEnv is newCoreEnv with virtual key "vk-up" of ws-1 offering two
// models, and "vk-any" of no workspace offering every model.
func slugEnv(t *testing.T, mod func(*Options)) *coreEnv {
	t.Helper()
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, mod)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk-stored-secret", BaseURL: up.URL + "/v1",
		WorkspaceID: "ws-1", Models: []string{"gpt-4o", "gpt-4o-mini"}})
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-any", Provider: "openai", APIKey: "sk-any", BaseURL: up.URL + "/v1"})
	return e
}

// upstreamModel returns the model and Authorization of the last request
// the provider received.
func upstreamModel(t *testing.T, e *coreEnv) (model, auth string) {
	t.Helper()
	rs := e.up.received()
	if len(rs) == 0 {
		t.Fatal("the provider received nothing")
	}
	var m struct{ Model string }
	if err := json.Unmarshal([]byte(rs[len(rs)-1].Body), &m); err != nil {
		t.Fatalf("the provider got %q: %v", rs[len(rs)-1].Body, err)
	}
	return m.Model, rs[len(rs)-1].Header.Get("Authorization")
}

// chunked hides the length of a body, so that it streams as the
// pass-through routes take it.
type chunked struct{ io.Reader }

func TestModelSlugSelectsTheVirtualKey(t *testing.T) {
	e := slugEnv(t, nil)
	for _, tc := range []struct{ name, body, want, auth string }{
		{"plain", `{"model":"@vk-up/gpt-4o","messages":[]}`, "gpt-4o", "Bearer sk-stored-secret"},
		{"escaped", `{"messages":[],"model":"\u0040vk-up/gpt-4o\u002dmini"}`, "gpt-4o-mini", "Bearer sk-stored-secret"},
		{"of no workspace, any model", `{"model":"@vk-any/o3","messages":[]}`, "o3", "Bearer sk-any"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/chat/completions", chunked{strings.NewReader(tc.body)}, "x-gateway-api-key: "+coreKey)
			if res.StatusCode != 200 {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("%d %s", res.StatusCode, b)
			}
			if m, auth := upstreamModel(t, e); m != tc.want || auth != tc.auth {
				t.Fatalf("the provider got model %q with %q, want %q with %q", m, auth, tc.want, tc.auth)
			}
		})
	}
	e.gw.Close()
	recs := e.logs.Query(LogFilter{})
	found := false
	for _, r := range recs {
		found = found || r.VirtualKey == "vk-any" && r.Model == "o3"
	}
	if !found {
		t.Fatalf("no log names virtual key vk-any and model o3: %+v", recs)
	}
}

func TestModelSlugRefusals(t *testing.T) {
	e := slugEnv(t, func(o *Options) { o.MaxBodyBytes = 1 << 10 })
	for _, tc := range []struct{ name, body, code string }{
		{"not offered", `{"model":"@vk-up/o3","messages":[]}`, CodeModelNotAllowed},
		{"unknown", `{"model":"@nope/gpt-4o","messages":[]}`, CodeUnknownProvider},
		{"no model after the slug", `{"model":"@vk-up/","messages":[]}`, ""},
		{"no slash", `{"model":"@vk-up","messages":[]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(tc.body), "x-gateway-api-key: "+coreKey)
			eb := decodeError(t, res)
			if res.StatusCode != 400 || deref(eb.Error.Param) != "model" || tc.code != "" && deref(eb.Error.Code) != tc.code {
				t.Fatalf("%d param %s code %s: %s", res.StatusCode, deref(eb.Error.Param), deref(eb.Error.Code), eb.Error.Message)
			}
		})
	}
	if n := len(e.up.received()); n != 0 {
		t.Fatalf("the provider received %d requests", n)
	}
	// Another workspace's key answers as an unknown one.
	e.store.AddAPIKey(APIKey{ID: "key-ws2", Digest: HashAPIKey("gw-ws2"), WorkspaceID: "ws-2", Role: RoleMember})
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"@vk-up/gpt-4o"}`), "x-gateway-api-key: gw-ws2")
	if eb := decodeError(t, res); deref(eb.Error.Code) != CodeUnknownProvider || !strings.Contains(eb.Error.Message, "unknown provider") {
		t.Fatalf("another workspace's key: %d %s", res.StatusCode, eb.Error.Message)
	}
	// A body too long to read is not looked into: no provider is selected.
	long := `{"model":"@vk-up/gpt-4o","pad":"` + strings.Repeat("x", 2<<10) + `"}`
	res = e.do("POST", "/v1/chat/completions", chunked{strings.NewReader(long)}, "x-gateway-api-key: "+coreKey)
	if eb := decodeError(t, res); deref(eb.Error.Code) != CodeMissingProvider {
		t.Fatalf("a long body: %d %s", res.StatusCode, eb.Error.Message)
	}
}

func TestModelSlugLeavesHeaderSelectionAlone(t *testing.T) {
	e := slugEnv(t, nil)
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"@vk-any/gpt-4o"}`),
		"x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if m, auth := upstreamModel(t, e); m != "@vk-any/gpt-4o" || auth != "Bearer sk-stored-secret" {
		t.Fatalf("the provider got %q with %q: a selection by header keeps the model as sent", m, auth)
	}
}

func TestVirtualKeyPolicyCondition(t *testing.T) {
	e := slugEnv(t, nil)
	e.store.PutPolicy(context.Background(), &RateLimitsPolicy{ID: "7d1e3f6a-1b2c-4d5e-8f90-123456789abc", Status: PolicyActive,
		Conditions: []PolicyCondition{{Key: "virtual_key", Value: "vk-up"}}, Type: PolicyRequests, Unit: PolicyPerMinute, Value: 2})
	send := func(body string, headers ...string) int {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(body), append(headers, "x-gateway-api-key: "+coreKey)...)
		return res.StatusCode
	}
	// One by header, one by model: the same key, the same bucket.
	if a, b := send(`{"model":"gpt-4o"}`, "x-gateway-virtual-key: vk-up"), send(`{"model":"@vk-up/gpt-4o"}`); a != 200 || b != 200 {
		t.Fatalf("statuses %d %d", a, b)
	}
	if c := send(`{"model":"@vk-up/gpt-4o"}`); c != 429 {
		t.Fatalf("the third request through vk-up: %d", c)
	}
	if d := send(`{"model":"@vk-any/gpt-4o"}`); d != 200 {
		t.Fatalf("another virtual key: %d", d)
	}
	p := RateLimitsPolicy{ID: "7d1e3f6a-1b2c-4d5e-8f90-123456789abd", Status: PolicyActive, Type: PolicyRequests, Unit: PolicyPerMinute, Value: 1,
		Conditions: []PolicyCondition{{Key: "virtual_key", Value: "x"}}, GroupBy: []PolicyGroupBy{{Key: "virtual_key"}}}
	if err := p.Validate(); err != nil {
		t.Fatalf("virtual_key is a condition and group key: %v", err)
	}
}

func TestNamedOnlyKeyIsNotAConfigTarget(t *testing.T) {
	e := slugEnv(t, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-named", Provider: "openai", APIKey: "sk-n", BaseURL: e.up.URL + "/v1", WorkspaceID: "ws-1", NamedOnly: true})
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o"}`),
		"x-gateway-api-key: "+coreKey, `x-gateway-config: {"virtual_key":"vk-named"}`)
	if eb := decodeError(t, res); res.StatusCode != 400 || deref(eb.Error.Param) != HeaderConfig {
		t.Fatalf("%d %s", res.StatusCode, eb.Error.Message)
	}
	if res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"@vk-named/gpt-4o"}`), "x-gateway-api-key: "+coreKey); res.StatusCode != 200 {
		t.Fatalf("by name: %d", res.StatusCode)
	}
}

// FuzzModelSpan checks that modelSpan finds the top-level model string
// of a valid JSON body as encoding/json reads it, and that cutting a
// provider prefix out of it in place leaves valid JSON naming the rest.
func FuzzModelSpan(f *testing.F) {
	for _, s := range []string{`{"model":"@vk/gpt-4o"}`, `{"a":{"model":"x"},"model":"@p/m"}`, `{"model":"\u0040p/m"}`,
		` { "model" : "@a/b/c" , "x":1}`, `{"model":1}`, `[]`, `{"model":"@/x"}`, `{"messages":[{"model":"@x/y"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		start, end := modelSpan(b)
		if !json.Valid(b) || end == 0 {
			return
		}
		if b[start-1] != '"' || b[end] != '"' {
			t.Fatalf("span [%d:%d] of %q is not a string's inside", start, end, b)
		}
		var m string
		if err := json.Unmarshal(b[start-1:end+1], &m); err != nil {
			t.Fatalf("span of %q is not a JSON string: %v", b, err)
		}
		if got := requestModel(b); got != m {
			t.Fatalf("requestModel(%q) = %q, want %q", b, got, m)
		}
		raw := b[start:end]
		slash := bytes.IndexByte(raw, '/')
		if len(raw) < 3 || raw[0] != '@' || slash < 0 || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			return
		}
		out := append(bytes.Clone(b)[:start], b[start+slash+1:]...)
		if !json.Valid(out) || requestModel(out) != m[slash+1:] {
			t.Fatalf("cutting the prefix of %q gave %q", b, out)
		}
	})
}
