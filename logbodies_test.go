package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// canaryChat is a chat request with credentials in its body: under
// credential-like names, and the caller's own gateway key in a message.
const canaryChat = `{"model":"gpt-4o","api_key":"CANARY-API-KEY-1","apiKey":"CANARY-API-KEY-2",
	"X-Api-Key":"CANARY-X-API-KEY","login":{"user":"u","password":"CANARY-PASSWORD"},"metadata":{"client_secret":"CANARY-CLIENT-SECRET"},
	"max_tokens":12,"messages":[{"role":"user","content":"my key is gw-canary-key-7f3a9c1e"}]}`

// TestRenderBody: coded, binary and form bodies.
func TestRenderBody(t *testing.T) {
	c := &bodyCapture{max: 1 << 10, secrets: []string{"gw-secret-value-123"}}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, `{"token":"CANARY-ANSWER-TOKEN","ok":true}`)
	zw.Close()
	for _, tc := range []struct {
		raw, ctype, coding, want string
		cut                      bool
	}{
		{z.String(), "application/json", "gzip", `{"token":"[REDACTED]","ok":true}`, false},
		{"abc", "application/json", "br", "[3 bytes, content-encoding br, not kept]", false},
		{"RIFF....", "audio/wav", "", "[8 bytes of audio/wav, not kept]", false},
		{"model=m&password=p%40ss&x=1", "application/x-www-form-urlencoded", "", "model=m&password=[REDACTED]&x=1", false},
		{"plain gw-secret-value-123 text", "text/plain", "", "plain [REDACTED] text", false},
		{`{"a":"gw-secret-val`, "", "", `{"a":"[REDACTED]`, true},
		{`{"image_url":{"url":"data:image/png;base64,` + strings.Repeat("QUFB", 100) + `"}}`, "application/json", "",
			`{"image_url":{"url":"data:image/png;base64,[elided 400 bytes]"}}`, false},
		{`{"headers":{"authorization":"Bearer abc"},"note":"bearer xyz"}`, "application/json", "",
			`{"headers":{"authorization":"[REDACTED]"},"note":"bearer [REDACTED]"}`, false},
	} {
		total := int64(len(tc.raw))
		if tc.cut {
			total += 100
		}
		got, cut := c.render([]byte(tc.raw), tc.ctype, tc.coding, total)
		if got != tc.want || cut != tc.cut {
			t.Errorf("render(%q, %s, %s) = %q, %v; want %q, %v", tc.raw, tc.ctype, tc.coding, got, cut, tc.want, tc.cut)
		}
	}
}

func TestCredentialName(t *testing.T) {
	for _, name := range []string{"api_key", "apiKey", "X-API-Key", "x_api_key", "openai_api_key", "client_secret", "password",
		"Password", "access_token", "refreshToken", "Authorization", "token", "secret", "private_key", "credentials", "aws_secret_access_key"} {
		if !credentialName(name) {
			t.Errorf("credentialName(%q) = false", name)
		}
	}
	for _, name := range []string{"model", "max_tokens", "prompt_tokens", "budget_tokens", "messages", "tokenizer", "keyword",
		"content", "cache_key", "input"} {
		if credentialName(name) {
			t.Errorf("credentialName(%q) = true", name)
		}
	}
}

// FuzzRedactJSON: redactJSON never fails; valid JSON stays valid with
// every credential-like member's value "[REDACTED]"; and a credential of
// a valid document never survives in the redaction of a cut of it.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{canaryChat, `{"a":{"token":[1,{"b":"c"}]},"d":"data:x;base64,` + strings.Repeat("A", 300) + `"}`,
		`[{"api_key":"s1"},{"API-KEY":null},"\"apikey\""]`, `{"pass\u0077ord":"s2","x":"bearer t"}`, `{"a":"\`, `"x`, `}]{[`} {
		f.Add([]byte(s), uint(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint) {
		out := redactJSON(nil, b)
		cutAt := int(cut % uint(len(b)+1))
		outCut := redactJSON(nil, b[:cutAt])
		if !json.Valid(b) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("redactJSON(%q) = %q: not JSON", b, out)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		checkRedacted(t, v, out)
		var orig any
		json.Unmarshal(b, &orig)
		for _, secret := range credentialValues(orig, nil) {
			if len(secret) >= 6 && bytes.Count(b, []byte(secret)) == 1 && bytes.Contains(outCut, []byte(secret)) {
				t.Fatalf("credential %q survives in the redaction of %q: %q", secret, b[:cutAt], outCut)
			}
		}
	})
}

// checkRedacted fails t when v holds a credential-like member whose
// value is not "[REDACTED]".
func checkRedacted(t *testing.T, v any, out []byte) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if credentialName(k) && x != redacted {
				t.Fatalf("member %q = %v in %q", k, x, out)
			}
			checkRedacted(t, x, out)
		}
	case []any:
		for _, x := range v {
			checkRedacted(t, x, out)
		}
	}
}

// credentialValues appends the strings under credential-like members of
// v to dst.
func credentialValues(v any, dst []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if credentialName(k) {
				if s, ok := x.(string); ok {
					dst = append(dst, s)
				}
			}
			dst = credentialValues(x, dst)
		}
	case []any:
		for _, x := range v {
			dst = credentialValues(x, dst)
		}
	}
	return dst
}

// BenchmarkLogBodies is BenchmarkPassThrough's gateway with its request
// logs stored, bodies kept (on) or not (off): what keeping them costs.
func BenchmarkLogBodies(b *testing.B) {
	up := benchUpstream(b)
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			st := &testStore{}
			st.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey("gw-bench"), WorkspaceID: "ws"})
			st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
			g := New(Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st, LogSink: discardSink{}, LogBodies: on})
			defer g.Close()
			benchServe(b, g, http.Header{
				"Content-Type":          {"application/json"},
				"X-Gateway-Api-Key":     {"gw-bench"},
				"X-Gateway-Virtual-Key": {"vk"},
			})
		})
	}
}
