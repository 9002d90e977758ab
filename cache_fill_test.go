package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
)

// TestInlineConfigTrailingGarbage: an inline config followed by
// anything but white space is invalid JSON, refused before any provider is
// called.
func TestInlineConfigTrailingGarbage(t *testing.T) {
	a := newFakeUp(t, "a")
	e := routeEnv(t, nil, a)
	for _, cfg := range []string{`{"virtual_key":"a"}}`, `{"virtual_key":"a"} x`, `{"virtual_key":"a"}]`} {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`),
			"x-gateway-api-key: "+coreKey, "content-type: application/json", "x-gateway-config: "+cfg)
		eb := decodeError(t, res)
		if res.StatusCode != http.StatusBadRequest || deref(eb.Error.Code) != CodeInvalidConfig {
			t.Errorf("config %s: got %d %+v, want 400 invalid_config", cfg, res.StatusCode, eb.Error)
		}
	}
	if n := a.calls.Load(); n != 0 {
		t.Errorf("%d upstream calls, want none", n)
	}
	if _, err := ParseConfig([]byte("{\"virtual_key\":\"a\"}\n\t ")); err != nil {
		t.Errorf("trailing white space: %v", err)
	}
}

// TestCacheFillIncompleteNotStored: a shared cache fill whose answer
// the provider broke off stores nothing and gives no caller a 200 with
// part of a body, also when the gateway is served without an http.Server
// (ReverseProxy then reports no copy error by panicking). An answer that is
// merely too long to store is another matter: see
// TestCacheTooLargeAnswerPassesThrough.
func TestCacheFillIncompleteNotStored(t *testing.T) {
	tests := []struct {
		name string
		up   http.HandlerFunc
	}{
		{"broken off", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"partial":`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls++
					io.Copy(io.Discard, r.Body)
					tt.up(w, r)
				})
				g := bubbleGateway(t, func(o *Options) { o.MaxBodyBytes = 128 }, pipeTransport{"up": up})
				const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
				first := serve(t.Context(), g, cfg, `{}`)
				if first.Code == http.StatusOK {
					t.Errorf("first request: 200 with body %q, want no 200 for an incomplete answer", first.Body)
				}
				second := serve(t.Context(), g, cfg, `{}`)
				if second.Code == http.StatusOK || second.Header().Get(HeaderCacheStatus) == string(CacheHit) {
					t.Errorf("second request: %d %s %q, want the incomplete answer not served from the cache", second.Code, second.Header().Get(HeaderCacheStatus), second.Body)
				}
				if calls != 2 {
					t.Errorf("%d upstream calls, want 2", calls)
				}
			})
		})
	}
}

// TestCacheStreamedBrokenNotStored: an answer to a streaming request
// that the provider broke off is not stored, also without an http.Server.
func TestCacheStreamedBrokenNotStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json") // a provider that does not stream
			io.WriteString(w, `{"partial":`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		serve(t.Context(), g, cfg, `{"stream":true}`)
		second := serve(t.Context(), g, cfg, `{"stream":true}`)
		if got := second.Header().Get(HeaderCacheStatus); got != string(CacheMiss) {
			t.Errorf("second request: cache status %q (body %q), want MISS", got, second.Body)
		}
		if calls != 2 {
			t.Errorf("%d upstream calls, want 2", calls)
		}
	})
}

// TestCacheFillSharedOnlyWithSameTimeout: a caller who sent no
// request timeout does not share the cache fill of one who did, and so
// never gets a 408 for a timeout it did not ask for.
func TestCacheFillSharedOnlyWithSameTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &blockingUp{release: make(chan struct{})}
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		const cfg = `{"virtual_key":"up","cache":{"mode":"simple"}}`
		var leader, follower *httptest.ResponseRecorder
		leaderDone, followerDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(leaderDone)
			leader = serve(t.Context(), g, cfg, `{"model":"m"}`, "x-gateway-request-timeout: 50")
		}()
		synctest.Wait()
		go func() {
			defer close(followerDone)
			follower = serve(t.Context(), g, cfg, `{"model":"m"}`)
		}()
		synctest.Wait()
		<-leaderDone // its 50 ms run out
		close(up.release)
		<-followerDone
		if leader.Code != http.StatusRequestTimeout {
			t.Errorf("leader: status %d, want 408", leader.Code)
		}
		if follower.Code != http.StatusOK {
			t.Errorf("follower without a timeout: %d %q, want 200", follower.Code, follower.Body)
		}
	})
}

// TestConfigDecodeErrorsNamePaths: a field of the wrong type or an
// unknown field in a nested target is named by its JSON path, indexes
// included.
func TestConfigDecodeErrorsNamePaths(t *testing.T) {
	a := newFakeUp(t, "a")
	e := routeEnv(t, nil, a)
	tests := []struct{ cfg, msg string }{
		{`{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"a","weight":"x"}]}`,
			"invalid config: invalid JSON: targets[1].weight: must be a number"},
		{`{"targets":[{"virtual_key":"a"},{"targets":[{"retry":{"attempts":1.5}}]}]}`,
			"invalid config: invalid JSON: targets[1].targets[0].retry.attempts: must be an integer"},
		{`{"targets":["a"]}`, "invalid config: invalid JSON: targets[0]: must be an object"},
		{`{"override_params":{"wieght":1},"targets":[{"virtual_key":"a"},{"virtual_key":"a","wieght":1}]}`,
			`invalid config: invalid JSON: targets[1]: unknown field "wieght"`},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.x":"1"},"then":"t","else":"u"}]},"targets":[{"name":"t","virtual_key":"a"}]}`,
			`invalid config: invalid JSON: strategy.conditions[0]: unknown field "else"`},
		{`{"wieght":1}`, `invalid config: invalid JSON: unknown field "wieght"`},
	}
	for _, tt := range tests {
		res := e.post(tt.cfg, `{}`)
		eb := decodeError(t, res)
		if res.StatusCode != http.StatusBadRequest || deref(eb.Error.Code) != CodeInvalidConfig || eb.Error.Message != tt.msg {
			t.Errorf("config %s: got %d %q, want 400 %q", tt.cfg, res.StatusCode, eb.Error.Message, tt.msg)
		}
	}
	if n := a.calls.Load(); n != 0 {
		t.Errorf("%d upstream calls, want none", n)
	}
}
