package redis_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	gwredis "github.com/modelgateway/gateway/redis"
)

// failingUp is a provider answering status (0: 200), counting its calls.
type failingUp struct {
	*httptest.Server
	status atomic.Int32
	calls  atomic.Int32
}

func newFailingUp(t *testing.T, status int) *failingUp {
	t.Helper()
	u := &failingUp{}
	u.status.Store(int32(status))
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if s := u.status.Load(); s != 0 {
			w.WriteHeader(int(s))
		}
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[]}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// breakerReplica is a gateway process with virtual keys "primary" and
// "secondary" and breakers in Redis.
func breakerReplica(t *testing.T, b gateway.Breakers, primary, secondary string) *httptest.Server {
	t.Helper()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-1", Digest: gateway.HashAPIKey(testKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "primary", Provider: "openai", APIKey: "sk-1", BaseURL: primary + "/v1", WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "secondary", Provider: "openai", APIKey: "sk-2", BaseURL: secondary + "/v1", WorkspaceID: "ws-1"})
	gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Breakers: b, ErrorLog: (&logBuffer{}).logger()})
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv
}

const breakerCfg = `{"strategy":{"mode":"fallback","cb_config":{"failure_threshold":2,"cooldown_interval":60000}},"targets":[{"virtual_key":"primary"},{"virtual_key":"secondary"}]}`

func postChat(t *testing.T, base, cfg string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+chatPath, strings.NewReader(chatBody))
	req.Header.Set("x-gateway-api-key", testKey)
	req.Header.Set("x-gateway-config", cfg)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestBreakersShared: two gateways sharing Redis see one breaker: the
// failures one of them counts open the primary for both, and the other
// skips it without calling it.
func TestBreakersShared(t *testing.T) {
	s := startRedis(t)
	primary, secondary := newFailingUp(t, 500), newFailingUp(t, 0)
	opts := gwredis.BreakersOptions{Prefix: s.prefix + "cb:"}
	one := breakerReplica(t, gwredis.NewBreakers(s.client(t), opts), primary.URL, secondary.URL)
	two := breakerReplica(t, gwredis.NewBreakers(s.client(t), opts), primary.URL, secondary.URL)

	for range 2 {
		if code := postChat(t, one.URL, breakerCfg); code != 200 {
			t.Fatalf("replica one: %d, want the secondary's 200", code)
		}
	}
	for range 3 {
		if code := postChat(t, two.URL, breakerCfg); code != 200 {
			t.Fatalf("replica two: %d, want the secondary's 200", code)
		}
	}
	if primary.calls.Load() != 2 || secondary.calls.Load() != 5 {
		t.Errorf("primary called %d times, secondary %d; want 2 (then open for both replicas) and 5", primary.calls.Load(), secondary.calls.Load())
	}
	states, err := gwredis.NewBreakers(s.client(t), opts).States(t.Context())
	if err != nil || len(states) != 1 || states[0].Key != "virtual_key:ws-1/primary" || states[0].Failures != 2 || states[0].OpenUntil.IsZero() {
		t.Errorf("States = %+v, %v; want the primary open after 2 failures", states, err)
	}
}

// TestBreakersTransitions drives one breaker in Redis through every
// transition, with the clock passed in: failures under the threshold,
// open, skipped, a single probe among concurrent callers, a failed probe
// re-opening it, a success closing it.
func TestBreakersTransitions(t *testing.T) {
	s := startRedis(t)
	b := gwredis.NewBreakers(s.client(t), gwredis.BreakersOptions{Prefix: s.prefix})
	ctx := t.Context()
	t0 := time.UnixMilli(1_700_000_000_000)
	fail := func(at time.Time) gateway.BreakerState {
		t.Helper()
		st, err := b.Record(ctx, "k", gateway.BreakerRecord{Time: at, Failed: true, Threshold: 2, Cooldown: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	allow := func(at time.Time) gateway.BreakerState {
		t.Helper()
		st, err := b.Allow(ctx, "k", at)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := allow(t0); st != (gateway.BreakerState{Key: "k"}) {
		t.Errorf("unknown key: %+v, want closed", st)
	}
	if st := fail(t0); st.Failures != 1 || !st.OpenUntil.IsZero() {
		t.Errorf("one failure: %+v, want closed with 1", st)
	}
	if st := fail(t0); st.Failures != 2 || !st.OpenUntil.Equal(t0.Add(5*time.Second)) {
		t.Errorf("second failure: %+v, want open until t0+5s", st)
	}
	if st := allow(t0.Add(4999 * time.Millisecond)); st.Probe || st.OpenUntil.IsZero() {
		t.Errorf("during the cool-down: %+v, want open, no probe", st)
	}
	// After the cool-down, one of many concurrent callers gets the probe.
	var probes atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if st, err := b.Allow(ctx, "k", t0.Add(5*time.Second)); err == nil && st.Probe {
				probes.Add(1)
			}
		})
	}
	wg.Wait()
	if probes.Load() != 1 {
		t.Fatalf("%d probes handed out, want 1", probes.Load())
	}
	at := t0.Add(6 * time.Second)
	if st := fail(at); !st.OpenUntil.Equal(at.Add(5 * time.Second)) {
		t.Errorf("failed probe: %+v, want re-opened until +5s", st)
	}
	if st := allow(at.Add(5 * time.Second)); !st.Probe {
		t.Fatalf("after the second cool-down: %+v, want the probe", st)
	}
	st, err := b.Record(ctx, "k", gateway.BreakerRecord{Time: at, Threshold: 2, Cooldown: 5 * time.Second})
	if err != nil || st != (gateway.BreakerState{Key: "k"}) {
		t.Errorf("successful probe: %+v, %v; want closed", st, err)
	}
	if states, err := b.States(ctx); err != nil || len(states) != 0 {
		t.Errorf("States after it closed = %+v, %v; want none", states, err)
	}
}

// TestBreakersRedisDown: breakers in a Redis that does not answer fail
// open: requests still reach the primary.
func TestBreakersRedisDown(t *testing.T) {
	primary, secondary := newFailingUp(t, 0), newFailingUp(t, 0)
	srv := breakerReplica(t, gwredis.NewBreakers(downClient(t), gwredis.BreakersOptions{}), primary.URL, secondary.URL)
	if code := postChat(t, srv.URL, breakerCfg); code != 200 || primary.calls.Load() != 1 {
		t.Errorf("status %d, primary called %d times; want its 200", code, primary.calls.Load())
	}
}
