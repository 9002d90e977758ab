package browsertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// adminKey is the key the server runs with (GATEWAY_API_KEY): with -demo,
// an admin key of the server's default workspace.
const adminKey = "gw-browsertest-admin-key-0123456789"

// server is examples/server, built from this repository and run with
// -demo (a fake OpenAI-compatible provider behind the virtual key demo,
// state in memory).
type server struct {
	t   *testing.T
	url string
}

// startServer builds and starts examples/server; it is stopped at the
// end of the test.
func startServer(t *testing.T) *server {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "server")
	build := exec.Command("go", "build", "-o", bin, "./examples/server")
	build.Dir = root
	build.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-demo", "-addr", "127.0.0.1:0", "-request-log", "off", "-drain", "0", "-grace", "1s")
	cmd.Env = append(os.Environ(), "GATEWAY_API_KEY="+adminKey)
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
