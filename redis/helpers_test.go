package redis_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// testRedis is a Redis server for one test: started by the test, or the
// one REDIS_URL names. Every test uses its own key prefix, so that tests
// sharing a REDIS_URL server never see each other's keys.
type testRedis struct {
	opts   *goredis.Options
	prefix string // unique to the test, ends with ':'
}

// startRedis returns the server a test runs against: the one REDIS_URL
// names, else a redis-server from PATH started on a free loopback port
// without persistence, stopped when the test ends. It skips the test when
// neither is available.
func startRedis(tb testing.TB) *testRedis {
	tb.Helper()
	var id [6]byte
	rand.Read(id[:])
	s := &testRedis{prefix: "gwtest:" + hex.EncodeToString(id[:]) + ":"}
	if u := os.Getenv("REDIS_URL"); u != "" {
		opts, err := goredis.ParseURL(u)
		if err != nil {
			tb.Fatalf("REDIS_URL: %v", err)
		}
		s.opts = opts
		tb.Cleanup(func() { s.deleteKeys(tb) })
		return s
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server not found; install it (apt-get install redis-server) or set REDIS_URL")
	}
	var lastErr string
	for range 5 { // another process may take the free port first
		addr, ok, msg := runRedisServer(tb, path)
		if ok {
			s.opts = &goredis.Options{Addr: addr}
			return s
		}
		lastErr = msg
	}
	tb.Fatalf("redis-server did not start: %s", lastErr)
	return nil
}

// runRedisServer starts redis-server on a free loopback port and waits
// until it accepts connections. It reports false and the server's output
// when the server exited first.
func runRedisServer(tb testing.TB, path string) (addr string, ok bool, output string) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)

	pr, pw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", tb.TempDir(), "--daemonize", "no", "--loglevel", "notice")
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pw.Close()

	// The reader drains the server's output until it exits, so that the
	// server never blocks on a full pipe.
	ready := make(chan struct{})
	done := make(chan struct{})
	var out bytes.Buffer
	go func() {
		defer close(done)
		started := false
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if !started {
				out.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ready to accept connections") {
					close(ready)
					started = true
				}
			}
		}
		pr.Close()
	}()
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-done
	}
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	select {
	case <-ready:
		tb.Cleanup(stop)
		return addr, true, ""
	case <-done:
		cmd.Wait()
		return "", false, out.String()
	case <-timeout.C:
		stop()
		return "", false, "no \"Ready to accept connections\" within 15s: " + out.String()
	}
}

// client returns a new client of the server, as a separate gateway
// process would have, closed when the test ends.
func (s *testRedis) client(tb testing.TB) *goredis.Client {
	tb.Helper()
	c := goredis.NewClient(s.opts)
	tb.Cleanup(func() { c.Close() })
	return c
}

// deleteKeys removes the test's keys from a shared server.
func (s *testRedis) deleteKeys(tb testing.TB) {
	c := goredis.NewClient(s.opts)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, s.prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Logf("deleting test keys: %v", err)
	}
}

// downClient returns a client of a Redis that is down: every connection it
// dials is refused, as by a loopback port nothing listens on. The refusal
// comes from its Dialer rather than from a port left closed, which the
// system may hand to another server meanwhile.
func downClient(tb testing.TB) *goredis.Client {
	tb.Helper()
	refuse := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", Dialer: refuse, DialTimeout: time.Second,
		DialerRetries: 1, MaxRetries: -1})
	tb.Cleanup(func() { c.Close() })
	return c
}

// logBuffer is a slog handler's output, safe to read while the gateway
// writes to it.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, nil))
}

// sha256Hex is the hex SHA-256 of s, as long keys are stored.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// escapeGlob quotes the characters of s that a KEYS or SCAN pattern
// would interpret.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// waitFor polls cond every few milliseconds until it holds, failing the
// test after a deadline: for what Redis does on its own clock, such as
// expiring a key.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			tb.Fatalf("%s: not within 10s", what)
		}
	}
}
