package main

import (
	"net/http"
	"time"
)

// stallWriter bounds each write to the client instead of the whole
// response: before every write and flush it moves the connection's write
// deadline to d from now. A stream that keeps flowing may last as long as
// it needs; one whose client stopped reading fails its next write after d,
// and the gateway then aborts the request and its provider call.
//
// A deadline moved less than d/64 ago (under a second at the default
// -write-timeout) is not moved again: moving it takes a lock and a timer
// of the runtime, and a small answer's header and body, written within
// microseconds, would move it twice. A write may so block between
// d - d/64 and d. When moves are counted per connection (HTTP/1.x), the
// requests of a busy keep-alive connection share that: most move nothing.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	d     time.Duration
	moved *time.Time // when the deadline was last moved; zero: not set
	own   time.Time  // moved, when not the connection's
}

// newStallWriter returns w bounded by d. moved is when the connection's
// deadline was last moved, kept by its caller across the connection's
// requests; nil counts them for this request alone.
func newStallWriter(w http.ResponseWriter, d time.Duration, moved *time.Time) *stallWriter {
	sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d, moved: moved}
	if moved == nil {
		sw.moved = &sw.own
	}
	// A deadline a previous request of the connection left must not cut
	// this one while it waits for the provider: it is cleared, unless
	// moved less than d/64 ago, when it still holds for d - d/64 as one
	// this request moves would (and its first write moves it again).
	if m := *sw.moved; m.IsZero() || time.Since(m) >= d/64 {
		_ = sw.rc.SetWriteDeadline(time.Time{})
		*sw.moved = time.Time{}
	}
	return sw
}

func (w *stallWriter) extend() {
	now := time.Now()
	if m := *w.moved; !m.IsZero() && now.Sub(m) < w.d/64 {
		return
	}
	*w.moved = now
	_ = w.rc.SetWriteDeadline(now.Add(w.d))
}

func (w *stallWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *stallWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

func (w *stallWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

func (w *stallWriter) Flush() { _ = w.FlushError() }

func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
