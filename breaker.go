package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Breakers keeps the circuit breakers of provider targets, each under the
// key of one target's identity: "virtual_key:" and the workspace and slug
// of a virtual key, else the provider kind, the host and a digest of the
// credential (never the credential). A config's strategy.cb_config says
// when a breaker opens (BreakerConfig); fallback and load balancing then
// skip its target until its cool-down ends, when one request probes it.
//
// Implementations must be safe for concurrent use. Options.Breakers nil
// means breakers kept in the process; redis.Breakers shares them between
// the replicas of a gateway. An error from Allow lets the attempt go (the
// breaker fails open) and is logged; one from Record is logged and lost.
type Breakers interface {
	// Allow reports the breaker of key at now. An attempt may go when the
	// returned state is closed (OpenUntil is zero) or Probe is set. Once
	// the cool-down of an open breaker ended, Allow hands the probe to one
	// caller: it moves OpenUntil a cool-down ahead and sets Probe, so
	// that the others keep skipping the target while the probe is out. A
	// key never seen is closed.
	Allow(ctx context.Context, key string, now time.Time) (BreakerState, error)

	// Record counts the outcome of an attempt at key and returns the
	// breaker's new state. A success closes the breaker and clears its
	// failures. A failure adds one consecutive failure, and opens the
	// breaker until r.Time plus r.Cooldown when it reaches r.Threshold or
	// when the breaker was already open (a failed probe re-opens it).
	Record(ctx context.Context, key string, r BreakerRecord) (BreakerState, error)

	// States returns the state of the breakers it keeps, in key order:
	// at least every one that counts a failure or is open.
	States(ctx context.Context) ([]BreakerState, error)
}

// BreakerState is the state of one target's circuit breaker.
type BreakerState struct {
	Key       string    // the target's identity (see Breakers)
	Failures  int       // consecutive failures counted
	OpenUntil time.Time // zero: closed; else open, and half open (one probe may go) from then on
	Probe     bool      // the caller of Allow holds the probe of a half-open breaker
}

// BreakerRecord is the outcome of one attempt, with the rule of the
// config that made it.
type BreakerRecord struct {
	Time      time.Time
	Failed    bool
	Threshold int           // the consecutive failures that open the breaker
	Cooldown  time.Duration // how long it stays open before a probe
}

// BreakerConfig is a strategy's cb_config: a circuit breaker for each
// target under the strategy (a nested strategy's own cb_config replaces
// it for the targets under that one). A target's breaker opens at its
// FailureThreshold-th consecutive failure, each retry counting one; it
// then stays open for CooldownInterval milliseconds, during which
// fallback and load balancing skip it; then one request probes it while
// the others still skip it: a success closes the breaker, a failure opens
// it again. When every target a request could reach is open, the gateway
// answers 503 all_targets_unavailable without calling a provider, with
// Retry-After set to the soonest end of a cool-down.
type BreakerConfig struct {
	FailureThreshold int   `json:"failure_threshold"` // 1 to 1000
	CooldownInterval int64 `json:"cooldown_interval"` // milliseconds, at least 1000

	// FailureStatusCodes are the provider statuses that count as failures;
	// empty means 408 and every 5xx. Timeouts and providers that cannot be
	// reached always count.
	FailureStatusCodes []int `json:"failure_status_codes,omitempty"`
}

// Bounds of a cb_config.
const (
	maxBreakerThreshold = 1000
	minBreakerCooldown  = 1000             // milliseconds
	maxBreakerCooldown  = 24 * 3600 * 1000 // milliseconds: one day
)

// validate checks c, the cb_config at path.
func (c *BreakerConfig) validate(path string) error {
	if c.FailureThreshold < 1 || c.FailureThreshold > maxBreakerThreshold {
		return configError(join(path, "failure_threshold"), "must be 1 to "+strconv.Itoa(maxBreakerThreshold))
	}
	if c.CooldownInterval < minBreakerCooldown || c.CooldownInterval > maxBreakerCooldown {
		return configError(join(path, "cooldown_interval"), "must be "+strconv.Itoa(minBreakerCooldown)+" to "+
			strconv.Itoa(maxBreakerCooldown)+" milliseconds")
	}
	return statusCodes(c.FailureStatusCodes, join(path, "failure_status_codes"))
}

// failure reports whether a provider status counts as a failure under c.
func (c *BreakerConfig) failure(code int) bool {
	if len(c.FailureStatusCodes) > 0 {
		return slices.Contains(c.FailureStatusCodes, code)
	}
	return code == http.StatusRequestTimeout || code >= 500
}

func (c *BreakerConfig) record(now time.Time, failed bool) BreakerRecord {
	return BreakerRecord{Time: now, Failed: failed, Threshold: c.FailureThreshold,
		Cooldown: time.Duration(c.CooldownInterval) * time.Millisecond}
}

// errAllOpen is the answer of a request whose every target was skipped.
func errAllOpen(retry time.Duration) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Type: TypeGateway, Code: CodeAllTargetsUnavailable,
		Message: "every target of the config is unavailable: their circuit breakers are open", RetryAfter: max(retry, time.Second)}
}

// breakerKey returns the key of t's breaker: its virtual key's, else its
// provider, host and credential digest. workspace is the virtual key's.
func breakerKey(t *Target, workspace string) string {
	if t.VirtualKey != "" {
		return "virtual_key:" + workspace + "/" + t.VirtualKey
	}
	h := sha256.New()
	for _, s := range []string{t.APIKey, t.Host.AccessKeyID, t.Host.SessionToken, t.Host.ResourceName,
		t.Host.DeploymentID, t.Host.ProjectID, t.Host.Region} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	host := ""
	if t.BaseURL != nil {
		host = "@" + t.BaseURL.Host
	}
	return t.Provider + host + "#" + hex.EncodeToString(h.Sum(sum[:0])[:6])
}

// maxMemoryBreakers bounds the breakers kept in the process. When it is
// reached, a closed breaker without failures makes room, else the new key
// goes untracked (closed) until one does.
const maxMemoryBreakers = 4096

// memoryBreakers keeps breakers in the process: the Breakers of a
// Gateway whose Options.Breakers is nil. A closed breaker is read with
// two atomic loads and no lock, so that the check costs a healthy target
// next to nothing.
type memoryBreakers struct {
	m     sync.Map     // key → *memoryBreaker
	n     atomic.Int64 // breakers in m
	evict sync.Mutex   // held by whoever makes room in m
}

type memoryBreaker struct {
	mu        sync.Mutex   // serialises the changes of the fields below
	failures  atomic.Int64 // consecutive failures
	openUntil atomic.Int64 // Unix nanoseconds; 0: closed
	cooldown  atomic.Int64 // of the latest failure: the lease of a probe
}

var _ Breakers = (*memoryBreakers)(nil)

func (m *memoryBreakers) find(key string, add bool) *memoryBreaker {
	if b, ok := m.m.Load(key); ok {
		return b.(*memoryBreaker)
	}
	if !add {
		return nil
	}
	if m.n.Load() >= maxMemoryBreakers && !m.makeRoom() {
		return nil
	}
	b, loaded := m.m.LoadOrStore(key, &memoryBreaker{})
	if !loaded {
		m.n.Add(1)
	}
	return b.(*memoryBreaker)
}

// makeRoom drops one closed breaker without failures.
func (m *memoryBreakers) makeRoom() bool {
	m.evict.Lock()
	defer m.evict.Unlock()
	done := false
	m.m.Range(func(k, v any) bool {
		b := v.(*memoryBreaker)
		if b.failures.Load() == 0 && b.openUntil.Load() == 0 {
			if _, ok := m.m.LoadAndDelete(k); ok {
				m.n.Add(-1)
			}
			done = true
		}
		return !done
	})
	return done
}

func (b *memoryBreaker) state(key string) BreakerState {
	s := BreakerState{Key: key, Failures: int(b.failures.Load())}
	if u := b.openUntil.Load(); u != 0 {
		s.OpenUntil = time.Unix(0, u)
	}
	return s
}

// Allow implements Breakers.
func (m *memoryBreakers) Allow(_ context.Context, key string, now time.Time) (BreakerState, error) {
	b := m.find(key, true)
	if b == nil {
		return BreakerState{Key: key}, nil
	}
	if u := b.openUntil.Load(); u == 0 || now.UnixNano() < u {
		return b.state(key), nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state(key)
	if !s.OpenUntil.IsZero() && !now.Before(s.OpenUntil) {
		s.OpenUntil, s.Probe = now.Add(time.Duration(b.cooldown.Load())), true
		b.openUntil.Store(s.OpenUntil.UnixNano())
	}
	return s, nil
}

// Record implements Breakers.
func (m *memoryBreakers) Record(_ context.Context, key string, r BreakerRecord) (BreakerState, error) {
	b := m.find(key, r.Failed)
	if b == nil {
		return BreakerState{Key: key}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.Failed {
		n := b.failures.Add(1)
		b.cooldown.Store(int64(r.Cooldown))
		if b.openUntil.Load() != 0 || n >= int64(r.Threshold) {
			b.openUntil.Store(r.Time.Add(r.Cooldown).UnixNano())
		}
	} else {
		b.failures.Store(0)
		b.openUntil.Store(0)
	}
	return b.state(key), nil
}

// States implements Breakers: every breaker seen, closed ones included.
func (m *memoryBreakers) States(context.Context) ([]BreakerState, error) {
	var out []BreakerState
	m.m.Range(func(k, v any) bool {
		b := v.(*memoryBreaker)
		b.mu.Lock()
		out = append(out, b.state(k.(string)))
		b.mu.Unlock()
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// BreakerStates returns the state of the circuit breakers of g's targets,
// as its Breakers keep them (see Options.Breakers), for health reports
// and metrics. Only targets under a config's cb_config have breakers.
func (g *Gateway) BreakerStates(ctx context.Context) ([]BreakerState, error) {
	return g.breakers.States(ctx)
}

// breakerNote is what the attempts at one target know of its breaker.
type breakerNote struct {
	cfg     *BreakerConfig
	key     string
	state   BreakerState // the latest seen; touched only by the loop making the attempts
	tripped atomic.Bool  // an attempt of the loop opened the breaker
}

// allow asks the breaker of t whether the request may try it. When not,
// it notes the skip in the request log and returns nil.
func (x *run) allow(t *routedTarget) *breakerNote {
	s, err := x.g.breakers.Allow(x.r.Context(), t.breakerKey, time.Now())
	if err != nil {
		// Fail open: a breaker store that cannot be read must not take
		// every target out of service.
		x.g.errLog.Error("gateway: circuit breaker", "target", t.breakerKey, "error", err)
		s = BreakerState{}
	}
	if !s.OpenUntil.IsZero() && !s.Probe {
		l := &x.st.log
		l.SkippedTargets = append(l.SkippedTargets, t.breakerKey)
		if x.reopen.IsZero() || s.OpenUntil.Before(x.reopen) {
			x.reopen = s.OpenUntil
		}
		return nil
	}
	return &breakerNote{cfg: t.breaker, key: t.breakerKey, state: s}
}

// skippedOutcome is the outcome of targets passed over for their open
// breakers: the latest failure of those tried, if any.
func (x *run) skippedOutcome() outcome {
	return outcome{err: x.lastErr, skipped: true}
}

// noteBreaker counts attempt a in its target's breaker, if it has one,
// and reports whether the breaker is now open: no retry follows. What
// the gateway refused itself, and an attempt the caller left, count for
// nothing.
func (l *attemptLoop) noteBreaker(a *attempt) bool {
	b := l.breaker
	if b == nil {
		return false
	}
	var failed bool
	var re errRetryable
	var te errTimeout
	switch {
	case a.err == nil:
		failed = b.cfg.failure(a.status)
	case errors.As(a.err, &re) && a.held != nil:
		failed = b.cfg.failure(a.held.status)
	case errors.As(a.err, &re), errors.As(a.err, &te), errors.Is(a.err, ErrUpstreamUnreachable):
		failed = true
	default:
		return false
	}
	if !failed && b.state.Failures == 0 && b.state.OpenUntil.IsZero() {
		return false // nothing to clear: a healthy target costs no write
	}
	ctx := context.WithoutCancel(l.r.Context())
	s, err := l.g.breakers.Record(ctx, b.key, b.cfg.record(time.Now(), failed))
	if err != nil {
		l.g.errLog.Error("gateway: circuit breaker", "target", b.key, "error", err)
		return false
	}
	if failed && !s.OpenUntil.IsZero() && (b.state.OpenUntil.IsZero() || b.state.Probe) {
		b.tripped.Store(true)
	}
	b.state = BreakerState{Key: b.key, Failures: s.Failures, OpenUntil: s.OpenUntil}
	return !s.OpenUntil.IsZero()
}
