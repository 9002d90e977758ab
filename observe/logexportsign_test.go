package observe_test

import (
	"io"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// succeededExport creates and runs, as coreAdminKey, an export of ws-1's
// ids, and returns its id.
func (e *coreEnv) succeededExport() string {
	e.t.Helper()
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil); st != 200 {
		e.t.Fatalf("start: %d %s", st, b)
	}
	if it := e.waitExport(coreAdminKey, id); it.Status != "success" {
		e.t.Fatalf("export %s", it.Status)
	}
	return id
}

// getStatus sends GET path with headers and returns the status, the
// error code of an error body, and the body.
func (e *coreEnv) getStatus(path string, headers ...string) (int, string, string) {
	e.t.Helper()
	res := e.do("GET", path, nil, headers...)
	if res.StatusCode == 200 {
		b, _ := io.ReadAll(res.Body)
		return 200, "", string(b)
	}
	eb := decodeError(e.t, res)
	code := ""
	if eb.Error.Code != nil {
		code = *eb.Error.Code
	}
	return res.StatusCode, code, eb.Error.Message
}

// TestLogExportSignedURL: the download route's signed_url is an
// HMAC-signed, expiring URL that serves that export's records without a
// key; changing its id, expiry or signature, or waiting past its expiry,
// gets it refused; the host is never the request's (docs/architecture.md, Trust).
func TestLogExportSignedURL(t *testing.T) {
	var offset atomic.Int64
	e := newExportsEnv(t, nil)
	e.now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	addTestLogs(t, e.store, 30)
	id, other := e.succeededExport(), e.succeededExport()

	// The caller's Host and forwarding headers do not make the URL.
	u := e.signedURL(coreAdminKey, id, "Host: evil.example", "X-Forwarded-Host: evil.example", "X-Forwarded-Proto: https")
	if u.Scheme != "" || u.Host != "" || u.Path != "/v1/logs/exports/"+id+"/content" {
		t.Fatalf("signed_url %q, want a relative URL to the export's content", u)
	}
	q := u.Query()
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || len(q.Get("signature")) != 64 {
		t.Fatalf("signed_url %q: want expires and a hex HMAC-SHA256 signature", u)
	}
	if d := time.Until(time.Unix(expires, 0)); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("expires in %s, want an hour", d)
	}
	if st, _, b := e.getStatus(u.RequestURI()); st != 200 || strings.Count(b, "\n") != 30 {
		t.Fatalf("signed URL without a key: %d %s, want 200 and the 30 records", st, b)
	}

	with := func(change func(q url.Values)) string {
		q := u.Query()
		change(q)
		return u.Path + "?" + q.Encode()
	}
	for _, tc := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"another export's id", "/v1/logs/exports/" + other + "/content?" + u.RawQuery, 401, "invalid_signature"},
		{"later expiry", with(func(q url.Values) { q.Set("expires", strconv.FormatInt(expires+3600, 10)) }), 401, "invalid_signature"},
		{"changed signature", with(func(q url.Values) {
			s := []byte(q.Get("signature"))
			s[0] = "01"[map[bool]int{true: 1}[s[0] == '0']]
			q.Set("signature", string(s))
		}), 401, "invalid_signature"},
		{"no signature", with(func(q url.Values) { q.Del("signature") }), 401, "invalid_signature"},
		{"no expiry", with(func(q url.Values) { q.Del("expires") }), 401, "invalid_signature"},
		{"signature twice", with(func(q url.Values) { q.Add("signature", q.Get("signature")) }), 401, "invalid_signature"},
		{"expiry not a number", with(func(q url.Values) { q.Set("expires", "soon") }), 401, "invalid_signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st, code, b := e.getStatus(tc.path); st != tc.status || code != tc.code || strings.Contains(b, `"id"`) {
				t.Errorf("%s: %d %s, want %d %s", tc.path, st, b, tc.status, tc.code)
			}
			// An API key sent along does not rescue a bad signature.
			if st, _, _ := e.getStatus(tc.path, gateway.HeaderAPIKey+": "+coreAdminKey); st != tc.status {
				t.Errorf("%s with a key: %d, want %d", tc.path, st, tc.status)
			}
		})
	}
	// The signature is no key to anything else: the export's other routes
	// still want one.
	for _, path := range []string{"/v1/logs/exports/" + id, "/v1/logs/exports/" + id + "/download", "/v1/logs/exports"} {
		if st, code, _ := e.getStatus(path + "?" + u.RawQuery); st != 401 || code != gateway.CodeMissingAPIKey {
			t.Errorf("GET %s with the signature: %d %s, want 401 missing_api_key", path, st, code)
		}
	}

	offset.Store(int64(time.Hour + time.Second))
	if st, code, b := e.getStatus(u.RequestURI()); st != 403 || code != "expired_signature" {
		t.Errorf("after an hour: %d %s, want 403 expired_signature", st, b)
	}
	// The key still downloads it, and a new URL works again.
	if st, _, b := e.getStatus(u.Path, gateway.HeaderAPIKey+": "+coreAdminKey); st != 200 {
		t.Errorf("content with the key: %d %s", st, b)
	}
	if st, _, b := e.getStatus(e.signedURL(coreAdminKey, id).RequestURI()); st != 200 {
		t.Errorf("a new signed URL: %d %s", st, b)
	}
}

// TestLogExportSignedURLPublicURL: the signed_url starts with
// Options.PublicURL; gateways sharing Options.URLSigningKey (replicas)
// accept each other's URLs, and one with another key refuses them.
func TestLogExportSignedURLPublicURL(t *testing.T) {
	key := []byte("a shared signing key of replicas")
	e := newCoreEnv(t, nil, func(o *Options) {
		ms := o.Keys.(*memstore.Store)
		o.Logs, o.LogExports = ms, ms
		o.PublicURL, o.URLSigningKey = "https://gateway.example.com/base/", key
	})
	addTestLogs(t, e.store, 5)
	id := e.succeededExport()
	u := e.signedURL(coreAdminKey, id, "Host: evil.example")
	want := "https://gateway.example.com/base/v1/logs/exports/" + id + "/content?"
	if !strings.HasPrefix(u.String(), want) {
		t.Fatalf("signed_url %q, want it to start with %q", u, want)
	}
	path := strings.TrimPrefix(u.RequestURI(), "/base") // as a proxy mounting the gateway under /base passes it on
	for _, tc := range []struct {
		name   string
		key    []byte
		status int
	}{
		{"a replica with the same key", key, 200},
		{"a gateway with another key", []byte("another key"), 401},
		{"a gateway with a random key", nil, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gateway.New(gateway.Options{Keys: e.store})
			rs := observe.Mount(g, observe.Options{Logs: e.store, Exports: e.store, URLSigningKey: tc.key})
			srv := httptest.NewServer(g)
			t.Cleanup(func() { srv.Close(); rs.Close(); g.Close() })
			res, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Errorf("%d %s, want %d", res.StatusCode, b, tc.status)
			}
		})
	}
}
