package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// flakyUp is a provider whose answer status the test sets, counting its
// calls; while hold is set, each call waits for a value on it.
type flakyUp struct {
	status atomic.Int32 // 0: 200
	calls  atomic.Int32
	hold   chan struct{}
}

func (u *flakyUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.calls.Add(1)
	if u.hold != nil {
		<-u.hold
	}
	w.Header().Set("Content-Type", "application/json")
	if s := u.status.Load(); s != 0 {
		w.WriteHeader(int(s))
		io.WriteString(w, `{"error":{"message":"down"}}`)
		return
	}
	io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[]}`)
}

// logged collects the request logs of requests sent with its context.
type logged struct {
	mu   sync.Mutex
	recs []RequestLog
}

func (l *logged) ctx(ctx context.Context) context.Context {
	return WithLogHook(ctx, func(rec *RequestLog) {
		l.mu.Lock()
		l.recs = append(l.recs, *rec)
		l.mu.Unlock()
	})
}

func (l *logged) last(t *testing.T) RequestLog {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recs) == 0 {
		t.Fatal("no request log")
	}
	return l.recs[len(l.recs)-1]
}

const (
	keyA = "virtual_key:/a"
	keyB = "virtual_key:/b"
)

// TestBreakerTransitions walks one breaker through every transition,
// with a fake clock: closed while failures stay under the threshold,
// open at the threshold (the tripping request falls back), skipped while
// open, one probe after the cool-down while other requests still skip,
// a failed probe re-opening it for another cool-down, a successful one
// closing it.
func TestBreakerTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &flakyUp{}, &flakyUp{}
		a.status.Store(500)
		g := bubbleGateway(t, nil, pipeTransport{"a": a, "b": b})
		const cfg = `{"strategy":{"mode":"fallback","cb_config":{"failure_threshold":2,"cooldown_interval":5000}},
			"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`
		var l logged
		ctx := l.ctx(t.Context())
		send := func(step string, wantA int32, skipped, tripped []string) {
			t.Helper()
			rec := serve(ctx, g, cfg, `{"model":"m"}`)
			if rec.Code != 200 {
				t.Fatalf("%s: status %d %s, want b's 200", step, rec.Code, rec.Body)
			}
			got := l.last(t)
			if a.calls.Load() != wantA || !slices.Equal(got.SkippedTargets, skipped) || !slices.Equal(got.TrippedTargets, tripped) {
				t.Errorf("%s: a called %d times, skipped %q, tripped %q; want %d, %q, %q",
					step, a.calls.Load(), got.SkippedTargets, got.TrippedTargets, wantA, skipped, tripped)
			}
		}
		send("first failure", 1, nil, nil)
		send("second failure", 2, nil, []string{keyA})
		send("open", 2, []string{keyA}, nil)
		time.Sleep(4999 * time.Millisecond)
		send("open, cool-down not over", 2, []string{keyA}, nil)

		// After the cool-down one request probes; while it is out the
		// others still skip a.
		time.Sleep(time.Millisecond)
		a.hold = make(chan struct{})
		probe := make(chan *httptest.ResponseRecorder)
		go func() { probe <- serve(ctx, g, cfg, `{"model":"m"}`) }()
		synctest.Wait()
		if a.calls.Load() != 3 {
			t.Fatalf("a called %d times after the cool-down, want the probe (3)", a.calls.Load())
		}
		send("while the probe is out", 3, []string{keyA}, nil)
		a.hold <- struct{}{}
		if rec := <-probe; rec.Code != 200 {
			t.Fatalf("probe: status %d, want b's 200 after a's failure", rec.Code)
		}
		a.hold = nil
		if got := l.last(t); !slices.Equal(got.TrippedTargets, []string{keyA}) {
			t.Errorf("failed probe: tripped %q, want a (re-opened)", got.TrippedTargets)
		}
		send("re-opened", 3, []string{keyA}, nil)

		time.Sleep(5 * time.Second)
		a.status.Store(0)
		before := b.calls.Load()
		rec := serve(ctx, g, cfg, `{"model":"m"}`)
		if rec.Code != 200 || a.calls.Load() != 4 || b.calls.Load() != before {
			t.Fatalf("successful probe: %d, a %d calls, b %d new; want a's 200, 4 calls, none to b", rec.Code, a.calls.Load(), b.calls.Load()-before)
		}
		serve(ctx, g, cfg, `{"model":"m"}`)
		if a.calls.Load() != 5 {
			t.Errorf("after the probe closed it: a called %d times, want 5", a.calls.Load())
		}
		states, _ := g.BreakerStates(t.Context())
		if len(states) != 2 || states[0] != (BreakerState{Key: keyA}) {
			t.Errorf("states %+v, want a closed without failures (and b)", states)
		}
	})
}

// TestBreakerRetriesCount: each retry is a failure of its own; the
// breaker opening ends the retries, and the request falls back at once.
func TestBreakerRetriesCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &flakyUp{}, &flakyUp{}
		a.status.Store(503)
		g := bubbleGateway(t, nil, pipeTransport{"a": a, "b": b})
		const cfg = `{"strategy":{"mode":"fallback","cb_config":{"failure_threshold":2,"cooldown_interval":60000}},
			"targets":[{"virtual_key":"a","retry":{"attempts":5}},{"virtual_key":"b"}]}`
		rec := serve(t.Context(), g, cfg, `{"model":"m"}`)
		if rec.Code != 200 || a.calls.Load() != 2 || b.calls.Load() != 1 {
			t.Errorf("status %d after %d calls to a and %d to b; want b's 200 after 2 and 1", rec.Code, a.calls.Load(), b.calls.Load())
		}
	})
}

// TestBreakerAllOpen: with every target open the gateway answers 503
// all_targets_unavailable without calling a provider, Retry-After the
// soonest end of a cool-down in whole seconds rounded up.
func TestBreakerAllOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &flakyUp{}, &flakyUp{}
		a.status.Store(500)
		b.status.Store(502)
		g := bubbleGateway(t, nil, pipeTransport{"a": a, "b": b})
		const cfg = `{"strategy":{"mode":"fallback","cb_config":{"failure_threshold":1,"cooldown_interval":30000}},
			"targets":[{"virtual_key":"a"},{"strategy":{"mode":"loadbalance","cb_config":{"failure_threshold":1,"cooldown_interval":10000}},"targets":[{"virtual_key":"b"}]}]}`
		var l logged
		ctx := l.ctx(t.Context())
		if rec := serve(ctx, g, cfg, `{"model":"m"}`); rec.Code != 502 {
			t.Fatalf("status %d, want b's 502 (the last answer)", rec.Code)
		}
		if got := l.last(t).TrippedTargets; !slices.Equal(got, []string{keyA, keyB}) {
			t.Errorf("tripped %q, want both", got)
		}
		time.Sleep(2500 * time.Millisecond)
		rec := serve(ctx, g, cfg, `{"model":"m"}`)
		res := rec.Result()
		e := decodeError(t, res)
		if rec.Code != 503 || deref(e.Error.Code) != CodeAllTargetsUnavailable || e.Error.Type != TypeGateway {
			t.Fatalf("status %d code %q type %q, want 503 %s", rec.Code, deref(e.Error.Code), e.Error.Type, CodeAllTargetsUnavailable)
		}
		if got := res.Header.Get("Retry-After"); got != "8" {
			t.Errorf("Retry-After %q, want 8 (b re-opens for a probe 7.5 s from now)", got)
		}
		if a.calls.Load() != 1 || b.calls.Load() != 1 {
			t.Errorf("providers called %d and %d times, want once each (before they opened)", a.calls.Load(), b.calls.Load())
		}
		got := l.last(t)
		if got.Status != 503 || got.ErrorCode != CodeAllTargetsUnavailable || !slices.Equal(got.SkippedTargets, []string{keyA, keyB}) {
			t.Errorf("log: status %d code %q skipped %q, want 503, %s, both", got.Status, got.ErrorCode, got.SkippedTargets, CodeAllTargetsUnavailable)
		}
	})
}

// TestBreakerFailures: which outcomes count. By default 408, 5xx and
// timeouts open a breaker of threshold 1; 4xx (429 included) do not, and
// a success clears earlier failures. failure_status_codes replaces the
// statuses, not the timeouts.
func TestBreakerFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cb     string
		status int
		hang   bool
		opens  bool
	}{
		{"500", `{"failure_threshold":1,"cooldown_interval":1000}`, 500, false, true},
		{"529", `{"failure_threshold":1,"cooldown_interval":1000}`, 529, false, true},
		{"408", `{"failure_threshold":1,"cooldown_interval":1000}`, 408, false, true},
		{"429", `{"failure_threshold":1,"cooldown_interval":1000}`, 429, false, false},
		{"400", `{"failure_threshold":1,"cooldown_interval":1000}`, 400, false, false},
		{"timeout", `{"failure_threshold":1,"cooldown_interval":1000}`, 0, true, true},
		{"listed 429", `{"failure_threshold":1,"cooldown_interval":1000,"failure_status_codes":[429]}`, 429, false, true},
		{"unlisted 500", `{"failure_threshold":1,"cooldown_interval":1000,"failure_status_codes":[429]}`, 500, false, false},
		{"timeout, codes listed", `{"failure_threshold":1,"cooldown_interval":1000,"failure_status_codes":[429]}`, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &flakyUp{}
				a.status.Store(int32(tc.status))
				if tc.hang {
					a.hold = make(chan struct{})
					defer close(a.hold)
				}
				g := bubbleGateway(t, nil, pipeTransport{"a": a})
				cfg := `{"request_timeout":1000,"strategy":{"mode":"single","cb_config":` + tc.cb + `},"targets":[{"virtual_key":"a"}]}`
				serve(t.Context(), g, cfg, `{"model":"m"}`)
				rec := serve(t.Context(), g, cfg, `{"model":"m"}`)
				if opened := rec.Code == 503 && a.calls.Load() == 1; opened != tc.opens {
					t.Errorf("second request: %d after %d calls; breaker open %v, want %v", rec.Code, a.calls.Load(), opened, tc.opens)
				}
			})
		})
	}

	t.Run("success clears", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a := &flakyUp{}
			g := bubbleGateway(t, nil, pipeTransport{"a": a})
			const cfg = `{"strategy":{"cb_config":{"failure_threshold":2,"cooldown_interval":1000}},"virtual_key":"a"}`
			for _, s := range []int32{500, 0, 500, 0} {
				a.status.Store(s)
				serve(t.Context(), g, cfg, `{"model":"m"}`)
			}
			if a.calls.Load() != 4 {
				t.Errorf("a called %d times, want 4: failures apart never open a threshold of 2", a.calls.Load())
			}
		})
	})
}

// TestBreakerLoadbalanceSkip: a loadbalance draw skips an open target for
// the other, whatever the draw says.
func TestBreakerLoadbalanceSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &flakyUp{}, &flakyUp{}
		a.status.Store(500)
		g := bubbleGateway(t, func(o *Options) { o.Rand = func() float64 { return 0 } }, pipeTransport{"a": a, "b": b})
		const cfg = `{"strategy":{"mode":"loadbalance","cb_config":{"failure_threshold":1,"cooldown_interval":1000}},
			"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`
		if rec := serve(t.Context(), g, cfg, `{"model":"m"}`); rec.Code != 500 {
			t.Fatalf("first: %d, want a's 500", rec.Code)
		}
		for range 3 {
			if rec := serve(t.Context(), g, cfg, `{"model":"m"}`); rec.Code != 200 {
				t.Fatalf("status %d, want b's 200", rec.Code)
			}
		}
		if a.calls.Load() != 1 || b.calls.Load() != 3 {
			t.Errorf("a called %d times, b %d; want 1 and 3", a.calls.Load(), b.calls.Load())
		}
	})
}

// TestBreakerKeys: a breaker is keyed by the target's identity, never by
// its credential.
func TestBreakerKeys(t *testing.T) {
	u := func(s string) *Target { return &Target{Provider: "openai", APIKey: s} }
	k1, k2 := breakerKey(u("sk-one"), ""), breakerKey(u("sk-two"), "")
	if k1 == k2 || strings.Contains(k1, "sk-one") || !strings.HasPrefix(k1, "openai#") {
		t.Errorf("keys %q and %q: want distinct keys without the credential", k1, k2)
	}
	if got := breakerKey(&Target{Provider: "openai", APIKey: "sk", VirtualKey: "prod"}, "ws-1"); got != "virtual_key:ws-1/prod" {
		t.Errorf("virtual key's breaker key %q", got)
	}
}

// TestBreakerConfigErrors: a bad cb_config or sticky is a 400
// invalid_config naming its path.
func TestBreakerConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, path string }{
		{`{"strategy":{"cb_config":{"cooldown_interval":1000}}}`, "strategy.cb_config.failure_threshold"},
		{`{"strategy":{"cb_config":{"failure_threshold":1001,"cooldown_interval":1000}}}`, "strategy.cb_config.failure_threshold"},
		{`{"strategy":{"cb_config":{"failure_threshold":1,"cooldown_interval":999}}}`, "strategy.cb_config.cooldown_interval"},
		{`{"targets":[{"strategy":{"cb_config":{"failure_threshold":1,"cooldown_interval":1000,"failure_status_codes":[700]}}}]}`, "targets[0].strategy.cb_config.failure_status_codes[0]"},
		{`{"strategy":{"cb_config":{"failure_threshold":1,"cooldown_interval":1000,"typo":1}}}`, "typo"},
		{`{"strategy":{"mode":"fallback","sticky":{"key":"metadata.s"}}}`, "strategy.sticky"},
		{`{"strategy":{"mode":"loadbalance","sticky":{"key":"body.s"}}}`, "strategy.sticky.key"},
		{`{"strategy":{"mode":"loadbalance","sticky":{"key":"header.a b"}}}`, "strategy.sticky.key"},
		{`{"strategy":{"mode":"loadbalance","sticky":{"key":"metadata."}}}`, "strategy.sticky.key"},
	} {
		_, err := ParseConfig([]byte(tc.cfg))
		var ge *Error
		if !errors.As(err, &ge) || ge.Status != 400 || ge.Code != CodeInvalidConfig || !strings.Contains(ge.Message, tc.path) {
			t.Errorf("%s: %v, want a 400 invalid_config naming %s", tc.cfg, err, tc.path)
		}
	}
	g := bubbleGateway(t, nil, nil)
	rec := serve(t.Context(), g, `{"strategy":{"cb_config":{"failure_threshold":0,"cooldown_interval":1000}},"provider":"openai"}`, `{}`)
	e := decodeError(t, rec.Result())
	if rec.Code != 400 || deref(e.Error.Param) != HeaderConfig || !strings.Contains(e.Error.Message, "strategy.cb_config.failure_threshold") {
		t.Errorf("over HTTP: %d %+v, want 400 naming %s and the path", rec.Code, e.Error, HeaderConfig)
	}
}

// TestStickyWeights: across many values each target gets its weight's
// share of them, and one value always ranks the targets alike.
func TestStickyWeights(t *testing.T) {
	n := &planNode{children: []*planNode{{weight: 3}, {weight: 1}, {weight: 0}, {weight: 4}}}
	const values = 40000
	var got [4]int
	for i := range values {
		v := "session-" + strconv.Itoa(i)
		c := rendezvous(n, v, nil)
		if c != rendezvous(n, v, nil) {
			t.Fatalf("value %q ranked two ways", v)
		}
		got[c]++
	}
	for i, want := range []float64{3.0 / 8, 1.0 / 8, 0, 4.0 / 8} {
		share := float64(got[i]) / values
		if math.Abs(share-want) > 0.015 {
			t.Errorf("child %d of weight %v got %.3f of the values, want %.3f", i, n.children[i].weight, share, want)
		}
	}
	// Skipping the first choice moves each value to its second, which
	// keeps the weights among those left.
	skip := []bool{false, false, false, true}
	var moved [4]int
	for i := range values {
		v := "session-" + strconv.Itoa(i)
		if rendezvous(n, v, nil) == 3 {
			moved[rendezvous(n, v, skip)]++
		}
	}
	if share := float64(moved[0]) / float64(moved[0]+moved[1]); math.Abs(share-0.75) > 0.02 {
		t.Errorf("values of a skipped target went %.3f to the target of weight 3, want 0.75", share)
	}
}

// TestStickyRouting: requests with one value of the sticky key reach one
// target; when its breaker is open they go to the value's next target,
// and come back once it closes. Requests without the value are drawn.
func TestStickyRouting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ups := []*flakyUp{{}, {}, {}}
		hosts := pipeTransport{}
		for i, u := range ups {
			hosts[fmt.Sprint("t", i)] = u
		}
		g := bubbleGateway(t, nil, hosts)
		const cfg = `{"strategy":{"mode":"loadbalance","sticky":{"key":"metadata.session"},"cb_config":{"failure_threshold":1,"cooldown_interval":1000}},
			"targets":[{"virtual_key":"t0"},{"virtual_key":"t1","weight":2},{"virtual_key":"t2"}]}`
		n := &planNode{children: []*planNode{{weight: 1}, {weight: 2}, {weight: 1}}}
		calls := func() []int32 { return []int32{ups[0].calls.Load(), ups[1].calls.Load(), ups[2].calls.Load()} }
		for _, session := range []string{"alpha", "beta", "gamma", "delta"} {
			first := rendezvous(n, session, nil)
			skip := make([]bool, 3)
			skip[first] = true
			second := rendezvous(n, session, skip)
			md := `x-gateway-metadata: {"session":"` + session + `"}`
			before := calls()
			for range 3 {
				serve(t.Context(), g, cfg, `{"model":"m"}`, md)
			}
			if got := calls(); got[first]-before[first] != 3 {
				t.Fatalf("session %s: calls %v -> %v, want all 3 on t%d", session, before, got, first)
			}
			ups[first].status.Store(500)
			serve(t.Context(), g, cfg, `{"model":"m"}`, md) // trips it
			ups[first].status.Store(0)
			before = calls()
			for range 2 {
				if rec := serve(t.Context(), g, cfg, `{"model":"m"}`, md); rec.Code != 200 {
					t.Fatalf("session %s while t%d is open: %d", session, first, rec.Code)
				}
			}
			if got := calls(); got[second]-before[second] != 2 {
				t.Fatalf("session %s with t%d open: calls %v -> %v, want both on t%d", session, first, before, got, second)
			}
			time.Sleep(time.Second) // the probe closes it again
			before = calls()
			serve(t.Context(), g, cfg, `{"model":"m"}`, md)
			if got := calls(); got[first]-before[first] != 1 {
				t.Fatalf("session %s after the cool-down: calls %v -> %v, want t%d back", session, before, got, first)
			}
		}
	})
}

// TestMemoryBreakersBound: the process keeps at most maxMemoryBreakers
// breakers; clean ones make room for new keys, and one that counts a
// failure is never dropped for a newcomer.
func TestMemoryBreakersBound(t *testing.T) {
	var m memoryBreakers
	now := time.Unix(1e9, 0)
	rule := BreakerRecord{Time: now, Failed: true, Threshold: 1, Cooldown: time.Minute}
	m.Record(t.Context(), "bad", rule)
	for i := range maxMemoryBreakers + 10 {
		m.Allow(t.Context(), strconv.Itoa(i), now)
	}
	if states, _ := m.States(t.Context()); len(states) != maxMemoryBreakers || m.n.Load() != maxMemoryBreakers {
		t.Errorf("%d breakers kept (counted %d), want %d", len(states), m.n.Load(), maxMemoryBreakers)
	}
	if s, _ := m.Allow(t.Context(), "bad", now); s.OpenUntil.IsZero() {
		t.Error("the open breaker was dropped")
	}
}

// BenchmarkBreakerAllow measures the breaker check every attempt at a
// target under a cb_config makes, in process, on a closed breaker.
func BenchmarkBreakerAllow(b *testing.B) {
	var m memoryBreakers
	key := breakerKey(&Target{Provider: "openai", APIKey: "sk-bench"}, "")
	now := time.Now()
	m.Allow(context.Background(), key, now)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s, _ := m.Allow(ctx, key, now); !s.OpenUntil.IsZero() {
				b.Fatal("open")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Allow(ctx, key, now)
			}
		})
	})
}
