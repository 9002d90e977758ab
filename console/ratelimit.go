package console

import (
	"sync"
	"time"
)

// failureLimiter counts failed sign-ins per client address and in total
// over fixed windows, so that scripted guessing is answered 429 beyond
// its limits. It never refuses a correct key (see console.signIn). It is
// safe for concurrent use.
type failureLimiter struct {
	perClient, global int
	window            time.Duration
	now               func() time.Time

	mu       sync.Mutex // guards the fields below
	start    time.Time  // of the current window
	total    int
	byClient map[string]int
}

func newFailureLimiter(perClient, global int, window time.Duration, now func() time.Time) *failureLimiter {
	return &failureLimiter{perClient: perClient, global: global, window: window, now: now, byClient: make(map[string]int)}
}

// roll starts a new window when the current one has ended. l.mu is held.
func (l *failureLimiter) roll() {
	if now := l.now(); now.Sub(l.start) >= l.window || now.Before(l.start) {
		l.start, l.total = now, 0
		clear(l.byClient)
	}
}

// allowed reports whether client may try to sign in now, and if not,
// how long until it may.
func (l *failureLimiter) allowed(client string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if l.byClient[client] >= l.perClient || l.total >= l.global {
		return false, l.start.Add(l.window).Sub(l.now())
	}
	return true, 0
}

// fail counts a failed sign-in of client.
func (l *failureLimiter) fail(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	l.byClient[client]++
	l.total++
}
