package bedrock_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/bedrock"
	"github.com/modelgateway/gateway/memstore"
)

const (
	testKeyID   = "AKIAIOSFODNN7EXAMPLE"
	testSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testToken   = "FwoGZXIvYXdzEBYaDHRlc3Q+session/token=="
	testStored  = "AKIASTOREDEXAMPLE"
	testSecret2 = "stored/secret+KEY"
	modelPath   = "/model/anthropic.claude-3-haiku-20240307-v1:0/invoke"
	reqBody     = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
)

// signTime is the fixed clock of the provider under test.
var signTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

const storeJSON = `{
  "api_keys": [{"id": "key-1", "key": "gw-bedrock", "workspace_id": "ws-1"}],
  "virtual_keys": [
    {"slug": "bedrock-prod", "provider": "bedrock", "region": "eu-west-3",
     "access_key_id": "AKIASTOREDEXAMPLE", "secret_access_key": "stored/secret+KEY"},
    {"slug": "bedrock-vpce", "provider": "bedrock", "region": "us-west-2",
     "base_url": "https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com",
     "access_key_id": "AKIASTOREDEXAMPLE", "secret_access_key": "stored/secret+KEY"}
  ],
  "configs": [
    {"id": "pc-bedrock", "config": {"targets": [{"provider": "bedrock", "region": "ap-northeast-1",
      "access_key_id": "AKIASTOREDEXAMPLE", "secret_access_key": "stored/secret+KEY", "session_token": "cfg-token"}]}}
  ]
}`

// seen is what the injected transport saw of one outbound request.
type seen struct {
	Method string
	URL    string
	Header http.Header
}

// recorder is the gateway's Transport: it records each outbound request
// and delivers a request for Bedrock (a host under amazonaws.com) to the
// loopback fake host with its original Host header, and any other as
// addressed.
type recorder struct {
	fake *httptest.Server
	mu   sync.Mutex // guards reqs
	reqs []seen
}

func (rt *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h := req.Header.Clone()
	for k, v := range h {
		if len(v) == 0 {
			delete(h, k)
		}
	}
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, seen{req.Method, req.URL.String(), h})
	rt.mu.Unlock()
	if !strings.HasSuffix(req.URL.Hostname(), ".amazonaws.com") {
		return rt.fake.Client().Transport.RoundTrip(req)
	}
	fu, _ := url.Parse(rt.fake.URL)
	out := req.Clone(req.Context())
	out.Host = req.URL.Host
	out.URL.Scheme, out.URL.Host = fu.Scheme, fu.Host
	return rt.fake.Client().Transport.RoundTrip(out)
}

func (rt *recorder) requests() []seen {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]seen(nil), rt.reqs...)
}

type logSink chan *gateway.RequestLog

func (c logSink) Log(rec *gateway.RequestLog) { c <- rec }

type env struct {
	srv  *httptest.Server
	rt   *recorder
	logs logSink
}

func newEnv(t *testing.T, opts bedrock.Options, fake http.HandlerFunc) *env {
	t.Helper()
	return newEnvStore(t, opts, fake, storeJSON)
}

// newEnvStore is newEnv with the operator's records of the JSON document
// store.
func newEnvStore(t *testing.T, opts bedrock.Options, fake http.HandlerFunc, store string) *env {
	t.Helper()
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	f, err := admin.Decode(strings.NewReader(store))
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	if err := admin.Apply(context.Background(), f, st); err != nil {
		t.Fatal(err)
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return signTime }
	}
	e := &env{rt: &recorder{fake: up}, logs: make(logSink, 16)}
	g := gateway.New(gateway.Options{
		Keys: st, VirtualKeys: st, Configs: st, Transport: e.rt, LogSink: e.logs,
		Providers: map[string]gateway.Provider{gateway.ProviderBedrock: bedrock.New(opts)},
	})
	e.srv = httptest.NewServer(g)
	t.Cleanup(func() {
		e.srv.Close()
		g.Close()
	})
	return e
}

// send makes a request through the gateway; the response body is the
// caller's to read.
func (e *env) send(t *testing.T, method, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Gateway-Api-Key", "gw-bedrock")
	req.Header.Set("User-Agent", "bedrock-test")
	req.Header.Set("Accept-Encoding", "gzip")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func (e *env) do(t *testing.T, method, path, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	res := e.send(t, method, path, body, hdr...)
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// verifyingHost is a fake Bedrock that recomputes the SigV4 signature of
// each request from what it received, with the credentials it knows, and
// answers 403 on a mismatch, as Bedrock does.
func verifyingHost(t *testing.T) http.HandlerFunc {
	secrets := map[string]string{testKeyID: testSecret, testStored: testSecret2}
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if msg := verify(r, body, secrets); msg != "" {
			t.Logf("fake host: %s", msg)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]string{"message": msg})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}
}

// verify returns "" when r carries a valid signature over body.
func verify(r *http.Request, body []byte, secrets map[string]string) string {
	auth := r.Header.Get("Authorization")
	const alg = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, alg) {
		return "not signed"
	}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, alg), ", ") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[3] != "bedrock" || scope[4] != "aws4_request" {
		return "bad credential scope"
	}
	secret, ok := secrets[scope[0]]
	if !ok {
		return "unknown access key"
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "bad X-Amz-Date"
	}
	// Rebuild the request as the client addressed it, with only the
	// headers it signed.
	u := &url.URL{Scheme: "https", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	re, _ := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	re.ContentLength = int64(len(body))
	for _, name := range strings.Split(fields["SignedHeaders"], ";") {
		switch name {
		case "host", "content-length":
			continue
		}
		re.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
	}
	creds := aws.Credentials{AccessKeyID: scope[0], SecretAccessKey: secret, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, hashHex(body), "bedrock", scope[2], when); err != nil {
		return err.Error()
	}
	if re.Header.Get("Authorization") != auth {
		return "signature mismatch"
	}
	return ""
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// expectedAuth signs, with the SDK's signer, the request the gateway should
// send, and returns its signature headers.
func expectedAuth(t *testing.T, method, rawURL, body string, hdr http.Header, creds aws.Credentials, region string) http.Header {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hashHex([]byte(body)), "bedrock", region, signTime); err != nil {
		t.Fatal(err)
	}
	out := http.Header{}
	for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := req.Header.Values(k); v != nil {
			out[k] = v
		}
	}
	return out
}

func TestSigning(t *testing.T) {
	headerCreds := []string{
		"X-Gateway-Provider", "bedrock",
		"X-Gateway-Hostc-Access-Key-Id", testKeyID,
		"X-Gateway-Hostc-Secret-Access-Key", testSecret,
		"X-Gateway-Hostc-Region", "us-east-1",
	}
	cases := []struct {
		name    string
		path    string
		hdr     []string
		wantURL string
		creds   aws.Credentials
		region  string
	}{
		{
			name: "headers", path: "/v1" + modelPath, hdr: headerCreds,
			wantURL: "https://bedrock-runtime.us-east-1.amazonaws.com" + modelPath,
			creds:   aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}, region: "us-east-1",
		},
		{
			name: "headers with session token", path: "/v1" + modelPath,
			hdr:     append(append([]string(nil), headerCreds...), "X-Gateway-Hostc-Session-Token", testToken),
			wantURL: "https://bedrock-runtime.us-east-1.amazonaws.com" + modelPath,
			creds:   aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testToken}, region: "us-east-1",
		},
		{
			name: "escaped model ARN and a query", path: "/v1/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fus.anthropic.claude-v2/converse?b=2&a=1",
			hdr:     headerCreds,
			wantURL: "https://bedrock-runtime.us-east-1.amazonaws.com/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fus.anthropic.claude-v2/converse?a=1&b=2",
			creds:   aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}, region: "us-east-1",
		},
		{
			name: "virtual key", path: "/v1" + modelPath,
			hdr:     []string{"X-Gateway-Virtual-Key", "bedrock-prod"},
			wantURL: "https://bedrock-runtime.eu-west-3.amazonaws.com" + modelPath,
			creds:   aws.Credentials{AccessKeyID: testStored, SecretAccessKey: testSecret2}, region: "eu-west-3",
		},
		{
			name: "virtual key with a VPC endpoint base URL", path: "/v1" + modelPath,
			hdr:     []string{"X-Gateway-Virtual-Key", "bedrock-vpce"},
			wantURL: "https://vpce-1.bedrock-runtime.us-west-2.vpce.amazonaws.com" + modelPath,
			creds:   aws.Credentials{AccessKeyID: testStored, SecretAccessKey: testSecret2}, region: "us-west-2",
		},
		{
			name: "saved config with session token", path: "/v1" + modelPath,
			hdr:     []string{"X-Gateway-Config", "pc-bedrock"},
			wantURL: "https://bedrock-runtime.ap-northeast-1.amazonaws.com" + modelPath,
			creds:   aws.Credentials{AccessKeyID: testStored, SecretAccessKey: testSecret2, SessionToken: "cfg-token"}, region: "ap-northeast-1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, bedrock.Options{}, verifyingHost(t))
			res, b := e.do(t, http.MethodPost, tc.path, reqBody,
				append([]string{"Content-Type", "application/json", "Accept", "application/json", "X-Amzn-Bedrock-Trace", "ENABLED"}, tc.hdr...)...)
			if res.StatusCode != http.StatusOK || string(b) != `{"ok":true}` {
				t.Fatalf("status %d body %s: the fake host did not accept the signature", res.StatusCode, b)
			}
			sent := http.Header{
				"Content-Type":         {"application/json"},
				"Accept":               {"application/json"},
				"Accept-Encoding":      {"gzip"},
				"X-Amzn-Bedrock-Trace": {"ENABLED"},
			}
			want := sent.Clone()
			for k, v := range expectedAuth(t, http.MethodPost, tc.wantURL, reqBody, sent, tc.creds, tc.region) {
				want[k] = v
			}
			if diff := cmp.Diff([]seen{{http.MethodPost, tc.wantURL, want}}, e.rt.requests()); diff != "" {
				t.Errorf("request sent to bedrock (-want +got):\n%s", diff)
			}
			got := e.rt.requests()[0].Header
			if tok := got.Get("X-Amz-Security-Token"); tok != tc.creds.SessionToken {
				t.Errorf("X-Amz-Security-Token = %q, want %q", tok, tc.creds.SessionToken)
			}
			if !strings.Contains(got.Get("Authorization"), "/"+tc.region+"/bedrock/aws4_request") ||
				got.Get("X-Amz-Date") != "20240102T030405Z" {
				t.Errorf("signature scope or date: %v", got)
			}
		})
	}
}

// TestSignatureIsOverTheBody proves the signature covers the body: the
// recorded request verifies with the body sent and fails with another.
func TestSignatureIsOverTheBody(t *testing.T) {
	e := newEnv(t, bedrock.Options{}, verifyingHost(t))
	res, _ := e.do(t, http.MethodPost, "/v1"+modelPath, reqBody,
		"X-Gateway-Provider", "bedrock", "X-Gateway-Hostc-Access-Key-Id", testKeyID,
		"X-Gateway-Hostc-Secret-Access-Key", testSecret, "X-Gateway-Hostc-Region", "us-east-1")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	sent := e.rt.requests()[0]
	secrets := map[string]string{testKeyID: testSecret}
	check := func(body string) string {
		req, _ := http.NewRequest(sent.Method, sent.URL, nil)
		req.Header = sent.Header.Clone()
		req.Host = req.URL.Host
		return verify(req, []byte(body), secrets)
	}
	got := []string{check(reqBody), check(strings.Replace(reqBody, "16", "17", 1))}
	if diff := cmp.Diff([]string{"", "signature mismatch"}, got); diff != "" {
		t.Errorf("verification with the sent and a changed body (-want +got):\n%s", diff)
	}
}

func TestBearerAPIKey(t *testing.T) {
	e := newEnv(t, bedrock.Options{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	res, _ := e.do(t, http.MethodPost, "/v1"+modelPath, reqBody,
		"X-Gateway-Provider", "bedrock", "Authorization", "Bearer ABSKbedrock-api-key", "X-Gateway-Hostc-Region", "us-east-2")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	want := []seen{{http.MethodPost, "https://bedrock-runtime.us-east-2.amazonaws.com" + modelPath, http.Header{
		"Accept-Encoding": {"gzip"}, "Authorization": {"Bearer ABSKbedrock-api-key"},
	}}}
	if diff := cmp.Diff(want, e.rt.requests()); diff != "" {
		t.Errorf("request sent to bedrock (-want +got):\n%s", diff)
	}
}

type errBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func TestRefused(t *testing.T) {
	const (
		id     = gateway.HeaderHostCAccessKeyID
		secret = gateway.HeaderHostCSecretKey
		token  = gateway.HeaderHostCSessionToken
		region = gateway.HeaderHostCRegion
	)
	all := map[string]string{"X-Gateway-Provider": "bedrock", id: testKeyID, secret: testSecret, token: testToken, region: "us-east-1"}
	headers := func(change ...string) []string {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		for i := 0; i+1 < len(change); i += 2 {
			if change[i+1] == "" {
				delete(m, change[i])
			} else {
				m[change[i]] = change[i+1]
			}
		}
		var out []string
		for k, v := range m {
			out = append(out, k, v)
		}
		return out
	}
	type tc struct {
		name   string
		hdr    []string
		status int
		code   string
		param  string
	}
	cases := []tc{
		{"no region", headers(region, ""), 400, "invalid_header", region},
		{"no access key id", headers(id, ""), 400, "invalid_header", id},
		{"no secret", headers(secret, ""), 400, "invalid_header", secret},
		{"no credentials at all", headers(id, "", secret, "", token, ""), 400, "invalid_header", id},
		{"access key id with a comma", headers(id, "AKIA,Signature=x"), 400, "invalid_header", id},
		{"session token with a space", headers(token, "a b"), 400, "invalid_header", token},
	}
	for _, r := range []string{"us-east-1.evil.com", "evil.com/", "us-east-1@evil.com", "us-east-1#", "..", "us%2Feast-1",
		"us-east-1:443", "US-EAST-1", "us--east-1", "us-east-", "1us-east-1"} {
		cases = append(cases, tc{"region " + r, headers(region, r), 400, "invalid_header", region})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bedrock.Options{}, verifyingHost(t))
			res, b := e.do(t, http.MethodPost, "/v1"+modelPath, reqBody, c.hdr...)
			var eb errBody
			if err := json.Unmarshal(b, &eb); err != nil {
				t.Fatalf("status %d body %s: %v", res.StatusCode, b, err)
			}
			got := []string{http.StatusText(res.StatusCode), deref(eb.Error.Code), deref(eb.Error.Param)}
			if diff := cmp.Diff([]string{http.StatusText(c.status), c.code, c.param}, got); diff != "" {
				t.Errorf("status, code, param (-want +got):\n%s", diff)
			}
			if n := len(e.rt.requests()); n != 0 {
				t.Errorf("the gateway sent %d request(s); want none", n)
			}
			for _, s := range []string{testSecret, testToken} {
				if strings.Contains(string(b), s) {
					t.Errorf("error body reveals a secret: %s", b)
				}
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, bedrock.Options{MaxBodyBytes: 8}, verifyingHost(t))
	res, b := e.do(t, http.MethodPost, "/v1"+modelPath, "123456789",
		"X-Gateway-Provider", "bedrock", "X-Gateway-Hostc-Access-Key-Id", testKeyID,
		"X-Gateway-Hostc-Secret-Access-Key", testSecret, "X-Gateway-Hostc-Region", "us-east-1")
	var eb errBody
	json.Unmarshal(b, &eb)
	if res.StatusCode != http.StatusRequestEntityTooLarge || deref(eb.Error.Code) != "payload_too_large" {
		t.Errorf("status %d body %s, want 413 payload_too_large", res.StatusCode, b)
	}
	if n := len(e.rt.requests()); n != 0 {
		t.Errorf("the gateway sent %d request(s); want none", n)
	}
	// At the limit the request goes through, signed.
	res, b = e.do(t, http.MethodPost, "/v1"+modelPath, "12345678",
		"X-Gateway-Provider", "bedrock", "X-Gateway-Hostc-Access-Key-Id", testKeyID,
		"X-Gateway-Hostc-Secret-Access-Key", testSecret, "X-Gateway-Hostc-Region", "us-east-1")
	if res.StatusCode != http.StatusOK {
		t.Errorf("status %d body %s at the limit, want 200", res.StatusCode, b)
	}
}

// TestEventStreamPassesThrough sends a streamed answer in two parts and
// checks that the first reaches the caller before the host writes the
// second, and that every byte and the content type arrive unchanged.
func TestEventStreamPassesThrough(t *testing.T) {
	part1 := []byte("\x00\x00\x00\x5b\x00\x00\x00\x4b\x8a\x0c\x7e\x2f\x0b:event-type\x07\x00\x05chunk\r\n\r\ndata: {\"bytes\":\"eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9\"}\x00\xff")
	part2 := []byte("\x00\x00\x00\x4f\x00\x00\x00\x3f\x12\x34\x56\x78\x0d:message-type\x07\x00\x05event{\"bytes\":\"eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0=\"}\xde\xad\xbe\xef")
	next := make(chan struct{})
	var secrets = map[string]string{testKeyID: testSecret}
	e := newEnv(t, bedrock.Options{}, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if msg := verify(r, body, secrets); msg != "" {
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Header().Set("X-Amzn-Requestid", "req-1")
		w.Write(part1)
		http.NewResponseController(w).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		w.Write(part2)
	})
	res := e.send(t, http.MethodPost, "/v1/model/anthropic.claude-3-haiku-20240307-v1:0/invoke-with-response-stream", reqBody,
		"X-Gateway-Provider", "bedrock", "X-Gateway-Hostc-Access-Key-Id", testKeyID,
		"X-Gateway-Hostc-Secret-Access-Key", testSecret, "X-Gateway-Hostc-Region", "us-east-1")
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		close(next)
		t.Fatalf("status %d body %s", res.StatusCode, b)
	}
	got1 := make([]byte, len(part1))
	if _, err := io.ReadFull(res.Body, got1); err != nil {
		close(next)
		t.Fatalf("reading the first event: %v", err)
	}
	close(next) // the host writes the second part only now
	rest, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{res.Header.Get("Content-Type"), res.Header.Get("X-Amzn-Requestid"), string(got1), string(rest)}
	want := []string{"application/vnd.amazon.eventstream", "req-1", string(part1), string(part2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streamed response (-want +got):\n%s", diff)
	}
}

// TestSecretsNeverLogged checks that neither the secret key nor the
// session token reaches the request log, on success or failure.
func TestSecretsNeverLogged(t *testing.T) {
	e := newEnv(t, bedrock.Options{}, verifyingHost(t))
	for _, r := range []string{"us-east-1", "bad/region"} {
		res, _ := e.do(t, http.MethodPost, "/v1"+modelPath+"?x=1", reqBody,
			"X-Gateway-Provider", "bedrock", "X-Gateway-Hostc-Access-Key-Id", testKeyID,
			"X-Gateway-Hostc-Secret-Access-Key", testSecret, "X-Gateway-Hostc-Session-Token", testToken,
			"X-Gateway-Hostc-Region", r)
		var rec *gateway.RequestLog
		select {
		case rec = <-e.logs:
		case <-time.After(10 * time.Second):
			t.Fatal("no request log record")
		}
		line, _ := json.Marshal(rec)
		if rec.Status != res.StatusCode || rec.Provider != "bedrock" && res.StatusCode == http.StatusOK {
			t.Errorf("log record %s does not describe the %d answer", line, res.StatusCode)
		}
		for _, s := range []string{testSecret, testToken} {
			if strings.Contains(string(line), s) {
				t.Errorf("request log holds a secret: %s", line)
			}
		}
	}
}
