package gateway

import (
	"context"
	"io"
	"strconv"
	"sync"
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
// One timer does it, set by the first read to fire d later. Each read
// only notes when it began (since); when the timer fires, check cuts a
// read under way for d or longer, sets the timer again for the rest of
// the d of one under way for less, and leaves it unset between reads,
// for the next read to set. So an answer read in a few reads within d
// costs two timer operations (set, and stopped by Close) rather than two
// a read.
//
// It also notes in the request's state when the answer's first byte
// arrived, for the request log's TTFB: reads happen on the goroutine that
// owns that state (the request's, or a cache fill's for its own state).
type idleBody struct {
	io.ReadCloser
	d      time.Duration
	cancel context.CancelCauseFunc // nil when d is zero
	cut    *atomic.Bool            // the request's: tells its log why the answer broke off
	fired  atomic.Bool
	since  atomic.Int64  // idleClock when the read under way began; 0 between reads
	armed  atomic.Bool   // the timer is set; written only with mu held
	st     *requestState // nil once the first byte was noted

	mu     sync.Mutex
	timer  *time.Timer // made by the first read
	closed bool
}

func newIdleBody(rc io.ReadCloser, a *attempt, st *requestState) *idleBody {
	b := &idleBody{ReadCloser: rc, d: a.idle, st: st}
	if st != nil {
		b.cut = &st.idleCut
	}
	if a.idle > 0 {
		b.cancel = a.cancel
	}
	return b
}

// idleEpoch and idleClock give idleBody a monotonic clock in nanoseconds
// that is never 0.
var idleEpoch = time.Now()

func idleClock() int64 { return int64(time.Since(idleEpoch)) + 1 }

func (b *idleBody) Read(p []byte) (int, error) {
	if b.cancel == nil {
		n, err := b.ReadCloser.Read(p)
		b.noteFirst(n)
		return n, err
	}
	if b.fired.Load() {
		return 0, errStreamIdle{b.d}
	}
	// since before armed: check clears armed before it reads since again,
	// so either this read sees the timer unset, or check sees the read.
	b.since.Store(idleClock())
	if !b.armed.Load() {
		b.arm()
	}
	n, err := b.ReadCloser.Read(p)
	b.since.Store(0)
	b.noteFirst(n)
	return n, err
}

// arm sets the timer to fire d from now, unless it is set or b is closed.
func (b *idleBody) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed || b.armed.Load():
	case b.timer == nil:
		b.timer = time.AfterFunc(b.d, b.check)
		b.armed.Store(true)
	default:
		b.timer.Reset(b.d)
		b.armed.Store(true)
	}
}

// check runs when the timer fires: it cuts the answer if the read under
// way began d ago or more, sets the timer for the rest of d if it began
// less, and leaves it unset if no read is under way.
func (b *idleBody) check() {
	if !b.stillWaiting() {
		return
	}
	b.fired.Store(true)
	if b.cut != nil {
		b.cut.Store(true)
	}
	b.cancel(errStreamIdle{b.d}) // outside mu: cancelling runs others' code
}

// stillWaiting reports whether the read under way began d ago or more;
// if it began less, it sets the timer for the rest of d, and if none is
// under way, it leaves the timer unset.
func (b *idleBody) stillWaiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	s := b.since.Load()
	if s == 0 {
		b.armed.Store(false)
		if s = b.since.Load(); s == 0 {
			return false
		}
		// A read began as the timer was being unset: bound it.
		b.armed.Store(true)
	}
	waited := time.Duration(idleClock() - s)
	if waited < b.d {
		b.timer.Reset(b.d - waited)
		return false
	}
	return true
}

// noteFirst notes the time of the answer's first byte, once n > 0.
func (b *idleBody) noteFirst(n int) {
	if n > 0 && b.st != nil {
		b.st.firstByte = time.Now()
		b.st = nil
	}
}

func (b *idleBody) Close() error {
	if b.cancel != nil {
		b.mu.Lock()
		b.closed = true
		if b.timer != nil {
			b.timer.Stop()
		}
		b.mu.Unlock()
	}
	return b.ReadCloser.Close()
}
