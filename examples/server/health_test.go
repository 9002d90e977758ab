package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probe sends method path to the server at base without any key and
// returns the status and body.
func probe(t *testing.T, method, base, path string) (int, string) {
	t.Helper()
	res := call(t, method, base+path, "", nil)
	return res.StatusCode, readAll(t, res)
}

// TestRunHealth: /healthz and /readyz answer without a key and say
// nothing but "ok"; once the shutdown signal comes, /readyz answers 503
// while the server keeps serving, in-flight streams and new requests
// alike, until the drain ends; the probes are never request-logged.
func TestRunHealth(t *testing.T) {
	fake := newProvider(t, "sk-health")
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	data := fmt.Sprintf(`{"api_keys": [{"id": "k", "key": "gw-health"}],
		"virtual_keys": [{"slug": "fake", "provider": "openai", "api_key": "sk-health", "base_url": %q}]}`, fake.URL)
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	// The drain lasts until the test ends it, as a second signal would.
	r := startRun(t, "-config", cfg, "-drain", "1h")
	viaVK := map[string]string{"x-gateway-api-key": "gw-health", "x-gateway-virtual-key": "fake"}

	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/healthz", 200, "ok\n"},
		{"GET", "/readyz", 200, "ok\n"},
		{"HEAD", "/readyz", 200, ""},
		{"POST", "/healthz", 405, "method not allowed\n"},
	} {
		if status, body := probe(t, tc.method, r.base, tc.path); status != tc.status || body != tc.body {
			t.Errorf("%s %s without a key: %d %q, want %d %q", tc.method, tc.path, status, body, tc.status, tc.body)
		}
	}

	gate := holdStream(fake, "/v1/chat/completions")
	res := call(t, "POST", r.base+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, viaVK)
	defer res.Body.Close()
	waitHeld(t, gate)
	br := bufio.NewReader(res.Body)
	readEvent(t, br)

	r.shutdown()
	r.stderr.wait(t, "drain message", r.done, func(s string) bool { return strings.HasPrefix(s, "gateway: draining for 1h0m0s") })
	if status, body := probe(t, "GET", r.base, "/readyz"); status != http.StatusServiceUnavailable || body != "draining\n" {
		t.Errorf("/readyz while draining: %d %q, want 503 %q", status, body, "draining\n")
	}
	if status, body := probe(t, "GET", r.base, "/healthz"); status != http.StatusOK {
		t.Errorf("/healthz while draining: %d %q, want 200", status, body)
	}
	// A load balancer that has not noticed yet still gets answers.
	late := call(t, "GET", r.base+"/v1/models", "", viaVK)
	if body := readAll(t, late); late.StatusCode != http.StatusOK {
		t.Errorf("a new request while draining: %d %s, want the provider's 200", late.StatusCode, body)
	}
	gate.Release()
	if rest, err := io.ReadAll(br); err != nil || string(rest) != restEvents {
		t.Errorf("rest of the in-flight stream %q, %v; want %q", rest, err, restEvents)
	}

	r.force()
	if err := r.wait(); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	// run has flushed every request log: the gateway's requests are there,
	// the probes are not.
	out := r.stdout.String()
	if !strings.Contains(out, `"path":"/v1/models"`) {
		t.Errorf("no request log for /v1/models:\n%s", out)
	}
	if strings.Contains(out, "/healthz") || strings.Contains(out, "/readyz") {
		t.Errorf("a probe was request-logged:\n%s", out)
	}
}

// TestRunSecondSignal: a second signal ends the drain and the grace period
// at once, cutting what is still in flight, and run still flushes the
// request logs and returns nil.
func TestRunSecondSignal(t *testing.T) {
	fake := newProvider(t, "sk-second")
	gate := holdStream(fake, "/v1/chat/completions")
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	data := fmt.Sprintf(`{"api_keys": [{"id": "k", "key": "gw-second"}],
		"virtual_keys": [{"slug": "fake", "provider": "openai", "api_key": "sk-second", "base_url": %q}]}`, fake.URL)
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRun(t, "-config", cfg, "-drain", "1h", "-grace", "1h")
	res := call(t, "POST", r.base+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		map[string]string{"x-gateway-api-key": "gw-second", "x-gateway-virtual-key": "fake"})
	defer res.Body.Close()
	waitHeld(t, gate)
	br := bufio.NewReader(res.Body)
	readEvent(t, br)

	r.shutdown()
	r.stderr.wait(t, "drain message", r.done, func(s string) bool { return strings.HasPrefix(s, "gateway: draining") })
	r.force()
	if err := r.wait(); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if rest, err := io.ReadAll(br); err == nil && string(rest) == restEvents {
		t.Errorf("the held stream ended cleanly (%q), want it cut", rest)
	}
	if out := r.stderr.String(); !strings.Contains(out, "gateway: second signal; closed the remaining connections") {
		t.Errorf("no message about the second signal:\n%s", out)
	}
	rec := logFor(t, r.stdout, nil, res.Header.Get("x-gateway-trace-id"))
	if !rec.Aborted {
		t.Errorf("log line: aborted %v, want the cut stream logged as aborted", rec.Aborted)
	}
}
