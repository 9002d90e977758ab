package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRedisServer starts a throwaway redis-server from PATH on a free
// loopback port, without persistence, stopped when the test ends, and
// returns its address. It skips the test when there is no redis-server.
// (A REDIS_URL server is not used: the gateway's keys there would meet
// those of other runs.)
func startRedisServer(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found; install it (apt-get install redis-server) to test -redis")
	}
	var lastErr string
	for range 3 { // another process may take the free port first
		addr, msg := runRedisServer(t, path)
		if addr != "" {
			return addr
		}
		lastErr = msg
	}
	t.Fatalf("redis-server did not start: %s", lastErr)
	return ""
}

// runRedisServer starts redis-server on a free loopback port and waits
// until it accepts connections. It returns "" and the server's output
// when the server exited first.
func runRedisServer(t *testing.T, path string) (addr, output string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan string, 1)
	// The reader drains the server's output until it exits, so that the
	// server never blocks on a full pipe.
	go func() {
		var seen strings.Builder
		started := false
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if !started {
				seen.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ready to accept connections") {
					close(ready)
					started = true
				}
			}
		}
		io.Copy(io.Discard, out)
		done <- seen.String()
	}()
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	select {
	case <-ready:
		t.Cleanup(stop)
		return addr, ""
	case output := <-done:
		stop()
		return "", output
	case <-time.After(waitLimit):
		stop()
		return "", "not ready within " + waitLimit.String()
	}
}

// TestRunRedis: two servers started with the same -redis share one
// rate-limit bucket per key and one response cache, as replicas do.
func TestRunRedis(t *testing.T) {
	addr := startRedisServer(t)
	fake := newProvider(t, "sk-redis")
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	data := fmt.Sprintf(`{
		"api_keys": [{"id": "key-limit", "key": "gw-limit", "workspace_id": "ws-1"},
			{"id": "key-cache", "key": "gw-cache", "workspace_id": "ws-1"}],
		"virtual_keys": [{"slug": "fake", "provider": "openai", "api_key": "sk-redis", "base_url": %q, "workspace_id": "ws-1"}],
		"configs": [{"id": "pc-cache", "workspace_id": "ws-1", "config": {"virtual_key": "fake", "cache": {"mode": "simple"}}}],
		"rate_limits_policies": [{"id": "7d1e3f6a-1b2c-4d5e-8f90-123456789abc", "conditions": [{"key": "workspace_id", "value": "ws-1"}],
			"group_by": [{"key": "api_key"}], "type": "requests", "unit": "rph", "value": 3, "workspace_id": "ws-1"}]}`, fake.URL)
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "redis://" + addr + "/0"
	replicas := []*running{startRun(t, "-config", cfg, "-redis", url), startRun(t, "-config", cfg, "-redis", url)}
	const body = `{"model":"m","messages":[{"role":"user","content":"shared"}]}`

	t.Run("rate limits", func(t *testing.T) {
		// 3 requests an hour for the key, across both replicas: the
		// fourth is refused, though the replica it reaches saw only one.
		for i, want := range []int{200, 200, 200, 429} {
			r := replicas[i%2]
			res := call(t, "POST", r.base+"/v1/chat/completions", body,
				map[string]string{"x-gateway-api-key": "gw-limit", "x-gateway-virtual-key": "fake", "Content-Type": "application/json"})
			if b := readAll(t, res); res.StatusCode != want {
				t.Errorf("request %d (replica %d): %d %s, want %d", i+1, i%2, res.StatusCode, b, want)
			}
		}
	})

	t.Run("response cache", func(t *testing.T) {
		for i, want := range []string{"MISS", "HIT"} {
			res := call(t, "POST", replicas[i].base+"/v1/chat/completions", body,
				map[string]string{"x-gateway-api-key": "gw-cache", "x-gateway-config": "pc-cache", "Content-Type": "application/json"})
			b := readAll(t, res)
			if got := res.Header.Get("x-gateway-cache-status"); res.StatusCode != http.StatusOK || got != want {
				t.Errorf("replica %d: %d, cache status %q (%s), want 200 and %s", i, res.StatusCode, got, b, want)
			}
		}
	})
}
