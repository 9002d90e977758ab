package browsertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway/gatewaytest"
)

// adminKey is the key the server runs with: an admin key of its default
// workspace (GATEWAY_API_KEY with -demo, the config file's otherwise).
const adminKey = "gw-browsertest-admin-key-0123456789"

// orgKey is the organisation admin key of the "sqlite" backend's config
// file.
const orgKey = "gw-browsertest-org-key-0123456789"

// server is examples/server, built from this repository and run with
// generated traffic on one of its backends.
type server struct {
	t   *testing.T
	url string
}

// startServer builds and starts examples/server, stopped at the end of
// the test. Backend "memory" runs it with -demo (state in memory, its
// own fake provider behind the virtual key demo); "sqlite" with a SQLite
// database and a -config file naming the admin key and a virtual key
// demo for a fake provider of the test's. extra are more flags, which
// win over those startServer gives.
func startServer(t *testing.T, backend string, extra ...string) *server {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-o", bin, "./examples/server")
	build.Dir = root
	build.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/server: %v\n%s", err, out)
	}
	args := []string{"-addr", "127.0.0.1:0", "-request-log", "off", "-drain", "0", "-grace", "1s"}
	env := append(os.Environ(), "GATEWAY_API_KEY="+adminKey)
	switch backend {
	case "memory":
		args = append(args, "-demo")
	case "sqlite":
		up := gatewaytest.NewServer()
		t.Cleanup(up.Close)
		u, _ := url.Parse(up.URL)
		cfg, _ := json.Marshal(map[string]any{
			"api_keys": []any{map[string]any{"id": "key-admin", "key": adminKey, "workspace_id": "default", "role": "admin"},
				map[string]any{"id": "key-org", "key": orgKey, "role": "admin"}},
			"virtual_keys": []any{map[string]any{"slug": "demo", "provider": "openai", "api_key": "sk-browsertest", "base_url": up.URL}},
			"custom_hosts": map[string]any{"allow": []string{u.Host}},
		})
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-db", filepath.Join(dir, "gateway.db"), "-config", path)
		env = append(env, "GATEWAY_MASTER_KEY="+strings.Repeat("7f", 32))
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if _, addr, ok := strings.Cut(lines.Text(), "gateway: listening on "); ok {
			go io.Copy(io.Discard, stderr)
			return &server{t: t, url: addr}
		}
	}
	t.Fatal("the server did not say where it listens")
	return nil
}

// api calls the gateway's API (under /v1) with key and decodes a 2xx
// JSON answer into out; it returns the status.
func (s *server) api(key, method, path, body string, out any) int {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+"/v1"+path, strings.NewReader(body))
	req.Header.Set("x-gateway-api-key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return res.StatusCode
}

// complete sends one chat completion as key through the demo virtual
// key, with a trace id, and returns the status.
func (s *server) complete(key, trace string) int {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to the console"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", key)
	req.Header.Set("x-gateway-virtual-key", "demo")
	req.Header.Set("x-gateway-trace-id", trace)
	req.Header.Set("x-gateway-metadata", `{"_user":"browser-test"}`)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// traffic sends n completions with trace ids bt-0 … and waits until GET
// /logs holds them.
func (s *server) traffic(n int) {
	s.t.Helper()
	for i := range n {
		if st := s.complete(adminKey, fmt.Sprintf("bt-%d", i)); st != 200 {
			s.t.Fatalf("completion %d: %d", i, st)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list struct {
			Data []json.RawMessage `json:"data"`
		}
		s.api(adminKey, "GET", "/logs?page_size=100", "", &list)
		if len(list.Data) >= n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d logs stored, want %d", len(list.Data), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
