package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunWriteTimeout: a client that stops reading a stream releases the
// request after -write-timeout: the gateway gives up on the blocked write
// and cancels its provider call, instead of holding both until shutdown.
func TestRunWriteTimeout(t *testing.T) {
	gone := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(gone)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		event := []byte("data: " + strings.Repeat("x", 64<<10) + "\n\n")
		for {
			if _, err := w.Write(event); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			if r.Context().Err() != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)

	path := filepath.Join(t.TempDir(), "gateway.json")
	cfg := fmt.Sprintf(`{"api_keys":[{"id":"k","key":"gw-stall","workspace_id":"ws-1"}],
		"virtual_keys":[{"slug":"up","provider":"openai","api_key":"sk-x","base_url":%q,"workspace_id":"ws-1"}]}`, up.URL+"/v1")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, _, _ := runServer(t, "-config", path, "-write-timeout", "200ms")

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m","stream":true}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nx-gateway-api-key: gw-stall\r\nx-gateway-virtual-key: up\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The client never reads: the stream fills the socket buffers and the
	// gateway's write blocks until -write-timeout cuts it.
	select {
	case <-gone:
	case <-time.After(waitLimit):
		t.Fatalf("the provider call still runs %s after the client stopped reading", waitLimit)
	}
}

// deadlineRecorder is a ResponseWriter that records the write deadlines
// set on it through an http.ResponseController.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (w *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	w.deadlines = append(w.deadlines, t)
	return nil
}

// TestStallWriterMovesDeadline: the deadline is cleared for a new
// request, moved to d from now by its first write, left for the writes
// that follow within d/64, and moved again by a write after that.
func TestStallWriterMovesDeadline(t *testing.T) {
	const d = 6400 * time.Millisecond // d/64 is 100 ms
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := newStallWriter(rec, d, nil)
	if len(rec.deadlines) != 1 || !rec.deadlines[0].IsZero() {
		t.Fatalf("new request: deadlines %v, want one cleared", rec.deadlines)
	}
	before := time.Now()
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("a"))
	w.Flush()
	if len(rec.deadlines) != 2 || rec.deadlines[1].Before(before.Add(d)) || rec.deadlines[1].After(time.Now().Add(d)) {
		t.Fatalf("first writes: deadlines %v, want one more, %s from the first", rec.deadlines, d)
	}
	time.Sleep(d / 32)
	w.Write([]byte("b"))
	if len(rec.deadlines) != 3 || !rec.deadlines[2].After(rec.deadlines[1]) {
		t.Fatalf("a write %s later: deadlines %v, want a later one", d/32, rec.deadlines)
	}
	if rec.Body.String() != "ab" || !rec.Flushed {
		t.Errorf("body %q, flushed %v", rec.Body, rec.Flushed)
	}
}

// TestStallWriterConnection: requests of one connection share when its
// deadline was last moved. The next request within d/64 of a move neither
// clears nor moves it; one after that clears the deadline the previous
// left and moves it with its first write.
func TestStallWriterConnection(t *testing.T) {
	const d = 64 * time.Second // d/64 is 1 s: "right after" holds on a loaded machine
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	var moved time.Time
	w := newStallWriter(rec, d, &moved)
	w.Write([]byte("a"))
	if len(rec.deadlines) != 2 || !rec.deadlines[0].IsZero() || moved.IsZero() {
		t.Fatalf("first request: deadlines %v, moved %v; want cleared, then moved", rec.deadlines, moved)
	}
	w = newStallWriter(rec, d, &moved)
	w.Write([]byte("b"))
	w.extend() // as serverHandler does after the handler
	if len(rec.deadlines) != 2 {
		t.Fatalf("a request right after: deadlines %v, want none more", rec.deadlines)
	}
	time.Sleep(d/64 + 50*time.Millisecond)
	w = newStallWriter(rec, d, &moved)
	if len(rec.deadlines) != 3 || !rec.deadlines[2].IsZero() {
		t.Fatalf("a request %s later: deadlines %v, want the old one cleared", d/64, rec.deadlines)
	}
	before := time.Now()
	w.Write([]byte("c"))
	if len(rec.deadlines) != 4 || rec.deadlines[3].Before(before.Add(d)) {
		t.Fatalf("its first write: deadlines %v, want one %s from now", rec.deadlines, d)
	}
	if rec.Body.String() != "abc" {
		t.Errorf("body %q", rec.Body)
	}
}
