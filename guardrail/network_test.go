package guardrail

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWebhook(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		got.Store(map[string]any{"body": body, "auth": r.Header.Get("X-Auth"), "ct": r.Header.Get("Content-Type")})
		switch r.URL.Path {
		case "/pass":
			fmt.Fprint(w, `{"verdict":true}`)
		case "/fail":
			fmt.Fprint(w, `{"verdict":false,"explanation":"too rude"}`)
		case "/500":
			w.WriteHeader(500)
		case "/garbage":
			fmt.Fprint(w, `{"ok":1}`)
		case "/hang":
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	r := NewRegistry(Env{HTTPClient: srv.Client()})
	in := &Input{Phase: BeforeRequest, Parts: []string{"hi"}, Model: "m", Request: json.RawMessage(`{"model":"m"}`),
		Header: http.Header{"Authorization": {"Bearer caller-secret"}}}
	tests := []struct {
		path, extra string
		allow       bool
		verdict     bool
		errText     string
	}{
		{"/pass", ``, false, true, ""},
		{"/fail", ``, false, false, ""},
		{"/500", ``, false, false, "the webhook answered 500"},
		{"/500", ``, true, true, "the webhook answered 500"},
		{"/500", `,"failOnError":true`, true, false, ""},
		{"/garbage", ``, false, false, "the webhook's answer holds no boolean verdict"},
		{"/hang", `,"timeout":20`, false, false, "timed out"},
		{"/hang", `,"timeout":20`, true, true, "timed out"},
		{"/hang", `,"timeout":20,"failOnError":true`, true, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path+tc.extra, func(t *testing.T) {
			params := fmt.Sprintf(`{"webhookURL":%q,"headers":{"x-auth":"tenant-token"}%s}`, srv.URL+tc.path+"?key=url-secret", tc.extra)
			g, err := r.Compile(Definition{ID: "w", Deny: true, AllowOnError: tc.allow, Checks: []CheckDefinition{{ID: "default.webhook", Parameters: json.RawMessage(params)}}})
			if err != nil {
				t.Fatal(err)
			}
			c := Run(context.Background(), in, g).Results[0].Checks[0]
			if c.Verdict != tc.verdict || c.Error != tc.errText {
				t.Errorf("%+v", c)
			}
			if strings.Contains(c.Explanation+c.Error, "secret") || strings.Contains(c.Explanation+c.Error, "127.0.0.1") {
				t.Errorf("the result shows the URL or a secret: %+v", c)
			}
			seen := got.Load().(map[string]any)
			body := seen["body"].(map[string]any)
			if seen["auth"] != "tenant-token" || seen["ct"] != "application/json" || body["eventType"] != "beforeRequestHook" || body["model"] != "m" {
				t.Errorf("the webhook saw %v", seen)
			}
			if req := body["request"].(map[string]any); req["text"] != "hi" || strings.Contains(fmt.Sprint(body), "caller-secret") {
				t.Errorf("the webhook saw %v", body)
			}
		})
	}
	g := compile(t, r, Definition{Checks: checks(`default.webhook {"webhookURL":"` + srv.URL + `/fail"}`)})
	if c := Run(context.Background(), in, g).Results[0].Checks[0]; !strings.Contains(c.Explanation, "too rude") {
		t.Errorf("explanation %q", c.Explanation)
	}
}

// jwks serves a JWKS and signs tokens with its keys.
type jwks struct {
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	fetches atomic.Int32
	srv     *httptest.Server
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newJWKS(t *testing.T) *jwks {
	t.Helper()
	k := &jwks{}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	_, k.ed, _ = ed25519.GenerateKey(rand.Reader)
	set := fmt.Sprintf(`{"keys":[{"kty":"RSA","kid":"r1","n":%q,"e":%q},{"kty":"EC","kid":"e1","crv":"P-256","x":%q,"y":%q},{"kty":"OKP","kid":"d1","crv":"Ed25519","x":%q},{"kty":"oct","kid":"s1","k":"c2VjcmV0"}]}`,
		b64(k.rsa.N.Bytes()), b64(big.NewInt(int64(k.rsa.E)).Bytes()), b64(k.ec.X.FillBytes(make([]byte, 32))), b64(k.ec.Y.FillBytes(make([]byte, 32))), b64(k.ed.Public().(ed25519.PublicKey)))
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.fetches.Add(1)
		if r.URL.Path == "/down" {
			w.WriteHeader(503)
			return
		}
		fmt.Fprint(w, set)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *jwks) token(t *testing.T, alg, kid string, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(signed))
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, sum[:])
	case "PS256":
		sig, err = rsa.SignPSS(rand.Reader, k.rsa, crypto.SHA256, sum[:], nil)
	case "ES256":
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k.ec, sum[:])
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	case "EdDSA":
		sig = ed25519.Sign(k.ed, []byte(signed))
	case "HS256":
		sig = []byte("whatever")
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

func TestJWT(t *testing.T) {
	k := newJWKS(t)
	r := NewRegistry(Env{HTTPClient: k.srv.Client()})
	now := time.Now().Unix()
	good := map[string]any{"sub": "u", "iat": now - 60, "exp": now + 600}
	c, err := r.New("default.jwt", json.RawMessage(`{"jwksUri":"`+k.srv.URL+`/jwks","headerKey":"X-Token","algorithms":["RS256","PS256","ES256","EdDSA"],"maxTokenAge":"1h"}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header string
		pass         bool
	}{
		{"rs256", "Bearer " + k.token(t, "RS256", "r1", good), true},
		{"ps256", k.token(t, "PS256", "r1", good), true},
		{"es256", k.token(t, "ES256", "e1", good), true},
		{"eddsa", k.token(t, "EdDSA", "d1", good), true},
		{"missing", "", false},
		{"garbage", "Bearer a.b", false},
		{"wrong key", k.token(t, "ES256", "r1", good), false},
		{"unknown kid", k.token(t, "RS256", "nope", good), false},
		{"alg not allowed", k.token(t, "HS256", "s1", good), false},
		{"tampered", tamper(k.token(t, "RS256", "r1", good)), false},
		{"expired", k.token(t, "RS256", "r1", map[string]any{"iat": now - 60, "exp": now - 60}), false},
		{"not yet", k.token(t, "RS256", "r1", map[string]any{"iat": now, "nbf": now + 600}), false},
		{"too old", k.token(t, "RS256", "r1", map[string]any{"iat": now - 7200}), false},
		{"no iat", k.token(t, "RS256", "r1", map[string]any{"exp": now + 60}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := c.Check(context.Background(), &Input{Header: http.Header{"X-Token": {tc.header}}})
			if err != nil || v.Pass != tc.pass {
				t.Errorf("verdict %+v, %v, want pass %v", v, err, tc.pass)
			}
		})
	}
	// One fetch, then the cache; the unknown kid refetches at most once a minute.
	if n := k.fetches.Load(); n != 1 {
		t.Errorf("%d fetches", n)
	}
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	parts[1] = b64([]byte(`{"sub":"admin"}`))
	return strings.Join(parts, ".")
}

func TestJWTFetchErrors(t *testing.T) {
	k := newJWKS(t)
	r := NewRegistry(Env{HTTPClient: k.srv.Client()})
	c, err := r.New("default.jwt", json.RawMessage(`{"jwksUri":"`+k.srv.URL+`/down?token=s3cret","headerKey":"Authorization"}`))
	if err != nil {
		t.Fatal(err)
	}
	g := &Guardrail{id: "j", deny: true, checks: []compiled{{id: "default.jwt", check: c, timeout: DefaultTimeout}}}
	res := Run(context.Background(), &Input{Header: http.Header{"Authorization": {k.token(t, "RS256", "r1", map[string]any{"iat": time.Now().Unix()})}}}, g).Results[0]
	if res.Verdict || !res.Deny || !strings.Contains(res.Checks[0].Error, "503") || strings.Contains(res.Checks[0].Error, "s3cret") {
		t.Errorf("%+v", res)
	}
}
