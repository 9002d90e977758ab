package gateway

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// Limit is the rule of one rate-limit bucket: it holds at most Value units
// of consumption, which drain away at Value units per Per. A policy of 100
// requests per hour is Limit{Value: 100, Per: time.Hour}.
type Limit struct {
	Value float64
	Per   time.Duration
}

// LimitDecision is a Limiter's answer to Take.
type LimitDecision struct {
	// Allowed reports whether the cost was admitted and recorded.
	Allowed bool

	// Remaining is the limit's Value minus what the bucket holds after the
	// call: what is left for later requests. It is negative when charges
	// made after admission overdrew the bucket.
	Remaining float64

	// RetryAfter, when Allowed is false, is how long until the same Take
	// would be admitted if nothing else were consumed meanwhile. It is
	// always positive for a refusal.
	RetryAfter time.Duration
}

// Limiter keeps rate-limit buckets: named amounts of consumption that drain
// over time. The gateway names one bucket per rate-limits policy and group
// (e.g. per policy and API key) and passes the policy's current Limit with
// every call, so a changed policy applies from the next call on.
//
// A bucket remembers what was consumed, not what is left: lowering a
// limit's Value below the consumption refuses at once, and raising it
// re-opens exactly the difference. Consumption drains continuously, from
// each call to the next, at the Value per Per of the limit passed in the
// earlier of the two: a changed limit applies from the first call that
// passes it on, never to the time before it. So a bucket's content is
// known from its own calls alone, and an implementation may forget a
// bucket (or let it expire) exactly when it has drained at its latest
// limit, without changing any later decision.
//
// Implementations must be safe for concurrent use and exact under
// concurrency: two Takes on one bucket never both see the same room. A
// shared implementation (e.g. Redis with a script per call) lets several
// gateway replicas enforce one limit. An error from a Limiter refuses the
// request with a 500: the gateway fails closed.
type Limiter interface {
	// Take admits cost units into bucket key when the bucket holds less
	// than limit.Value and cost fits in what is left, and records them. A
	// cost of zero asks only whether room is left (token policies charge
	// the real usage afterwards). A refused Take, or one of cost zero,
	// adds nothing to the consumption; like every call it may record the
	// bucket's current level and limit, from which it drains.
	Take(ctx context.Context, key string, limit Limit, cost float64) (LimitDecision, error)

	// Charge records n more units of consumption in bucket key, even past
	// limit.Value: the tokens a response really used. A negative n gives
	// back units taken earlier (consumption never goes below zero).
	Charge(ctx context.Context, key string, limit Limit, n float64) error
}

var _ Limiter = (*MemoryLimiter)(nil)

// errInvalidLimit is returned for a Limit whose Value or Per is not
// positive.
var errInvalidLimit = errors.New("gateway: limit value and period must be positive")

// limiterShards is the number of independently locked parts of a
// MemoryLimiter, so that requests of different buckets rarely contend.
const limiterShards = 64

// minSweep is the bucket count of a shard below which drained buckets are
// not swept.
const minSweep = 64

// MemoryLimiter is the in-memory Limiter: a continuous token bucket (the
// "leaky bucket as a meter" form of GCRA) per key, of capacity Value,
// draining at Value per Per. It keeps two numbers per bucket and starts no
// goroutine.
//
// Memory is bounded. A bucket that has drained to zero is the same as no
// bucket, so drained buckets are swept lazily as new ones are added (each
// sweep costs time proportional to the buckets present and happens only
// when their number has doubled since the last one). Past MaxBuckets, adding
// a bucket first evicts, among a few sampled, the one holding the least
// consumption: an evicted bucket forgets what it held, so keep MaxBuckets
// above the number of groups active within one unit of your policies.
//
// The zero value is ready to use. A MemoryLimiter is safe for concurrent
// use and must not be copied after first use. It serves one process only;
// replicas that must share limits need a shared Limiter.
type MemoryLimiter struct {
	// MaxBuckets caps how many buckets are kept at once (about 100 bytes
	// plus the key each). Zero means 1<<18. The cap is kept per shard, so
	// it is rounded up to a multiple of 64.
	MaxBuckets int

	// Now returns the current time. Nil means time.Now, which
	// testing/synctest fakes.
	Now func() time.Time

	shards [limiterShards]limiterShard
}

type limiterShard struct {
	mu      sync.Mutex // guards buckets and sweepAt
	buckets map[string]*bucket
	sweepAt int // sweep drained buckets when len(buckets) reaches this
	_       [40]byte
}

// bucket is consumption as of a moment, and the limit it drains at from
// that moment on: the limit of the latest call.
type bucket struct {
	used float64 // units consumed, not yet drained, as of at
	at   int64   // Unix nanoseconds
	lim  Limit
}

// level returns the consumption left at now, draining at b.lim, the limit
// of the latest call: Take, Charge, sweeps and eviction all see the same
// level, whatever limit the next call brings. It multiplies before
// dividing so that whole fractions of the period drain exact amounts.
func (b *bucket) level(now int64) float64 {
	if d := now - b.at; d > 0 && b.lim.Per > 0 {
		u := b.used - float64(d)*b.lim.Value/float64(b.lim.Per)
		if u < 0 {
			return 0
		}
		return u
	}
	return b.used
}

func (b *bucket) set(used float64, now int64, lim Limit) {
	b.used = used
	if now > b.at {
		b.at = now
	}
	b.lim = lim
}

func (l *MemoryLimiter) now() int64 {
	if l.Now != nil {
		return l.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

func (l *MemoryLimiter) shard(key string) *limiterShard {
	// FNV-1a: no allocation, and skew can only slow a shard, never
	// change a decision.
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return &l.shards[h%limiterShards]
}

// Take implements Limiter.
func (l *MemoryLimiter) Take(_ context.Context, key string, limit Limit, cost float64) (LimitDecision, error) {
	if !(limit.Value > 0) || limit.Per <= 0 || math.IsInf(limit.Value, 0) {
		return LimitDecision{}, errInvalidLimit
	}
	now := l.now()
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	used := 0.0
	if b != nil {
		used = b.level(now)
	}
	if used < limit.Value && used+cost <= limit.Value {
		if b == nil {
			if cost <= 0 {
				return LimitDecision{Allowed: true, Remaining: limit.Value}, nil
			}
			b = l.add(s, key, now, limit)
		}
		b.set(used+cost, now, limit)
		return LimitDecision{Allowed: true, Remaining: limit.Value - used - cost}, nil
	}
	// Room is needed for cost, and the bucket must drop below Value.
	// The wait is rounded to the nearest nanosecond, not up, so that
	// float rounding never adds a nanosecond (and a second to
	// Retry-After) to an exact wait.
	excess := max(used+cost-limit.Value, used-limit.Value)
	wait := time.Duration(math.MaxInt64)
	if w := math.Round(excess * float64(limit.Per) / limit.Value); w < float64(math.MaxInt64) {
		wait = max(time.Duration(w), 1)
	}
	if b != nil {
		b.set(used, now, limit)
	}
	return LimitDecision{Remaining: limit.Value - used, RetryAfter: wait}, nil
}

// Charge implements Limiter.
func (l *MemoryLimiter) Charge(_ context.Context, key string, limit Limit, n float64) error {
	if !(limit.Value > 0) || limit.Per <= 0 || math.IsInf(limit.Value, 0) {
		return errInvalidLimit
	}
	if n == 0 || math.IsNaN(n) {
		return nil
	}
	now := l.now()
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	if b == nil {
		if n < 0 {
			return nil
		}
		b = l.add(s, key, now, limit)
	}
	b.set(max(0, b.level(now)+n), now, limit)
	return nil
}

// add creates the bucket key in s, whose lock is held, making room first.
func (l *MemoryLimiter) add(s *limiterShard, key string, now int64, lim Limit) *bucket {
	if s.buckets == nil {
		s.buckets = make(map[string]*bucket)
	}
	if n := len(s.buckets); n >= minSweep && n >= s.sweepAt {
		for k, b := range s.buckets {
			if b.level(now) == 0 {
				delete(s.buckets, k)
			}
		}
		s.sweepAt = 2 * len(s.buckets)
	}
	maxPerShard := l.MaxBuckets
	if maxPerShard <= 0 {
		maxPerShard = 1 << 18
	}
	maxPerShard = (maxPerShard + limiterShards - 1) / limiterShards
	for len(s.buckets) >= maxPerShard {
		s.evictOne(now)
	}
	b := &bucket{at: now, lim: lim}
	s.buckets[key] = b
	return b
}

// evictOne removes, among a few buckets of s sampled at random, the one
// holding the least consumption.
func (s *limiterShard) evictOne(now int64) {
	const samples = 8
	victim, least, seen := "", math.Inf(1), 0
	for k, b := range s.buckets {
		if u := b.level(now); u < least {
			victim, least = k, u
		}
		if seen++; seen == samples || least == 0 {
			break
		}
	}
	delete(s.buckets, victim)
}

// len returns the number of buckets held, for tests.
func (l *MemoryLimiter) len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
