package redis_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modelgateway/gateway"
	gwredis "github.com/modelgateway/gateway/redis"
)

// limiterStep is one call in a shared limiter case: after advancing the
// clock, a Take (or a Charge when charge is set) of n on key.
type limiterStep struct {
	advance time.Duration
	key     string // "" means "k"
	limit   gateway.Limit
	n       float64
	charge  bool
	// want is the decision a Take must return; nil means whatever
	// gateway.MemoryLimiter returns (for figures that are not round).
	want    *gateway.LimitDecision
	wantErr bool
}

func allowed(remaining float64) *gateway.LimitDecision {
	return &gateway.LimitDecision{Allowed: true, Remaining: remaining}
}

func refused(remaining float64, retry time.Duration) *gateway.LimitDecision {
	return &gateway.LimitDecision{Remaining: remaining, RetryAfter: retry}
}

var (
	threePerHour   = gateway.Limit{Value: 3, Per: time.Hour}
	perMinute100   = gateway.Limit{Value: 100, Per: time.Minute}
	threePerMinute = gateway.Limit{Value: 3, Per: time.Minute}
	threePerDay    = gateway.Limit{Value: 3, Per: 24 * time.Hour}
)

// limiterCases are the semantics of gateway.MemoryLimiter (and of its
// tests), which the Redis Limiter must reproduce decision for decision.
var limiterCases = []struct {
	name  string
	steps []limiterStep
}{
	{"window", []limiterStep{
		{limit: threePerHour, n: 1, want: allowed(2)},
		{limit: threePerHour, n: 1, want: allowed(1)},
		{limit: threePerHour, n: 1, want: allowed(0)},
		{limit: threePerHour, n: 1, want: refused(0, 20*time.Minute)},
		{advance: 20*time.Minute - time.Second, limit: threePerHour, n: 1}, // refused, RetryAfter 1s
		{advance: time.Second, limit: threePerHour, n: 1, want: allowed(0)},
		{limit: threePerHour, n: 1, want: refused(0, 20*time.Minute)},
		{key: "other", limit: threePerHour, n: 1, want: allowed(2)},
		{advance: time.Hour, limit: threePerHour, n: 1, want: allowed(2)},
		{limit: threePerHour, n: 1, want: allowed(1)},
		{limit: threePerHour, n: 1, want: allowed(0)},
		{limit: threePerHour, n: 1, want: refused(0, 20*time.Minute)},
	}},
	{"lowered limit refuses at once, raised re-opens the difference", []limiterStep{
		{limit: threePerHour, n: 1, want: allowed(2)},
		{limit: threePerHour, n: 1, want: allowed(1)},
		{limit: threePerHour, n: 1, want: allowed(0)},
		{limit: gateway.Limit{Value: 2, Per: time.Hour}, n: 1, want: refused(-1, time.Hour)},
		{limit: gateway.Limit{Value: 5, Per: time.Hour}, n: 1, want: allowed(1)},
		{limit: gateway.Limit{Value: 5, Per: time.Hour}, n: 1, want: allowed(0)},
		{limit: gateway.Limit{Value: 5, Per: time.Hour}, n: 1, want: refused(0, 12*time.Minute)},
		{limit: gateway.Limit{Value: 5, Per: 24 * time.Hour}, n: 1, want: refused(0, 24*time.Hour/5)},
	}},
	{"a changed limit applies from the call that passes it", []limiterStep{
		{limit: threePerMinute, n: 1, want: allowed(2)},
		{limit: threePerMinute, n: 1, want: allowed(1)},
		{limit: threePerMinute, n: 1, want: allowed(0)},
		// Drained at 3 per minute (and expired) before the unit became a
		// day: empty.
		{advance: 2 * time.Minute, limit: threePerDay, n: 1, want: allowed(2)},
		{limit: threePerDay, n: 1, want: allowed(1)},
		{limit: threePerDay, n: 1, want: allowed(0)},
		// A minute at 3 per day drains 1/480 of a request: refused. 3 per
		// minute applies from this call on: 20 seconds later one request
		// has drained.
		{advance: time.Minute, limit: threePerMinute, n: 1},
		{advance: 20 * time.Second, limit: threePerMinute, n: 1},
		{limit: threePerMinute, n: 1},
	}},
	{"tokens are charged past the limit and refunded", []limiterStep{
		{limit: perMinute100, n: 0, want: allowed(100)},
		{limit: perMinute100, n: 60, charge: true},
		{limit: perMinute100, n: 0, want: allowed(40)},
		{limit: perMinute100, n: 90, charge: true},
		{limit: perMinute100, n: 0, want: refused(-50, 30*time.Second)},
		{advance: 30 * time.Second, limit: perMinute100, n: 0, want: refused(0, 1)},
		{advance: time.Second, limit: perMinute100, n: 0},
		{limit: perMinute100, n: -1000, charge: true},
		{limit: perMinute100, n: 1, want: allowed(99)},
	}},
	{"a fraction drains", []limiterStep{
		{limit: threePerMinute, n: 1, want: allowed(2)},
		{limit: threePerMinute, n: 1, want: allowed(1)},
		{limit: threePerMinute, n: 1, want: allowed(0)},
		{advance: 10 * time.Second, limit: threePerMinute, n: 1, want: refused(0.5, 10*time.Second)},
		{advance: 7 * time.Second, limit: threePerMinute, n: 1},
		{advance: 3*time.Second + 123*time.Microsecond, limit: threePerMinute, n: 1},
		{advance: time.Hour, limit: threePerMinute, n: 2.5, want: allowed(0.5)},
		{limit: threePerMinute, n: 0.5, want: allowed(0)},
	}},
	{"a cost above the value is never admitted", []limiterStep{
		{limit: gateway.Limit{Value: 10, Per: time.Minute}, n: 11, want: refused(10, 6*time.Second)},
		{limit: gateway.Limit{Value: 10, Per: time.Minute}, n: 10, want: allowed(0)},
	}},
	{"a refund on no bucket does nothing", []limiterStep{
		{limit: threePerHour, n: -5, charge: true},
		{limit: threePerHour, n: 1, want: allowed(2)},
		{limit: threePerHour, n: -1, charge: true},
		{limit: threePerHour, n: 3, want: allowed(0)},
	}},
	{"invalid limits", []limiterStep{
		{limit: gateway.Limit{Value: 0, Per: time.Hour}, n: 1, wantErr: true},
		{limit: gateway.Limit{Value: 1, Per: 0}, n: 1, wantErr: true},
		{limit: gateway.Limit{Value: -1, Per: time.Hour}, n: 1, charge: true, wantErr: true},
	}},
}

// TestLimiterMatchesMemoryLimiter runs every case against a
// gateway.MemoryLimiter and the Redis Limiter on the same fake clock: the
// decisions are identical, to the last bit of every float.
func TestLimiterMatchesMemoryLimiter(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	for _, tc := range limiterCases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			clock := func() time.Time { return now }
			mem := &gateway.MemoryLimiter{Now: clock}
			red := gwredis.NewLimiter(client, gwredis.LimiterOptions{Prefix: srv.prefix + t.Name() + ":", Now: clock})
			ctx := context.Background()
			for i, s := range tc.steps {
				now = now.Add(s.advance)
				key := s.key
				if key == "" {
					key = "k"
				}
				if s.charge {
					errM := mem.Charge(ctx, key, s.limit, s.n)
					errR := red.Charge(ctx, key, s.limit, s.n)
					if (errM != nil) != s.wantErr || (errR != nil) != s.wantErr {
						t.Fatalf("step %d: Charge errors: memory %v, redis %v; want error %t", i, errM, errR, s.wantErr)
					}
					continue
				}
				dm, errM := mem.Take(ctx, key, s.limit, s.n)
				dr, errR := red.Take(ctx, key, s.limit, s.n)
				if (errM != nil) != s.wantErr || (errR != nil) != s.wantErr {
					t.Fatalf("step %d: Take errors: memory %v, redis %v; want error %t", i, errM, errR, s.wantErr)
				}
				if s.want != nil {
					if diff := cmp.Diff(*s.want, dm); diff != "" {
						t.Errorf("step %d: MemoryLimiter decision (-want +got):\n%s", i, diff)
					}
				}
				if diff := cmp.Diff(dm, dr); diff != "" {
					t.Errorf("step %d: Redis decision differs from MemoryLimiter's (-memory +redis):\n%s", i, diff)
				}
			}
		})
	}
}

// TestLimiterServerClock: with no Now, buckets drain on the Redis
// server's clock, and a bucket's key expires once it has drained.
func TestLimiterServerClock(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	l := gwredis.NewLimiter(client, gwredis.LimiterOptions{Prefix: srv.prefix})
	ctx := context.Background()
	lim := gateway.Limit{Value: 2, Per: 400 * time.Millisecond}
	take := func() gateway.LimitDecision {
		t.Helper()
		d, err := l.Take(ctx, "k", lim, 1)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	take()
	take()
	start := time.Now()
	d := take()
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond {
		t.Fatalf("third request at 2 per 400ms: %+v, want refused with RetryAfter in (0, 200ms]", d)
	}
	pttl, err := client.PTTL(ctx, srv.prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl <= 0 || pttl > 401*time.Millisecond {
		t.Fatalf("bucket PTTL %v, want in (0, 401ms]: the time to drain", pttl)
	}
	waitFor(t, "a request admitted once the bucket drained", func() bool { return take().Allowed })
	if waited := time.Since(start); waited < d.RetryAfter-20*time.Millisecond {
		t.Fatalf("admitted after %v, before RetryAfter %v", waited, d.RetryAfter)
	}
	waitFor(t, "the drained bucket's key expires", func() bool {
		return client.Exists(ctx, srv.prefix+"k").Val() == 0
	})
}

// TestLimiterKeys: buckets are kept under the prefix (by default
// "gateway:rl:"), long keys as a digest, and admission checks alone keep
// no bucket.
func TestLimiterKeys(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	ctx := context.Background()
	long := strings.Repeat("group-value/", 20)
	tests := []struct {
		name, prefix, key string
		cost              float64
		want              []string
	}{
		{"default prefix", "", "policy\x00" + "3:k-1", 1, []string{"gateway:rl:policy\x003:k-1"}},
		{"own prefix", srv.prefix, "p1", 1, []string{srv.prefix + "p1"}},
		{"long key", srv.prefix + "long:", long, 1, []string{srv.prefix + "long:#" + sha256Hex(long)}},
		{"key that looks like a digest", srv.prefix + "hash:", "#abc", 1, []string{srv.prefix + "hash:#" + sha256Hex("#abc")}},
		{"zero cost", srv.prefix + "zero:", "p1", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := gwredis.NewLimiter(client, gwredis.LimiterOptions{Prefix: tt.prefix})
			if _, err := l.Take(ctx, tt.key, threePerHour, tt.cost); err != nil {
				t.Fatal(err)
			}
			prefix := tt.prefix
			if prefix == "" {
				prefix = gwredis.DefaultLimiterPrefix
				t.Cleanup(func() { client.Del(ctx, tt.want...) })
			}
			got, err := client.Keys(ctx, escapeGlob(prefix)+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("keys (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLimiterConcurrent: 64 goroutines make 1,000 Takes each, through one
// client, on one bucket of 100: exactly 100 are admitted.
func TestLimiterConcurrent(t *testing.T) {
	srv := startRedis(t)
	l := gwredis.NewLimiter(srv.client(t), gwredis.LimiterOptions{Prefix: srv.prefix})
	lim := gateway.Limit{Value: 100, Per: 24 * time.Hour} // nothing drains meanwhile
	var admitted, calls atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 1000 {
				d, err := l.Take(context.Background(), "shared", lim, 1)
				if err != nil {
					t.Error(err)
					return
				}
				calls.Add(1)
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n, c := admitted.Load(), calls.Load(); n != 100 || c != 64_000 {
		t.Fatalf("%d of %d Takes admitted, want 100 of 64000", n, c)
	}
}

// TestLimiterRedisDown: every call fails with the client's error, and no
// decision.
func TestLimiterRedisDown(t *testing.T) {
	l := gwredis.NewLimiter(downClient(t), gwredis.LimiterOptions{})
	ctx := context.Background()
	d, err := l.Take(ctx, "k", threePerHour, 1)
	if err == nil || d.Allowed {
		t.Fatalf("Take with Redis down: %+v, %v; want an error and no admission", d, err)
	}
	if !strings.HasPrefix(err.Error(), "gateway: ") {
		t.Errorf("error %q does not start with gateway:", err)
	}
	if err := l.Charge(ctx, "k", threePerHour, 1); err == nil {
		t.Fatal("Charge with Redis down: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Take(cctx, "k", threePerHour, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestNewLimiterNilClientPanics(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.HasPrefix(p.(string), "gateway: redis:") {
			t.Fatalf("panic %v, want one prefixed gateway: redis:", p)
		}
	}()
	gwredis.NewLimiter(nil, gwredis.LimiterOptions{})
}

// TestLimiterScriptsFlushed: after the server lost its scripts (a restart,
// a failover, SCRIPT FLUSH), calls load them again and buckets are kept.
func TestLimiterScriptsFlushed(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	l := gwredis.NewLimiter(client, gwredis.LimiterOptions{Prefix: srv.prefix})
	ctx := context.Background()
	for i, want := range []float64{2, 1} {
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := l.Take(ctx, "k", threePerHour, 1)
		if err != nil || !d.Allowed || d.Remaining < want || d.Remaining > want+0.001 {
			t.Fatalf("Take %d after SCRIPT FLUSH: %+v, %v; want allowed with about %v left", i+1, d, err, want)
		}
	}
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Charge(ctx, "k", threePerHour, 5); err != nil {
		t.Fatalf("Charge after SCRIPT FLUSH: %v", err)
	}
	if d, err := l.Take(ctx, "k", threePerHour, 0); err != nil || d.Allowed {
		t.Fatalf("Take after charging past the limit: %+v, %v; want refused", d, err)
	}
}
