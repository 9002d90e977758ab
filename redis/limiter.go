package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelgateway/gateway"
)

// DefaultLimiterPrefix is the prefix of a Limiter's Redis keys when
// LimiterOptions.Prefix is empty.
const DefaultLimiterPrefix = "gateway:rl:"

// maxRawKey is the longest key kept as it is after the prefix; longer
// keys are replaced by a digest.
const maxRawKey = 128

// errInvalidLimit is returned for a Limit whose Value or Per is not
// positive, as gateway.MemoryLimiter does.
var errInvalidLimit = errors.New("gateway: limit value and period must be positive")

// LimiterOptions configure a Limiter. The zero value is ready to use.
type LimiterOptions struct {
	// Prefix is put before every bucket key in Redis, so that several
	// gateways (or other applications) can share one database. Empty
	// means DefaultLimiterPrefix.
	Prefix string

	// Now, when set, replaces the Redis server's clock: it is read on the
	// gateway's side and passed to the script, truncated to the
	// microsecond. Nil means the server's own clock (redis.call('TIME')),
	// so that replicas whose clocks disagree still agree on every
	// bucket; leave it nil outside tests.
	Now func() time.Time
}

// Limiter is a gateway.Limiter whose buckets live in Redis, so that every
// gateway replica using the same Redis enforces one limit. It keeps
// exactly the semantics and the decisions of gateway.MemoryLimiter: a
// bucket remembers the consumption, which drains until the next call at
// the Value per Per of the limit passed in the latest call.
//
// Each bucket is a Redis hash of four fields, the consumption, the
// microsecond it was last updated at and the Value and Per of the limit
// of that update, stored under the prefix and the key (a key longer than
// 128 bytes, or starting with '#', is replaced by '#' and its hex
// SHA-256). Every Take and Charge is one Lua script run with EVALSHA
// (EVAL once after a server restart), which reads the server's clock,
// drains at the stored limit, decides with the limit passed in and writes
// back atomically: two replicas never both see the same room. Each write
// sets a PEXPIRE of the time the bucket needs to drain completely at the
// limit it stores, so a key expires exactly when its bucket is empty,
// whatever limit a later call brings; idle buckets vanish on their own
// and memory stays proportional to the active groups. It
// works on a single server, a Sentinel setup or a Cluster (one key per
// call), with Redis 4.0 or later (tested with 7.0).
//
// Failures: an error from Redis (unreachable, timeout, a cancelled
// context) is returned, wrapped, and no decision is made. The gateway
// then refuses the request with a 500: it fails closed, so that an outage
// of Redis never lifts the limits. Bound the wait with the client's
// DialTimeout, DialerRetries, ReadTimeout and MaxRetries. A refund or a
// token charge that fails is logged by the gateway and lost: the bucket
// then holds slightly more, or less, than was used.
//
// A Limiter is safe for concurrent use, by any number of goroutines and
// processes. It holds no state besides the client and never closes it.
type Limiter struct {
	client goredis.UniversalClient
	prefix string
	now    func() time.Time
}

var _ gateway.Limiter = (*Limiter)(nil)

// NewLimiter returns a Limiter keeping its buckets in the Redis that
// client talks to. It panics if client is nil.
func NewLimiter(client goredis.UniversalClient, opts LimiterOptions) *Limiter {
	if client == nil {
		panic("gateway: redis: NewLimiter with a nil client")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultLimiterPrefix
	}
	return &Limiter{client: client, prefix: opts.Prefix, now: opts.Now}
}

// limiterLib is the part shared by both scripts: it reads the clock and
// the bucket, and defines how it drains and is stored. Numbers cross
// between Redis and Go as "%.17g" strings, which round-trip a float64
// exactly (Redis would truncate a returned Lua number to an integer), so
// the script computes exactly what gateway.MemoryLimiter computes. Times
// are microseconds, exact in a double; the drain is computed in
// nanoseconds like MemoryLimiter's.
const limiterLib = `
if redis.replicate_commands then redis.replicate_commands() end
local value, per, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now
if ARGV[4] == '' then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
	now = tonumber(ARGV[4])
end
local b = redis.call('HMGET', KEYS[1], 'u', 't', 'v', 'p')
local used, at = 0, nil
if b[1] and b[2] then
	used, at = tonumber(b[1]), tonumber(b[2])
	-- Drain at the limit of the latest call, which set the expiry; a
	-- bucket written before limits were stored drains at this call's.
	local bv, bp = tonumber(b[3] or ''), tonumber(b[4] or '')
	if not (bv and bp and bv > 0 and bp > 0) then bv, bp = value, per end
	local d = now - at
	if d > 0 then
		used = used - (d * 1000) * bv / bp
		if used < 0 then used = 0 end
	end
end
local function store(u)
	if at == nil or now > at then at = now end
	if not (u > 0) then
		redis.call('DEL', KEYS[1])
		return
	end
	local ms = math.floor(u * per / value / 1000000) + 1
	if ms > 1e15 then ms = 1e15 end
	redis.call('HSET', KEYS[1], 'u', string.format('%.17g', u), 't', string.format('%d', at), 'v', ARGV[1], 'p', ARGV[2])
	redis.call('PEXPIRE', KEYS[1], string.format('%d', ms))
end
`

// takeScript answers {verdict, consumption before the call}: verdict 1
// admitted and recorded, 2 admitted with nothing to record (a zero cost
// on no bucket), 0 refused.
var takeScript = goredis.NewScript(limiterLib + `
if used < value and used + n <= value then
	if at == nil and n <= 0 then
		return {2, '0'}
	end
	store(used + n)
	return {1, string.format('%.17g', used)}
end
if at ~= nil then store(used) end
return {0, string.format('%.17g', used)}
`)

// chargeScript adds ARGV[3] to the bucket, never going below zero.
var chargeScript = goredis.NewScript(limiterLib + `
if at == nil and n < 0 then return 0 end
local u = used + n
if u < 0 then u = 0 end
store(u)
return 0
`)

// redisKey returns the Redis key of a bucket or cache entry named k.
func redisKey(prefix, k string) string {
	if len(k) <= maxRawKey && (k == "" || k[0] != '#') {
		return prefix + k
	}
	sum := sha256.Sum256([]byte(k))
	return prefix + "#" + hex.EncodeToString(sum[:])
}

func validLimit(limit gateway.Limit) bool {
	return limit.Value > 0 && limit.Per > 0 && !math.IsInf(limit.Value, 0)
}

// args returns the script arguments of a call.
func (l *Limiter) args(limit gateway.Limit, n float64) []any {
	now := ""
	if l.now != nil {
		now = strconv.FormatInt(l.now().UnixMicro(), 10)
	}
	return []any{
		strconv.FormatFloat(limit.Value, 'g', -1, 64),
		strconv.FormatInt(int64(limit.Per), 10),
		strconv.FormatFloat(n, 'g', -1, 64),
		now,
	}
}

// Take implements gateway.Limiter. Its decisions are those of
// gateway.MemoryLimiter, given the same consumption and clock.
func (l *Limiter) Take(ctx context.Context, key string, limit gateway.Limit, cost float64) (gateway.LimitDecision, error) {
	if !validLimit(limit) {
		return gateway.LimitDecision{}, errInvalidLimit
	}
	res, err := takeScript.Run(ctx, l.client, []string{redisKey(l.prefix, key)}, l.args(limit, cost)...).Slice()
	if err != nil {
		return gateway.LimitDecision{}, fmt.Errorf("gateway: redis limiter: %w", err)
	}
	verdict, used, err := takeResult(res)
	if err != nil {
		return gateway.LimitDecision{}, err
	}
	switch verdict {
	case 2:
		return gateway.LimitDecision{Allowed: true, Remaining: limit.Value}, nil
	case 1:
		return gateway.LimitDecision{Allowed: true, Remaining: limit.Value - used - cost}, nil
	}
	// As MemoryLimiter: room is needed for cost, and the bucket must drop
	// below Value; the wait is rounded to the nearest nanosecond.
	excess := max(used+cost-limit.Value, used-limit.Value)
	wait := time.Duration(math.MaxInt64)
	if w := math.Round(excess * float64(limit.Per) / limit.Value); w < float64(math.MaxInt64) {
		wait = max(time.Duration(w), 1)
	}
	return gateway.LimitDecision{Remaining: limit.Value - used, RetryAfter: wait}, nil
}

// takeResult parses the {verdict, consumption} reply of takeScript.
func takeResult(res []any) (int64, float64, error) {
	if len(res) == 2 {
		verdict, ok1 := res[0].(int64)
		s, ok2 := res[1].(string)
		if ok1 && ok2 {
			if used, err := strconv.ParseFloat(s, 64); err == nil {
				return verdict, used, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("gateway: redis limiter: unexpected script reply %v", res)
}

// Charge implements gateway.Limiter: n is added to the bucket even past
// limit.Value, and a negative n refunds, never below zero.
func (l *Limiter) Charge(ctx context.Context, key string, limit gateway.Limit, n float64) error {
	if !validLimit(limit) {
		return errInvalidLimit
	}
	if n == 0 || math.IsNaN(n) {
		return nil
	}
	if err := chargeScript.Run(ctx, l.client, []string{redisKey(l.prefix, key)}, l.args(limit, n)...).Err(); err != nil {
		return fmt.Errorf("gateway: redis limiter: %w", err)
	}
	return nil
}
