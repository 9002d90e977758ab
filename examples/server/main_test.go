package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelgateway/gateway/gatewaytest"
)

// waitLimit bounds every wait for the server under test; it is a deadline,
// not a delay.
const waitLimit = 60 * time.Second

// lines is an io.Writer that collects output line by line and lets a test
// wait for a line. It is safe for concurrent use.
type lines struct {
	mu      sync.Mutex // guards the fields below
	partial []byte
	all     []string
	changed chan struct{} // closed and replaced when a line is added
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.all = append(l.all, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

// String returns everything written so far.
func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n") + "\n" + string(l.partial)
}

// wait returns the first line that match accepts. It fails the test when
// no such line comes within waitLimit or before stopped is closed.
func (l *lines) wait(t testing.TB, what string, stopped <-chan struct{}, match func(string) bool) string {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	last := false
	for {
		l.mu.Lock()
		for _, s := range l.all {
			if match(s) {
				l.mu.Unlock()
				return s
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if last {
			t.Fatalf("the server stopped without writing %s; output:\n%s", what, l)
		}
		select {
		case <-changed:
		case <-stopped:
			last = true // look once more: the line may have come with the exit
		case <-deadline.C:
			t.Fatalf("no %s within %s; output:\n%s", what, waitLimit, l)
		}
	}
}

var listenRE = regexp.MustCompile(`^gateway: listening on (http://\S+)$`)

// baseURL waits for the listening line on stderr and returns the address.
func baseURL(t testing.TB, stderr *lines, stopped <-chan struct{}) string {
	t.Helper()
	line := stderr.wait(t, "listening line", stopped, listenRE.MatchString)
	return listenRE.FindStringSubmatch(line)[1]
}

// logRecord is the part of a JSON request-log line the tests check.
type logRecord struct {
	Msg         string  `json:"msg"`
	TraceID     string  `json:"trace_id"`
	KeyID       string  `json:"key_id"`
	WorkspaceID string  `json:"workspace_id"`
	Provider    string  `json:"provider"`
	Method      string  `json:"method"`
	Path        string  `json:"path"`
	Status      int     `json:"status"`
	ErrorCode   string  `json:"error_code"`
	Aborted     bool    `json:"aborted"`
	Model       string  `json:"model"`
	TotalTokens int64   `json:"total_tokens"`
	Cost        float64 `json:"cost"`

	SkippedTargets []string `json:"skipped_targets"`
	TrippedTargets []string `json:"tripped_targets"`
}

// logFor waits for the request-log line of traceID on stdout.
func logFor(t *testing.T, stdout *lines, stopped <-chan struct{}, traceID string) logRecord {
	t.Helper()
	var rec logRecord
	stdout.wait(t, "request log for trace "+traceID, stopped, func(s string) bool {
		rec = logRecord{}
		return json.Unmarshal([]byte(s), &rec) == nil && rec.TraceID == traceID
	})
	return rec
}

// newProvider starts a fake OpenAI-compatible provider that answers only
// requests carrying token, the credential of the virtual key under test.
func newProvider(t *testing.T, token string) *gatewaytest.Server {
	t.Helper()
	fake := gatewaytest.NewServer()
	t.Cleanup(fake.Close)
	fake.RequireToken(token)
	return fake
}

// holdStream scripts the next request to path as a server-sent event stream
// of two events that the provider holds after the first until the returned
// gate is released.
func holdStream(fake *gatewaytest.Server, path string) *gatewaytest.StreamGate {
	fake.Script(path, gatewaytest.Response{Events: []string{`{"n":1}`, `{"n":2}`}})
	return fake.HoldStream(path, 1)
}

const (
	firstEvent = "data: {\"n\":1}\n"
	restEvents = "data: {\"n\":2}\n\ndata: [DONE]\n\n"
)

// waitHeld waits until the provider holds the stream behind gate.
func waitHeld(t *testing.T, gate *gatewaytest.StreamGate) {
	t.Helper()
	select {
	case <-gate.Held():
	case <-time.After(waitLimit):
		t.Fatal("the provider's stream never reached its gate")
	}
}

// received is what the provider saw of one request.
type received struct {
	Method, Path, RawQuery string
	Authorization          string
	GatewayHeaders         []string // x-gateway-* headers that reached the provider
	Body                   string
}

// lastReceived returns the last request the provider received.
func lastReceived(t *testing.T, fake *gatewaytest.Server) received {
	t.Helper()
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the provider received no request")
	}
	r := reqs[len(reqs)-1]
	got := received{Method: r.Method, Path: r.Path, RawQuery: r.RawQuery, Authorization: r.Header.Get("Authorization"), Body: string(r.Body)}
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-gateway-") {
			got.GatewayHeaders = append(got.GatewayHeaders, name)
		}
	}
	return got
}

// proc is the server binary running under test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *lines
	done           chan struct{} // closed when the process has exited
	err            error         // the exit status, once done is closed
}

// buildServer builds the package in the current directory into a
// temporary directory and returns the binary's path.
func buildServer(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH; skipping the tests that build the binary")
	}
	bin := filepath.Join(t.TempDir(), "server")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startProc starts bin with args and an environment holding env and none
// of the caller's GATEWAY_* or test variables, in a new temporary working
// directory, so that a database it creates by default (gateway.db) never
// lands in the repository.
func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	return startProcIn(t, t.TempDir(), bin, env, args...)
}

// startProcIn is startProc with the working directory dir.
func startProcIn(t *testing.T, dir, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: newLines(), stderr: newLines(), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") && !strings.HasPrefix(kv, "E2E_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exit waits for the process to exit and returns its exit code.
func (p *proc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitLimit):
		t.Fatalf("the server did not exit within %s; stderr:\n%s", waitLimit, p.stderr)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("waiting for the server: %v", p.err)
	}
	return 0
}

// call sends a request to the gateway with the given headers.
func call(t *testing.T, method, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return string(b)
}

// errorCode returns error.code of an OpenAI-shaped error body.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", body, err)
	}
	return e.Error.Code
}

// readEvent reads one SSE event (up to its blank line) from br.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (so far %q)", err, ev.String())
		}
		if line == "\n" {
			return ev.String()
		}
		ev.WriteString(line)
	}
}

const configTemplate = `{
  "api_keys": [
    {"id": "key-e2e", "key": "${E2E_GATEWAY_KEY}", "workspace_id": "ws-1", "role": "admin",
     "metadata": {"_environment": "e2e"}},
    {"id": "key-hashed", "key_sha256": "%x", "workspace_id": "ws-1"},
    {"id": "key-off", "key": "gw-disabled", "workspace_id": "ws-1", "disabled": true}
  ],
  "virtual_keys": [
    {"slug": "fake", "provider": "openai", "api_key": "${E2E_UPSTREAM_KEY}",
     "base_url": "${E2E_FAKE_URL}", "workspace_id": "ws-1"}
  ],
  "configs": [
    {"id": "pc-fake", "workspace_id": "ws-1", "config": {"virtual_key": "fake"}}
  ],
  "rate_limits_policies": [
    {"id": "7d1e3f6a-1b2c-4d5e-8f90-123456789abc", "conditions": [{"key": "workspace_id", "value": "ws-1"}],
     "group_by": [{"key": "api_key"}], "type": "requests", "unit": "rph", "value": 1000, "workspace_id": "ws-1"}
  ],
  "custom_hosts": {"allow": ["localhost:11434"]}
}`

// writeConfig writes a config file whose secrets and fake-provider URL
// come from the environment through ${VAR}.
func writeConfig(t *testing.T, hashedKey string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.json")
	data := fmt.Sprintf(configTemplate, sha256.Sum256([]byte(hashedKey)))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// secret returns a random credential that is easy to grep for.
func secret(prefix string) string { return prefix + rand.Text() }

// TestServerBinary builds examples/server and drives it over HTTP with a
// config file, against a fake provider.
func TestServerBinary(t *testing.T) {
	bin := buildServer(t)

	t.Run("config file", func(t *testing.T) {
		gwKey, hashedKey, upKey := secret("gw-e2e-"), secret("gw-hashed-"), secret("sk-up-")
		fake := newProvider(t, upKey)
		cfg := writeConfig(t, hashedKey)
		p := startProc(t, bin, []string{"E2E_GATEWAY_KEY=" + gwKey, "E2E_UPSTREAM_KEY=" + upKey, "E2E_FAKE_URL=" + fake.URL},
			"-addr", "127.0.0.1:0", "-drain", "0s", "-config", cfg)
		base := baseURL(t, p.stderr, p.done)

		t.Run("refuses requests without a valid key, logging none", func(t *testing.T) {
			for _, tc := range []struct {
				name, key, code string
			}{
				{"missing", "", "missing_api_key"},
				{"wrong", "gw-wrong", "invalid_api_key"},
				{"disabled", "gw-disabled", "invalid_api_key"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					hdr := map[string]string{"x-gateway-virtual-key": "fake"}
					if tc.key != "" {
						hdr["x-gateway-api-key"] = tc.key
					}
					res := call(t, "POST", base+"/v1/chat/completions", `{"model":"m"}`, hdr)
					body := readAll(t, res)
					if res.StatusCode != http.StatusUnauthorized || errorCode(t, body) != tc.code {
						t.Errorf("got %d %s, want 401 with code %s", res.StatusCode, body, tc.code)
					}
					trace := res.Header.Get("x-gateway-trace-id")
					if trace == "" {
						t.Fatal("the 401 has no x-gateway-trace-id")
					}
					// No request log line (docs/architecture.md, Trust: counted in
					// metrics, not logged). Lines come in the order
					// requests end, so once a later request's line is
					// out, the 401's would be too.
					later := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": gwKey})
					readAll(t, later)
					logFor(t, p.stdout, p.done, later.Header.Get("x-gateway-trace-id"))
					if out := p.stdout.String(); strings.Contains(out, trace) {
						t.Errorf("the 401 has a request log line:\n%s", out)
					}
				})
			}
		})

		t.Run("passes requests through unchanged", func(t *testing.T) {
			viaVK := map[string]string{"x-gateway-virtual-key": "fake"}
			for _, tc := range []struct {
				name   string
				key    string
				hdr    map[string]string
				path   string
				script *gatewaytest.Response // nil: the provider's own answer
				keyID  string
			}{
				{"virtual key", gwKey, viaVK, "/v1/chat/completions?trace=1",
					&gatewaytest.Response{Status: 201, Header: http.Header{"X-Fake-Upstream": {"chat"}, "Openai-Processing-Ms": {"12"}},
						Body: `{"id":"chatcmpl-fixed","object":"chat.completion","choices":[]}`}, "key-e2e"},
				{"provider error status", gwKey, viaVK, "/v1/chat/completions",
					&gatewaytest.Response{Status: 429, Header: http.Header{"Retry-After": {"7"}},
						Body: `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}, "key-e2e"},
				{"saved config", gwKey, map[string]string{"x-gateway-config": "pc-fake"}, "/v1/chat/completions", nil, "key-e2e"},
				{"key given as sha256", hashedKey, viaVK, "/v1/chat/completions", nil, "key-hashed"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					path, query, _ := strings.Cut(tc.path, "?")
					if tc.script != nil {
						fake.Script(path, *tc.script)
					}
					hdr := map[string]string{"x-gateway-api-key": tc.key, "Content-Type": "application/json", "Authorization": "Bearer caller-token"}
					for k, v := range tc.hdr {
						hdr[k] = v
					}
					reqBody := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`
					res := call(t, "POST", base+tc.path, reqBody, hdr)
					body := readAll(t, res)

					wantStatus := http.StatusOK
					if tc.script != nil {
						wantStatus = tc.script.Status
						if body != tc.script.Body {
							t.Errorf("body %q, want the provider's %q", body, tc.script.Body)
						}
						for h, v := range tc.script.Header {
							if got := res.Header.Values(h); !cmp.Equal(got, v) {
								t.Errorf("header %s = %q, want the provider's %q", h, got, v)
							}
						}
					} else {
						var c struct {
							Object  string
							Choices []struct{ Message struct{ Content string } }
						}
						if err := json.Unmarshal([]byte(body), &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 ||
							c.Choices[0].Message.Content != gatewaytest.CompletionText("hello") {
							t.Errorf("body %s, want the provider's chat completion of \"hello\"", body)
						}
					}
					if res.StatusCode != wantStatus {
						t.Errorf("status %d, want the provider's %d", res.StatusCode, wantStatus)
					}
					trace := res.Header.Get("x-gateway-trace-id")
					if trace == "" {
						t.Error("no x-gateway-trace-id on the response")
					}

					want := received{Method: "POST", Path: path, RawQuery: query, Authorization: "Bearer " + upKey, Body: reqBody}
					if diff := cmp.Diff(want, lastReceived(t, fake)); diff != "" {
						t.Errorf("the provider received (-want +got):\n%s", diff)
					}

					rec := logFor(t, p.stdout, p.done, trace)
					wantRec := logRecord{Msg: "request", TraceID: trace, KeyID: tc.keyID, WorkspaceID: "ws-1", Provider: "openai",
						Method: "POST", Path: path, Status: wantStatus, Model: "gpt-4o-mini"}
					// Tokens and cost depend on each case's answer; TestRunMetrics checks them.
					if diff := cmp.Diff(wantRec, rec, cmpopts.IgnoreFields(logRecord{}, "TotalTokens", "Cost")); diff != "" {
						t.Errorf("request log line (-want +got):\n%s", diff)
					}
				})
			}
		})

		streamHdr := map[string]string{"x-gateway-api-key": gwKey, "x-gateway-virtual-key": "fake"}
		const streamBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}],"stream":true}`

		t.Run("streams server-sent events as they come", func(t *testing.T) {
			gate := holdStream(fake, "/v1/chat/completions")
			res := call(t, "POST", base+"/v1/chat/completions", streamBody, streamHdr)
			defer res.Body.Close()
			if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("got %d %q, want 200 text/event-stream", res.StatusCode, ct)
			}
			waitHeld(t, gate)
			br := bufio.NewReader(res.Body)
			// The first event arrives while the provider still holds the
			// stream open, so the gateway did not buffer it.
			if ev := readEvent(t, br); ev != firstEvent {
				t.Errorf("first event %q, want %q", ev, firstEvent)
			}
			gate.Release()
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != restEvents {
				t.Errorf("rest of the stream %q, %v; want %q", rest, err, restEvents)
			}
			rec := logFor(t, p.stdout, p.done, res.Header.Get("x-gateway-trace-id"))
			if rec.Status != 200 || rec.Aborted {
				t.Errorf("log line: status %d aborted %v, want 200 and not aborted", rec.Status, rec.Aborted)
			}
		})

		t.Run("SIGTERM lets a held stream finish and exits 0", func(t *testing.T) {
			gate := holdStream(fake, "/v1/chat/completions")
			res := call(t, "POST", base+"/v1/chat/completions", streamBody, streamHdr)
			defer res.Body.Close()
			waitHeld(t, gate)
			br := bufio.NewReader(res.Body)
			readEvent(t, br)
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			p.stderr.wait(t, "shutdown message", p.done, func(s string) bool { return strings.HasPrefix(s, "gateway: shutting down") })
			// The listener is closed by now: new requests are not served
			// while the stream goes on.
			checkNotServed(t, base, streamHdr, fake)
			select {
			case <-p.done:
				t.Fatalf("the server exited while a stream was in flight; stderr:\n%s", p.stderr)
			default:
			}
			gate.Release()
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != restEvents {
				t.Errorf("rest of the stream %q, %v; want %q and a clean end", rest, err, restEvents)
			}
			if code := p.exit(t); code != 0 {
				t.Errorf("exit code %d, want 0; stderr:\n%s", code, p.stderr)
			}
			rec := logFor(t, p.stdout, p.done, res.Header.Get("x-gateway-trace-id"))
			if rec.Status != 200 || rec.Aborted {
				t.Errorf("log line: status %d aborted %v, want 200 and not aborted", rec.Status, rec.Aborted)
			}
		})

		t.Run("no secret in the output", func(t *testing.T) {
			p.exit(t)
			out := p.stdout.String() + p.stderr.String()
			for name, s := range map[string]string{"gateway key": gwKey, "hashed gateway key": hashedKey, "virtual key api_key": upKey, "caller token": "caller-token"} {
				if strings.Contains(out, s) {
					t.Errorf("the %s appears in the output:\n%s", name, out)
				}
			}
		})
	})

	t.Run("unknown config field", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(path, []byte(`{"api_keys": [{"id": "k", "key": "gw-1", "workspace": "ws-1"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startProc(t, bin, nil, "-addr", "127.0.0.1:0", "-config", path)
		if code := p.exit(t); code == 0 {
			t.Errorf("exit code 0, want non-zero")
		}
		if stderr := p.stderr.String(); !strings.Contains(stderr, `"workspace"`) || strings.Contains(stderr, "listening") {
			t.Errorf("stderr does not name the unknown field, or the server started:\n%s", stderr)
		}
	})

	t.Run("generated key", func(t *testing.T) {
		p := startProc(t, bin, nil, "-addr", "127.0.0.1:0", "-drain", "0s", "-db", ":memory:")
		base := baseURL(t, p.stderr, p.done)
		line := p.stderr.wait(t, "generated key", p.done, func(s string) bool { return strings.Contains(s, "generated API key") })
		m := regexp.MustCompile(`generated API key (gw-[A-Za-z0-9]+) \(the organisation admin key key-default\); set GATEWAY_API_KEY to keep it$`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected line %q", line)
		}
		key := m[1]

		res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": key})
		// Past authentication the gateway asks which provider to use.
		if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
			t.Errorf("with the generated key: %d %s, want 400 missing_provider", res.StatusCode, body)
		}
		res = call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": key + "x"})
		if body := readAll(t, res); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("with another key: %d %s, want 401", res.StatusCode, body)
		}

		p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.exit(t); code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
		if n := strings.Count(p.stdout.String()+p.stderr.String(), key); n != 1 {
			t.Errorf("the generated key appears %d times in the output, want once", n)
		}
	})
}

// running is the server run in-process by startRun.
type running struct {
	base           string
	stdout, stderr *lines
	shutdown       context.CancelFunc // the first signal: drain, then shut down gracefully
	force          context.CancelFunc // the second signal: end the drain and grace period
	done           chan struct{}      // closed when run has returned
	err            error              // what run returned, once done is closed
}

// startRun runs run in-process with "-addr 127.0.0.1:0 -drain 0s -db
// :memory:" followed by args (which may override them) and waits until it
// listens. At cleanup
// it is stopped and waited for.
func startRun(t *testing.T, args ...string) *running {
	t.Helper()
	return startRunArgs(t, append([]string{"-addr", "127.0.0.1:0", "-drain", "0s", "-db", ":memory:"}, args...)...)
}

// startRunArgs is startRun with args alone.
func startRunArgs(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{stdout: newLines(), stderr: newLines(), done: make(chan struct{})}
	ctx, shutdown := context.WithCancel(context.Background())
	force, hurry := context.WithCancel(context.Background())
	r.shutdown, r.force = shutdown, hurry
	go func() {
		defer close(r.done)
		r.err = run(ctx, force, args, r.stdout, r.stderr)
	}()
	t.Cleanup(func() {
		shutdown()
		hurry()
		r.wait()
	})
	r.base = baseURL(t, r.stderr, r.done)
	return r
}

// wait returns what run returned, or an error if it does not return
// within waitLimit.
func (r *running) wait() error {
	select {
	case <-r.done:
		return r.err
	case <-time.After(waitLimit):
		return fmt.Errorf("run did not return within %s", waitLimit)
	}
}

// runServer runs run in-process with args and returns its base URL, its
// output, and a stop function that starts the shutdown and returns run's
// error.
func runServer(t *testing.T, args ...string) (base string, stdout, stderr *lines, stop func() error) {
	t.Helper()
	r := startRun(t, args...)
	stop = func() error {
		r.shutdown()
		return r.wait()
	}
	return r.base, r.stdout, r.stderr, stop
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in the error text
	}{
		{"unknown top-level field", []string{"-config", file("top.json", `{"api_keys": [], "virtual_key": []}`)}, `"virtual_key"`},
		{"unknown api key field", []string{"-config", file("key.json", `{"api_keys": [{"id": "k", "key": "gw", "scope": "x"}]}`)}, `"scope"`},
		{"unknown virtual key field", []string{"-config", file("vk.json", `{"virtual_keys": [{"slug": "s", "provider": "openai", "apikey": "x"}]}`)}, `"apikey"`},
		{"unknown custom_hosts field", []string{"-config", file("ch.json", `{"custom_hosts": {"deny": []}}`)}, `"deny"`},
		{"unknown field in a saved config", []string{"-config", file("cfg.json", `{"configs": [{"id": "c", "config": {"provider": "openai", "retries": 3}}]}`)}, "retries"},
		{"base_url from an unset variable", []string{"-config", file("url.json", `{"virtual_keys": [{"slug": "s", "provider": "openai", "base_url": "${E2E_UNSET_URL}/v1"}]}`)}, "virtual_keys[0].base_url"},
		{"bad role", []string{"-config", file("role.json", `{"api_keys": [{"id": "k", "key": "gw", "role": "root"}]}`)}, "api_keys[0].role"},
		{"key and key_sha256", []string{"-config", file("both.json", `{"api_keys": [{"id": "k"}]}`)}, "key_sha256"},
		{"trailing data", []string{"-config", file("trail.json", `{} {}`)}, "trailing data"},
		{"missing file", []string{"-config", filepath.Join(dir, "absent.json")}, "absent.json"},
		{"negative grace", []string{"-grace", "-1s"}, "-grace"},
		{"negative drain", []string{"-drain", "-1s"}, "-drain"},
		{"-demo beside a virtual key demo", []string{"-demo", "-config", file("demo.json", `{"virtual_keys": [{"slug": "demo", "provider": "openai"}]}`)}, "virtual key named demo"},
		{"bad -public-url", []string{"-public-url", "gateway.example.com"}, "-public-url"},
		{"bad flag", []string{"-port", "80"}, "-port"},
		{"extra argument", []string{"serve"}, `"serve"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := newLines()
			err := run(context.Background(), context.Background(), append([]string{"-addr", "127.0.0.1:0", "-db", ":memory:"}, tc.args...), io.Discard, stderr)
			if err == nil || !strings.HasPrefix(err.Error(), "gateway: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run() = %v, want an error starting gateway: and naming %s", err, tc.want)
			}
			if strings.Contains(stderr.String(), "listening") {
				t.Errorf("the server started:\n%s", stderr)
			}
		})
	}
}

func TestRunWarnsAboutUnsetVariables(t *testing.T) {
	t.Setenv("E2E_SET", "gw-from-env")
	path := filepath.Join(t.TempDir(), "gateway.json")
	data := `{"api_keys": [{"id": "k", "key": "${E2E_SET}"}], "virtual_keys": [{"slug": "v", "provider": "openai", "api_key": "${E2E_NOT_SET_ANYWHERE}"}]}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, stderr, stop := runServer(t, "-config", path)
	res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": "gw-from-env"})
	if body := readAll(t, res); res.StatusCode == http.StatusUnauthorized {
		t.Errorf("the key expanded from ${E2E_SET} was refused: %s", body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	out := stderr.String()
	if !strings.Contains(out, "${E2E_NOT_SET_ANYWHERE}, which is not set") {
		t.Errorf("no warning about the unset variable:\n%s", out)
	}
	if strings.Contains(out, "E2E_SET}") || strings.Contains(out, "gw-from-env") {
		t.Errorf("warned about a set variable, or printed its value:\n%s", out)
	}
}

func TestRunAPIKeyFromEnvironment(t *testing.T) {
	t.Setenv("GATEWAY_API_KEY", "gw-from-env")
	base, _, stderr, stop := runServer(t)
	res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": "gw-from-env"})
	if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
		t.Errorf("with GATEWAY_API_KEY: %d %s, want 400 missing_provider", res.StatusCode, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if out := stderr.String(); strings.Contains(out, "generated") || strings.Contains(out, "gw-from-env") {
		t.Errorf("stderr mentions a key:\n%s", out)
	}
}

func TestRunHeaderLimit(t *testing.T) {
	t.Setenv("GATEWAY_API_KEY", "gw-limit")
	base, _, _, _ := runServer(t)
	for _, tc := range []struct {
		name   string
		size   int
		status int
	}{
		{"60 KiB of headers pass", 60 << 10, http.StatusBadRequest}, // missing_provider: the request got through
		{"80 KiB of headers are refused", 80 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": "gw-limit", "X-Pad": strings.Repeat("a", tc.size)})
			readAll(t, res)
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d", res.StatusCode, tc.status)
			}
		})
	}
}

func TestRunShutdown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		grace    string
		complete bool // the held stream ends cleanly
		message  string
	}{
		{"in-flight stream finishes within the grace period", "30s", true, "gateway: stopped"},
		{"zero grace cuts the stream", "0s", false, "gateway: grace period expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newProvider(t, "sk-shutdown")
			gate := holdStream(fake, "/v1/chat/completions")
			cfg := filepath.Join(t.TempDir(), "gateway.json")
			data := fmt.Sprintf(`{"api_keys": [{"id": "k", "key": "gw-shutdown"}],
				"virtual_keys": [{"slug": "fake", "provider": "openai", "api_key": "sk-shutdown", "base_url": %q}]}`, fake.URL)
			if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			base, stdout, stderr, stop := runServer(t, "-config", cfg, "-grace", tc.grace)
			res := call(t, "POST", base+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
				map[string]string{"x-gateway-api-key": "gw-shutdown", "x-gateway-virtual-key": "fake"})
			defer res.Body.Close()
			waitHeld(t, gate)
			br := bufio.NewReader(res.Body)
			readEvent(t, br)

			stopped := make(chan error, 1)
			go func() { stopped <- stop() }()
			stderr.wait(t, "shutdown message", nil, func(s string) bool { return strings.HasPrefix(s, "gateway: shutting down") })
			// The listener is closed by now: new requests are not served
			// while the stream goes on.
			checkNotServed(t, base, map[string]string{"x-gateway-api-key": "gw-shutdown", "x-gateway-virtual-key": "fake"}, fake)
			if tc.complete {
				gate.Release()
			}
			rest, err := io.ReadAll(br)
			if got := err == nil && string(rest) == restEvents; got != tc.complete {
				t.Errorf("rest of the stream %q, %v; want complete = %v", rest, err, tc.complete)
			}
			if err := <-stopped; err != nil {
				t.Errorf("run() = %v, want nil", err)
			}
			stderr.wait(t, "final message", nil, func(s string) bool { return strings.HasPrefix(s, tc.message) })
			// What the log queue dropped is said on the way out.
			if !strings.Contains(stderr.String(), "gateway: request logs dropped: 0\n") {
				t.Errorf("stderr lacks the count of dropped request logs:\n%s", stderr.String())
			}
			// The request log is flushed before run returns.
			rec := logFor(t, stdout, nil, res.Header.Get("x-gateway-trace-id"))
			if rec.Status != 200 || rec.Aborted == tc.complete {
				t.Errorf("log line: status %d aborted %v, want 200 and aborted %v", rec.Status, rec.Aborted, !tc.complete)
			}
		})
	}
}
