package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// hookServer serves gw behind a middleware that sets hooks on each
// request's context, the first outermost.
func hookServer(t *testing.T, gw http.Handler, hooks ...func(*RequestLog)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		for _, h := range hooks {
			ctx = WithLogHook(ctx, h)
		}
		gw.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func hookDo(t *testing.T, srv *httptest.Server, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestWithLogHook: the hook sees the finished record of its own request,
// once, before ServeHTTP returns, and the record it sees is the one the
// LogSink gets.
func TestWithLogHook(t *testing.T) {
	for _, withSink := range []bool{true, false} {
		name := "no sink"
		if withSink {
			name = "with LogSink"
		}
		t.Run(name, func(t *testing.T) {
			up := newCoreUpstream(t, nil)
			e := newCoreEnv(t, up, func(o *Options) {
				if !withSink {
					o.LogSink = nil
				}
			})
			var got []RequestLog // written by the request's goroutine, read once it is served
			srv := hookServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				e.gw.ServeHTTP(w, r)
				if len(got) != 1 {
					t.Errorf("hook called %d times before ServeHTTP returned, want 1", len(got))
				}
			}), func(rec *RequestLog) { got = append(got, *rec) })

			res := hookDo(t, srv, append(vkHeaders, "x-gateway-trace-id: tr-hook")...)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", res.StatusCode)
			}
			e.gw.Close()
			if len(got) != 1 {
				t.Fatalf("hook called %d times, want 1", len(got))
			}
			if r := got[0]; r.Status != 200 || r.TraceID != "tr-hook" || r.Provider != "openai" || r.KeyID != "key-member" || r.Latency <= 0 {
				t.Errorf("hook got status %d, trace id %q, provider %q, key %q, latency %v; want 200, tr-hook, openai, key-member, > 0",
					r.Status, r.TraceID, r.Provider, r.KeyID, r.Latency)
			}
			if withSink {
				logged := e.logs.Query(LogFilter{})
				// The sink's record gets its id as it is queued, after the hook.
				if len(logged) != 1 || cmp.Diff(got[0], logged[0], cmpopts.IgnoreFields(RequestLog{}, "ID"), cmpopts.EquateEmpty()) != "" {
					t.Errorf("the hook's record differs from the sink's:\n%+v\n%+v", got[0], logged)
				}
			}
		})
	}
}

// TestWithLogHookChain: hooks set one after the other are all called, the
// first set first.
func TestWithLogHookChain(t *testing.T) {
	e := newCoreEnv(t, newCoreUpstream(t, nil), nil)
	var order []string
	srv := hookServer(t, e.gw,
		func(*RequestLog) { order = append(order, "outer") },
		nil, // ignored
		func(*RequestLog) { order = append(order, "inner") })
	hookDo(t, srv, vkHeaders...)
	if want := []string{"outer", "inner"}; !cmp.Equal(order, want) {
		t.Errorf("hooks called %v, want %v", order, want)
	}
}

// TestWithLogHookAborted: an answer cut mid-body reaches the hook marked
// aborted, before the abort goes on to net/http.
func TestWithLogHookAborted(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte(`{"partial":`))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	e := newCoreEnv(t, up, nil)
	hooked := make(chan RequestLog, 1)
	srv := hookServer(t, e.gw, func(rec *RequestLog) { hooked <- *rec })
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("x-gateway-api-key", coreKey)
	req.Header.Set("x-gateway-virtual-key", "vk-up")
	if res, err := srv.Client().Do(req); err == nil {
		io.Copy(io.Discard, res.Body) // fails: the answer is cut
		res.Body.Close()
	}
	if rec := <-hooked; !rec.Aborted || rec.Status != 200 {
		t.Errorf("hook got aborted %v, status %d; want true, 200", rec.Aborted, rec.Status)
	}
}

// TestLogHookFromAllocates: a request without a hook pays no allocation
// for the lookup.
func TestLogHookFromAllocates(t *testing.T) {
	ctx := context.WithValue(context.Background(), stateKey{}, &requestState{})
	if n := testing.AllocsPerRun(100, func() {
		if logHookFrom(ctx) != nil {
			t.Fatal("a hook where none was set")
		}
	}); n != 0 {
		t.Errorf("logHookFrom allocates %v times, want 0", n)
	}
	if got := WithLogHook(ctx, nil); got != ctx {
		t.Error("WithLogHook(ctx, nil) is not ctx")
	}
}
