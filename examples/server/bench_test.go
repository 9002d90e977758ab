package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// The benchmarks below compare the server with a bare httputil.ReverseProxy
// in front of the same upstream, as scripts/bench.sh does with separate
// processes. Compare the sub-benchmarks of one run: every number
// is relative to the machine.

const (
	benchKey         = "gw-bench"
	benchChatBody    = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`
	benchStreamBody  = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}],"stream":true}`
	benchCompletion  = `{"id":"chatcmpl-mock","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from mock"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
	benchStreamChunk = `{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}`
	benchEvents      = 50 // chunk events per streamed completion, before data: [DONE]
)

// benchUpstream starts an instant OpenAI-compatible upstream on loopback
// answering every request with one chat completion, like the mock of
// scripts/bench/benchd.
func benchUpstream(b *testing.B) *httptest.Server {
	b.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, benchCompletion)
	}))
	b.Cleanup(up.Close)
	return up
}

// streamUpstream starts an upstream on loopback answering every request
// with a streamed chat completion: benchEvents chunk events, then
// data: [DONE], flushed one by one with no delay.
func streamUpstream(b *testing.B) *httptest.Server {
	b.Helper()
	event := []byte("data: " + benchStreamChunk + "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		for range benchEvents {
			if _, err := w.Write(event); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	b.Cleanup(up.Close)
	return up
}

// benchConfig writes a server config file: the API key benchKey, the
// virtual key "up" to the upstream at upURL, and the saved config
// "pc-cache" routing to it with the response cache on.
func benchConfig(b *testing.B, upURL string) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "gateway.json")
	data := fmt.Sprintf(`{
  "api_keys": [{"id": "key-bench", "key": %q, "workspace_id": "ws-1"}],
  "virtual_keys": [{"slug": "up", "provider": "openai", "api_key": "sk-up", "base_url": %q, "workspace_id": "ws-1"}],
  "configs": [{"id": "pc-cache", "workspace_id": "ws-1", "config": {"virtual_key": "up", "cache": {"mode": "simple"}}}]
}`, benchKey, upURL+"/v1")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// bareProxy returns the baseline: a bare httputil.ReverseProxy to target
// with the transport of scripts/bench/benchd's proxy.
func bareProxy(target string) *httputil.ReverseProxy {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024 // the default (2) would open/close upstream sockets under load
	return &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: tr,
	}
}

// serveBare serves bareProxy(target) on loopback and returns its URL.
//
// Each request is put in full-duplex mode first. Without it the bare
// proxy now and then cuts a stream (golang/go#40747): the upstream
// answers as soon as it has the request body, the proxy writes the
// response headers, and the HTTP/1 server then closes the inbound body
// before the outbound Transport's final read of it (checking that the
// body holds no more than its Content-Length); that read fails, the
// Transport closes the upstream connection and the proxy logs "read error
// during body copy: use of closed network connection". The gateway is
// not exposed: its request body keeps answering io.EOF once it has
// returned it, without reading the closed inbound body again.
func serveBare(b *testing.B, target string) string {
	b.Helper()
	rp := bareProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// startServer runs the server in-process with args on 127.0.0.1:0, its
// request logs going to io.Discard, and returns its base URL. The server
// is stopped when the benchmark ends.
func startServer(b *testing.B, args ...string) string {
	b.Helper()
	stderr := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = run(ctx, context.Background(), append([]string{"-addr", "127.0.0.1:0", "-drain", "0s", "-db", ":memory:"}, args...), io.Discard, stderr)
	}()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if err != nil {
				b.Errorf("run() = %v", err)
			}
		case <-time.After(waitLimit):
			b.Errorf("run did not return within %s", waitLimit)
		}
	})
	return baseURL(b, stderr, done)
}

// benchClient returns a client whose transport keeps enough idle
// connections for every benchmark goroutine.
func benchClient(b *testing.B) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 1024
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// post sends body to url with hdr and returns the response; the caller
// closes its body.
func post(b *testing.B, c *http.Client, url, body string, hdr http.Header) *http.Response {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header = hdr.Clone()
	res, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// gatewayHeader is what a caller of the server sends along with a chat
// completion, given extra x-gateway-* headers as name, value pairs.
func gatewayHeader(kv ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set("x-gateway-api-key", benchKey)
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// bareHeader is what a caller of the bare proxy sends: the provider
// credential, which the gateway takes from the virtual key instead.
func bareHeader() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-up"}}
}

// serveParallel has GOMAXPROCS goroutines send POST /v1/chat/completions
// through h in-process, like the root package's BenchmarkPassThrough.
func serveParallel(b *testing.B, h http.Handler, hdr http.Header) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(benchChatBody))
			for k, v := range hdr {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

// BenchmarkServerChain compares a non-streaming chat completion through
// the server's whole handler chain (serverHandler: serving lock,
// stallWriter, the gateway built by newGateway from a config file read
// by readConfig, the JSON request log of -request-log stdout written to
// io.Discard) with the same request through a bare httputil.ReverseProxy,
// in-process, on the same instant upstream. "server-request-log-off" is
// the chain of -request-log off.
func BenchmarkServerChain(b *testing.B) {
	up := benchUpstream(b)
	b.Run("bare-reverseproxy", func(b *testing.B) {
		serveParallel(b, bareProxy(up.URL), bareHeader())
	})
	cfg := benchConfig(b, up.URL)
	for _, tc := range []struct{ name, requestLog string }{
		{"server", "stdout"},
		{"server-request-log-off", "off"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sink, err := requestLogSink(tc.requestLog, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			f, err := readConfig(cfg, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			store := memstore.New()
			if err := admin.Apply(context.Background(), f, store); err != nil {
				b.Fatal(err)
			}
			var opts gateway.Options
			var prods products
			setStores(&opts, &prods, store)
			g, routes := newGateway(opts, prods, f.CustomHosts.Allow, sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
			defer g.Close()
			defer routes.Close()
			var serving sync.RWMutex
			var ready atomic.Bool
			ready.Store(true)
			noStore := func(context.Context) error { return nil }
			serveParallel(b, serverHandler(g, &serving, defaultWriteTimeout, &ready, noStore), gatewayHeader("x-gateway-virtual-key", "up"))
		})
	}
}

// BenchmarkStream compares one streamed chat completion of benchEvents
// events through the running server (run, over loopback, request logs on
// and written to io.Discard) with the same stream through a bare
// httputil.ReverseProxy served on loopback. Requests are sequential, so
// the times are latencies: ttfe-us is the mean time from sending the
// request to reading the first event, total-us the mean time to the end
// of the stream.
func BenchmarkStream(b *testing.B) {
	up := streamUpstream(b)
	c := benchClient(b)
	bare := serveBare(b, up.URL)
	base := startServer(b, "-config", benchConfig(b, up.URL))
	for _, tc := range []struct {
		name, url string
		hdr       http.Header
	}{
		{"bare-reverseproxy", bare, bareHeader()},
		{"gateway", base, gatewayHeader("x-gateway-virtual-key", "up")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var ttfe, total time.Duration
			b.ResetTimer()
			for range b.N {
				first, all := streamOnce(b, c, tc.url+"/v1/chat/completions", tc.hdr)
				ttfe += first
				total += all
			}
			b.StopTimer()
			b.ReportMetric(float64(ttfe.Nanoseconds())/1e3/float64(b.N), "ttfe-us")
			b.ReportMetric(float64(total.Nanoseconds())/1e3/float64(b.N), "total-us")
		})
	}
}

// streamOnce sends one streamed chat completion to url and reads the whole
// stream. It returns the time to the first event and to the end, and
// fails b unless the stream held benchEvents chunk events and then
// data: [DONE].
func streamOnce(b *testing.B, c *http.Client, url string, hdr http.Header) (ttfe, total time.Duration) {
	start := time.Now()
	res, err := c.Do(newRequest(b, url, benchStreamBody, hdr))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		b.Fatalf("status %d: %s", res.StatusCode, body)
	}
	br := bufio.NewReader(res.Body)
	events, done := 0, false
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil {
			b.Fatalf("reading the stream after %d events: %v", events, err)
		}
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		if ttfe == 0 {
			ttfe = time.Since(start)
		}
		switch {
		case done:
			b.Fatalf("data after [DONE]: %q", line)
		case string(line) == "data: [DONE]\n":
			done = true
		case bytes.Contains(line, []byte(`"chat.completion.chunk"`)):
			events++
		default:
			b.Fatalf("unexpected event %q", line)
		}
	}
	total = time.Since(start)
	if events != benchEvents || !done {
		b.Fatalf("got %d chunk events and [DONE] %v, want %d and [DONE]", events, done, benchEvents)
	}
	return ttfe, total
}

func newRequest(b *testing.B, url, body string, hdr http.Header) *http.Request {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header = hdr.Clone()
	return req
}

// BenchmarkCacheHit compares a chat completion answered from the running
// server's response cache (saved config pc-cache, request logs on and
// written to io.Discard) with the same request through a bare
// httputil.ReverseProxy to the instant upstream, both over loopback, from
// GOMAXPROCS goroutines each.
func BenchmarkCacheHit(b *testing.B) {
	up := benchUpstream(b)
	c := benchClient(b)
	bare := serveBare(b, up.URL)
	base := startServer(b, "-config", benchConfig(b, up.URL))
	hdr := gatewayHeader("x-gateway-config", "pc-cache")

	// Warm the cache: the first answer is a miss, stored for the next.
	deadline := time.Now().Add(waitLimit)
	for status := ""; status != "HIT"; {
		if time.Now().After(deadline) {
			b.Fatalf("no cache hit within %s; last status %q", waitLimit, status)
		}
		res := post(b, c, base+"/v1/chat/completions", benchChatBody, hdr)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("warming the cache: status %d", res.StatusCode)
		}
		status = res.Header.Get("x-gateway-cache-status")
	}

	for _, tc := range []struct {
		name, url string
		hdr       http.Header
		wantCache string // x-gateway-cache-status
	}{
		{"bare-reverseproxy", bare, bareHeader(), ""},
		{"gateway-cache-hit", base, hdr, "HIT"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res := post(b, c, tc.url+"/v1/chat/completions", benchChatBody, tc.hdr)
					body, err := io.ReadAll(res.Body)
					res.Body.Close()
					if err != nil {
						b.Fatal(err)
					}
					if res.StatusCode != http.StatusOK || string(body) != benchCompletion {
						b.Fatalf("status %d: %s", res.StatusCode, body)
					}
					if got := res.Header.Get("x-gateway-cache-status"); got != tc.wantCache {
						b.Fatalf("x-gateway-cache-status %q, want %q", got, tc.wantCache)
					}
				}
			})
		})
	}
}
