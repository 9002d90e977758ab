package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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

// chanSink hands each record to a channel, blocking while nobody reads.
type chanSink chan *RequestLog

func (c chanSink) Log(rec *RequestLog) { c <- rec }

// TestLogQueue: records reach the sink in order within logBatchDelay of
// the first, without waiting for Close; a sink that cannot keep up makes
// the queue drop new records and count them, never delay a sender; Close
// hands over what is waiting, and later records are neither logged nor
// counted.
func TestLogQueue(t *testing.T) {
	t.Run("batches", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink := make(chanSink, 10)
			q := newLogQueue(sink, 0)
			defer q.close()
			start := time.Now()
			for i := range 3 {
				q.send(&RequestLog{TraceID: strconv.Itoa(i)})
			}
			for i := range 3 {
				rec := <-sink
				if rec.TraceID != strconv.Itoa(i) || time.Since(start) != logBatchDelay {
					t.Errorf("record %q after %v, want %d after %v", rec.TraceID, time.Since(start), i, logBatchDelay)
				}
			}
		})
	})
	t.Run("window under load", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink := make(chanSink, 10)
			q := newLogQueueWindow(sink, 0, storeBatchDelay)
			defer q.close()
			// sendWait sends n records and returns how long the last took
			// to reach the sink.
			sendWait := func(n int) time.Duration {
				start := time.Now()
				for range n {
					q.send(&RequestLog{})
				}
				for range n {
					<-sink
				}
				return time.Since(start)
			}
			for i, c := range []struct {
				n    int
				want time.Duration
			}{
				{logBusyBatch - 1, logBatchDelay}, // a small batch: the short window next
				{logBusyBatch, logBatchDelay},     // a busy one: the long window next
				{1, storeBatchDelay},
				{1, logBatchDelay}, // back to the short window after a small batch
			} {
				if got := sendWait(c.n); got != c.want {
					t.Errorf("batch %d of %d records reached the sink after %v, want %v", i, c.n, got, c.want)
				}
			}
		})
	})
	t.Run("slow sink", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink := make(chanSink) // nobody reads yet: the sink blocks
			q := newLogQueue(sink, 4)
			q.send(&RequestLog{TraceID: "first"})
			time.Sleep(logBatchDelay) // the goroutine took "first" and blocks in the sink
			synctest.Wait()
			for i := range 6 {
				q.send(&RequestLog{TraceID: strconv.Itoa(i)})
			}
			if n := q.dropped.Load(); n != 2 {
				t.Errorf("dropped %d records, want 2 (4 wait)", n)
			}
			var got []string
			done := make(chan struct{})
			go func() {
				for rec := range sink {
					got = append(got, rec.TraceID)
				}
				close(done)
			}()
			q.close()
			q.send(&RequestLog{TraceID: "late"})
			close(sink)
			<-done
			if want := []string{"first", "0", "1", "2", "3"}; !slices.Equal(got, want) {
				t.Errorf("sink got %q, want %q", got, want)
			}
			if n := q.dropped.Load(); n != 2 {
				t.Errorf("dropped %d records after Close, want still 2", n)
			}
		})
	})
}
