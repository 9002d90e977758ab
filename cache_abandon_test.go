package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// gatedEvents is the number of events gatedUp streams before data: [DONE].
const gatedEvents = 50

// gatedUp streams gatedEvents server-sent events, flushing each, and
// writes each only once gate lets it through (closing gate lets them all
// through). A call whose request context ends before the stream did sends
// on cut how many events it had written.
type gatedUp struct {
	calls atomic.Int32
	gate  chan struct{}
	cut   chan int
	stop  chan struct{} // closed when the test ends, so that no call outlives it
}

func newGatedUp(t *testing.T) (*gatedUp, *httptest.Server) {
	t.Helper()
	u := &gatedUp{gate: make(chan struct{}), cut: make(chan int, 4), stop: make(chan struct{})}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	return u, srv
}

func (u *gatedUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	for i := range gatedEvents {
		select {
		case <-u.gate:
		case <-r.Context().Done():
			u.cut <- i
			return
		case <-u.stop:
			return
		}
		io.WriteString(w, gatedEvent(i+1))
		rc.Flush()
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func gatedEvent(n int) string { return fmt.Sprintf("data: {\"n\":%d}\n\n", n) }

// gatedStream is the whole stream of a call of gatedUp.
func gatedStream() string {
	var b strings.Builder
	for i := range gatedEvents {
		b.WriteString(gatedEvent(i + 1))
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// fillCallers counts the callers waiting on g's cache fills under way.
func fillCallers(g *Gateway) int {
	g.cache.mu.Lock()
	defer g.cache.mu.Unlock()
	n := 0
	for _, f := range g.cache.flights {
		n += f.callers
	}
	return n
}

// waitFillCallers waits until the cache fills under way on g count n
// callers: a caller joining or leaving a fill does nothing a client could
// see.
func waitFillCallers(t *testing.T, g *Gateway, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fillCallers(g) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the cache fills count %d callers, want %d", fillCallers(g), n)
		}
		runtime.Gosched()
	}
}

// TestCacheFillEndsWhenItsCallersLeave: a client that leaves a streamed
// miss, with no other caller waiting on the fill, cancels the provider's
// call as it would without the cache, and nothing of it is stored; the
// provider used to stream (and bill) the whole answer to the cache, and the
// next identical request was a HIT. A caller still waiting on the fill
// keeps it going, and gets the whole stream.
func TestCacheFillEndsWhenItsCallersLeave(t *testing.T) {
	const body = `{"model":"m","stream":true}`
	setup := func(t *testing.T) (*gatedUp, *coreEnv) {
		up, srv := newGatedUp(t)
		e := routeEnv(t, nil)
		e.store.AddVirtualKey(VirtualKey{Slug: "shared", Provider: "openai", APIKey: "sk-shared", BaseURL: srv.URL + "/v1"})
		t.Cleanup(func() { close(up.stop) }) // first: the servers wait for their calls
		return up, e
	}
	// open sends a streamed request and reads its first two events, which
	// the provider is let to send; the returned func leaves the stream.
	open := func(t *testing.T, e *coreEnv, up *gatedUp) (leave func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("X-Gateway-Api-Key", coreKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderConfig, cacheSharedCfg)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		leave = func() { res.Body.Close(); cancel() }
		if res.StatusCode != 200 || res.Header.Get(HeaderCacheStatus) != string(CacheMiss) {
			leave()
			t.Fatalf("first caller: %d %s, want 200 MISS", res.StatusCode, res.Header.Get(HeaderCacheStatus))
		}
		br := bufio.NewReader(res.Body)
		var got strings.Builder
		for range 2 {
			up.gate <- struct{}{}
			for range 2 { // the data line and the blank line after it
				line, err := br.ReadString('\n')
				got.WriteString(line)
				if err != nil {
					leave()
					t.Fatalf("first caller: reading the stream: %v (after %q)", err, got.String())
				}
			}
		}
		if want := gatedEvent(1) + gatedEvent(2); got.String() != want {
			leave()
			t.Fatalf("first caller: read %q, want %q", got.String(), want)
		}
		return leave
	}

	t.Run("alone", func(t *testing.T) {
		up, e := setup(t)
		leave := open(t, e, up)
		leave()
		select {
		case n := <-up.cut:
			if n != 2 {
				t.Errorf("the provider call was cancelled after %d events, want 2", n)
			}
		case <-time.After(5 * time.Second): // a guard: the call was never cancelled
			t.Fatal("the provider call went on after its only caller left")
		}
		close(up.gate) // from now on the provider streams freely
		got := readAnswer(t, e.post(cacheSharedCfg, body))
		if got.Status != 200 || got.Cache != string(CacheMiss) || got.Body != gatedStream() {
			t.Errorf("next request: %d %s %q, want 200 MISS with the whole stream", got.Status, got.Cache, got.Body)
		}
		if n := up.calls.Load(); n != 2 {
			t.Errorf("%d upstream calls, want 2 (nothing of the first stored)", n)
		}
	})

	t.Run("with a caller waiting", func(t *testing.T) {
		up, e := setup(t)
		leave := open(t, e, up)
		type result struct {
			a   answer
			err error
		}
		follower := make(chan result, 1)
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("X-Gateway-Api-Key", coreKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(HeaderConfig, cacheSharedCfg)
			res, err := e.srv.Client().Do(req)
			if err != nil {
				follower <- result{err: err}
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			follower <- result{answer{Status: res.StatusCode, Body: string(b), Cache: res.Header.Get(HeaderCacheStatus)}, err}
		}()
		waitFillCallers(t, e.gw, 2) // the second caller waits on the fill
		leave()
		waitFillCallers(t, e.gw, 1) // the first caller left it
		close(up.gate)
		var r result
		select {
		case r = <-follower:
		case <-time.After(10 * time.Second): // a guard: the answer never came
			t.Fatal("the waiting caller got no answer")
		}
		if r.err != nil || r.a.Status != 200 || r.a.Cache != string(CacheHit) || r.a.Body != gatedStream() {
			t.Errorf("waiting caller: %d %s %q (%v), want 200 HIT with the whole stream", r.a.Status, r.a.Cache, r.a.Body, r.err)
		}
		select {
		case n := <-up.cut:
			t.Errorf("the provider call was cancelled after %d events, though a caller waited on it", n)
		default:
		}
		if n := up.calls.Load(); n != 1 {
			t.Errorf("%d upstream calls, want 1", n)
		}
	})
}

// TestCacheFillAbandoned: a fill, streamed or not, that every caller left
// before its answer was complete is cancelled at once and stores nothing,
// however many callers it had; the next identical request reaches the
// provider again.
func TestCacheFillAbandoned(t *testing.T) {
	const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
	for _, body := range []string{`{"model":"m"}`, `{"model":"m","stream":true}`} {
		for _, callers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%d callers/%s", callers, body), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var calls atomic.Int32
					gone := make(chan error, 1)
					up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						n := calls.Add(1)
						io.Copy(io.Discard, r.Body)
						w.Header().Set("Content-Type", "text/event-stream")
						io.WriteString(w, "data: {\"n\":1}\n\n")
						w.(http.Flusher).Flush()
						if n == 1 {
							<-r.Context().Done()
							gone <- context.Cause(r.Context())
							return
						}
						io.WriteString(w, "data: [DONE]\n\n")
					})
					g := bubbleGateway(t, nil, pipeTransport{"up": up})
					cancels := make([]context.CancelFunc, callers)
					done := make([]chan struct{}, callers)
					for i := range callers {
						ctx, cancel := context.WithCancel(t.Context())
						cancels[i], done[i] = cancel, make(chan struct{})
						go func() {
							defer close(done[i])
							serve(ctx, g, cfg, body)
						}()
						synctest.Wait()
					}
					for i := range callers {
						cancels[i]()
						<-done[i]
						if i < callers-1 {
							synctest.Wait()
							select {
							case err := <-gone:
								t.Fatalf("the provider call ended (%v) when caller %d of %d left", err, i+1, callers)
							default:
							}
						}
					}
					start := time.Now()
					if err := <-gone; time.Since(start) != 0 || !errors.Is(err, errFillAbandoned) {
						t.Errorf("the provider call ended after %v (cause %v), want it ended at once by its callers leaving", time.Since(start), err)
					}
					rec := serve(t.Context(), g, cfg, body)
					if rec.Code != 200 || rec.Header().Get(HeaderCacheStatus) != string(CacheMiss) {
						t.Errorf("next request: %d %s, want 200 MISS", rec.Code, rec.Header().Get(HeaderCacheStatus))
					}
					if n := calls.Load(); n != 2 {
						t.Errorf("%d upstream calls, want 2", n)
					}
				})
			})
		}
	}
}
