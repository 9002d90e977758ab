package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the log goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSlogSinkWritesOneJSONLinePerRequest(t *testing.T) {
	up := newCoreUpstream(t, nil)
	var out syncBuffer
	e := newCoreEnv(t, up, func(o *Options) {
		o.LogSink = SlogSink{Logger: slog.New(slog.NewJSONHandler(&out, nil))}
	})
	e.do("POST", "/v1/chat/completions?key=sk-query-secret", strings.NewReader("{}"),
		append(vkHeaders, "x-gateway-trace-id: tr-slog", `x-gateway-metadata: {"_user":"u1"}`, "Authorization: Bearer sk-caller-secret")...)
	e.gw.Close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1:\n%s", len(lines), out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"msg": "request", "trace_id": "tr-slog", "key_id": "key-member", "status": float64(200),
		"provider": "openai", "query": "key=REDACTED", "metadata": map[string]any{"_user": "u1"}} {
		if got := rec[k]; !jsonEqual(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	for _, secret := range []string{"sk-query-secret", "sk-caller-secret", "sk-stored-secret", coreKey} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("log line contains the secret %q", secret)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestRedactQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"limit=2&after=ft-1":            "limit=2&after=ft-1",
		"api-key=abc&x=1":               "api-key=REDACTED&x=1",
		"X-Amz-Signature=abc&token=t":   "X-Amz-Signature=REDACTED&token=REDACTED",
		"client_secret=s&flag":          "client_secret=REDACTED&flag",
		"access%5Ftoken=abc":            "access%5Ftoken=REDACTED",
		"password=p&api-version=2024-1": "password=REDACTED&api-version=2024-1",
	} {
		if got := redactQuery(in); got != want {
			t.Errorf("redactQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLogBufferQueryCopies: records returned by Query are the caller's to
// change; the kept ones stay as they were.
func TestLogBufferQueryCopies(t *testing.T) {
	var b LogBuffer
	b.Log(&RequestLog{TraceID: "t1", Metadata: map[string]string{"_user": "alice"}})
	got := b.Query(LogFilter{})
	got[0].Metadata["_user"] = "mallory"
	if again := b.Query(LogFilter{Metadata: map[string]string{"_user": "alice"}}); len(again) != 1 {
		t.Errorf("after changing a returned record, Query by the kept metadata found %d records, want 1", len(again))
	}
}
