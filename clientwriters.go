package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// bufferResponse is the in-memory ResponseWriter of a call answered with
// one object. It holds at most limit bytes: a Write past it fails, which
// ends the call.
type bufferResponse struct {
	header   http.Header
	sent     http.Header // header as of WriteHeader
	status   int
	body     bytes.Buffer
	limit    int64
	tooLarge bool // a Write was refused for going past limit
}

func (w *bufferResponse) Header() http.Header { return w.header }

func (w *bufferResponse) WriteHeader(code int) {
	if w.status != 0 || code < 200 {
		return // informational answers are not the response
	}
	w.status = code
	w.sent = w.header.Clone()
}

func (w *bufferResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if int64(w.body.Len())+int64(len(p)) > w.limit {
		w.tooLarge = true
		return 0, errTooLarge(w.limit)
	}
	return w.body.Write(p)
}

// errTooLarge is the error of an answer longer than limit bytes.
func errTooLarge(limit int64) error {
	return fmt.Errorf("gateway: the answer is longer than %d bytes (Options.MaxBodyBytes)", limit)
}

// Flush does nothing: the whole answer is read when the call returns.
func (w *bufferResponse) Flush() {}

// pipeResponse is the in-memory ResponseWriter of a streamed call: each
// Write blocks until the reader has taken it, so events arrive as the
// provider produces them.
type pipeResponse struct {
	header  http.Header
	pw      *io.PipeWriter
	once    sync.Once
	started chan struct{} // closed once status and sent are set
	status  int
	sent    http.Header
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) start(code int) {
	w.once.Do(func() {
		w.status = code
		w.sent = w.header.Clone()
		close(w.started)
	})
}

func (w *pipeResponse) WriteHeader(code int) {
	if code >= 200 {
		w.start(code)
	}
}

func (w *pipeResponse) Write(p []byte) (int, error) {
	w.start(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: writes reach the reader as they happen.
func (w *pipeResponse) Flush() {}
