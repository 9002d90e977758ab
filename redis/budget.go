package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/budget"
	goredis "github.com/redis/go-redis/v9"
)

// DefaultBudgetPrefix is the prefix of a Budget's Redis keys when
// BudgetOptions.Prefix is empty.
const DefaultBudgetPrefix = "gateway:budget:"

// BudgetOptions configure a Budget. The zero value is ready to use.
type BudgetOptions struct {
	// Prefix is put before every key in Redis. Empty means
	// DefaultBudgetPrefix.
	Prefix string
}

// Budget is a budget.Counter whose counters live in Redis, so that
// every gateway replica using the same Redis enforces one budget
// (budget.Options.Counter). It keeps exactly the semantics of
// budget.MemoryCounter.
//
// Each entity is a Redis hash (period, usage, reservations, epoch and the
// two alert flags) under the prefix, "{" and the policy id (a digest when
// it is long or holds a brace) and "}:" and the value key, and each policy
// has a set of its value keys under the prefix, "{", the policy and
// "}#idx", so that one policy's keys share a Cluster slot. Reserve, Settle
// and ResetUsage are each one Lua script run with EVALSHA, atomically:
// two replicas never both see the same room. Counters do not expire, so
// that budgets survive restarts of the gateway (keep Redis persistent);
// a counter of an earlier period is rolled over by the first call of the
// next.
//
// Failures: an error from Redis is returned, wrapped; the gateway then
// refuses the request with a 500 (it fails closed). A settlement that
// fails is logged by the gateway and lost.
//
// A Budget is safe for concurrent use. It holds no state besides the
// client and never closes it.
type Budget struct {
	client goredis.UniversalClient
	prefix string
}

var _ budget.Counter = (*Budget)(nil)

// NewBudget returns a Budget keeping its counters in the Redis that
// client talks to. It panics if client is nil.
func NewBudget(client goredis.UniversalClient, opts BudgetOptions) *Budget {
	if client == nil {
		panic("gateway: redis: NewBudget with a nil client")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultBudgetPrefix
	}
	return &Budget{client: client, prefix: opts.Prefix}
}

// budgetLib reads the entity KEYS[1] and rolls it over to period ARGV[1];
// a new entity is added to the policy's index KEYS[2] under ARGV[2].
// Numbers cross as "%.17g" strings, which round-trip a float64 exactly.
const budgetLib = `
local b = redis.call('HMGET', KEYS[1], 'p', 'u', 'r', 'e', 'ta', 'ea')
local p, u, r, e = b[1], tonumber(b[2] or '0') or 0, tonumber(b[3] or '0') or 0, tonumber(b[4] or '0') or 0
local ta, ea = b[5] == '1', b[6] == '1'
if not p then
	redis.call('SADD', KEYS[2], ARGV[2])
	p = ARGV[1]
elseif p ~= ARGV[1] then
	p, u, r, e, ta, ea = ARGV[1], 0, 0, e + 1, false, false
end
local function f(x) return string.format('%.17g', x) end
local function flag(x) if x then return '1' end return '0' end
local function store()
	redis.call('HSET', KEYS[1], 'p', p, 'u', f(u), 'r', f(r), 'e', string.format('%d', e), 'ta', flag(ta), 'ea', flag(ea))
end
`

// reserveScript: ARGV[3] limit, ARGV[4] estimate → {allowed, usage, epoch}.
var reserveScript = goredis.NewScript(budgetLib + `
local limit, est = tonumber(ARGV[3]), tonumber(ARGV[4])
local ok = 0
if u + r < limit then
	ok = 1
	r = r + est
end
store()
return {ok, f(u), e}
`)

// settleScript: ARGV[3] the reservation's period, ARGV[4] its epoch,
// ARGV[5] whether it was allowed, ARGV[6] its estimate, ARGV[7] the usage,
// ARGV[8] the alert threshold (negative: none), ARGV[9] the limit →
// {usage, alert crossed, limit crossed}.
var settleScript = goredis.NewScript(budgetLib + `
if ARGV[5] == '1' and ARGV[3] == p and tonumber(ARGV[4]) == e then
	r = r - tonumber(ARGV[6])
	if r < 0 then r = 0 end
end
u = u + tonumber(ARGV[7])
local alert, limit = tonumber(ARGV[8]), tonumber(ARGV[9])
local ac, lc = 0, 0
if alert >= 0 and u >= alert and not ta then ta, ac = true, 1 end
if u >= limit and not ea then ea, lc = true, 1 end
store()
return {f(u), ac, lc}
`)

// resetScript zeroes entity KEYS[1] if it exists → 1, else 0.
var resetScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'u', '0', 'r', '0', 'ta', '0', 'ea', '0')
redis.call('HINCRBY', KEYS[1], 'e', 1)
return 1
`)

// tag returns the Cluster hash tag of policy id: "{id}", or "{#<digest>}"
// when id is long or holds a brace.
func (b *Budget) tag(id string) string {
	if len(id) > maxRawKey || strings.ContainsAny(id, "{}") || strings.HasPrefix(id, "#") {
		sum := sha256.Sum256([]byte(id))
		id = "#" + hex.EncodeToString(sum[:])
	}
	return b.prefix + "{" + id + "}"
}

func (b *Budget) keys(policyID, valueKey string) []string {
	t := b.tag(policyID)
	return []string{t + ":" + valueKey, t + "#idx"}
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Reserve implements budget.Counter.
func (b *Budget) Reserve(ctx context.Context, e budget.EntityKey, limit, estimate float64) (budget.Reservation, error) {
	res, err := reserveScript.Run(ctx, b.client, b.keys(e.PolicyID, e.ValueKey), e.Period, e.ValueKey, num(limit), num(estimate)).Slice()
	if err != nil {
		return budget.Reservation{}, fmt.Errorf("gateway: redis budget: %w", err)
	}
	ok, ok1 := intAt(res, 0)
	usage, ok2 := floatAt(res, 1)
	epoch, ok3 := intAt(res, 2)
	if len(res) != 3 || !ok1 || !ok2 || !ok3 {
		return budget.Reservation{}, fmt.Errorf("gateway: redis budget: unexpected script reply %v", res)
	}
	return budget.Reservation{EntityKey: e, Allowed: ok == 1, Estimate: estimate, Usage: usage, Epoch: epoch}, nil
}

// Settle implements budget.Counter.
func (b *Budget) Settle(ctx context.Context, r budget.Reservation, period string, used float64, th budget.Thresholds) (budget.Settlement, error) {
	allowed := "0"
	if r.Allowed {
		allowed = "1"
	}
	res, err := settleScript.Run(ctx, b.client, b.keys(r.PolicyID, r.ValueKey), period, r.ValueKey, r.Period,
		strconv.FormatInt(r.Epoch, 10), allowed, num(r.Estimate), num(used), num(th.Alert), num(th.Limit)).Slice()
	if err != nil {
		return budget.Settlement{}, fmt.Errorf("gateway: redis budget: %w", err)
	}
	usage, ok1 := floatAt(res, 0)
	ac, ok2 := intAt(res, 1)
	lc, ok3 := intAt(res, 2)
	if len(res) != 3 || !ok1 || !ok2 || !ok3 {
		return budget.Settlement{}, fmt.Errorf("gateway: redis budget: unexpected script reply %v", res)
	}
	return budget.Settlement{Usage: usage, AlertCrossed: ac == 1, LimitCrossed: lc == 1}, nil
}

// UsageEntities implements budget.Counter: the counters of the
// policy's index, by value key.
func (b *Budget) UsageEntities(ctx context.Context, policyID string) ([]budget.Entity, error) {
	t := b.tag(policyID)
	members, err := b.client.SMembers(ctx, t+"#idx").Result()
	if err != nil {
		return nil, fmt.Errorf("gateway: redis budget: %w", err)
	}
	sort.Strings(members)
	pipe := b.client.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(members))
	for i, m := range members {
		cmds[i] = pipe.HMGet(ctx, t+":"+m, "p", "u", "r", "e", "ta", "ea")
	}
	if len(members) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("gateway: redis budget: %w", err)
		}
	}
	out := make([]budget.Entity, 0, len(members))
	for i, m := range members {
		v := cmds[i].Val()
		if len(v) != 6 || v[0] == nil {
			continue
		}
		u := budget.Entity{EntityKey: budget.EntityKey{PolicyID: policyID, ValueKey: m}}
		u.Period, _ = v[0].(string)
		u.Usage = parseNum(v[1])
		u.Reserved = parseNum(v[2])
		u.Epoch = int64(parseNum(v[3]))
		u.ThresholdAlerted, u.ExhaustedAlerted = v[4] == "1", v[5] == "1"
		out = append(out, u)
	}
	return out, nil
}

// ResetUsage implements budget.Counter.
func (b *Budget) ResetUsage(ctx context.Context, policyID, valueKey string) (bool, error) {
	n, err := resetScript.Run(ctx, b.client, b.keys(policyID, valueKey)[:1]).Int()
	if err != nil {
		return false, fmt.Errorf("gateway: redis budget: %w", err)
	}
	return n == 1, nil
}

func intAt(res []any, i int) (int64, bool) {
	if i >= len(res) {
		return 0, false
	}
	v, ok := res[i].(int64)
	return v, ok
}

func floatAt(res []any, i int) (float64, bool) {
	if i >= len(res) {
		return 0, false
	}
	s, ok := res[i].(string)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func parseNum(v any) float64 {
	s, _ := v.(string)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
