package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
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

	"github.com/modelgateway/gateway/gatewaytest"
)

// waitLimit bounds every wait for the program under test; it is a
// deadline, not a delay.
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

func (l *lines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

func (l *lines) String() string { return strings.Join(l.lines(), "\n") }

// wait returns the first line that match accepts, failing the test when
// none comes within waitLimit or before stopped is closed.
func (l *lines) wait(t *testing.T, what string, stopped <-chan struct{}, match func(string) bool) string {
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
			t.Fatalf("the program stopped without writing %s; output:\n%s", what, l)
		}
		select {
		case <-changed:
		case <-stopped:
			last = true
		case <-deadline.C:
			t.Fatalf("no %s within %s; output:\n%s", what, waitLimit, l)
		}
	}
}

var listenRE = regexp.MustCompile(`^gateway: listening on (http://\S+)$`)

// fakeProvider starts a fake provider that answers only requests carrying
// token, and scripts its next chat completion as chatBody.
func fakeProvider(t *testing.T, token string) *gatewaytest.Server {
	t.Helper()
	fake := gatewaytest.NewServer()
	t.Cleanup(fake.Close)
	fake.RequireToken(token)
	fake.Script("/v1/chat/completions", gatewaytest.Response{Body: chatBody})
	return fake
}

const chatBody = `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`

type response struct {
	Status      int
	ContentType string
	Body        string
	Traced      bool // has x-gateway-trace-id
}

func get(t *testing.T, method, url string, hdr map[string]string) response {
	t.Helper()
	var body io.Reader
	if method == "POST" {
		body = strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`)
	}
	req, err := http.NewRequest(method, url, body)
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
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Body: string(b), Traced: res.Header.Get("x-gateway-trace-id") != ""}
}

// checkRoutes drives the host's routes and the mounted gateway. It
// returns how many requests reached the gateway.
func checkRoutes(t *testing.T, base, gwKey, upKey string, fake *gatewaytest.Server) int {
	t.Helper()
	withKey := map[string]string{"x-gateway-api-key": gwKey, "x-gateway-virtual-key": "openai"}
	tests := []struct {
		name    string
		method  string
		path    string
		hdr     map[string]string
		want    response
		gateway bool // the request reaches the gateway
	}{
		{"host health check needs no key", "GET", "/healthz", nil,
			response{200, "text/plain; charset=utf-8", "ok\n", false}, false},
		{"host page needs no key", "GET", "/app/dashboard", nil,
			response{200, "text/plain; charset=utf-8", "the host's own page at /app/dashboard\n", false}, false},
		{"host 404 outside both", "GET", "/elsewhere", nil,
			response{404, "text/plain; charset=utf-8", "404 page not found\n", false}, false},
		{"gateway refuses a missing key", "POST", "/v1/chat/completions", nil,
			response{401, "application/json", "", true}, true},
		{"gateway passes through", "POST", "/v1/chat/completions", withKey,
			response{200, "application/json", chatBody, true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, tc.method, base+tc.path, tc.hdr)
			if tc.want.Body == "" { // an error from the gateway: check its code only
				var e struct {
					Error struct{ Code string } `json:"error"`
				}
				if err := json.Unmarshal([]byte(got.Body), &e); err != nil || e.Error.Code != "missing_api_key" {
					t.Errorf("body %q, want an error with code missing_api_key", got.Body)
				}
				got.Body = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", tc.method, tc.path, diff)
			}
		})
	}
	var got []string
	for _, r := range fake.Requests() {
		got = append(got, r.Method+" "+r.Path+" "+r.Header.Get("Authorization"))
	}
	if want := []string{"POST /v1/chat/completions Bearer " + upKey}; !cmp.Equal(got, want) {
		t.Errorf("the provider received %q, want %q", got, want)
	}
	// Requests the gateway refuses before authentication are counted in
	// metrics, not logged (docs/architecture.md, Trust).
	n := 0
	for _, tc := range tests {
		if tc.gateway && tc.want.Status != 401 {
			n++
		}
	}
	return n
}

// checkLogs checks that stdout holds one request log per gateway request,
// and none for the host's routes.
func checkLogs(t *testing.T, stdout *lines, want int) {
	t.Helper()
	var paths []string
	for _, l := range stdout.lines() {
		var rec struct{ Path string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("stdout line %q is not JSON", l)
		}
		paths = append(paths, rec.Path)
	}
	if len(paths) != want {
		t.Errorf("request logs for %q, want %d, all under /v1/", paths, want)
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/v1/") {
			t.Errorf("request log for %s, outside the gateway", p)
		}
	}
}

func TestMuxBinary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH; skipping the test that builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mux")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	up := fakeProvider(t, "sk-mux-upstream")

	stdout, stderr := newLines(), newLines()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") && !strings.HasPrefix(kv, "OPENAI_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GATEWAY_API_KEY=gw-mux-test", "OPENAI_API_KEY=sk-mux-upstream", "OPENAI_BASE_URL="+up.URL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	base := listenRE.FindStringSubmatch(stderr.wait(t, "listening line", done, listenRE.MatchString))[1]

	n := checkRoutes(t, base, "gw-mux-test", "sk-mux-upstream", up)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("no exit within %s after SIGTERM", waitLimit)
	}
	if exitErr != nil {
		t.Errorf("exit: %v, want status 0; stderr:\n%s", exitErr, stderr)
	}
	checkLogs(t, stdout, n)
	if out := stdout.String() + stderr.String(); strings.Contains(out, "gw-mux-test") || strings.Contains(out, "sk-mux-upstream") {
		t.Errorf("a key appears in the output:\n%s", out)
	}
}

func TestRun(t *testing.T) {
	up := fakeProvider(t, "sk-in-process")
	t.Setenv("GATEWAY_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "sk-in-process")
	t.Setenv("OPENAI_BASE_URL", up.URL)
	stdout, stderr := newLines(), newLines()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, []string{"-addr", "127.0.0.1:0"}, stdout, stderr)
	}()
	base := listenRE.FindStringSubmatch(stderr.wait(t, "listening line", done, listenRE.MatchString))[1]
	m := regexp.MustCompile(`generated API key (gw-\S+); set GATEWAY_API_KEY to keep it$`).FindStringSubmatch(
		stderr.wait(t, "generated key", done, func(s string) bool { return strings.Contains(s, "generated API key") }))
	if m == nil {
		t.Fatalf("no generated key in:\n%s", stderr)
	}

	n := checkRoutes(t, base, m[1], "sk-in-process", up)

	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("run did not return within %s", waitLimit)
	}
	if runErr != nil {
		t.Errorf("run() = %v, want nil", runErr)
	}
	checkLogs(t, stdout, n)
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad flag", []string{"-config", "x.json"}, "-config"},
		{"extra argument", []string{"serve"}, `"serve"`},
		{"address in use", nil, "listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				args = []string{"-addr", ln.Addr().String()}
			}
			err := run(context.Background(), args, io.Discard, io.Discard)
			if err == nil || !strings.HasPrefix(err.Error(), "gateway: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
