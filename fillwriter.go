package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
)

// passMode says when a fillWriter passes the answer on to its caller.
type passMode uint8

const (
	passWhole passMode = iota // keep the answer until it is whole; pass it on only when too long to keep
	pass2xx                   // pass a 2xx answer on as it arrives; keep any other until it is whole
	passAll                   // pass every answer on as it arrives
)

// fillWriter is the ResponseWriter of the attempts of a cache miss. It
// keeps the provider's answer for the cache: the status, the headers the
// ReverseProxy passed on (the provider's and the gateway's x-gateway-*,
// never the caller's response headers, which may hold what the host set
// for that caller alone) and the body up to limit bytes. It passes the
// answer on to the caller's writer w as pass says, and always once the
// body outgrows limit. Informational (1xx) responses are not passed on.
//
// A shared fill's writer runs on the fill's goroutine while its caller
// waits on another: the caller may leave (detach), after which nothing is
// written to w, and a failed write to w detaches it rather than stopping
// the fill, which goes on for the callers waiting on it; either way the
// caller is counted out of the fill (release), which ends when no caller
// is left waiting on it. A shared fill's answer that is too long to keep
// and that no caller takes is given up (errFillTooLarge). Set-Cookie is
// passed on to no caller of a shared fill, as on a HIT.
//
// fillWriter does not implement Unwrap: the caller's writer may be gone.
type fillWriter struct {
	header  http.Header // the headers before the status
	trailer http.Header // set after the status: trailers, passed on by trailers
	status  int
	limit   int64
	buf     bytes.Buffer
	over    bool // the body outgrew limit (or, not shared, a write to w failed): buf is not whole
	pass    passMode
	shared  bool // the writer of a shared fill

	// release tells the fill that the caller stopped waiting on it (see
	// responseCache.join); nil when the writer is not a shared fill's. It
	// is set before the fill starts and may be called more than once.
	release func()

	mu      sync.Mutex          // guards w, sent, expired and cancel
	w       http.ResponseWriter // the caller's writer; nil once it left
	sent    bool                // the status went to w: the answer goes on to it as it arrives
	expired bool                // the fill ran for cacheFillTimeout
	cancel  context.CancelCauseFunc
}

// Header returns the header map the ReverseProxy fills: the response
// headers before the status, then the trailers.
func (f *fillWriter) Header() http.Header {
	if f.status != 0 {
		if f.trailer == nil {
			f.trailer = make(http.Header)
		}
		return f.trailer
	}
	return f.header
}

// WriteHeader records the status, and passes it on when pass says so.
func (f *fillWriter) WriteHeader(code int) {
	if f.status != 0 || code < 200 {
		return
	}
	f.status = code
	if f.pass == passAll || (f.pass == pass2xx && code <= 299) {
		f.mu.Lock()
		f.start()
		f.mu.Unlock()
	}
}

// start passes the status and headers on to w. f.mu must be held.
func (f *fillWriter) start() {
	if f.sent || f.w == nil {
		return
	}
	dst := f.w.Header()
	for k, v := range f.header {
		if f.shared && k == "Set-Cookie" {
			continue
		}
		dst[k] = append(slices.Clip(dst[k]), v...) // as the ReverseProxy adds them
	}
	f.w.WriteHeader(f.status)
	f.sent = true
}

// errFillTooLarge gives up a shared cache fill whose answer exceeds the
// body limit and that no caller takes as it arrives.
var errFillTooLarge = errors.New("gateway: cached response exceeds the body limit")

// Write keeps p while the body fits in limit and passes it on to w once
// the answer goes to w.
func (f *fillWriter) Write(p []byte) (int, error) {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	out := p
	if !f.over {
		if int64(f.buf.Len()+len(p)) <= f.limit {
			f.buf.Write(p)
		} else {
			f.over = true
			if !f.sent {
				// Too long to keep: the answer goes on to the caller
				// after all, what was kept first.
				out = append(f.buf.Bytes(), p...)
			}
			f.buf = bytes.Buffer{}
		}
	}
	if !f.sent && !f.over {
		return len(p), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start()
	if f.w == nil {
		if f.over {
			return 0, errFillTooLarge
		}
		return len(p), nil
	}
	if _, err := f.w.Write(out); err != nil {
		if !f.shared {
			f.over = true
			return 0, err
		}
		f.leave()
		if f.over {
			return 0, errFillTooLarge
		}
	}
	return len(p), nil
}

// Flush flushes w, when the answer goes to it.
func (f *fillWriter) Flush() { f.FlushError() }

// FlushError flushes w, when the answer goes to it. The error of a shared
// fill's caller detaches it.
func (f *fillWriter) FlushError() error {
	if !f.sent {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w == nil {
		return nil
	}
	err := http.NewResponseController(f.w).Flush()
	if err != nil && f.shared {
		f.leave()
		return nil
	}
	return err
}

// leave forgets w, ends a fill that ran out of time and was kept going
// only for w, and counts the caller out of the fill, which ends when it
// was the last. f.mu must be held.
func (f *fillWriter) leave() {
	f.w = nil
	if f.expired && f.cancel != nil {
		f.cancel(errFillTimeout)
	}
	if f.release != nil {
		f.release()
	}
}

// detach is called by the caller of a shared fill who stops waiting for
// it: nothing more is written to its writer. It reports whether part of
// the answer went to it.
func (f *fillWriter) detach() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leave()
	return f.sent
}

// expire ends the fill after cacheFillTimeout, unless its answer is still
// streaming to the caller who led it: that caller's answer is never cut,
// and the fill ends if the caller leaves.
func (f *fillWriter) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
	if (!f.sent || f.w == nil) && f.cancel != nil {
		f.cancel(errFillTimeout)
	}
}

// trailers adds the trailers the ReverseProxy set to dst, the caller's
// header map, once the answer went to the caller.
func (f *fillWriter) trailers(dst http.Header) {
	for k, v := range f.trailer {
		dst[k] = append(slices.Clip(dst[k]), v...)
	}
}
