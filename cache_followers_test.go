package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCacheRefreshFollowersSayRefresh: every caller of a forced refresh is
// answered REFRESH, streamed or not; the followers of a streamed refresh
// were told HIT (and so were not charged tokens) though the provider was
// called for them.
func TestCacheRefreshFollowersSayRefresh(t *testing.T) {
	for _, body := range []string{`{"model":"m"}`, `{"model":"m","stream":true}`} {
		t.Run(body, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &sseUp{started: make(chan struct{}, 1), release: make(chan struct{})}
				g := bubbleGateway(t, nil, pipeTransport{"up": up})
				const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
				var wg sync.WaitGroup
				recs := make([]*httptest.ResponseRecorder, 3)
				for i := range recs {
					wg.Go(func() { recs[i] = serve(t.Context(), g, cfg, body, "x-gateway-cache-force-refresh: true") })
					synctest.Wait()
				}
				close(up.release)
				wg.Wait()
				for i, r := range recs {
					if r.Code != 200 || r.Header().Get(HeaderCacheStatus) != string(CacheRefresh) || r.Body.String() != sseUpEvents {
						t.Errorf("caller %d: %d %s %q; want 200 REFRESH with the whole answer", i, r.Code, r.Header().Get(HeaderCacheStatus), r.Body)
					}
				}
				if n := up.calls.Load(); n != 1 {
					t.Errorf("%d upstream calls, want 1", n)
				}
			})
		})
	}
}

// TestCacheFollowersShareErrors: concurrent identical misses that the
// provider refuses, or that time out, make one upstream call, streamed or
// not: each follower of a streamed fill used to call the provider again.
func TestCacheFollowersShareErrors(t *testing.T) {
	for _, body := range []string{`{"model":"m"}`, `{"model":"m","stream":true}`} {
		t.Run("429/"+body, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				release := make(chan struct{})
				up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					io.Copy(io.Discard, r.Body)
					<-release
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusTooManyRequests)
					io.WriteString(w, `{"error":{"message":"slow down"}}`)
				})
				g := bubbleGateway(t, nil, pipeTransport{"up": up})
				const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
				var wg sync.WaitGroup
				codes := make([]int, 5)
				for i := range codes {
					wg.Go(func() { codes[i] = serve(t.Context(), g, cfg, body).Code })
					synctest.Wait()
				}
				close(release)
				wg.Wait()
				if diff := cmp.Diff([]int{429, 429, 429, 429, 429}, codes); diff != "" {
					t.Errorf("statuses (-want +got):\n%s", diff)
				}
				if n := calls.Load(); n != 1 {
					t.Errorf("%d upstream calls, want 1", n)
				}
			})
		})
		t.Run("timeout/"+body, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					io.Copy(io.Discard, r.Body)
					<-r.Context().Done()
				})
				g := bubbleGateway(t, nil, pipeTransport{"up": up})
				const cfg = `{"virtual_key":"up","cache":{"mode":"simple"},"request_timeout":1000}`
				start := time.Now()
				var wg sync.WaitGroup
				for i := range 3 {
					wg.Go(func() {
						r := serve(t.Context(), g, cfg, body)
						if r.Code != http.StatusRequestTimeout || time.Since(start) != time.Second {
							t.Errorf("caller %d: %d after %v, want 408 after 1s", i, r.Code, time.Since(start))
						}
					})
					synctest.Wait()
				}
				wg.Wait()
				if n := calls.Load(); n != 1 {
					t.Errorf("%d upstream calls, want 1", n)
				}
			})
		})
	}
}

// panickyCache is a Cache whose Put panics.
type panickyCache struct{}

func (panickyCache) Get(context.Context, string) (*CachedResponse, error) { return nil, ErrCacheMiss }
func (panickyCache) Put(context.Context, string, *CachedResponse, time.Duration) error {
	panic("cache bug")
}

// TestCachePanickingCache: a Cache that panics in a shared fill is a 502
// and a log line, not the end of the process (singleflight re-panics where
// nothing can recover).
func TestCachePanickingCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &sseUp{started: make(chan struct{}, 1), release: make(chan struct{})}
		close(up.release)
		g := bubbleGateway(t, func(o *Options) { o.Cache = panickyCache{}; o.ErrorLog = discardLog() }, pipeTransport{"up": up})
		r := serve(t.Context(), g, `{"virtual_key":"up","cache":{"mode":"simple"}}`, `{"model":"m"}`)
		if r.Code != http.StatusBadGateway {
			t.Errorf("status %d, want 502", r.Code)
		}
	})
}

// varyRecorder adds its own Vary value when the status is written, as a
// host's compression middleware does.
type varyRecorder struct {
	*httptest.ResponseRecorder
	tag string
}

func (w *varyRecorder) WriteHeader(code int) {
	w.Header().Add("Vary", w.tag)
	w.ResponseRecorder.WriteHeader(code)
}

// TestCacheSharedHeadersNotAliased: the callers of one fill each get the
// provider's headers as their own; a host adding a value to one caller's
// header (Vary) reached another caller's through a shared slice.
func TestCacheSharedHeadersNotAliased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-release
			for _, v := range []string{"a", "b", "c"} {
				w.Header().Add("Vary", v)
			}
			io.WriteString(w, `{"ok":true}`)
		})
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		var wg sync.WaitGroup
		recs := make([]*varyRecorder, 4)
		for i := range recs {
			recs[i] = &varyRecorder{ResponseRecorder: httptest.NewRecorder(), tag: "caller" + string(rune('0'+i))}
			wg.Go(func() {
				req := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
				req.Header.Set("X-Gateway-Api-Key", coreKey)
				req.Header.Set(HeaderConfig, `{"virtual_key":"up","cache":{"mode":"simple"}}`)
				g.ServeHTTP(recs[i], req)
			})
			synctest.Wait()
		}
		close(release)
		wg.Wait()
		for i, r := range recs {
			if diff := cmp.Diff([]string{"a", "b", "c", r.tag}, r.Header().Values("Vary")); diff != "" {
				t.Errorf("caller %d: Vary (-want +got):\n%s", i, diff)
			}
		}
	})
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
