package gateway

import (
	"io"
	"strconv"
	"sync/atomic"
	"time"
)

// defaultStreamIdleTimeout is Options.StreamIdleTimeout's zero value: long
// enough for a reasoning model that thinks for minutes between two pieces
// of its answer.
const defaultStreamIdleTimeout = 10 * time.Minute

// CodeStreamIdleTimeout is the request log's error code of an answer cut
// because the provider sent nothing for longer than the stream idle
// timeout.
const CodeStreamIdleTimeout = "stream_idle_timeout"

// errStreamIdle is the cause of an attempt's context cancelled because the
// provider went silent in the middle of its answer.
type errStreamIdle struct{ d time.Duration }

func (e errStreamIdle) Error() string {
	return "gateway: the provider sent nothing for " + strconv.FormatInt(e.d.Milliseconds(), 10) + "ms in the middle of its answer"
}

// idleBody bounds each wait for a read of a provider's answer: a read that
// has not returned after d cancels the attempt, which makes the read fail;
// the ReverseProxy then aborts the caller's connection, so a cut answer is
// never taken for a whole one. Only the time spent waiting on the provider
// counts: a caller that reads slowly does not make the provider look idle.
// A d of zero bounds nothing.
//
// It also notes in the request's state when the answer's first byte
// arrived, for the request log's TTFB: reads happen on the goroutine that
// owns that state (the request's, or a cache fill's for its own state).
type idleBody struct {
	io.ReadCloser
	d     time.Duration
	timer *time.Timer  // nil when d is zero
	cut   *atomic.Bool // the request's: tells its log why the answer broke off
	fired atomic.Bool
	st    *requestState // nil once the first byte was noted
}

func newIdleBody(rc io.ReadCloser, a *attempt, st *requestState) *idleBody {
	b := &idleBody{ReadCloser: rc, d: a.idle, st: st}
	if st != nil {
		b.cut = &st.idleCut
	}
	if a.idle <= 0 {
		return b
	}
	cancel, d := a.cancel, a.idle
	b.timer = time.AfterFunc(d, func() {
		b.fired.Store(true)
		if b.cut != nil {
			b.cut.Store(true)
		}
		cancel(errStreamIdle{d})
	})
	b.timer.Stop()
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timer == nil {
		n, err := b.ReadCloser.Read(p)
		b.noteFirst(n)
		return n, err
	}
	if b.fired.Load() {
		return 0, errStreamIdle{b.d}
	}
	b.timer.Reset(b.d)
	n, err := b.ReadCloser.Read(p)
	b.timer.Stop()
	b.noteFirst(n)
	return n, err
}

// noteFirst notes the time of the answer's first byte, once n > 0.
func (b *idleBody) noteFirst(n int) {
	if n > 0 && b.st != nil {
		b.st.firstByte = time.Now()
		b.st = nil
	}
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.ReadCloser.Close()
}
