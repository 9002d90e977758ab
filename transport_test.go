package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestUpstreamConnectionReuse holds 64 requests in flight at the fake
// provider at once, then keeps 64 callers sending for several rounds, and
// counts the connections the provider accepted. The gateway's default
// transport keeps them all open for reuse; a transport the host passes in
// is used as it is, so one that keeps 2 idle connections per host (as
// http.DefaultTransport does) dials most requests anew.
func TestUpstreamConnectionReuse(t *testing.T) {
	const callers, rounds = 64, 20
	for _, tc := range []struct {
		name      string
		transport http.RoundTripper
		check     func(t *testing.T, accepted int64)
	}{
		{"default", nil, func(t *testing.T, accepted int64) {
			// Every caller needs one connection; a caller whose previous
			// connection is not yet back in the pool may dial one more.
			if accepted > 2*callers {
				t.Errorf("the provider accepted %d connections for %d requests of %d callers; want at most %d",
					accepted, callers*rounds, callers, 2*callers)
			}
		}},
		{"host transport", &http.Transport{MaxIdleConnsPerHost: 2}, func(t *testing.T, accepted int64) {
			if accepted <= 2*callers {
				t.Errorf("the provider accepted %d connections; a host transport keeping 2 idle connections was not used", accepted)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var accepted atomic.Int64
			var inFlight sync.WaitGroup
			inFlight.Add(callers)
			all := make(chan struct{})
			var first sync.Once
			var firstRound atomic.Int64
			up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if firstRound.Add(1) <= callers {
					// The first 64 requests wait for each other, so that
					// 64 connections are open at once.
					inFlight.Done()
					first.Do(func() { go func() { inFlight.Wait(); close(all) }() })
					<-all
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"ok":true}`)
			}))
			up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					accepted.Add(1)
				}
			}
			up.Start()
			t.Cleanup(up.Close)

			st := &testStore{}
			st.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey("gw-k"), WorkspaceID: "ws"})
			st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
			g := New(Options{Keys: st, VirtualKeys: st, Transport: tc.transport})
			t.Cleanup(func() { g.Close() })

			var wg sync.WaitGroup
			var failed atomic.Int64
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set(HeaderAPIKey, "gw-k")
						req.Header.Set(HeaderVirtualKey, "vk")
						rec := httptest.NewRecorder()
						g.ServeHTTP(rec, req)
						if rec.Code != http.StatusOK {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if n := failed.Load(); n > 0 {
				t.Fatalf("%d requests failed", n)
			}
			t.Logf("%d requests, %d upstream connections", callers*rounds, accepted.Load())
			tc.check(t, accepted.Load())
		})
	}
}

// TestNewTransport checks the limits NewTransport promises in its doc.
func TestNewTransport(t *testing.T) {
	tr := NewTransport()
	if tr.MaxIdleConnsPerHost < 100 || !tr.ForceAttemptHTTP2 || tr.IdleConnTimeout <= 0 ||
		tr.TLSHandshakeTimeout <= 0 || tr.DialContext == nil || tr.Proxy == nil {
		t.Errorf("NewTransport() = %+v: want a pool in the hundreds per host, HTTP/2, idle and TLS timeouts, a dialer and the environment's proxy", tr)
	}
	g := New(Options{})
	defer g.Close()
	if ct, ok := g.custom.(*http.Transport); !ok || ct.MaxIdleConnsPerHost != tr.MaxIdleConnsPerHost || ct.Proxy != nil {
		t.Errorf("custom-host transport = %#v: want NewTransport's pool without a proxy", g.custom)
	}
}
