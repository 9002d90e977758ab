package redis

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelgateway/gateway"
)

// DefaultBreakersPrefix is the prefix of Breakers' Redis keys when
// BreakersOptions.Prefix is empty.
const DefaultBreakersPrefix = "gateway:cb:"

// breakerIdle is how long a breaker that counts failures but is closed
// outlives its last failure: consecutive failures further apart start
// the count again.
const breakerIdle = time.Hour

// BreakersOptions configure Breakers. The zero value is ready to use.
type BreakersOptions struct {
	// Prefix is put before every breaker key in Redis. Empty means
	// DefaultBreakersPrefix.
	Prefix string
}

// Breakers is a gateway.Breakers whose circuit breakers live in Redis, so
// that every gateway replica using the same Redis sees one breaker per
// target: a target one replica's failures opened is skipped by all, and
// one probe goes from whichever replica asks first once its cool-down
// ended.
//
// Each breaker that counts a failure is a Redis hash of three fields
// (consecutive failures, the end of the cool-down in Unix milliseconds,
// the cool-down) under the prefix and the breaker key; a success deletes
// it, and a closed breaker expires an hour after its last failure, an
// open one an hour after its cool-down. Allow and Record are one Lua
// script each, run with EVALSHA: two replicas never both take the probe.
// A healthy target costs one round trip per attempt (Allow); the gateway
// records a success only when the breaker counted failures. Times are
// the gateway's clock, so replicas' clocks should agree to within a
// fraction of the cool-down.
//
// Failures: an error from Redis is returned, wrapped; the gateway then
// lets the attempt go (a breaker fails open) and logs the error. Bound
// the wait with the client's DialTimeout, ReadTimeout and MaxRetries.
//
// A Breakers is safe for concurrent use by any number of goroutines and
// processes. It holds no state besides the client and never closes it.
type Breakers struct {
	client goredis.UniversalClient
	prefix string
}

var _ gateway.Breakers = (*Breakers)(nil)

// NewBreakers returns Breakers kept in the Redis that client talks to. It
// panics if client is nil.
func NewBreakers(client goredis.UniversalClient, opts BreakersOptions) *Breakers {
	if client == nil {
		panic("gateway: redis: NewBreakers with a nil client")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultBreakersPrefix
	}
	return &Breakers{client: client, prefix: opts.Prefix}
}

// allowScript answers {failures, open until (ms, 0: closed), 1 when the
// caller took the probe}.
var allowScript = goredis.NewScript(`
local b = redis.call('HMGET', KEYS[1], 'f', 'u', 'c')
local f, u, c = tonumber(b[1] or '0') or 0, tonumber(b[2] or '0') or 0, tonumber(b[3] or '0') or 0
local now = tonumber(ARGV[1])
if u == 0 or now < u then
	return {f, u, 0}
end
u = now + c
redis.call('HSET', KEYS[1], 'u', string.format('%d', u))
return {f, u, 1}
`)

// recordScript answers {failures, open until (ms, 0: closed)}.
var recordScript = goredis.NewScript(`
if ARGV[2] ~= '1' then
	redis.call('DEL', KEYS[1])
	return {0, 0}
end
local now, threshold, c, idle = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local f = redis.call('HINCRBY', KEYS[1], 'f', 1)
local u = tonumber(redis.call('HGET', KEYS[1], 'u') or '0') or 0
if u ~= 0 or f >= threshold then
	u = now + c
end
redis.call('HSET', KEYS[1], 'u', string.format('%d', u), 'c', string.format('%d', c))
redis.call('PEXPIRE', KEYS[1], string.format('%d', c + idle))
return {f, u}
`)

// Allow implements gateway.Breakers.
func (b *Breakers) Allow(ctx context.Context, key string, now time.Time) (gateway.BreakerState, error) {
	v, err := allowScript.Run(ctx, b.client, []string{b.prefix + key}, now.UnixMilli()).Int64Slice()
	if err != nil {
		return gateway.BreakerState{Key: key}, fmt.Errorf("gateway: redis: breaker: %w", err)
	}
	return state(key, v[0], v[1], v[2] == 1), nil
}

// Record implements gateway.Breakers.
func (b *Breakers) Record(ctx context.Context, key string, r gateway.BreakerRecord) (gateway.BreakerState, error) {
	failed := "0"
	if r.Failed {
		failed = "1"
	}
	v, err := recordScript.Run(ctx, b.client, []string{b.prefix + key}, r.Time.UnixMilli(), failed,
		r.Threshold, r.Cooldown.Milliseconds(), breakerIdle.Milliseconds()).Int64Slice()
	if err != nil {
		return gateway.BreakerState{Key: key}, fmt.Errorf("gateway: redis: breaker: %w", err)
	}
	return state(key, v[0], v[1], false), nil
}

func state(key string, failures, until int64, probe bool) gateway.BreakerState {
	s := gateway.BreakerState{Key: key, Failures: int(failures), Probe: probe}
	if until != 0 {
		s.OpenUntil = time.UnixMilli(until)
	}
	return s
}

// States implements gateway.Breakers: the breakers that count a failure
// or are open, found with SCAN (on every primary of a Cluster).
func (b *Breakers) States(ctx context.Context) ([]gateway.BreakerState, error) {
	var keys []string
	scan := func(ctx context.Context, c goredis.UniversalClient) error {
		iter := c.Scan(ctx, 0, escapePattern(b.prefix)+"*", 500).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		return iter.Err()
	}
	var err error
	if cc, ok := b.client.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, b.client)
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: redis: breakers: %w", err)
	}
	out := make([]gateway.BreakerState, 0, len(keys))
	for _, k := range keys {
		v, err := b.client.HMGet(ctx, k, "f", "u").Result()
		if err != nil {
			return nil, fmt.Errorf("gateway: redis: breakers: %w", err)
		}
		f, _ := v[0].(string)
		u, _ := v[1].(string)
		if f == "" {
			continue // deleted meanwhile
		}
		nf, _ := strconv.ParseInt(f, 10, 64)
		nu, _ := strconv.ParseInt(u, 10, 64)
		out = append(out, state(strings.TrimPrefix(k, b.prefix), nf, nu, false))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// escapePattern quotes the characters of s that a SCAN pattern would
// interpret.
func escapePattern(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}
